import { performance, PerformanceObserver } from 'node:perf_hooks';
import { cpuTimes, stealPercent } from './steal';

/** One measured scenario: throughput and latency of a closed loop of `concurrency` workers. */
export interface LoadResult {
  ops: number;
  seconds: number;
  opsPerSec: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  errors: number;
  firstError?: string;
  /** Share of the machine's CPU time stolen by the hypervisor during the phase, in % (./steal.ts). */
  steal?: number;
  /**
   * The load generator's own garbage-collection pauses during the phase (they delay its requests and count in their
   * latency): total and longest, ms.
   */
  clientGc?: { ms: number; max: number };
}

export interface LoadOptions {
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /**
   * One operation; a throw counts as an error (not as an op). `seq` is unique
   * across warm-up and measurement. Resolving to 'stop' ends that worker (no op counted).
   */
  op: (worker: number, seq: number) => Promise<void | 'stop'>;
  /**
   * Shared macrotask yield every N ms (default 50; 0 = never). Keep it for loops
   * over raw PGlite calls (else signals wait for the end of the phase); turn it
   * off where the yield itself would change what is measured (in-process inject).
   */
  yieldEveryMs?: number;
  /** Runs between warm-up and measurement (e.g. to snapshot server counters). */
  onMeasureStart?: () => Promise<void>;
}

export function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

/**
 * Closed loop: every worker issues its next operation as soon as the previous
 * one answers, until the deadline. Warm-up runs the same loop first and is
 * discarded.
 */
export async function closedLoop(o: LoadOptions): Promise<LoadResult> {
  let seq = 0;
  // PGlite calls resolve without real I/O, so a loop over them can run as one
  // endless microtask chain and starve the event loop (signals, timers). Every
  // 50 ms all workers step out for one macrotask, together: they wait on one
  // shared gate, so they resume in the same microtask drain and stay
  // interleaved (a yield per worker would run them one at a time).
  const every = o.yieldEveryMs ?? 50;
  let yieldAt = performance.now() + every;
  let gate: Promise<void> | undefined;
  const breathe = async () => {
    if (every <= 0 || performance.now() < yieldAt) return;
    gate ??= new Promise<void>((r) =>
      setImmediate(() => {
        gate = undefined;
        yieldAt = performance.now() + every;
        r();
      }),
    );
    await gate;
  };
  const phase = async (ms: number) => {
    const latencies: number[] = [];
    let errors = 0;
    let firstError: string | undefined;
    const cpu0 = cpuTimes();
    const gc = { ms: 0, max: 0 };
    const gcObserver = new PerformanceObserver((list) => {
      for (const g of list.getEntries()) {
        gc.ms += g.duration;
        gc.max = Math.max(gc.max, g.duration);
      }
    });
    gcObserver.observe({ entryTypes: ['gc'] });
    const start = performance.now();
    const deadline = start + ms;
    let last = start;
    const worker = async (w: number) => {
      while (performance.now() < deadline) {
        await breathe();
        const t0 = performance.now();
        try {
          if ((await o.op(w, seq++)) === 'stop') break;
          last = performance.now();
          latencies.push(last - t0);
        } catch (e) {
          errors += 1;
          firstError ??= e instanceof Error ? e.message : String(e);
          last = performance.now();
        }
      }
    };
    await Promise.all(Array.from({ length: o.concurrency }, (_, w) => worker(w)));
    gcObserver.disconnect();
    const seconds = (last - start) / 1000;
    const sorted = Float64Array.from(latencies).sort();
    return {
      ops: latencies.length,
      seconds,
      opsPerSec: latencies.length / seconds,
      p50: percentile(sorted, 0.5),
      p90: percentile(sorted, 0.9),
      p99: percentile(sorted, 0.99),
      max: sorted.length ? sorted[sorted.length - 1] : NaN,
      errors,
      firstError,
      steal: stealPercent(cpu0, cpuTimes()),
      clientGc: gc,
    } satisfies LoadResult;
  };
  if (o.warmupMs > 0) await phase(o.warmupMs);
  await o.onMeasureStart?.();
  return phase(o.durationMs);
}

/** Several runs of one scenario as one result: ops and seconds summed, percentiles the mean of the runs'. */
export const sumLoads = (rs: LoadResult[]): LoadResult => {
  const ops = rs.reduce((a, r) => a + r.ops, 0);
  const seconds = rs.reduce((a, r) => a + r.seconds, 0);
  const mean = (k: 'p50' | 'p90' | 'p99') => rs.reduce((a, r) => a + r[k], 0) / rs.length;
  return {
    ops,
    seconds,
    opsPerSec: ops / seconds,
    p50: mean('p50'),
    p90: mean('p90'),
    p99: mean('p99'),
    max: Math.max(...rs.map((r) => r.max)),
    errors: rs.reduce((a, r) => a + r.errors, 0),
    firstError: rs.find((r) => r.firstError)?.firstError,
    steal: rs.every((r) => r.steal !== undefined)
      ? rs.reduce((a, r) => a + r.steal! * r.seconds, 0) / seconds
      : undefined,
  };
};
