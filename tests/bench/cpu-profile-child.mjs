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
// SVC_STALLS=1: event-loop turns longer than 5 ms during the measured phase (a 1 ms timer that fires late).
let stalls = [];
let timer;
if (isMainThread) process.on('SIGUSR2', async () => {
  if (process.env.SVC_STALLS) {
    if (!timer) {
      let last = performance.now();
      timer = setInterval(() => {
        const now = performance.now();
        if (now - last > 5) stalls.push(now - last);
        last = now;
      }, 1);
      return;
    }
    clearInterval(timer);
    timer = undefined;
    stalls.sort((a, b) => a - b);
    const n = stalls.length;
    console.log(`STALLS ${n} over 5 ms; p50 ${stalls[n >> 1]?.toFixed(1)} p90 ${stalls[Math.floor(n * 0.9)]?.toFixed(1)} max ${stalls[n - 1]?.toFixed(1)}; over 10 ms: ${stalls.filter((x) => x > 10).length}, over 20 ms: ${stalls.filter((x) => x > 20).length}`);
    stalls = [];
    return;
  }
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
