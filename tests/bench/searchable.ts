import { Pool } from 'undici';
import { startHttpService, type HttpService } from './http';
import { closedLoop, type LoadResult, percentile, sumLoads } from './load';
import type { Timing } from './raw';
import { basePassages, syntheticPassage } from './search';
import { signalTree, treeCpuSeconds } from './process-tree';
import { stealNote } from './steal';

/**
 * Searchable writes (BENCH_ONLY=searchable, issue 14): what users do with schemas whose records are searched.
 *
 *  (a) Record create over HTTP (32 connections) on a schema with one searchable text field (`indexMode` TEXT)
 *      against the same schema with nothing searchable (NONE), each a fresh service, alternating over rounds.
 *  (b) Write -> INDEXED: TEXT records written at a steady rate (open loop, BENCH_INDEX_RATE per second, default
 *      200), observed in write order by one reader until each `indexStatus` is INDEXED; latency from the create's
 *      answer. The service is fresh: the first BENCH_INDEX_WARMUP_SECONDS (2) of writes are its start (JIT, first
 *      statements: at 200/s the first ~40 creates queued for up to 0.3-0.7 s) and are reported apart, not in the steady
 *      figures.
 *  (c) Reads while an indexing backlog drains: get by id, exact lookup and TEXT search on two services holding the
 *      same records, one of them also with BENCH_BACKLOG (default 5,000) HYBRID records, written to another context
 *      of the tenant, waiting for their embeddings (paced while requests keep the service busy, so the backlog
 *      outlasts the measurement). The two are measured in alternating slices (BENCH_READ_SLICES, default 4), the
 *      backlog service stopped while the quiet one is measured: readsDuringBacklog.
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
  JSON.stringify({
    typeName,
    payload: { title: `note ${seq}`, tag: `t${seq % 16}`, body: syntheticPassage(seq, BASES).text },
  });

export interface SearchableBench {
  create: { none: LoadResult; text: LoadResult; ratio: number; rounds: Array<{ none: LoadResult; text: LoadResult }> };
  indexed: {
    rate: number;
    achieved: number;
    written: number;
    reads: number;
    indexed: number;
    failed: number;
    p50: number;
    p99: number;
    max: number;
    createP99: number;
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
  const headers = {
    authorization: `Bearer ${svc.bootstrap.tenants.live.rootKey}`,
    'content-type': 'application/json',
    ...inContext,
  };
  const send = async (method: 'GET' | 'POST', path: string, body?: string) => {
    const res = await pool.request({
      method,
      path,
      headers: body === undefined ? { authorization: headers.authorization, ...inContext } : headers,
      body,
    });
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
async function createRounds(
  newDir: (p: string) => string,
  t: Timing & { createMs: number },
  rounds: number,
  env: Record<string, string>,
  log: (m: string) => void,
) {
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
        log(
          `W${i + 1} create, ${mode.padEnd(4)} schema: ${Math.round(r.opsPerSec)} ops/s, p50 ` +
            `${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms (${r.ops} ` +
            `ops${stealNote(r.steal)}${r.errors ? `, ${r.errors} errors: ${r.firstError}` : ''})`,
        );
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
      const states = await Promise.all(
        look.map(async (x) => /"indexStatus":"([A-Z_]+)"/.exec((await c.get(`/v1/records/${x.id}`)).text)?.[1]),
      );
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
    rate,
    achieved,
    written,
    reads,
    indexed: latencies.length,
    failed,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? NaN,
    createP99: percentile(created, 0.99),
    cold: {
      seconds: warmupSeconds,
      writes: cold.createMs.length,
      p99: percentile(coldSorted, 0.99),
      createP99: percentile(coldCreated, 0.99),
    },
  };
}

/** The data both read services hold, record for record the same (a record's body follows its sequence number). */
const READ_DATA = { none: 4000, text: 3000, hot: 2000 };

/** `count` records of `typeName` with bodies 0..count-1; `ids[seq]` gets each id. */
async function seed(c: Client, typeName: string, count: number, ids?: string[]) {
  let next = 0;
  await closedLoop({
    concurrency: 16,
    warmupMs: 0,
    durationMs: 600_000,
    op: async () => {
      const seq = next++;
      if (seq >= count) return 'stop';
      const r = await c.post('/v1/records', noteBody(typeName, seq));
      ok(r, 'POST /v1/records (seed)');
      if (ids) ids[seq] = idOf(r.text)!;
    },
  });
}

/** /readyz's projections: the search indexer's vector queue and lag, and whether every projection has caught up. */
async function readiness(c: Client) {
  const body = JSON.parse((await c.get('/readyz')).text) as {
    projections?: Array<{ vectorJobs?: number; lag?: number }>;
  };
  const s = body.projections?.find((x) => x.vectorJobs !== undefined);
  return {
    caughtUp: (body.projections ?? []).every((p) => !p.lag),
    note: s ? `${s.vectorJobs} vector jobs, lag ${s.lag} events` : 'unknown',
  };
}

async function settled(c: Client) {
  const deadline = performance.now() + 120_000;
  while (!(await readiness(c)).caughtUp) {
    if (performance.now() > deadline) throw new Error('the read data was not projected within 120 s');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * (c) The read mix on two services holding the same data, one of them (`b`) also with `backlog` HYBRID records
 * waiting for their vectors in another context of the tenant. Each mix is measured in `slices` short slices that
 * alternate between the two (the order flipping every slice), so a phase of this shared machine, which moves read
 * throughput by 20-30 % within minutes, weighs on both figures alike. While the quiet service is measured the
 * backlog service and its model processes are stopped (SIGSTOP), so its backlog cannot take the quiet figure's CPU.
 */
async function readsDuringBacklog(
  q: Service,
  b: Service,
  t: Timing,
  backlog: number,
  slices: number,
  log: (m: string) => void,
) {
  const hot: Record<'q' | 'b', string[]> = { q: [], b: [] };
  for (const [k, s] of [
    ['q', q],
    ['b', b],
  ] as const) {
    await seed(s.c, noteSchema('NONE').typeName, READ_DATA.none, hot[k]);
    await seed(s.c, noteSchema('TEXT').typeName, READ_DATA.text);
    hot[k].length = READ_DATA.hot;
  }
  const queries = [
    'harbor lantern',
    'quiet river stone',
    'golden field',
    'ancient map',
    'winter market',
    'silver bridge',
    'north tower',
    'garden path',
  ];
  const mixes: Array<{ name: string; op: (c: Client, ids: string[], seq: number) => Promise<void> }> = [
    {
      name: 'get by id',
      op: async (c, ids, seq) => ok(await c.get(`/v1/records/${ids[seq % ids.length]}`), 'GET /v1/records/:id'),
    },
    {
      name: 'exact lookup',
      op: async (c, _ids, seq) =>
        ok(
          await c.get(`/v1/records/lookup?type=${noteSchema('NONE').typeName}&field=tag&value=t${seq % 16}&limit=20`),
          'lookup',
        ),
    },
    {
      name: 'TEXT search',
      op: async (c, _ids, seq) =>
        ok(
          await c.post('/v1/search', JSON.stringify({ query: queries[seq % queries.length], mode: 'TEXT', limit: 20 })),
          'POST /v1/search',
        ),
    },
  ];

  // The backlog: HYBRID creates as fast as 32 connections go (each answers once written; the vectors come later).
  const w0 = performance.now();
  let made = 0;
  await closedLoop({
    concurrency: 32,
    warmupMs: 0,
    durationMs: 600_000,
    op: async (_w, seq) => {
      if (made >= backlog) return 'stop';
      made++;
      ok(
        await b.backlog.post('/v1/records', noteBody(noteSchema('HYBRID').typeName, 2_000_000 + seq)),
        'POST /v1/records (HYBRID)',
      );
    },
  });
  const writeSeconds = (performance.now() - w0) / 1000;
  await settled(q.c);
  const pendingAtStart = (await readiness(b.c)).note;
  log(
    `B backlog of ${made} HYBRID records written in ${writeSeconds.toFixed(1)} s; pending vector work at ` +
      `start: ${pendingAtStart}`,
  );

  // Each service reads every record and page of the mixes once before the slices, so they measure the steady
  // state (the by-id and page caches filled) rather than which slice happened to pay for the first reads.
  for (const [s, ids] of [
    [q, hot.q],
    [b, hot.b],
  ] as const)
    for (const m of mixes) {
      let next = 0;
      await closedLoop({
        concurrency: 16,
        warmupMs: 0,
        durationMs: 600_000,
        op: async () => (next >= ids.length ? 'stop' : m.op(s.c, ids, next++)),
      });
    }
  const bPid = b.svc.child.pid!;
  const sliceMs = Math.max(500, Math.round(t.durationMs / slices));
  const run = (s: Service, ids: string[], op: (typeof mixes)[number]['op']) =>
    closedLoop({ concurrency: 16, warmupMs: 250, durationMs: sliceMs, op: (_w, seq) => op(s.c, ids, seq) });
  const reads: Array<{ name: string; quiet: LoadResult; backlog: LoadResult }> = [];
  const spent = { service: 0, children: 0, seconds: 0 };
  for (const m of mixes) {
    const quiet: LoadResult[] = [];
    const during: LoadResult[] = [];
    for (let i = 0; i < slices; i++) {
      for (const which of i % 2 === 0 ? (['quiet', 'backlog'] as const) : (['backlog', 'quiet'] as const)) {
        if (which === 'quiet') {
          signalTree(bPid, 'SIGSTOP');
          try {
            quiet.push(await run(q, hot.q, m.op));
          } finally {
            signalTree(bPid, 'SIGCONT');
          }
        } else {
          const [c0, t0] = [treeCpuSeconds(bPid), performance.now()];
          during.push(await run(b, hot.b, m.op));
          const c1 = treeCpuSeconds(bPid);
          spent.service += c1.service - c0.service;
          spent.children += c1.children - c0.children;
          spent.seconds += (performance.now() - t0) / 1000;
        }
      }
    }
    reads.push({ name: m.name, quiet: sumLoads(quiet), backlog: sumLoads(during) });
  }
  const pendingAtEnd = (await readiness(b.c)).note;
  log(
    `B CPU of the backlog service in its ${spent.seconds.toFixed(1)} s of reads (warm-ups included): its ` +
      `own process ${spent.service.toFixed(1)} s, ` +
      `its model processes ${spent.children.toFixed(1)} s ` +
      `(${((100 * spent.children) / spent.seconds).toFixed(0)} % of a core)`,
  );
  return { reads, backlog: { records: made, writeSeconds, pendingAtStart, pendingAtEnd } };
}

interface Service {
  svc: HttpService;
  c: Client;
  /** A client in the context the backlog goes to. */
  backlog: Client;
}

async function readService(newDir: (p: string) => string, env: Record<string, string>, name: string): Promise<Service> {
  const svc = await startHttpService(newDir(`searchable-${name}-`), env);
  const c = clientOf(svc, 48);
  for (const m of ['NONE', 'TEXT'] as IndexMode[]) await createSchema(c, m);
  const ctx = await c.post('/v1/contexts', JSON.stringify({ name: 'backlog' }));
  if (ctx.status !== 201) throw new Error(`context: ${ctx.status} ${ctx.text}`);
  const backlog = clientOf(svc, 32, idOf(ctx.text));
  await createSchema(backlog, 'HYBRID');
  return { svc, c, backlog };
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
  /** Alternating quiet / backlog slices per read mix (c). */
  slices: number;
  childEnv?: Record<string, string>;
  log: (m: string) => void;
}): Promise<SearchableBench> {
  // No per-IP flood ceiling in the way: every request of the bench comes from this one address.
  const env = { ...(o.childEnv ?? {}), EDGE_RATE_LIMIT_PER_MINUTE: '0' };
  const create = await createRounds(o.newDir, o.timing, o.rounds, env, o.log);
  o.log(
    `W TEXT / NONE create: ${Math.round(create.text.opsPerSec)} / ${Math.round(create.none.opsPerSec)} ` +
      `ops/s = ${create.ratio.toFixed(2)}; TEXT p99 ${create.text.p99.toFixed(1)} ms`,
  );

  const svc = await startHttpService(o.newDir('searchable-indexed-'), env);
  const c = clientOf(svc, 48);
  let indexed: Awaited<ReturnType<typeof writeToIndexed>>;
  try {
    await createSchema(c, 'TEXT');
    indexed = await writeToIndexed(c, o.rate, o.rateSeconds, o.rateWarmupSeconds);
    o.log(
      `I write -> INDEXED at ${indexed.rate}/s (achieved ${indexed.achieved.toFixed(0)}/s, ` +
        `${indexed.written} written, ${indexed.indexed} indexed, ${indexed.failed} failed): p50 ` +
        `${indexed.p50.toFixed(0)} ms, p99 ${indexed.p99.toFixed(0)} ms, max ${indexed.max.toFixed(0)} ms; ` +
        `create p99 ${indexed.createP99.toFixed(1)} ms` +
        `; the first ${indexed.cold.seconds} s after start (${indexed.cold.writes} writes, not counted): ` +
        `p99 ${indexed.cold.p99.toFixed(0)} ms, create p99 ${indexed.cold.createP99.toFixed(1)} ms`,
    );
  } catch (e) {
    console.error(svc.output().slice(-4000));
    throw e;
  } finally {
    await c.close();
    await svc.stop();
  }

  const services: Service[] = [];
  try {
    services.push(await readService(o.newDir, env, 'quiet'), await readService(o.newDir, env, 'backlog'));
    const [q, b] = services;
    const r = await readsDuringBacklog(q, b, o.timing, o.backlog, o.slices, o.log);
    for (const x of r.reads)
      o.log(
        `R ${x.name}: quiet ${Math.round(x.quiet.opsPerSec)} ops/s p99 ${x.quiet.p99.toFixed(1)} ms; ` +
          `during backlog ${Math.round(x.backlog.opsPerSec)} ops/s p99 ${x.backlog.p99.toFixed(1)} ms ` +
          `(${(x.backlog.opsPerSec / x.quiet.opsPerSec).toFixed(2)}× throughput, ` +
          `${(x.backlog.p99 / x.quiet.p99).toFixed(2)}× p99)`,
      );
    o.log(`B pending vector work at the end of the reads: ${r.backlog.pendingAtEnd}`);
    return { create, indexed, ...r };
  } catch (e) {
    for (const s of services) console.error(s.svc.output().slice(-4000));
    throw e;
  } finally {
    for (const s of services) {
      signalTree(s.svc.child.pid!, 'SIGCONT');
      await Promise.all([s.c.close(), s.backlog.close()]);
      await s.svc.stop();
    }
  }
}
