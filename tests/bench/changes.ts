/**
 * Change stream benchmark (section 12, BENCH_ONLY=changes; issue 43): the service as a child process on the
 * embedded engines (`npm start`), BENCH_CHANGE_STREAMS (100) streams of GET /v1/changes open in this process.
 *
 *   C1: write -> event latency. BENCH_CHANGE_RATE (200) record creates a second, sent on a fixed schedule for
 *       BENCH_CHANGE_SECONDS (10) s; for every create and every stream, the time from sending the POST to that
 *       stream parsing its record.created event (eventsource-parser, in a worker thread: changes-readers.mjs, so
 *       the parsing does not hold up the sends). p50 / p99 over all pairs; target p99 <= 250 ms.
 *   C2 / C0: create throughput (BENCH_CONCURRENCY, 32 closed-loop clients) with the streams open vs none, measured in
 *       BENCH_CHANGE_SLICES (6) alternating slices of BENCH_CHANGE_SLICE_MS (5,000) each; the open streams read
 *       every byte in a worker thread (not parsed, so this process's parsing is not what is measured); target
 *       C2 >= 0.9x C0.
 *
 * It prints one line per target (`changes: target ...`), with the figure, the target and whether it is met.
 *
 *   npx tsx tests/bench/changes.ts
 */
import http from 'node:http';
import { Worker } from 'node:worker_threads';
import { tempDir } from '../src/support/engines';
import { startHttpService } from './http';
import { closedLoop, type LoadResult, percentile, sumLoads } from './load';
import { cpuSplitSeconds, treeCpuSeconds } from './process-tree';
import { cpuTimes } from './steal';

/** The machine's softirq and idle CPU seconds so far (all CPUs, /proc/stat; clock ticks of 1/100 s). */
const machineSeconds = () => {
  const t = cpuTimes();
  return { softirq: (t?.softirq ?? 0) / 100, idle: (t?.idle ?? 0) / 100 };
};

export interface ChangeBench {
  streams: number;
  rate: number;
  writes: number;
  /** Events that reached every stream (writes x streams when none was lost). */
  delivered: number;
  latency: { p50: number; p99: number; max: number };
  /**
   * The creates' own answer times in C1 (send -> 201), p50 / p99: the write waits for the read models, as the event
   * does.
   */
  write: { p50: number; p99: number };
  /**
   * Each event's arrival minus its create's answer (negative: the event came first), p50 / p99: what the stream adds to
   * the write.
   */
  afterAnswer: { p50: number; p99: number };
  /** Creates the schedule sent late (the load generator fell behind). */
  late: number;
  none: LoadResult;
  open: LoadResult;
  ratio: number;
  /** The service process's CPU per create (ms) in the measured phases, without and with the streams. */
  cpuMsPerCreate: { none: number; open: number };
  /** The service's system (kernel) CPU per create, ms: the socket writes to the streams are counted here. */
  systemMsPerCreate: { none: number; open: number };
  /** Whether each target was met (the latency one also needs every event delivered). */
  met: { latency: boolean; throughput: boolean };
}

/** Issue 43's targets: write -> event p99, and creates with the streams open as a share of creates with none. */
export const TARGET_P99_MS = 250;
export const TARGET_RATIO = 0.9;

const env = (k: string, d: number) => (process.env[k] ? Number(process.env[k]) : d);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function post(
  url: string,
  path: string,
  token: string,
  body: unknown,
  agent: http.Agent,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = http.request(
      `${url}${path}`,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(data),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/**
 * The worker thread that opens and reads the streams (changes-readers.mjs); `next(key)` waits for its message carrying
 * `key`.
 */
function startReaders(data: {
  url: string;
  key: string;
  streams: number;
  query: string;
  label: string;
  drain?: boolean;
}) {
  const worker = new Worker(new URL('./changes-readers.mjs', import.meta.url), { workerData: data });
  const next = <T>(key: string) =>
    new Promise<T>((resolve, reject) => {
      const on = (m: Record<string, unknown>) => {
        if (!(key in m)) return;
        worker.off('message', on);
        resolve(m[key] as T);
      };
      worker.on('message', on);
      worker.once('error', reject);
    });
  return { worker, next };
}

export async function benchChanges(log: (m: string) => void = console.log): Promise<ChangeBench> {
  const streams = env('BENCH_CHANGE_STREAMS', 100);
  const rate = env('BENCH_CHANGE_RATE', 200);
  const seconds = env('BENCH_CHANGE_SECONDS', 10);
  const slices = env('BENCH_CHANGE_SLICES', 6);
  const sliceMs = env('BENCH_CHANGE_SLICE_MS', 5000);
  const warmupMs = env('BENCH_CHANGE_WARMUP_MS', 3000);
  const concurrency = env('BENCH_CONCURRENCY', 32);
  const dir = tempDir('svc-bench-changes-');
  const svc = await startHttpService(dir.dir, { CHANGE_STREAMS_PER_CONTEXT: String(streams + 10) });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  try {
    const key = svc.bootstrap.tenants.live.rootKey;
    const typeName = 'change_bench';
    const schema = await post(
      svc.url,
      '/v1/schemas',
      key,
      {
        typeName,
        displayName: 'Change bench',
        allowedSurfaces: ['record'],
        fields: [
          { fieldId: 'n', fieldType: 'number' },
          { fieldId: 'label', fieldType: 'string' },
        ],
      },
      agent,
    );
    if (schema.status !== 201) throw new Error(`schema: ${schema.status} ${schema.text}`);
    const create = (n: number, run: number) =>
      post(
        svc.url,
        '/v1/records',
        key,
        { typeName, payload: { n, label: `run ${run} item ${n}` }, indexMode: 'NONE' },
        agent,
      );

    // --- C1: latency at a fixed rate with `streams` streams parsing every event (in a worker thread) ---
    const total = rate * seconds;
    const sentAt = new Float64Array(total).fill(NaN);
    const answeredAt = new Float64Array(total).fill(NaN);
    const now = () => performance.timeOrigin + performance.now();
    const readers = startReaders({ url: svc.url, key, streams, query: `types=${typeName}`, label: 'run 1 ' });
    const fromReaders = readers.next;
    await fromReaders<boolean>('open');
    // Warm-up, as every section has: creates at the same rate with the streams open, not measured (their label is
    // run 0, which the readers do not count). Without it the first second's one-off costs of a fresh process (code
    // compiled on first use) land in this section's p99 only.
    const warmEnd = performance.now() + warmupMs;
    const warming: Promise<unknown>[] = [];
    for (let i = 0; performance.now() < warmEnd; i++) {
      warming.push(create(i, 0));
      await sleep(1000 / rate);
    }
    await Promise.all(warming);
    await sleep(500);
    log(`changes: ${streams} streams open, warmed up ${warmupMs} ms; ${total} creates at ${rate}/s`);
    const t0 = performance.now();
    let late = 0;
    const pending: Promise<unknown>[] = [];
    const answered: number[] = [];
    for (let i = 0; i < total; i++) {
      const due = t0 + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      else if (wait < -20) late += 1;
      const sent = (sentAt[i] = now());
      pending.push(
        create(i, 1).then((r) =>
          r.status === 201
            ? void answered.push((answeredAt[i] = now()) - sent)
            : Promise.reject(new Error(`create: ${r.status} ${r.text}`)),
        ),
      );
    }
    await Promise.all(pending);
    for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
      readers.worker.postMessage('count');
      if ((await fromReaders<number>('count')) >= total * streams) break;
      await sleep(100);
    }
    readers.worker.postMessage('stop');
    const got = await fromReaders<Float64Array>('arrivals');
    await readers.worker.terminate();
    const latencies: number[] = [];
    const arrivals: Array<[n: number, at: number]> = [];
    for (let i = 0; i < got.length; i += 2) {
      latencies.push(got[i + 1] - sentAt[got[i]]);
      arrivals.push([got[i], got[i + 1]]);
    }
    const delivered = arrivals.length;
    const sorted = Float64Array.from(latencies).sort();
    const latency = {
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
      max: sorted.length ? sorted[sorted.length - 1] : NaN,
    };
    const ws = Float64Array.from(answered).sort();
    const write = { p50: percentile(ws, 0.5), p99: percentile(ws, 0.99) };
    const deltas = Float64Array.from(arrivals.map(([n, at]) => at - answeredAt[n])).sort();
    const afterAnswer = { p50: percentile(deltas, 0.5), p99: percentile(deltas, 0.99) };
    log(
      `changes: C1 ${delivered}/${total * streams} events, p50 ${latency.p50.toFixed(1)} ms, p99 ` +
        `${latency.p99.toFixed(1)} ms, max ${latency.max.toFixed(1)} ms; the creates answered p50 ` +
        `${write.p50.toFixed(1)} / p99 ${write.p99.toFixed(1)} ms; event minus answer p50 ` +
        `${afterAnswer.p50.toFixed(1)} / p99 ${afterAnswer.p99.toFixed(1)} ms`,
    );

    // --- C2 / C0: closed-loop create throughput with the streams open (drained, unparsed) vs none, alternating ---
    const noneRuns: LoadResult[] = [];
    const openRuns: LoadResult[] = [];
    let seq = 0;
    const cpu = {
      none: { s: 0, sys: 0, ops: 0, bench: 0, softirq: 0, idle: 0 },
      open: { s: 0, sys: 0, ops: 0, bench: 0, softirq: 0, idle: 0 },
    };
    const load = async (mode: 'none' | 'open') => {
      let c0 = 0;
      let sys0 = 0;
      let bench0 = process.cpuUsage();
      let machine0 = machineSeconds();
      const r = await closedLoop({
        concurrency,
        warmupMs: 500,
        durationMs: sliceMs,
        yieldEveryMs: 0,
        onMeasureStart: async () => {
          c0 = treeCpuSeconds(svc.child.pid!).service;
          sys0 = cpuSplitSeconds(svc.child.pid!).system;
          bench0 = process.cpuUsage();
          machine0 = machineSeconds();
        },
        op: async () => {
          const r = await create(1_000_000 + seq++, 2);
          if (r.status !== 201) throw new Error(`create: ${r.status} ${r.text.slice(0, 200)}`);
        },
      });
      cpu[mode].s += treeCpuSeconds(svc.child.pid!).service - c0;
      cpu[mode].sys += cpuSplitSeconds(svc.child.pid!).system - sys0;
      // This process: the load generator and, in the worker thread, the streams' readers.
      const b = process.cpuUsage(bench0);
      cpu[mode].bench += (b.user + b.system) / 1e6;
      const m = machineSeconds();
      cpu[mode].softirq += m.softirq - machine0.softirq;
      cpu[mode].idle += m.idle - machine0.idle;
      cpu[mode].ops += r.ops;
      return r;
    };
    for (let k = 0; k < slices; k++) {
      const withStreams = async () => {
        // Drained in a worker thread, as C1's readers are: the load generator's event loop does not serve 100 sockets
        // too.
        const drains = startReaders({ url: svc.url, key, streams, query: `types=${typeName}`, label: '', drain: true });
        await drains.next<boolean>('open');
        await sleep(200);
        const r = await load('open');
        drains.worker.postMessage('stop');
        const bytes = await drains.next<number>('bytes');
        await drains.worker.terminate();
        log(
          `changes: slice ${k + 1} with ${streams} streams: ${r.opsPerSec.toFixed(0)} creates/s ` +
            `(${(bytes / 2 ** 20).toFixed(1)} MiB streamed)`,
        );
        openRuns.push(r);
      };
      const without = async () => {
        const r = await load('none');
        log(`changes: slice ${k + 1} without streams: ${r.opsPerSec.toFixed(0)} creates/s`);
        noneRuns.push(r);
      };
      // Alternate which goes first, so neither always meets the service warmer.
      if (k % 2 === 0) {
        await without();
        await withStreams();
      } else {
        await withStreams();
        await without();
      }
      await sleep(300);
    }
    const none = sumLoads(noneRuns);
    const opened = sumLoads(openRuns);
    const cpuMsPerCreate = { none: (1000 * cpu.none.s) / cpu.none.ops, open: (1000 * cpu.open.s) / cpu.open.ops };
    const systemMsPerCreate = {
      none: (1000 * cpu.none.sys) / cpu.none.ops,
      open: (1000 * cpu.open.sys) / cpu.open.ops,
    };
    const ratio = opened.opsPerSec / none.opsPerSec;
    const per = (mode: 'none' | 'open', k: 'bench' | 'softirq' | 'idle') =>
      ((1000 * cpu[mode][k]) / cpu[mode].ops).toFixed(2);
    log(
      `changes: where the CPUs went, ms a create with streams vs none: service ` +
        `${cpuMsPerCreate.open.toFixed(2)} vs ${cpuMsPerCreate.none.toFixed(2)}, the bench process (load ` +
        `generator and readers) ${per('open', 'bench')} vs ${per('none', 'bench')}, kernel softirq (the loopback ` +
        `network) ${per('open', 'softirq')} vs ${per('none', 'softirq')}, idle ${per('open', 'idle')} vs ` +
        `${per('none', 'idle')}`,
    );
    // Issue 43's two targets, each on a line of its own: the figure, the target, met or not.
    const met = {
      latency: delivered === total * streams && latency.p99 <= TARGET_P99_MS,
      throughput: !opened.errors && ratio >= TARGET_RATIO,
    };
    log(
      `changes: target 1, write -> event at ${rate} writes/s with ${streams} streams open: p50 ` +
        `${latency.p50.toFixed(1)} ms, p99 ${latency.p99.toFixed(1)} ms (target p99 <= ${TARGET_P99_MS} ms): ` +
        `${met.latency ? 'met' : 'MISSED'}`,
    );
    log(
      `changes: target 2, record creates with ${streams} streams open vs none: ` +
        `${opened.opsPerSec.toFixed(0)} vs ${none.opsPerSec.toFixed(0)}/s = ${ratio.toFixed(2)}x (target >= ` +
        `${TARGET_RATIO.toFixed(2)}x; service CPU ${cpuMsPerCreate.open.toFixed(2)} vs ` +
        `${cpuMsPerCreate.none.toFixed(2)} ms a create, of which system ${systemMsPerCreate.open.toFixed(2)} vs ` +
        `${systemMsPerCreate.none.toFixed(2)}): ${met.throughput ? 'met' : 'MISSED'}`,
    );
    return {
      streams,
      rate,
      writes: total,
      delivered,
      latency,
      write,
      afterAnswer,
      late,
      none,
      open: opened,
      ratio,
      cpuMsPerCreate,
      systemMsPerCreate,
      met,
    };
  } finally {
    agent.destroy();
    await svc.stop();
    dir.remove();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  benchChanges().then(
    (r) => {
      console.log(JSON.stringify(r, null, 2));
      process.exit(0);
    },
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
