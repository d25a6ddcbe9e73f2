/**
 * Section 17 (BENCH_ONLY=processes; issue 46): a query role served by one process and by SERVICE_PROCESSES of them
 * on one port, on PostgreSQL (DATABASE_URL), measured in alternating slices: reads by id over a 2,000-id working set
 * and lookup pages (32 clients each). A projector and a command process beside them write the records first (a fresh
 * schema of the server). For each slice: the answers a second and the cores the query role's processes used.
 */
import { Pool } from 'undici';
import { freshPostgresSchema } from '../src/support/engines';
import { freePort, spawnService, splitRolesEnv } from '../src/support/service';
import { children, startHttpService } from './http';
import { closedLoop, type LoadResult, sumLoads } from './load';
import { treeCpuSeconds } from './process-tree';
import { BENCH_SCHEMA, createBody, lookupPath } from './workload';

export interface ProcessesOptions {
  databaseUrl: string;
  newDir(prefix: string): string;
  log(msg: string): void;
  /** Processes of the second query service (SERVICE_PROCESSES). */
  processes: number;
  records: number;
  sliceMs: number;
  rounds: number;
}

export type ProcessesOp = 'get' | 'lookup';

export interface ProcessesResult {
  services: Array<{ processes: number; ops: Partial<Record<ProcessesOp, { load: LoadResult; cores: number }>> }>;
}

export async function benchProcesses(o: ProcessesOptions): Promise<ProcessesResult> {
  const schema = await freshPostgresSchema(o.databaseUrl);
  const dir = o.newDir('processes-');
  const env = { ...splitRolesEnv(schema.url), BUILTIN_EMBEDDINGS_MODEL: 'none', EDGE_RATE_LIMIT_PER_MINUTE: '0' };
  const stops: Array<() => void> = [];
  try {
    const projector = await spawnService(dir, await freePort(), { ...env, SERVICE_ROLE: 'projector' });
    children.add(projector.child);
    stops.push(() => projector.child.kill('SIGTERM'));
    const command = await startHttpService(dir, { ...env, SERVICE_ROLE: 'command' });
    stops.push(() => void command.stop());
    const headers = {
      authorization: `Bearer ${command.bootstrap.tenants.live.rootKey}`,
      'content-type': 'application/json',
    };
    const writer = new Pool(command.url, { connections: 32 });
    const r = await writer.request({
      method: 'POST',
      path: '/v1/schemas',
      headers,
      body: JSON.stringify(BENCH_SCHEMA),
    });
    if (r.statusCode !== 201) throw new Error(`schema: ${r.statusCode} ${await r.body.text()}`);
    await r.body.dump();
    const ids: string[] = [];
    let seq = 0;
    await closedLoop({
      concurrency: 32,
      warmupMs: 0,
      durationMs: 600_000,
      op: async () => {
        if (seq >= o.records) return 'stop';
        const c = await writer.request({ method: 'POST', path: '/v1/records', headers, body: createBody(seq++) });
        const text = await c.body.text();
        if (c.statusCode !== 201) throw new Error(`create ${c.statusCode}: ${text.slice(0, 200)}`);
        ids.push(/"id":"([^"]+)"/.exec(text)![1]);
      },
    });
    await writer.close();
    o.log(`processes: ${ids.length} records written through the command process`);
    const services: Array<{ processes: number; url: string; pid: number; pool: Pool }> = [];
    for (const processes of [1, o.processes]) {
      const port = await freePort();
      const q = await spawnService(dir, port, { ...env, SERVICE_ROLE: 'query', SERVICE_PROCESSES: String(processes) });
      children.add(q.child);
      stops.push(() => q.child.kill('SIGTERM'));
      services.push({ processes, url: q.api.baseUrl, pid: q.child.pid!, pool: new Pool(q.api.baseUrl) });
    }
    // The second processes of a supervised role start once the first listens: give them a moment.
    await new Promise((res) => setTimeout(res, 3000));
    const op = (s: (typeof services)[number], kind: ProcessesOp) => async () => {
      const n = seq++;
      const res = await s.pool.request({
        method: 'GET',
        path: kind === 'get' ? `/v1/records/${ids[n % Math.min(ids.length, 2000)]}` : lookupPath(n),
        headers: { authorization: headers.authorization },
      });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`${kind} ${res.statusCode}: ${text.slice(0, 200)}`);
    };
    const kinds: ProcessesOp[] = ['get', 'lookup'];
    for (const s of services)
      for (const k of kinds) await closedLoop({ concurrency: 32, warmupMs: 0, durationMs: o.sliceMs, op: op(s, k) });
    const slices = new Map<string, { loads: LoadResult[]; cpu: number; wall: number }>();
    for (let round = 0; round < o.rounds; round++) {
      const order = round % 2 ? [...services].reverse() : services;
      for (const k of kinds)
        for (const s of order) {
          const cpu0 = treeCpuSeconds(s.pid);
          const t0 = performance.now();
          const load = await closedLoop({ concurrency: 32, warmupMs: 0, durationMs: o.sliceMs, op: op(s, k) });
          const wall = (performance.now() - t0) / 1000;
          const cpu1 = treeCpuSeconds(s.pid);
          const key = `${s.processes}|${k}`;
          const acc = slices.get(key) ?? { loads: [], cpu: 0, wall: 0 };
          acc.loads.push(load);
          acc.cpu += cpu1.service + cpu1.children - (cpu0.service + cpu0.children);
          acc.wall += wall;
          slices.set(key, acc);
          o.log(
            `processes ${s.processes} ${k} round ${round + 1}/${o.rounds}: ${Math.round(load.opsPerSec)}/s ` +
              `p99 ${load.p99.toFixed(1)} ms`,
          );
        }
    }
    for (const s of services) await s.pool.close();
    return {
      services: services.map((s) => ({
        processes: s.processes,
        ops: Object.fromEntries(
          kinds.map((k) => {
            const acc = slices.get(`${s.processes}|${k}`)!;
            return [k, { load: sumLoads(acc.loads), cores: acc.cpu / acc.wall }];
          }),
        ),
      })),
    };
  } finally {
    for (const stop of stops.reverse()) stop();
    await new Promise((res) => setTimeout(res, 2000));
    await schema.drop().catch(() => {});
  }
}
