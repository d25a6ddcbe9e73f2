/**
 * Preloaded into a service child (`--import`) by tests/bench/profile-search.ts: the first SIGUSR2 starts
 * the CPU profiler (node:inspector) of the main thread, the second stops it and writes the profile to
 * SVC_PROFILE_OUT, so a profile covers the measured phase only (not start-up or the first query's index
 * load). SVC_TRACE_GC=1 traces garbage collections instead. Plain JavaScript: worker threads (the
 * embedding model's) load it too, and do nothing with it.
 */
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { isMainThread } from 'node:worker_threads';

// SVC_TRACE_GC=1: V8 prints every collection (NODE_OPTIONS does not take --trace-gc).
if (isMainThread && process.env.SVC_TRACE_GC) setFlagsFromString('--trace-gc');

let session;
let phase = false;
if (isMainThread) process.on('SIGUSR2', async () => {
  if (process.env.SVC_TRACE_GC) {
    phase = !phase;
    console.log(phase ? 'MEASURE START' : 'MEASURE END');
    return;
  }
  if (!session) {
    session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
    return;
  }
  const { profile } = await session.post('Profiler.stop');
  session.disconnect();
  session = undefined;
  writeFileSync(process.env.SVC_PROFILE_OUT, JSON.stringify(profile));
});
