import { Pool } from 'undici';
import { startHttpService, type HttpService } from './http';
import { closedLoop, type LoadResult, percentile, sumLoads } from './load';
import type { Timing } from './raw';
import { basePassages, syntheticPassage } from './search';
import { stealNote } from './steal';

/**
 * Searchable writes (BENCH_ONLY=searchable, issue 14): what users do with schemas whose records are searched.
 *
 *  (a) Record create over HTTP (32 connections) on a schema with one searchable text field (`indexMode` TEXT)
 *      against the same schema with nothing searchable (NONE), each a fresh service, alternating over rounds.
 *  (b) Write -> INDEXED: TEXT records written at a steady rate (open loop, BENCH_INDEX_RATE per second, default
 *      200), observed in write order by one reader until each `indexStatus` is INDEXED; latency from the create's answer.
 *      The service is fresh: the first BENCH_INDEX_WARMUP_SECONDS (2) of writes are its start (JIT, first statements:
 *      at 200/s the first ~40 creates queued for up to 0.3-0.7 s) and are reported apart, not in the steady figures.
 *  (c) Reads while an indexing backlog drains: get by id, exact lookup and TEXT search measured on a quiet
 *      service, then again while BENCH_BACKLOG (default 5,000) HYBRID records, written to another context of the
 *      tenant, wait for their embeddings (the built-in model embeds a few dozen such notes a second here, so the
 *      backlog outlasts the measurement). The reads see the same data both times.
 *
 * Bodies are synthetic passages of 500-700 characters (search.ts), the size of a real note or paragraph.
 */
export type IndexMode = 'NONE' | 'TEXT' | 'HYBRID';

export const noteSchema = (indexMode: IndexMode) => ({
  typeName: `note_${indexMode.toLowerCase()}`,
  displayName: `Note (${indexMode})`,
  allowedSurfaces: ['record'],
  indexMode,
  fields: [
    { fieldId: 'title', fieldType: 'string', required: true },
    { fieldId: 'tag', fieldType: 'string', filterable: true },
    { fieldId: 'body', fieldType: 'string', searchable: indexMode !== 'NONE' },
  ],
  lookupFields: ['tag'],
});

const BASES = basePassages(64);
export const noteBody = (typeName: string, seq: number) =>
  JSON.stringify({ typeName, payload: { title: `note ${seq}`, tag: `t${seq % 16}`, body: syntheticPassage(seq, BASES).text } });

export interface SearchableBench {
  create: { none: LoadResult; text: LoadResult; ratio: number; rounds: Array<{ none: LoadResult; text: LoadResult }> };
  indexed: {
    rate: number; achieved: number; written: number; reads: number; indexed: number; failed: number; p50: number; p99: number; max: number; createP99: number;
    /** The warm-up's writes (the service's first seconds), left out of the figures above. */
    cold: { seconds: number; writes: number; p99: number; createP99: number };
  };
  reads: Array<{ name: string; quiet: LoadResult; backlog: LoadResult }>;
  backlog: { records: number; writeSeconds: number; pendingAtStart: string; pendingAtEnd: string };
}

interface Client {
  pool: Pool;
  headers: Record<string, string>;
  post(path: string, body: string): Promise<{ status: number; text: string }>;
  get(path: string): Promise<{ status: number; text: string }>;
  close(): Promise<void>;
}

export function clientOf(svc: HttpService, connections: number, contextId?: string): Client {
  const pool = new Pool(svc.url, { connections, pipelining: 1 });
  const inContext: Record<string, string> = contextId ? { 'x-context-id': contextId } : {};
  const headers = { authorization: `Bearer ${svc.bootstrap.tenants.live.rootKey}`, 'content-type': 'application/json', ...inContext };
  const send = async (method: 'GET' | 'POST', path: string, body?: string) => {
    const res = await pool.request({ method, path, headers: body === undefined ? { authorization: headers.authorization, ...inContext } : headers, body });
    return { status: res.statusCode, text: await res.body.text() };
  };
  return { pool, headers, post: (p, b) => send('POST', p, b), get: (p) => send('GET', p), close: () => pool.close() };
}

export async function createSchema(c: Client, mode: IndexMode) {
  const r = await c.post('/v1/schemas', JSON.stringify(noteSchema(mode)));
  if (r.status !== 201) throw new Error(`schema ${mode}: ${r.status} ${r.text}`);
}

const idOf = (text: string) => /"id":"([^"]+)"/.exec(text)?.[1];

async function createLoop(c: Client, typeName: string, t: Timing & { createMs: number }, ids?: string[]) {
  return closedLoop({
    concurrency: t.concurrency,
    warmupMs: t.warmupMs,
    durationMs: t.createMs,
    op: async (_w, seq) => {
      const r = await c.post('/v1/records', noteBody(typeName, seq));
      if (r.status !== 201) throw new Error(`POST /v1/records ${r.status}: ${r.text.slice(0, 200)}`);
      const id = ids && idOf(r.text);
      if (id) ids.push(id);
    },
  });
}

/** (a) NONE vs TEXT creates, a fresh service per run, order alternating per round. */
async function createRounds(newDir: (p: string) => string, t: Timing & { createMs: number }, rounds: number, env: Record<string, string>, log: (m: string) => void) {
  const out: Array<{ none: LoadResult; text: LoadResult }> = [];
  for (let i = 0; i < rounds; i++) {
    const got: Partial<Record<'none' | 'text', LoadResult>> = {};
    for (const mode of (i % 2 === 0 ? ['NONE', 'TEXT'] : ['TEXT', 'NONE']) as IndexMode[]) {
      const svc = await startHttpService(newDir(`searchable-${mode.toLowerCase()}-`), env);
      const c = clientOf(svc, t.concurrency);
      try {
        await createSchema(c, mode);
        const r = await createLoop(c, noteSchema(mode).typeName, t);
        got[mode === 'NONE' ? 'none' : 'text'] = r;
        log(`W${i + 1} create, ${mode.padEnd(4)} schema: ${Math.round(r.opsPerSec)} ops/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms (${r.ops} ops${stealNote(r.steal)}${r.errors ? `, ${r.errors} errors: ${r.firstError}` : ''})`);
      } finally {
        await c.close();
        await svc.stop();
      }
    }
    out.push({ none: got.none!, text: got.text! });
  }
  const none = sumLoads(out.map((r) => r.none));
  const text = sumLoads(out.map((r) => r.text));
  return { none, text, ratio: text.opsPerSec / none.opsPerSec, rounds: out };
}

/**
 * (b) TEXT records at a steady rate. One observer walks the answered writes in order, reading the oldest not yet
 * seen INDEXED every `pollMs` and, once it is, the next ones 16 at a time (the index applies the log in order). A
 * record's latency runs from its create's answer to the read that saw it INDEXED, so it is never under-stated.
 * (Polling every outstanding record every 10 ms, as this bench did first, sent up to 8,000 GETs a second when
 * indexing lagged: the observer then took most of the CPU it was measuring and inflated the lag it observed.)
 */
export async function writeToIndexed(c: Client, rate: number, seconds: number, warmupSeconds: number, pollMs = 5) {
  const typeName = noteSchema('TEXT').typeName;
  const latencies: number[] = [];
  const createMs: number[] = [];
  // The first `warmupSeconds` of writes (a service just started: code not yet compiled by the JIT, first statements
  // prepared) are measured apart, as the closed loops' warm-ups are left out.
  const cold = { latencies: [] as number[], createMs: [] as number[] };
  const warm = rate * warmupSeconds;
  let written = 0;
  let failed = 0;
  const inflight: Promise<void>[] = [];
  const answered: Array<{ id: string; at: number; cold: boolean }> = [];
  let writing = true;
  let reads = 0;
  const observer = (async () => {
    // The head alone while it is pending (one read per `pollMs`); once it is INDEXED, the next ones 16 at a time
    // while all of them are (a batch of the index makes many INDEXED at once).
    let chunk = 1;
    while (writing || answered.length) {
      const look = answered.slice(0, chunk);
      if (!look.length) {
        await new Promise((res) => setTimeout(res, pollMs));
        continue;
      }
      reads += look.length;
      const states = await Promise.all(look.map(async (x) => /"indexStatus":"([A-Z_]+)"/.exec((await c.get(`/v1/records/${x.id}`)).text)?.[1]));
      const now = performance.now();
      let seen = 0;
      look.forEach((x, i) => {
        const done = states[i] === 'INDEXED' || states[i] === 'FAILED' || now - x.at > 30_000;
        if (!done) return;
        seen++;
        if (states[i] === 'INDEXED') (x.cold ? cold.latencies : latencies).push(now - x.at);
        else failed++;
        answered.splice(answered.indexOf(x), 1);
      });
      // On at once only while every record read was done; else the oldest pending one alone, after `pollMs`.
      // (Going on at once after any progress re-read the pending rest of the chunk in a tight loop: 7.6 reads per
      // record at 200 writes/s, 1,500 GETs a second, which loaded the service far more than the writes measured.)
      const all = seen === look.length;
      chunk = all ? 16 : 1;
      if (!all) await new Promise((res) => setTimeout(res, pollMs));
    }
  })();
  const track = async (seq: number) => {
    const t0 = performance.now();
    const r = await c.post('/v1/records', noteBody(typeName, 1_000_000 + seq));
    const at = performance.now();
    (seq < warm ? cold.createMs : createMs).push(at - t0);
    const id = r.status === 201 ? idOf(r.text) : undefined;
    if (!id) return void failed++;
    written++;
    answered.push({ id, at, cold: seq < warm });
  };
  // Open loop: the k-th write starts at k / rate seconds, whatever the earlier ones are doing.
  const start = performance.now();
  for (let k = 0; k < rate * (warmupSeconds + seconds); k++) {
    const due = start + (k * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((res) => setTimeout(res, wait));
    inflight.push(track(k));
  }
  await Promise.all(inflight);
  writing = false;
  await observer;
  const achieved = written / ((performance.now() - start) / 1000);
  const sorted = Float64Array.from(latencies).sort();
  const created = Float64Array.from(createMs).sort();
  const coldSorted = Float64Array.from(cold.latencies).sort();
  const coldCreated = Float64Array.from(cold.createMs).sort();
  return {
    rate, achieved, written, reads, indexed: latencies.length, failed, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: sorted[sorted.length - 1] ?? NaN, createP99: percentile(created, 0.99),
    cold: { seconds: warmupSeconds, writes: cold.createMs.length, p99: percentile(coldSorted, 0.99), createP99: percentile(coldCreated, 0.99) },
  };
}

/** (c) The read mix, measured once quiet and once while `backlog` HYBRID records wait for their vectors. */
async function readsDuringBacklog(c: Client, backlogClient: Client, t: Timing, backlog: number, log: (m: string) => void) {
  // Data to read: NONE records (by id, lookup) and TEXT records (keyword search), all settled before the quiet run.
  const ids: string[] = [];
  await createLoop(c, noteSchema('NONE').typeName, { ...t, concurrency: 16, warmupMs: 0, createMs: 2500 }, ids);
  await createLoop(c, noteSchema('TEXT').typeName, { ...t, concurrency: 16, warmupMs: 0, createMs: 2500 });
  const hot = ids.slice(0, 2000);
  const queries = ['harbor lantern', 'quiet river stone', 'golden field', 'ancient map', 'winter market', 'silver bridge', 'north tower', 'garden path'];
  const mixes: Array<{ name: string; op: (seq: number) => Promise<void> }> = [
    { name: 'get by id', op: async (seq) => ok(await c.get(`/v1/records/${hot[seq % hot.length]}`), 'GET /v1/records/:id') },
    { name: 'exact lookup', op: async (seq) => ok(await c.get(`/v1/records/lookup?type=${noteSchema('NONE').typeName}&field=tag&value=t${seq % 16}&limit=20`), 'lookup') },
    { name: 'TEXT search', op: async (seq) => ok(await c.post('/v1/search', JSON.stringify({ query: queries[seq % queries.length], mode: 'TEXT', limit: 20 })), 'POST /v1/search') },
  ];
  const runMix = (op: (seq: number) => Promise<void>) => closedLoop({ concurrency: 16, warmupMs: 500, durationMs: t.durationMs, op: (_w, seq) => op(seq) });
  const quiet: LoadResult[] = [];
  for (const m of mixes) quiet.push(await runMix(m.op));

  // The backlog: HYBRID creates as fast as 32 connections go (each answers once written; the vectors come later), in
  // another context of the tenant, so the reads' data (and the corpus TEXT search scores) is the quiet run's.
  const w0 = performance.now();
  let made = 0;
  await closedLoop({
    concurrency: 32,
    warmupMs: 0,
    durationMs: 600_000,
    op: async (_w, seq) => {
      if (made >= backlog) return 'stop';
      made++;
      ok(await backlogClient.post('/v1/records', noteBody(noteSchema('HYBRID').typeName, 2_000_000 + seq)), 'POST /v1/records (HYBRID)');
    },
  });
  const writeSeconds = (performance.now() - w0) / 1000;
  // The search indexer's queue of vector jobs (items waiting for embeddings) and its lag behind the log, from /readyz.
  const pending = async () => {
    const r = await c.get('/readyz');
    const body = JSON.parse(r.text) as { projections?: Array<{ vectorJobs?: number; lag?: number }> };
    const s = body.projections?.find((x) => x.vectorJobs !== undefined);
    return s ? `${s.vectorJobs} vector jobs, lag ${s.lag} events` : 'unknown';
  };
  const pendingAtStart = await pending();
  log(`B backlog of ${made} HYBRID records written in ${writeSeconds.toFixed(1)} s; pending vector work at start: ${pendingAtStart}`);
  const during: LoadResult[] = [];
  for (const m of mixes) during.push(await runMix(m.op));
  const pendingAtEnd = await pending();
  return {
    reads: mixes.map((m, i) => ({ name: m.name, quiet: quiet[i], backlog: during[i] })),
    backlog: { records: made, writeSeconds, pendingAtStart, pendingAtEnd },
  };
}

function ok(r: { status: number; text: string }, what: string) {
  if (r.status !== 200 && r.status !== 201) throw new Error(`${what} ${r.status}: ${r.text.slice(0, 200)}`);
}

export async function benchSearchable(o: {
  newDir: (prefix: string) => string;
  timing: Timing & { createMs: number };
  rounds: number;
  rate: number;
  rateSeconds: number;
  /** Seconds of writes at the rate before the measured ones (a fresh service), reported apart. */
  rateWarmupSeconds: number;
  backlog: number;
  childEnv?: Record<string, string>;
  log: (m: string) => void;
}): Promise<SearchableBench> {
  // No per-IP flood ceiling in the way: every request of the bench comes from this one address.
  const env = { ...(o.childEnv ?? {}), EDGE_RATE_LIMIT_PER_MINUTE: '0' };
  const create = await createRounds(o.newDir, o.timing, o.rounds, env, o.log);
  o.log(`W TEXT / NONE create: ${Math.round(create.text.opsPerSec)} / ${Math.round(create.none.opsPerSec)} ops/s = ${create.ratio.toFixed(2)}; TEXT p99 ${create.text.p99.toFixed(1)} ms`);

  const svc = await startHttpService(o.newDir('searchable-reads-'), env);
  const c = clientOf(svc, 48);
  try {
    for (const m of ['NONE', 'TEXT', 'HYBRID'] as IndexMode[]) await createSchema(c, m);
    const indexed = await writeToIndexed(c, o.rate, o.rateSeconds, o.rateWarmupSeconds);
    o.log(
      `I write -> INDEXED at ${indexed.rate}/s (achieved ${indexed.achieved.toFixed(0)}/s, ${indexed.written} written, ${indexed.indexed} indexed, ${indexed.failed} failed): p50 ${indexed.p50.toFixed(0)} ms, p99 ${indexed.p99.toFixed(0)} ms, max ${indexed.max.toFixed(0)} ms; create p99 ${indexed.createP99.toFixed(1)} ms` +
        `; the first ${indexed.cold.seconds} s after start (${indexed.cold.writes} writes, not counted): p99 ${indexed.cold.p99.toFixed(0)} ms, create p99 ${indexed.cold.createP99.toFixed(1)} ms`,
    );
    const ctx = await c.post('/v1/contexts', JSON.stringify({ name: 'backlog' }));
    if (ctx.status !== 201) throw new Error(`context: ${ctx.status} ${ctx.text}`);
    const bc = clientOf(svc, 32, idOf(ctx.text));
    await createSchema(bc, 'HYBRID');
    const r = await readsDuringBacklog(c, bc, o.timing, o.backlog, o.log).finally(() => bc.close());
    for (const x of r.reads)
      o.log(
        `R ${x.name}: quiet ${Math.round(x.quiet.opsPerSec)} ops/s p99 ${x.quiet.p99.toFixed(1)} ms; during backlog ${Math.round(x.backlog.opsPerSec)} ops/s p99 ${x.backlog.p99.toFixed(1)} ms (${(x.backlog.opsPerSec / x.quiet.opsPerSec).toFixed(2)}× throughput, ${(x.backlog.p99 / x.quiet.p99).toFixed(2)}× p99)`,
      );
    o.log(`B pending vector work at the end of the reads: ${r.backlog.pendingAtEnd}`);
    return { create, indexed, ...r };
  } catch (e) {
    console.error(svc.output().slice(-4000));
    throw e;
  } finally {
    await c.close();
    await svc.stop();
  }
}
