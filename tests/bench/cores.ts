/**
 * Section 16 (BENCH_ONLY=cores; issue 46): what more cores give the embedded default. Services on the embedded
 * engines, each confined to a set of CPUs (`taskset -c`, BENCH_CORES_SETS, default "0 0,1": one core, then two),
 * all started at once and measured in alternating slices: record create (32 clients), get by id over a 2,000-id
 * working set (32 clients) and, when the BEIR SciFact corpus is there, TEXT search limit 10 (16 clients, the test
 * queries rotating). For each slice: the answers a second, the cores the service's processes used, and the share
 * of one core its main thread used. The main thread answers every request, so its CPU per answer is the ceiling
 * more cores cannot lift: the written projection to 8 and 16 cores in docs/benchmarks.md comes from these figures.
 */
import { Pool } from 'undici';
import { loadBeir, loadQrels } from '../eval/dataset';
import type { HttpService } from './http';
import { startHttpService } from './http';
import { closedLoop, type LoadResult, sumLoads } from './load';
import { ingestService } from './peers';
import { cpuSplitSeconds, treeCpuSeconds } from './process-tree';
import { BENCH_SCHEMA, createBody } from './workload';

export interface CoresOptions {
  newDir(prefix: string): string;
  log(msg: string): void;
  /** CPU lists for taskset, one service each. */
  sets: string[];
  sliceMs: number;
  rounds: number;
  dataset: string;
  childEnv: Record<string, string>;
}

export type CoresOp = 'create' | 'get' | 'search';

export interface CoresFigures {
  load: LoadResult;
  /** CPU seconds of the service's processes (model processes included) a wall second. */
  cores: number;
  /** CPU seconds of the service's main thread a wall second. */
  mainThread: number;
  /** The service's CPU per answer, and its main thread's (ms). */
  cpuMs: number;
  mainMs: number;
}

export interface CoresResult {
  sets: Array<{ cpus: string; ops: Partial<Record<CoresOp, CoresFigures>> }>;
  searchSkipped?: string;
  docs?: number;
}

/** CPU seconds of one thread (`tid`) of `pid`. */
function threadCpuSeconds(pid: number, tid: number): number {
  const t = cpuSplitSeconds(pid, tid);
  return t.user + t.system;
}

export async function benchCores(o: CoresOptions): Promise<CoresResult> {
  let searchSkipped: string | undefined;
  let ds: ReturnType<typeof loadBeir> | undefined;
  let queries: string[] = [];
  try {
    ds = loadBeir(o.dataset);
    const qrels = loadQrels(o.dataset, 'test');
    queries = [...qrels.keys()].map((q) => ds!.queries.get(q)).filter((q): q is string => !!q);
  } catch (e) {
    searchSkipped = `no BEIR dataset at ${o.dataset} (BENCH_CORES_DATASET): ${(e as Error).message.slice(0, 80)}`;
  }
  const services: Array<{ cpus: string; svc: HttpService; pool: Pool; headers: Record<string, string> }> = [];
  try {
    for (const cpus of o.sets) {
      // "0,1@NAME=value@...": a setting of that service only, to compare two settings on the same cores.
      const [cpuList, ...settings] = cpus.split('@');
      const svc = await startHttpService(o.newDir(`cores-${cpus.replace(/\W/g, '_')}-`), {
        ...o.childEnv,
        ...Object.fromEntries(settings.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])),
        SERVICE_CPUS: cpuList,
      });
      const headers = {
        authorization: `Bearer ${svc.bootstrap.tenants.live.rootKey}`,
        'content-type': 'application/json',
      };
      services.push({ cpus, svc, pool: new Pool(svc.url, { connections: 32, pipelining: 1 }), headers });
    }
    const ids = new Map<string, string[]>();
    for (const s of services) {
      const r = await s.pool.request({
        method: 'POST',
        path: '/v1/schemas',
        headers: s.headers,
        body: JSON.stringify(BENCH_SCHEMA),
      });
      if (r.statusCode !== 201) throw new Error(`schema: ${r.statusCode} ${await r.body.text()}`);
      await r.body.dump();
      if (ds) await ingestService(s.svc, ds.corpus, (m) => o.log(`cores ${s.cpus}: ${m}`));
      ids.set(s.cpus, []);
    }
    let seq = 0;
    const op = (s: (typeof services)[number], kind: CoresOp) => async () => {
      const mine = ids.get(s.cpus)!;
      let r;
      if (kind === 'create')
        r = await s.pool.request({ method: 'POST', path: '/v1/records', headers: s.headers, body: createBody(seq++) });
      else if (kind === 'get')
        r = await s.pool.request({
          method: 'GET',
          path: `/v1/records/${mine[seq++ % Math.min(mine.length, 2000)]}`,
          headers: { authorization: s.headers.authorization },
        });
      else
        r = await s.pool.request({
          method: 'POST',
          path: '/v1/search',
          headers: s.headers,
          body: JSON.stringify({ query: queries[seq++ % queries.length], mode: 'TEXT', limit: 10 }),
        });
      const text = await r.body.text();
      if (r.statusCode >= 300) throw new Error(`${kind} ${r.statusCode}: ${text.slice(0, 200)}`);
      if (kind === 'create' && mine.length < 2000) mine.push(/"id":"([^"]+)"/.exec(text)![1]);
    };
    const kinds: CoresOp[] = ds && queries.length ? ['create', 'get', 'search'] : ['create', 'get'];
    const slices = new Map<string, { loads: LoadResult[]; cpu: number; main: number; wall: number }>();
    // Warm-up: every service creates its working set and answers each kind for a slice, unmeasured.
    for (const s of services)
      for (const k of kinds)
        await closedLoop({ concurrency: k === 'search' ? 16 : 32, warmupMs: 0, durationMs: o.sliceMs, op: op(s, k) });
    for (let round = 0; round < o.rounds; round++) {
      const order = round % 2 ? [...services].reverse() : services;
      for (const k of kinds)
        for (const s of order) {
          const pid = s.svc.child.pid!;
          const cpu0 = treeCpuSeconds(pid);
          const main0 = threadCpuSeconds(pid, pid);
          const t0 = performance.now();
          const load = await closedLoop({
            concurrency: k === 'search' ? 16 : 32,
            warmupMs: 0,
            durationMs: o.sliceMs,
            op: op(s, k),
          });
          const wall = (performance.now() - t0) / 1000;
          const cpu1 = treeCpuSeconds(pid);
          const key = `${s.cpus}|${k}`;
          const acc = slices.get(key) ?? { loads: [], cpu: 0, main: 0, wall: 0 };
          acc.loads.push(load);
          acc.cpu += cpu1.service + cpu1.children - (cpu0.service + cpu0.children);
          acc.main += threadCpuSeconds(pid, pid) - main0;
          acc.wall += wall;
          slices.set(key, acc);
          o.log(
            `cores ${s.cpus} ${k} round ${round + 1}/${o.rounds}: ${Math.round(load.opsPerSec)}/s p99 ` +
              `${load.p99.toFixed(1)} ms`,
          );
        }
    }
    return {
      sets: services.map((s) => ({
        cpus: s.cpus,
        ops: Object.fromEntries(
          kinds.map((k) => {
            const a = slices.get(`${s.cpus}|${k}`)!;
            const load = sumLoads(a.loads);
            return [
              k,
              {
                load,
                cores: a.cpu / a.wall,
                mainThread: a.main / a.wall,
                cpuMs: (1000 * a.cpu) / Math.max(load.ops, 1),
                mainMs: (1000 * a.main) / Math.max(load.ops, 1),
              },
            ];
          }),
        ),
      })),
      searchSkipped,
      docs: ds?.corpus.length,
    };
  } finally {
    for (const s of services) {
      await s.pool.close().catch(() => {});
      await s.svc.stop().catch(() => {});
    }
  }
}
