import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Pool } from 'undici';
import { RECENT_RECORDS_KEPT } from '@svc/query-api';
import { OPERATOR_TOKEN, spawnService, type Bootstrap } from '../src/support/service';
import { BENCH_ACCOUNT_TERMS } from './account';
import { closedLoop, type LoadResult } from './load';
import { signalTree } from './process-tree';
import type { Timing } from './raw';
import { BENCH_SCHEMA, createBody, lookupPath } from './workload';

/** Children started by this run; run.ts kills whatever is left on exit. */
export const children = new Set<ChildProcess>();

export function killChildren(signal: NodeJS.Signals = 'SIGKILL') {
  for (const c of children)
    if (c.exitCode === null && c.signalCode === null) {
      // A service the searchable bench stopped (SIGSTOP) would leave its model processes stopped behind it.
      if (c.pid) signalTree(c.pid, 'SIGCONT');
      c.kill(signal);
    }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

export interface HttpService {
  url: string;
  dataDir: string;
  bootstrap: Bootstrap;
  child: ChildProcess;
  output(): string;
  /** SIGTERM (clean close of PGlite), SIGKILL after 20 s. */
  stop(): Promise<void>;
}

/**
 * `npm start` in a child process on `dataDir` (spawnService), so the load generator here does not share its event loop.
 */
export async function startHttpService(dataDir: string, env: Record<string, string> = {}): Promise<HttpService> {
  const port = await freePort();
  // Every request of a bench comes from this one address: the edge's per-IP flood ceiling (20,000 a minute by
  // default) would answer 429 to the load itself (the records section's /healthz floor alone sends ~35,000).
  const started = spawnService(dataDir, port, { EDGE_RATE_LIMIT_PER_MINUTE: '0', ...env });
  const { child, api, output } = await started;
  children.add(child);
  const bootstrap = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')) as Bootstrap;
  // The bootstrap account is what the bench drives (BENCH_ACCOUNT_TERMS).
  const acct = await api.call('PATCH', `/operator/accounts/${bootstrap.accountId}`, {
    token: OPERATOR_TOKEN,
    body: BENCH_ACCOUNT_TERMS,
  });
  if (acct.status !== 200) throw new Error(`bench account update failed: ${acct.status} ${acct.text}`);
  return {
    url: api.baseUrl,
    dataDir,
    bootstrap,
    child,
    output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(t);
      children.delete(child);
    },
  };
}

/** Size of the by-id working set read over and over. */
export const HOT_SET = 2000;

export interface HttpResults {
  /** GET /healthz: the HTTP stack and this load generator without the database (the ceiling on this machine). */
  floor: LoadResult;
  create: LoadResult;
  /** By id over a fixed working set of `hotIds` ids (cache-resident after warm-up). */
  byId: LoadResult;
  /** By id, each of `coldIds` ids read once (what a cache cannot help with). */
  byIdCold: LoadResult;
  hotIds: number;
  coldIds: number;
  /** Of the cold ids, those among the service's newest RECENT_RECORDS_KEPT creates (read without a query). */
  coldRecent: number;
  /**
   * The service's projection runner during the measured creates (from /readyz): events per batch shows whether group
   * commit batches.
   */
  projection: { batches: number; events: number };
  list: LoadResult;
  listRows: number;
  /** GET /v1/records/lookup (exact, 16 rotating values, 20 rows a page). */
  lookup: LoadResult;
  ids: string[];
  schemaId: string;
}

/** Records over HTTP with an undici Pool (32 connections, no pipelining): create, by-id GET, list page GET. */
export async function httpRecords(svc: HttpService, t: Timing & { createMs: number }): Promise<HttpResults> {
  const root = svc.bootstrap.tenants.live.rootKey;
  const headers = { authorization: `Bearer ${root}`, 'content-type': 'application/json' };
  const pool = new Pool(svc.url, { connections: t.concurrency, pipelining: 1 });
  try {
    const s = await pool.request({ method: 'POST', path: '/v1/schemas', headers, body: JSON.stringify(BENCH_SCHEMA) });
    const schemaText = await s.body.text();
    if (s.statusCode !== 201) throw new Error(`schema create failed: ${s.statusCode} ${schemaText}`);
    const schemaId = JSON.parse(schemaText).id as string;

    const floor = await closedLoop({
      concurrency: t.concurrency,
      warmupMs: 500,
      durationMs: 3000,
      op: async () => {
        const res = await pool.request({ method: 'GET', path: '/healthz' });
        await res.body.text();
        if (res.statusCode !== 200) throw new Error(`GET /healthz ${res.statusCode}`);
      },
    });

    const stats = async () => {
      const res = await pool.request({ method: 'GET', path: '/readyz' });
      const body = (await res.body.json()) as { projections?: Array<{ batches: number; events: number }> };
      return body.projections?.[0] ?? { batches: 0, events: 0 };
    };
    const ids: string[] = [];
    let before = { batches: 0, events: 0 };
    const create = await closedLoop({
      concurrency: t.concurrency,
      warmupMs: t.warmupMs,
      durationMs: t.createMs,
      onMeasureStart: async () => {
        before = await stats();
      },
      op: async (_w, seq) => {
        const res = await pool.request({ method: 'POST', path: '/v1/records', headers, body: createBody(seq) });
        const text = await res.body.text();
        if (res.statusCode !== 201) throw new Error(`POST /v1/records ${res.statusCode}: ${text.slice(0, 200)}`);
        // Cheap id extraction (the generator shares the machine with the server): "id" is the first key.
        const m = /"id":"([^"]+)"/.exec(text);
        if (m) ids.push(m[1]);
      },
    });
    const after = await stats();
    const projection = { batches: after.batches - before.batches, events: after.events - before.events };
    if (ids.length === 0) throw new Error(`no record was created: ${create.firstError}`);

    const getHeaders = { authorization: headers.authorization };
    const get = async (id: string) => {
      const res = await pool.request({ method: 'GET', path: `/v1/records/${id}`, headers: getHeaders });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`GET /v1/records/:id ${res.statusCode}: ${text.slice(0, 200)}`);
    };
    // Hot: a fixed working set (the first HOT_SET ids), read over and over -> a read cache holds it after warm-up.
    const hot = ids.slice(0, HOT_SET);
    const byId = await closedLoop({ ...t, op: (_w, seq) => get(hot[seq % hot.length]) });
    // Cold: every request a different id the hot phase never read (each id once; the phase ends when they run out).
    // Those among the service's newest RECENT_RECORDS_KEPT creates are served from the rows the projector kept (no
    // query): counted apart, so the line says what it measured (the peers section reads only older ids).
    let next = hot.length;
    const cold = ids.length - hot.length;
    const coldRecent = Math.min(cold, RECENT_RECORDS_KEPT);
    const byIdCold = await closedLoop({
      ...t,
      warmupMs: cold >= 5000 ? 300 : 0,
      op: async () => {
        if (next >= ids.length) return 'stop';
        await get(ids[next++]);
      },
    });

    let listRows = 0;
    const list = await closedLoop({
      ...t,
      op: async () => {
        const res = await pool.request({
          method: 'GET',
          path: `/v1/records?type=${BENCH_SCHEMA.typeName}&limit=20`,
          headers: getHeaders,
        });
        const text = await res.body.text();
        if (res.statusCode !== 200) throw new Error(`GET /v1/records ${res.statusCode}: ${text.slice(0, 200)}`);
        listRows = text.split('"id":').length - 1;
      },
    });
    const lookup = await closedLoop({
      ...t,
      op: async (_w, seq) => {
        const res = await pool.request({ method: 'GET', path: lookupPath(seq), headers: getHeaders });
        const text = await res.body.text();
        if (res.statusCode !== 200) throw new Error(`GET /v1/records/lookup ${res.statusCode}: ${text.slice(0, 200)}`);
      },
    });
    return {
      floor,
      create,
      projection,
      byId,
      byIdCold,
      hotIds: hot.length,
      coldIds: cold,
      coldRecent,
      list,
      listRows,
      lookup,
      ids,
      schemaId,
    };
  } finally {
    await pool.close();
  }
}
