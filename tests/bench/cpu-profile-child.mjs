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
// SVC_V8_FLAGS: other V8 flags for the experiment at hand (e.g. WebAssembly tiering).
if (process.env.SVC_V8_FLAGS) setFlagsFromString(process.env.SVC_V8_FLAGS);

// SVC_SQL_CENSUS=1: time spent in the main thread's PGlite (execProtocolRawSync) per statement text, between the
// two SIGUSR2, printed as SQLCENSUS lines (a message without a Parse or Query of its own counts for the last one).
const census = new Map();
let censusOn = false;
if (isMainThread && process.env.SVC_SQL_CENSUS) {
  const { PGlite } = await import('@electric-sql/pglite');
  const orig = PGlite.prototype.execProtocolRawSync;
  let current = '?';
  const cstr = (b, at) => {
    let e = at;
    while (e < b.length && b[e] !== 0) e++;
    return new TextDecoder().decode(b.subarray(at, e));
  };
  PGlite.prototype.execProtocolRawSync = function (msg) {
    if (!censusOn) return orig.call(this, msg);
    if (msg[0] === 81) current = cstr(msg, 5);
    else if (msg[0] === 80) {
      let at = 5;
      while (msg[at] !== 0) at++;
      current = cstr(msg, at + 1);
    }
    const key = current.replace(/\s+/g, ' ').trim().slice(0, 100);
    const t0 = performance.now();
    try {
      return orig.call(this, msg);
    } finally {
      const c = census.get(key) ?? { n: 0, ms: 0 };
      c.n++;
      c.ms += performance.now() - t0;
      census.set(key, c);
    }
  };
}
let session;
let phase = false;
// SVC_STALLS=1: event-loop turns longer than 5 ms during the measured phase (a 1 ms timer that fires late);
// SVC_STALLS_LIST=1 also prints each one over 50 ms with its time from the phase's start (STALL lines).
let stalls = [];
let timer;
if (isMainThread)
  process.on('SIGUSR2', async () => {
    if (process.env.SVC_STALLS) {
      if (!timer) {
        let last = performance.now();
        const t0 = last;
        timer = setInterval(() => {
          const now = performance.now();
          if (now - last > 5) {
            stalls.push(now - last);
            if (process.env.SVC_STALLS_LIST && now - last > 50)
              console.log(`STALL ${(now - last).toFixed(0)} ms at ${((now - t0) / 1000).toFixed(2)} s`);
          }
          last = now;
        }, 1);
        return;
      }
      clearInterval(timer);
      timer = undefined;
      stalls.sort((a, b) => a - b);
      const n = stalls.length;
      console.log(
        `STALLS ${n} over 5 ms; p50 ${stalls[n >> 1]?.toFixed(1)} p90 ` +
          `${stalls[Math.floor(n * 0.9)]?.toFixed(1)} max ${stalls[n - 1]?.toFixed(1)}; over 10 ms: ` +
          `${stalls.filter((x) => x > 10).length}, over 20 ms: ${stalls.filter((x) => x > 20).length}`,
      );
      stalls = [];
      return;
    }
    if (process.env.SVC_SQL_CENSUS) {
      censusOn = !censusOn;
      if (!censusOn) {
        for (const [k, v] of [...census].sort((a, b) => b[1].ms - a[1].ms).slice(0, 25))
          console.log(`SQLCENSUS ${v.ms.toFixed(1)} ms ${v.n} calls ${k}`);
        census.clear();
      }
      return;
    }
    if (process.env.SVC_TRACE_GC) {
      phase = !phase;
      console.log(phase ? 'MEASURE START' : 'MEASURE END');
      return;
    }
    // SVC_HEAP_PROFILE=1: V8's sampling heap profiler instead (bytes allocated, by function), written to
    // SVC_PROFILE_OUT.
    if (process.env.SVC_HEAP_PROFILE) {
      if (!session) {
        session = new Session();
        session.connect();
        await session.post('HeapProfiler.enable');
        await session.post('HeapProfiler.startSampling', {
          samplingInterval: 4096,
          includeObjectsCollectedByMajorGC: true,
          includeObjectsCollectedByMinorGC: true,
        });
        return;
      }
      const { profile } = await session.post('HeapProfiler.stopSampling');
      session.disconnect();
      session = undefined;
      writeFileSync(process.env.SVC_PROFILE_OUT, JSON.stringify(profile));
      return;
    }
    if (!session) {
      session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', {
        interval: Number(process.env.SVC_PROFILE_INTERVAL_US || 200),
      });
      await session.post('Profiler.start');
      return;
    }
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    session = undefined;
    writeFileSync(process.env.SVC_PROFILE_OUT, JSON.stringify(profile));
  });
