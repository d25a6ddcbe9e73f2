/**
 * `tsx tests/bench/engine-micro.ts`: per-statement cost of the embedded engine
 * through the service's own Sql adapter (openSql -> PGlite on a data dir), and
 * alternative shapes of the record reads, to explain the main bench.
 * rm_records is created from the real projection DDL and filled with 3,000 rows. Last: transactions of ten upserts
 * on this thread and on the embedded database's own thread (openPgliteThread, fed one statement per message), with
 * the CPU each thread spent a statement (docs/benchmarks.md, Cores: the database in a thread of its own).
 */
import { randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { openPgliteThread, openSql } from '@svc/deploy';
import type { Sql } from '@svc/domain';
import { recordsProjection } from '@svc/projectors';
import { RecordReads } from '@svc/query-api';
import { tempDir } from '../src/support/engines';
import { closedLoop } from './load';
import { cpuSplitSeconds } from './process-tree';

const d = tempDir('svc-bench-micro-');
const sql = await openSql({ dataDir: d.dir });
const ms = Number(process.env.BENCH_MS ?? 2000);
const show = (name: string, r: { opsPerSec: number; p50: number; p99: number }) =>
  console.log(
    `${name.padEnd(62)} ${Math.round(r.opsPerSec).toString().padStart(7)} /s  p50 ${r.p50.toFixed(2)} ms  ` +
      `p99 ${r.p99.toFixed(2)} ms`,
  );
const LIST =
  `SELECT * FROM rm_records WHERE tenant_id = $1 AND context_id = $2 AND type_name = $3 ORDER BY ` +
  `created_at, record_id LIMIT 21`;
try {
  await sql.exec(recordsProjection().ddl);
  const cols = (
    await sql.query<{ column_name: string; data_type: string }>(
      `SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'rm_records' ` +
        `ORDER BY ordinal_position`,
    )
  ).rows;
  const ids: string[] = [];
  await sql.tx(async (q) => {
    for (let i = 0; i < 3000; i++) {
      const id = randomUUID();
      ids.push(id);
      const vals = cols.map(({ column_name: c, data_type: t }) => {
        if (c === 'record_id') return id;
        if (c === 'tenant_id') return 'T';
        if (c === 'context_id') return 'C';
        if (c === 'type_name') return 'bench_item';
        if (c === 'payload') return JSON.stringify({ name: `item ${i}`, qty: i, tag: 't1' });
        if (c === 'scopes') return '[]';
        if (t.startsWith('timestamp')) return new Date(Date.now() + i).toISOString();
        if (t === 'integer' || t === 'bigint') return 1;
        if (t === 'boolean') return false;
        if (t === 'jsonb') return '{}';
        return 'x';
      });
      await q.query(
        `INSERT INTO rm_records (${cols.map((c) => c.column_name).join(',')}) VALUES ` +
          `(${cols.map((_, k) => `$${k + 1}`).join(',')})`,
        vals,
      );
    }
  });
  await sql.exec('ANALYZE rm_records');
  const reads = new RecordReads(sql);
  const id = (s: number) => ids[s % ids.length];
  const t = { concurrency: 32, warmupMs: 300, durationMs: ms };
  console.log('# statements (32 concurrent callers)');
  show(
    `query('SELECT 1') (extended protocol)`,
    await closedLoop({ ...t, op: async () => void (await sql.query('SELECT 1')) }),
  );
  show(
    `exec('SELECT 1') (simple protocol)`,
    await closedLoop({ ...t, op: async () => void (await sql.exec('SELECT 1')) }),
  );
  show(
    `autocommit INSERT`,
    await closedLoop({
      ...t,
      op: async () =>
        void (await sql.query('INSERT INTO rm_tmp VALUES ($1)', [randomUUID()]).catch(async () => {
          await sql.exec('CREATE TABLE IF NOT EXISTS rm_tmp (id text PRIMARY KEY)');
        })),
    }),
  );
  show(
    `tx(BEGIN; 4× SELECT 1; COMMIT)`,
    await closedLoop({
      ...t,
      op: async () =>
        void (await sql.tx(async (q) => {
          for (let i = 0; i < 4; i++) await q.query('SELECT 1');
        })),
    }),
  );
  console.log('# projection write shape: 32 new rm_records rows in one transaction (per row)');
  const rowsFor = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      record_id: randomUUID(),
      tenant_id: 'W',
      context_id: 'C',
      schema_id: 'S',
      type_name: 'bench_item',
      schema_version: 1,
      payload: { name: `item ${i}`, qty: i, tag: 't1' },
      payload_bytes: 40,
      externalized: false,
      status: 'ACTIVE',
      folder_id: null,
      user_id: null,
      scopes: [],
      external_id: null,
      index_mode: 'NONE',
      index_status: null,
      created_by: 'k',
      created_at: new Date().toISOString(),
      updated_at: new Date().toISOString(),
      version: 1,
      revision: 0,
    }));
  const names = cols.map((c) => c.column_name);
  const perRow =
    `INSERT INTO rm_records (${names.join(',')}) VALUES (${names.map((_, k) => `$${k + 1}`).join(',')}) ON ` +
    `CONFLICT (record_id) DO NOTHING`;
  const t1 = { concurrency: 1, warmupMs: 300, durationMs: ms };
  show(
    `32 × INSERT ... VALUES (one statement per row)`,
    await closedLoop({
      ...t1,
      op: async () =>
        void (await sql.tx(async (q) => {
          for (const r of rowsFor(32))
            await q.query(
              perRow,
              names.map((n) => {
                const v = (r as Record<string, unknown>)[n];
                return v !== null && typeof v === 'object' ? JSON.stringify(v) : v;
              }),
            );
        })),
    }).then((r) => ({ ...r, opsPerSec: r.opsPerSec * 32 })),
  );
  show(
    `1 × INSERT ... SELECT FROM jsonb_populate_recordset (32 rows)`,
    await closedLoop({
      ...t1,
      op: async () =>
        void (await sql.tx((q) =>
          q.query(
            `INSERT INTO rm_records SELECT * FROM jsonb_populate_recordset(null::rm_records, $1::jsonb) ` +
              `ON CONFLICT (record_id) DO NOTHING`,
            [JSON.stringify(rowsFor(32))],
          ),
        )),
    }).then((r) => ({ ...r, opsPerSec: r.opsPerSec * 32 })),
  );
  console.log('# by id');
  show(
    `RecordReads.byId (SELECT *, 21 cols)`,
    await closedLoop({ ...t, op: async (_w, s) => void (await reads.byId(id(s))) }),
  );
  show(
    `SELECT record_id only`,
    await closedLoop({
      ...t,
      op: async (_w, s) => void (await sql.query('SELECT record_id FROM rm_records WHERE record_id = $1', [id(s)])),
    }),
  );
  show(
    `row_to_json(r)::text + JSON.parse`,
    await closedLoop({
      ...t,
      op: async (_w, s) =>
        void JSON.parse(
          (
            await sql.query<{ j: string }>('SELECT row_to_json(r)::text AS j FROM rm_records r WHERE record_id = $1', [
              id(s),
            ])
          ).rows[0].j,
        ),
    }),
  );
  show(
    `32 ids in one RecordReads.byIds (ANY), per id`,
    await closedLoop({
      ...t,
      op: async (_w, s) => void (await reads.byIds(Array.from({ length: 32 }, (_, k) => id(s * 32 + k)))),
    }).then((r) => ({ ...r, opsPerSec: r.opsPerSec * 32 })),
  );
  console.log('# list page (21 rows)');
  show(
    `RecordReads.list (11 params, generic WHERE)`,
    await closedLoop({
      ...t,
      op: async () => void (await reads.list('T', 'C', { type: 'bench_item' }, undefined, 21)),
    }),
  );
  show(
    `same rows, specific WHERE, SELECT *`,
    await closedLoop({ ...t, op: async () => void (await sql.query(LIST, ['T', 'C', 'bench_item'])) }),
  );
  show(
    `same rows, record_id only`,
    await closedLoop({
      ...t,
      op: async () => void (await sql.query(LIST.replace('SELECT *', 'SELECT record_id'), ['T', 'C', 'bench_item'])),
    }),
  );
  show(
    `same rows as json_agg(r)::text + JSON.parse`,
    await closedLoop({
      ...t,
      op: async () =>
        void JSON.parse(
          (await sql.query<{ j: string }>(`SELECT json_agg(r)::text AS j FROM (${LIST}) r`, ['T', 'C', 'bench_item']))
            .rows[0].j,
        ),
    }),
  );
  console.log('# transactions of 10 upserts: this thread vs the database in its own thread (CPU a statement)');
  const threadCpu = () =>
    new Map(
      readdirSync('/proc/self/task').map((t) => {
        const c = cpuSplitSeconds(process.pid, Number(t));
        return [Number(t), c.user + c.system] as const;
      }),
    );
  const UPSERT = 'INSERT INTO t VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc';
  // The same loop run inside a thread, statements sent as the adapters send them (one exchange each) but no message
  // between threads a statement: what the thread costs alone.
  const LOOP_IN_THREAD = `
    const { parentPort, workerData } = require('node:worker_threads');
    (async () => {
      const { PGlite } = await import(workerData.pglite);
      const { queryInOneExchange } = await import(workerData.exchange);
      const db = await PGlite.create({ dataDir: workerData.dir });
      await db.exec('CREATE TABLE t (id int PRIMARY KEY, doc jsonb)');
      const c0 = process.threadCpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < workerData.n; i += 10)
        await db.transaction(async () => {
          for (let j = i; j < i + 10; j++)
            await queryInOneExchange(db, workerData.upsert, [j, { j }], true);
        });
      const c = process.threadCpuUsage(c0);
      parentPort.postMessage({ wall: performance.now() - t0, cpuUs: c.user + c.system });
      await db.close();
    })();`;
  for (let round = 0; round < 2; round++) {
    const dir = tempDir('svc-bench-micro-thread-');
    const n = 5000;
    const r = await new Promise<{ wall: number; cpuUs: number }>((resolve, reject) => {
      const w = new Worker(LOOP_IN_THREAD, {
        eval: true,
        execArgv: [],
        workerData: {
          dir: dir.dir,
          n,
          upsert: UPSERT,
          pglite: import.meta.resolve('@electric-sql/pglite'),
          exchange: new URL('../../deploy/src/engines/pglite-exchange.mjs', import.meta.url).href,
        },
      });
      w.once('message', (m) => (resolve(m), void w.terminate()));
      w.once('error', reject);
    });
    dir.remove();
    console.log(
      `${'loop in a thread'.padEnd(16)} ${((r.wall / n) * 1000).toFixed(0)} us a statement (wall); CPU a statement: ` +
        `that thread ${(r.cpuUs / n).toFixed(0)} us`,
    );
  }
  for (const where of ['this thread', 'own thread', 'this thread', 'own thread']) {
    const dir = tempDir('svc-bench-micro-thread-');
    const db: Sql = where === 'own thread' ? await openPgliteThread(dir.dir) : await openSql({ dataDir: dir.dir });
    try {
      await db.exec('CREATE TABLE t (id int PRIMARY KEY, doc jsonb)');
      const n = 5000;
      const before = threadCpu();
      const t0 = performance.now();
      for (let i = 0; i < n; i += 10)
        await db.tx(async (q) => {
          for (let j = i; j < i + 10; j++)
            await q.query('INSERT INTO t VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc', [
              j,
              { j },
            ]);
        });
      const wall = (performance.now() - t0) / n;
      const spent = [...threadCpu()]
        .map(([tid, s]) => ({ tid, us: ((s - (before.get(tid) ?? 0)) * 1e6) / n }))
        .filter((x) => x.us >= 1)
        .sort((a, b) => b.us - a.us);
      const main = spent.find((x) => x.tid === process.pid)?.us ?? 0;
      const other = spent.find((x) => x.tid !== process.pid)?.us ?? 0;
      console.log(
        `${where.padEnd(16)} ${(wall * 1000).toFixed(0)} us a statement (wall); CPU a statement: this thread ` +
          `${main.toFixed(0)} us, the busiest other thread ${other.toFixed(0)} us`,
      );
    } finally {
      await db.close();
      dir.remove();
    }
  }
} finally {
  await sql.close();
  d.remove();
}
