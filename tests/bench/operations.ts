import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Pool } from 'undici';
import { EVENT_SCHEMA_VERSION, type Principal } from '@svc/contracts';
import { ActivityRecorder, openPglite, openPgliteThread } from '@svc/deploy';
import { PostgresEventStore } from '@svc/deploy';
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
 * RATE_LIMITS=0, ACTIVITY_LOG=0): two child processes on fresh data directories,
 * started together and measured in alternating slices of `sliceMs` (off/on,
 * then on/off, ...) so drift in the machine's load falls on both; the ratio is
 * of the summed throughput. Target: together they cost under 10 % of throughput.
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
  /**
   * The service's CPU time per create (process tree, /proc), over all slices: on / off is the cost machine load
   * disturbs least.
   */
  cpuMsPerOp: { on: number; off: number };
  /**
   * What the "on" runs showed was on, and the "off" runs off: activity entries seen (the query caps at 500),
   * X-RateLimit-Limit on creates, credits metered.
   */
  seen: { on: Seen; off: Seen };
  /**
   * The recorder alone, in this process on PGlite in its own thread: CPU time per entry on the request's thread
   * (onResponse, the write's hand-off) and for the write in all threads.
   */
  micro: { entries: number; onResponseUs: number; writeUs: number; writeAllUs: number };
  /** GET /v1/export of the "on" service's tenant, over HTTP. */
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
    const p = {
      credentialId: randomUUID(),
      kind: 'root',
      accountId: 'a',
      tenantId: randomUUID(),
      environment: 'live',
      contextId: randomUUID(),
      crossContext: true,
      allowedActions: ['*'],
      dataScope: null,
      userId: null,
      wireVersionPin: null,
    } as Principal;
    const reqs = Array.from(
      { length: 1000 },
      () =>
        ({
          url: '/v1/records',
          method: 'POST',
          id: randomUUID(),
          headers: {},
          principal: p,
        }) as unknown as FastifyRequest,
    );
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
    for (let grew = true; grew;) {
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

/** One variant's service, its account and schema, ready for slices of creates. */
async function openVariant(dataDir: string, on: boolean, concurrency: number, childEnv: Record<string, string>) {
  // No per-IP ceiling in the way; "on", an enterprise account with a negotiated limit far above the load (every request
  // still counted).
  const flags = Object.fromEntries(SWITCHES.map((k) => [k, on && ON.includes(k) ? '1' : '0']));
  const svc = await startHttpService(dataDir, { ...childEnv, ...flags, EDGE_RATE_LIMIT_PER_MINUTE: '0' });
  const pool = new Pool(svc.url, { connections: concurrency, pipelining: 1 });
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
    return { on, svc, pool, headers, rateLimitHeader: null as string | null, seq: 0 };
  } catch (e) {
    await pool.close();
    await svc.stop();
    await settle(dataDir);
    throw e;
  }
}
type Variant = Awaited<ReturnType<typeof openVariant>>;

/** A closed loop of creates on one variant; its service's CPU (process tree) over the measured part. */
async function slice(v: Variant, concurrency: number, warmupMs: number, durationMs: number) {
  let cpu0 = NaN;
  const create = await closedLoop({
    concurrency,
    warmupMs,
    durationMs,
    onMeasureStart: async () => void (cpu0 = treeCpuMs(v.svc.child.pid)),
    op: async () => {
      const res = await v.pool.request({
        method: 'POST',
        path: '/v1/records',
        headers: v.headers,
        body: createBody(v.seq++),
      });
      const text = await res.body.text();
      if (res.statusCode !== 201) throw new Error(`POST /v1/records ${res.statusCode}: ${text.slice(0, 200)}`);
      v.rateLimitHeader = (res.headers['x-ratelimit-limit'] as string | undefined) ?? null;
    },
  });
  return { create, cpuMs: treeCpuMs(v.svc.child.pid) - cpu0 };
}

/**
 * What the variant showed was on or off: its activity entries (the log lags by a flush period), the limit header,
 * credits metered.
 */
async function seenOf(v: Variant): Promise<Seen> {
  await new Promise((r) => setTimeout(r, 1000));
  const auth = { authorization: v.headers.authorization };
  const l = await v.pool.request({
    method: 'GET',
    path: '/v1/admin/logs?resource=records&method=POST&limit=500',
    headers: auth,
  });
  const body = (await l.body.json()) as { entries?: unknown[] };
  if (l.statusCode !== 200) throw new Error(`GET /v1/admin/logs ${l.statusCode}: ${JSON.stringify(body)}`);
  const u = await v.pool.request({ method: 'GET', path: '/v1/usage', headers: auth });
  const usage = (await u.body.json()) as { credits?: { usedMilli?: number } };
  if (u.statusCode !== 200) throw new Error(`GET /v1/usage ${u.statusCode}: ${JSON.stringify(usage)}`);
  return {
    logged: body.entries?.length ?? 0,
    rateLimitHeader: v.rateLimitHeader,
    usedMilli: usage.credits?.usedMilli ?? 0,
  };
}

/**
 * After a stopped service: its data directory removed and the kernel's dirty pages written out, so what comes
 * next does not share the disk and the CPUs with its writeback (without it, later runs were 20-40 % slower
 * whichever variant they were: CPU per create 0.87 ms in the first rounds, 1.2 ms by the fifth).
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
  if (res.statusCode !== 200)
    throw new Error(`GET /v1/export ${res.statusCode}: ${(await res.body.text()).slice(0, 200)}`);
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
            data: {
              recordId,
              typeName: 'bench_item',
              payload: {
                name: `item ${seeded + v} ${'x'.repeat(120)}`,
                qty: v,
                tag: `t${v}`,
                secret: { $sealed: 'A'.repeat(88) },
              },
            },
            metadata: {
              tenantId,
              contextId,
              accountId: 'bench-account',
              actorKeyId: 'bench-key',
              userId: null,
              requestId: randomUUID(),
              occurredAt: new Date().toISOString(),
              schemaVersion: EVENT_SCHEMA_VERSION,
            },
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
    for (let after = 0; ;) {
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
  /** Measured time per variant: rounds × createMs, in slices of sliceMs. */
  rounds: number;
  /** One slice of creates (default 2,000 ms): the two variants alternate slice by slice. */
  sliceMs?: number;
  childEnv?: Record<string, string>;
  log: (m: string) => void;
}): Promise<OperationsBench> {
  const rounds: OperationsBench['rounds'] = [];
  const cpu = { on: 0, off: 0 };
  const t = o.timing;
  const sliceMs = o.sliceMs ?? 2000;
  const pairs = Math.round((o.rounds * t.createMs) / sliceMs);
  const variants: Variant[] = [];
  let seen: OperationsBench['seen'] = {
    on: { logged: 0, rateLimitHeader: null, usedMilli: 0 },
    off: { logged: 0, rateLimitHeader: null, usedMilli: 0 },
  };
  let httpExport: ExportFigures | undefined;
  try {
    // Both services run side by side (each on its own data directory) and take turns: a pair of slices is
    // measured within seconds, so the machine's swings (here its speed moved 3-4x from one minute to the
    // next) fall on both variants alike; the idle one only keeps its timers.
    for (const on of [false, true])
      variants.push(await openVariant(o.newDir(on ? 'ops-on-' : 'ops-off-'), on, t.concurrency, o.childEnv ?? {}));
    const [off, on] = variants;
    for (const v of variants) await slice(v, t.concurrency, 0, t.warmupMs);
    for (let i = 0; i < pairs; i++) {
      const got: Partial<Record<'on' | 'off', LoadResult>> = {};
      for (const v of i % 2 === 0 ? [off, on] : [on, off]) {
        // A short warm-up per slice (discarded): the other variant's last requests and the activity log's flush settle
        // first.
        const r = await slice(v, t.concurrency, 300, sliceMs);
        got[v.on ? 'on' : 'off'] = r.create;
        cpu[v.on ? 'on' : 'off'] += r.cpuMs;
        if (r.create.errors)
          throw new Error(`${v.on ? 'on' : 'off'}: ${r.create.errors} failed creates: ${r.create.firstError}`);
      }
      rounds.push({ on: got.on!, off: got.off! });
    }
    seen = { off: await seenOf(off), on: await seenOf(on) };
    httpExport = await exportOverHttp(on.pool, { authorization: on.headers.authorization });
    o.log(
      `X1 GET /v1/export of the "on" tenant: ${httpExport.events} lines, ` +
        `${(httpExport.bytes / 2 ** 20).toFixed(1)} MiB in ${httpExport.seconds.toFixed(2)} s = ` +
        `${Math.round(httpExport.eventsPerSec)} events/s`,
    );
  } catch (e) {
    for (const v of variants) console.error(v.svc.output().slice(-4000));
    throw e;
  } finally {
    for (const v of variants) {
      await v.pool.close();
      await v.svc.stop();
      await settle(v.svc.dataDir);
    }
  }
  const micro = await recorderMicro(o.newDir('al-micro-'));
  o.log(
    `A recorder alone: onResponse ${micro.onResponseUs.toFixed(2)} µs/entry, batched write ` +
      `${micro.writeUs.toFixed(2)} µs/entry on the API thread, ${micro.writeAllUs.toFixed(2)} µs/entry in ` +
      `all threads (${micro.entries} entries, PGlite in its own thread)`,
  );
  if (rounds.length === 0)
    return {
      on: sumLoads([]),
      off: sumLoads([]),
      ratio: NaN,
      rounds,
      cpuMsPerOp: { on: NaN, off: NaN },
      seen,
      micro,
      httpExport,
    };
  const onAll = sumLoads(rounds.map((r) => r.on));
  const offAll = sumLoads(rounds.map((r) => r.off));
  const cpuMsPerOp = { on: cpu.on / Math.max(1, onAll.ops), off: cpu.off / Math.max(1, offAll.ops) };
  return {
    on: onAll,
    off: offAll,
    ratio: onAll.opsPerSec / offAll.opsPerSec,
    rounds,
    cpuMsPerOp,
    seen,
    micro,
    httpExport,
  };
}
