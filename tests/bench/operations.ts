import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Pool } from 'undici';
import { EVENT_SCHEMA_VERSION, type Principal } from '@svc/contracts';
import { ActivityRecorder, openPglite, openPgliteThread } from '@svc/deploy';
import { PostgresEventStore } from '@svc/command-api';
import { readTenantEvents } from '@svc/domain';
import { ActivityLogStore, EXPORT_PAGE, exportChunks } from '@svc/query-api';
import { OPERATOR_TOKEN } from '../src/support/service';
import { startHttpService } from './http';
import { closedLoop, type LoadResult, sumLoads } from './load';
import type { Timing } from './raw';
import { BENCH_SCHEMA, createBody } from './workload';

/**
 * What running the service as a business costs (BENCH_ONLY=operations): record
 * create over HTTP (the H2 workload: 32 connections, one small record a
 * request) against a service with metering, the per-account burst limit and the
 * activity log on, and the same service with all three off (METERING=0,
 * RATE_LIMITS=0, ACTIVITY_LOG=0), each a fresh child process on a fresh data
 * directory. Variants alternate over `rounds` (off/on, then on/off, ...) so
 * drift in the machine's load falls on both; the ratio is of the summed
 * throughput. Target: together they cost under 10 % of throughput.
 *
 * Then the audit export: GET /v1/export of the last "on" tenant through HTTP,
 * and the export alone in this process over a seeded log of BENCH_EXPORT_EVENTS
 * events (default 200,000) against the engine's own tenant reads, with the heap
 * sampled on every chunk (the export holds one page, whatever its size).
 */
export interface OperationsBench {
  on: LoadResult;
  off: LoadResult;
  /** on / off throughput. */
  ratio: number;
  rounds: Array<{ on: LoadResult; off: LoadResult }>;
  /** The service's CPU time per create (process tree, /proc), mean of the runs: on / off is the cost machine load disturbs least. */
  cpuMsPerOp: { on: number; off: number };
  /** What the "on" runs showed was on, and the "off" runs off: activity entries seen (the query caps at 500), X-RateLimit-Limit on creates, credits metered. */
  seen: { on: Seen; off: Seen };
  /** The recorder alone, in this process on PGlite in its own thread: CPU time per entry on the request's thread (onResponse, the write's hand-off) and for the write in all threads. */
  micro: { entries: number; onResponseUs: number; writeUs: number; writeAllUs: number };
  /** GET /v1/export of the last "on" run's tenant, over HTTP. */
  httpExport?: ExportFigures;
}

export interface Seen {
  logged: number;
  rateLimitHeader: string | null;
  usedMilli: number;
}

export interface ExportFigures {
  events: number;
  bytes: number;
  seconds: number;
  eventsPerSec: number;
}

/** CPU time of this process's main thread so far, µs (Linux schedstat, nanoseconds); NaN where it is not there. */
function mainThreadCpuUs(): number {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
  } catch {
    return NaN;
  }
}

/**
 * The recorder alone, in this process, on an embedded database in its own thread as the embedded default
 * keeps it (DATA_DIR/pg-search): microseconds per entry for `onResponse` (what every request pays after its
 * response), for the batched write on this (the API's) thread (handing the rows over), and for the write in
 * all (the database thread's INSERTs too). Measured in CPU time (schedstat of the main thread; process.cpuUsage
 * for all), so other load on the machine does not inflate it, unlike the HTTP ratio.
 */
export async function recorderMicro(dir: string, entries = 20_000) {
  const sql = await openPgliteThread(join(dir, 'pg'));
  try {
    const store = new ActivityLogStore(sql);
    await store.init();
    const rec = new ActivityRecorder({ store, flushEveryMs: 3_600_000, maxBuffered: entries * 2 });
    const p = { credentialId: randomUUID(), kind: 'root', accountId: 'a', tenantId: randomUUID(), environment: 'live', contextId: randomUUID(), crossContext: true, allowedActions: ['*'], dataScope: null, userId: null, wireVersionPin: null } as Principal;
    const reqs = Array.from({ length: 1000 }, () => ({ url: '/v1/records', method: 'POST', id: randomUUID(), headers: {}, principal: p }) as unknown as FastifyRequest);
    const reply = { statusCode: 201 } as FastifyReply;
    // The batch trigger would flush during the loop: measure the hand-off alone, then the writes.
    let handoff = 0;
    let write = 0;
    let writeAll = 0;
    const cpu = (c: NodeJS.CpuUsage) => c.user + c.system;
    for (let done = 0; done < entries; done += 500) {
      const t0 = mainThreadCpuUs();
      for (let i = 0; i < 500; i++) rec.onResponse(reqs[(done + i) % reqs.length], reply, 3.2);
      handoff += mainThreadCpuUs() - t0;
      const t1 = mainThreadCpuUs();
      const c1 = process.cpuUsage();
      await rec.flush();
      writeAll += cpu(process.cpuUsage(c1));
      write += mainThreadCpuUs() - t1;
    }
    await rec.close();
    return { entries, onResponseUs: handoff / entries, writeUs: write / entries, writeAllUs: writeAll / entries };
  } finally {
    await sql.close();
  }
}

/**
 * CPU time (ms) of process `pid` and its descendants, from /proc (Linux): the service's own cost per operation,
 * which other load on the machine disturbs far less than its throughput. NaN where /proc is not there.
 */
export function treeCpuMs(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const stats = readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .map((d) => {
        try {
          const t = readFileSync(`/proc/${d}/stat`, 'utf8');
          const f = t.slice(t.lastIndexOf(')') + 2).split(' ');
          return { pid: Number(d), ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) };
        } catch {
          return null;
        }
      })
      .filter((x): x is { pid: number; ppid: number; ticks: number } => x !== null);
    const tree = new Set([pid]);
    for (let grew = true; grew; ) {
      grew = false;
      for (const x of stats) if (!tree.has(x.pid) && tree.has(x.ppid)) (tree.add(x.pid), (grew = true));
    }
    return stats.filter((x) => tree.has(x.pid)).reduce((a, x) => a + x.ticks, 0) * 10; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
}

const SWITCHES = ['METERING', 'RATE_LIMITS', 'ACTIVITY_LOG'] as const;
/** Which switches the "on" runs turn on (BENCH_OPERATIONS_ON, default all three): a diagnostic to measure one alone. */
const ON = (process.env.BENCH_OPERATIONS_ON ?? SWITCHES.join(',')).split(',').map((x) => x.trim());

async function oneRun(dataDir: string, on: boolean, t: Timing & { createMs: number }, childEnv: Record<string, string>, exportAfter: boolean) {
  // No per-IP ceiling in the way; "on", an enterprise account with a negotiated limit far above the load (every request still counted).
  const flags = Object.fromEntries(SWITCHES.map((k) => [k, on && ON.includes(k) ? '1' : '0']));
  const svc = await startHttpService(dataDir, { ...childEnv, ...flags, EDGE_RATE_LIMIT_PER_MINUTE: '0' });
  const pool = new Pool(svc.url, { connections: t.concurrency, pipelining: 1 });
  try {
    const acct = await pool.request({
      method: 'POST',
      path: '/operator/accounts',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ plan: 'enterprise', rateLimitPerMinute: 100_000_000, creditLimit: 1_000_000_000_000 }),
    });
    const acctText = await acct.body.text();
    if (acct.statusCode !== 201) throw new Error(`account create failed: ${acct.statusCode} ${acctText}`);
    const root = JSON.parse(acctText).tenants.live.rootKey as string;
    const headers = { authorization: `Bearer ${root}`, 'content-type': 'application/json' };
    const s = await pool.request({ method: 'POST', path: '/v1/schemas', headers, body: JSON.stringify(BENCH_SCHEMA) });
    const sText = await s.body.text();
    if (s.statusCode !== 201) throw new Error(`schema create failed: ${s.statusCode} ${sText}`);
    let rateLimitHeader: string | null = null;
    let cpu0 = NaN;
    const create = await closedLoop({
      concurrency: t.concurrency,
      warmupMs: t.warmupMs,
      durationMs: t.createMs,
      onMeasureStart: async () => void (cpu0 = treeCpuMs(svc.child.pid)),
      op: async (_w, seq) => {
        const res = await pool.request({ method: 'POST', path: '/v1/records', headers, body: createBody(seq) });
        const text = await res.body.text();
        if (res.statusCode !== 201) throw new Error(`POST /v1/records ${res.statusCode}: ${text.slice(0, 200)}`);
        rateLimitHeader = (res.headers['x-ratelimit-limit'] as string | undefined) ?? null;
      },
    });
    const cpuMsPerOp = (treeCpuMs(svc.child.pid) - cpu0) / Math.max(1, create.ops);
    // The entries of the run (the log lags by a flush period): on, there are many; off, none.
    await new Promise((r) => setTimeout(r, 1000));
    const auth = { authorization: headers.authorization };
    const l = await pool.request({ method: 'GET', path: '/v1/admin/logs?resource=records&method=POST&limit=500', headers: auth });
    const body = (await l.body.json()) as { entries?: unknown[] };
    if (l.statusCode !== 200) throw new Error(`GET /v1/admin/logs ${l.statusCode}: ${JSON.stringify(body)}`);
    const u = await pool.request({ method: 'GET', path: '/v1/usage', headers: auth });
    const usage = (await u.body.json()) as { credits?: { usedMilli?: number } };
    if (u.statusCode !== 200) throw new Error(`GET /v1/usage ${u.statusCode}: ${JSON.stringify(usage)}`);
    const seen: Seen = { logged: body.entries?.length ?? 0, rateLimitHeader, usedMilli: usage.credits?.usedMilli ?? 0 };
    const httpExport = exportAfter ? await exportOverHttp(pool, auth) : undefined;
    return { create, seen, httpExport, cpuMsPerOp };
  } catch (e) {
    console.error(svc.output().slice(-4000));
    throw e;
  } finally {
    await pool.close();
    await svc.stop();
    await settle(dataDir);
  }
}

/**
 * Between runs: the stopped service's data directory removed and the kernel's dirty pages written out, so the
 * next run does not share the disk and the CPUs with the last one's writeback (without it, later runs were
 * 20-40 % slower whichever variant they were: CPU per create 0.87 ms in the first rounds, 1.2 ms by the fifth).
 */
async function settle(dataDir: string) {
  rmSync(dataDir, { recursive: true, force: true, maxRetries: 3 });
  execFileSync('sync');
  await new Promise((r) => setTimeout(r, 1000));
}

/** GET /v1/export read to the end as a stream (the client counts lines as they come). */
async function exportOverHttp(pool: Pool, headers: Record<string, string>): Promise<ExportFigures> {
  const t0 = performance.now();
  const res = await pool.request({ method: 'GET', path: '/v1/export', headers });
  if (res.statusCode !== 200) throw new Error(`GET /v1/export ${res.statusCode}: ${(await res.body.text()).slice(0, 200)}`);
  let events = 0;
  let bytes = 0;
  for await (const chunk of res.body) {
    const b = chunk as Buffer;
    bytes += b.length;
    for (let i = b.indexOf(10); i >= 0; i = b.indexOf(10, i + 1)) events++;
  }
  const seconds = (performance.now() - t0) / 1000;
  return { events, bytes, seconds, eventsPerSec: events / seconds };
}

/**
 * The export alone, in this process: a log of `count` events for one tenant (record streams of ten events, each
 * a RecordCreated-sized payload with one sealed-looking value), then (1) the engine's own tenant reads, page by
 * page (`readTenantEvents`, the raw figure), and (2) `exportChunks` over the same log (masking, JSON lines), with
 * heapUsed sampled on every chunk after a forced GC when available.
 */
export async function exportInProcess(dir: string, count: number, log: (m: string) => void) {
  const sql = await openPglite(join(dir, 'pg'));
  try {
    const store = await PostgresEventStore.open(sql);
    const tenantId = randomUUID();
    const contextId = randomUUID();
    const t0 = performance.now();
    let seeded = 0;
    const perStream = 10;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (seeded < count) {
          const recordId = randomUUID();
          seeded += perStream;
          const events = Array.from({ length: perStream }, (_, v) => ({
            id: randomUUID(),
            type: v === 0 ? 'RecordCreated' : 'RecordUpdated',
            data: { recordId, typeName: 'bench_item', payload: { name: `item ${seeded + v} ${'x'.repeat(120)}`, qty: v, tag: `t${v}`, secret: { $sealed: 'A'.repeat(88) } } },
            metadata: { tenantId, contextId, accountId: 'bench-account', actorKeyId: 'bench-key', userId: null, requestId: randomUUID(), occurredAt: new Date().toISOString(), schemaVersion: EVENT_SCHEMA_VERSION },
          }));
          await store.append(`record-${recordId}`, events, 'no_stream');
        }
      }),
    );
    log(`X seeded ${seeded} events in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const until = await store.headPosition();
    // (1) raw: the tenant's events read page by page, nothing else.
    const r0 = performance.now();
    let rawEvents = 0;
    for (let after = 0; ; ) {
      const page = await readTenantEvents(store, tenantId, after, EXPORT_PAGE, until);
      rawEvents += page.events.length;
      after = page.next;
      if (page.done) break;
    }
    const rawSeconds = (performance.now() - r0) / 1000;
    // (2) the export: lines as the route streams them.
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    const heap0 = process.memoryUsage().heapUsed;
    let heapMax = heap0;
    let lines = 0;
    let bytes = 0;
    let chunks = 0;
    const e0 = performance.now();
    for await (const chunk of exportChunks(store, { tenantId, after: 0, until })) {
      bytes += Buffer.byteLength(chunk);
      for (let i = chunk.indexOf('\n'); i >= 0; i = chunk.indexOf('\n', i + 1)) lines++;
      if (++chunks % 20 === 0) {
        gc?.();
        heapMax = Math.max(heapMax, process.memoryUsage().heapUsed);
      }
    }
    const seconds = (performance.now() - e0) / 1000;
    return {
      raw: { events: rawEvents, seconds: rawSeconds, eventsPerSec: rawEvents / rawSeconds },
      export: { events: lines, bytes, seconds, eventsPerSec: lines / seconds } satisfies ExportFigures,
      heapGrowthMb: (heapMax - heap0) / 2 ** 20,
      gcSampled: gc !== undefined,
    };
  } finally {
    await sql.close();
  }
}


export async function benchOperations(o: {
  newDir: (prefix: string) => string;
  timing: Timing & { createMs: number };
  rounds: number;
  childEnv?: Record<string, string>;
  log: (m: string) => void;
}): Promise<OperationsBench> {
  const rounds: OperationsBench['rounds'] = [];
  const seen: OperationsBench['seen'] = { on: { logged: 0, rateLimitHeader: null, usedMilli: 0 }, off: { logged: 0, rateLimitHeader: null, usedMilli: 0 } };
  let httpExport: ExportFigures | undefined;
  const cpu = { on: [] as number[], off: [] as number[] };
  for (let i = 0; i < o.rounds; i++) {
    const order = i % 2 === 0 ? [false, true] : [true, false];
    const got: Partial<Record<'on' | 'off', LoadResult>> = {};
    for (const on of order) {
      const last = on && i === o.rounds - 1;
      const r = await oneRun(o.newDir(on ? 'ops-on-' : 'ops-off-'), on, o.timing, o.childEnv ?? {}, last);
      got[on ? 'on' : 'off'] = r.create;
      seen[on ? 'on' : 'off'] = r.seen;
      cpu[on ? 'on' : 'off'].push(r.cpuMsPerOp);
      if (r.httpExport) httpExport = r.httpExport;
      const c = r.create;
      o.log(
        `O${i + 1} create, metering + rate limits + activity log ${on ? 'on ' : 'off'}: ${Math.round(c.opsPerSec)} ops/s, p50 ${c.p50.toFixed(1)} ms, p99 ${c.p99.toFixed(1)} ms, service CPU ${r.cpuMsPerOp.toFixed(2)} ms/op (${c.ops} ops${c.errors ? `, ${c.errors} errors: ${c.firstError}` : ''}); ` +
          `log entries ${r.seen.logged}, X-RateLimit-Limit ${r.seen.rateLimitHeader ?? 'absent'}, metered ${r.seen.usedMilli} milli-credits`,
      );
      if (r.httpExport) o.log(`X1 GET /v1/export of that tenant: ${r.httpExport.events} lines, ${(r.httpExport.bytes / 2 ** 20).toFixed(1)} MiB in ${r.httpExport.seconds.toFixed(2)} s = ${Math.round(r.httpExport.eventsPerSec)} events/s`);
    }
    rounds.push({ on: got.on!, off: got.off! });
  }
  const micro = await recorderMicro(o.newDir('al-micro-'));
  o.log(`A recorder alone: onResponse ${micro.onResponseUs.toFixed(2)} µs/entry, batched write ${micro.writeUs.toFixed(2)} µs/entry on the API thread, ${micro.writeAllUs.toFixed(2)} µs/entry in all threads (${micro.entries} entries, PGlite in its own thread)`);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const cpuMsPerOp = { on: mean(cpu.on), off: mean(cpu.off) };
  if (rounds.length === 0) return { on: sumLoads([]), off: sumLoads([]), ratio: NaN, rounds, cpuMsPerOp, seen, micro, httpExport };
  const on = sumLoads(rounds.map((r) => r.on));
  const off = sumLoads(rounds.map((r) => r.off));
  return { on, off, ratio: on.opsPerSec / off.opsPerSec, rounds, cpuMsPerOp, seen, micro, httpExport };
}
