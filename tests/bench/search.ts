import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'undici';
import { openSql } from '@svc/deploy';
import {
  BuiltinEmbedder,
  builtinModelStats,
  embedQuery,
  LanceVectorIndex,
  PgTextIndex,
  queryCacheStats,
  type QueryCacheStats,
  SearchCatalogue,
} from '@svc/search';
import type { CatalogueItem, ItemFilter, MaintainReport, Passage, VectorRow } from '@svc/domain';
import { ENTITIES, QUERIES } from '../src/relevance/corpus';
import { ROOT } from '../src/support/service';
import { closedLoop, percentile, type LoadResult } from './load';
import { startHttpService, type HttpService } from './http';
import type { Timing } from './raw';
import { stealNote } from './steal';

/**
 * Search benchmark (section 4).
 *
 *  (a) indexing throughput through the service: records of a schema with one
 *      searchable field (each record = 1 passage, HYBRID), write -> INDEXED, with
 *      the built-in embedding model (bge-small-en-v1.5, int8 ONNX, 384-d).
 *  (b) tiers of 10,000 and 100,000 passages loaded straight into the service's
 *      DATA_DIR with the service stopped, through the adapters the projector
 *      uses (PgTextIndex.replaceItem, the LanceVectorIndex table write, the
 *      SearchCatalogue). Passages are synthetic (entity facts from
 *      tests/src/relevance/corpus.ts plus a Zipf-distributed invented
 *      vocabulary); vectors are real built-in-model embeddings of a few hundred
 *      distinct base passages, reused with a small perturbation (the model runs
 *      at ~10 passages/s on this machine, so 10,000 real embeddings would take
 *      ~17 minutes).
 *      After each tier's load the vector index upkeep runs once (the ANN index
 *      build or retrain the projector would have done in the background).
 *  (c) POST /v1/search (TEXT / SEMANTIC / HYBRID, 16 clients, 48 rotating
 *      queries) beside the raw engine doing the same work in this process with
 *      the service stopped: text.search (limit 100, as the route asks), and
 *      embedQuery(query) + vectors.search (limit 100); HYBRID raw = both in
 *      parallel. Rotating queries are answered by the query-vector cache after
 *      their first sight, so SEMANTIC and HYBRID run again with cold queries
 *      (every text new: the model runs per request), and the model alone
 *      (EMBED) and the vector search alone (VECTOR) are measured too.
 */

export const SEARCH_SCHEMA = {
  typeName: 'bench_doc',
  displayName: 'Bench doc',
  allowedSurfaces: ['record'],
  fields: [
    { fieldId: 'title', fieldType: 'string', required: true },
    { fieldId: 'body', fieldType: 'string', searchable: true },
  ],
};

// --- a deterministic synthetic corpus -----------------------------------------------------------
export function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const SYL = [
  'ka',
  'lo',
  'mer',
  'vin',
  'tas',
  'ro',
  'bel',
  'dun',
  'fi',
  'gar',
  'hol',
  'ist',
  'jor',
  'ken',
  'lum',
  'nor',
  'pel',
  'quin',
  'ras',
  'sol',
  'tor',
  'ul',
  'var',
  'wen',
  'yst',
  'zor',
];
/**
 * 20,000 invented words; word i is drawn with probability ∝ 1/(i+1) (Zipf), so posting lists range from huge to
 * singletons.
 */
const VOCAB = (() => {
  const r = rng(7);
  const words = new Set<string>();
  while (words.size < 20_000)
    words.add(Array.from({ length: 2 + Math.floor(r() * 3) }, () => SYL[Math.floor(r() * SYL.length)]).join(''));
  return [...words];
})();
const ZIPF_CDF = (() => {
  const c = new Float64Array(VOCAB.length);
  let s = 0;
  for (let i = 0; i < VOCAB.length; i++) c[i] = s += 1 / (i + 1);
  for (let i = 0; i < c.length; i++) c[i] /= s;
  return c;
})();
const zipfWord = (r: () => number) => {
  const x = r();
  let lo = 0;
  let hi = ZIPF_CDF.length - 1;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (ZIPF_CDF[m] < x) lo = m + 1;
    else hi = m;
  }
  return VOCAB[lo];
};
const COMMON = (
  'the a of and in to is was for on with as by at from that which it its this their were has have been ' +
  'many most local people town place'
).split(' ');
/** Base passages (the ones that get real embeddings): entity facts in varied templates. */
export function basePassages(n: number): string[] {
  const t = [
    (e: (typeof ENTITIES)[number]) =>
      `${e.name} is a ${e.kind} in ${e.place}. It is best known for ${e.feature}, and for ${e.resource}.`,
    (e: (typeof ENTITIES)[number]) =>
      `The history of ${e.name} begins in ${e.year}, when ${e.founder} established the ${e.kind}. ` +
      `Visitors remember ${e.sense}.`,
    (e: (typeof ENTITIES)[number]) =>
      `For centuries ${e.name} lived from ${e.resource}. The greatest threat has always been ${e.danger}.`,
    (e: (typeof ENTITIES)[number]) =>
      `Travellers to ${e.place} describe ${e.feature} and ${e.sense}; guides warn about ${e.danger}.`,
    (e: (typeof ENTITIES)[number]) =>
      `A report on the ${e.kind} of ${e.name} lists ${e.resource}, ${e.feature} and the founder ${e.founder}.`,
    (e: (typeof ENTITIES)[number]) =>
      `Local families in ${e.name} still talk about ${e.danger} and the year ${e.year}.`,
    (e: (typeof ENTITIES)[number]) =>
      `Among the sights of ${e.place} is ${e.feature}; the ${e.kind} depends on ${e.resource}.`,
  ];
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(t[Math.floor(i / ENTITIES.length) % t.length](ENTITIES[i % ENTITIES.length]));
  return out;
}
/**
 * Passage `i` (~500-700 characters): base passage i % bases.length, then sentences of Zipf vocabulary with common
 * words.
 */
export function syntheticPassage(i: number, bases: string[]): { text: string; base: number } {
  const r = rng(1000 + i);
  const base = i % bases.length;
  let text = bases[base];
  const target = 500 + Math.floor(r() * 200);
  while (text.length < target) {
    const len = 6 + Math.floor(r() * 10);
    const words: string[] = [];
    for (let k = 0; k < len; k++) words.push(r() < 0.35 ? COMMON[Math.floor(r() * COMMON.length)] : zipfWord(r));
    if (r() < 0.3) words.splice(Math.floor(r() * words.length), 0, ENTITIES[Math.floor(r() * ENTITIES.length)].name);
    text += ` ${words[0][0].toUpperCase()}${words.join(' ').slice(1)}.`;
  }
  return { text: text.slice(0, 700), base };
}

/**
 * Real embeddings of the base passages, cached in .cache by text hash (they are inputs to the load, not measurements).
 */
export async function baseVectors(
  embedder: BuiltinEmbedder,
  bases: string[],
  log: (m: string) => void,
): Promise<number[][]> {
  const key = createHash('sha256').update(embedder.model).update(bases.join('\n')).digest('hex').slice(0, 16);
  const file = join(ROOT, '.cache', `bench-search-vectors-${key}.json`);
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as number[][];
  const t0 = performance.now();
  const v = await embedder.embed(bases);
  log(
    `embedded ${bases.length} base passages with the built-in model in ` +
      `${((performance.now() - t0) / 1000).toFixed(1)} s ` +
      `(${(bases.length / ((performance.now() - t0) / 1000)).toFixed(1)}/s)`,
  );
  mkdirSync(join(ROOT, '.cache'), { recursive: true });
  writeFileSync(file, JSON.stringify(v));
  return v;
}
export const perturb = (v: number[], r: () => number, eps: number) => {
  const w = v.map((x) => x + (r() - 0.5) * 2 * eps);
  const n = Math.hypot(...w) || 1;
  return w.map((x) => x / n);
};

// --- (a) indexing throughput through the service --------------------------------------------------
export interface IndexingResult {
  records: number;
  chunks: number;
  writeSeconds: number;
  toIndexedSeconds: number;
  chunksPerSec: number;
  statuses: Record<string, number>;
}

async function indexingThroughput(
  svc: HttpService,
  pool: Pool,
  headers: Record<string, string>,
  n: number,
  bases: string[],
): Promise<IndexingResult> {
  const ids: string[] = [];
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < n) {
        const i = next++;
        const body = JSON.stringify({
          typeName: SEARCH_SCHEMA.typeName,
          payload: { title: `doc ${i}`, body: syntheticPassage(100_000 + i, bases).text.slice(0, 650) },
        });
        const res = await pool.request({ method: 'POST', path: '/v1/records', headers, body });
        const text = await res.body.text();
        if (res.statusCode !== 201) throw new Error(`POST /v1/records ${res.statusCode}: ${text.slice(0, 200)}`);
        ids.push(JSON.parse(text).id);
      }
    }),
  );
  const writeSeconds = (performance.now() - t0) / 1000;
  const statuses: Record<string, number> = {};
  const deadline = performance.now() + 600_000;
  // Every id until it leaves PENDING_INDEX (the projector goes in log order, so this is mostly waiting on the last
  // ones).
  for (const id of ids) {
    for (;;) {
      const res = await pool.request({
        method: 'GET',
        path: `/v1/records/${id}`,
        headers: { authorization: headers.authorization },
      });
      const st = ((await res.body.json()) as { indexStatus: string | null }).indexStatus ?? 'null';
      if (st !== 'PENDING_INDEX') {
        statuses[st] = (statuses[st] ?? 0) + 1;
        break;
      }
      if (performance.now() > deadline) throw new Error('indexing did not finish in 10 minutes');
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const toIndexedSeconds = (performance.now() - t0) / 1000;
  return { records: n, chunks: n, writeSeconds, toIndexedSeconds, chunksPerSec: n / toIndexedSeconds, statuses };
}

// --- (b) direct load through the adapters -----------------------------------------------------------
const PASSAGES_PER_ITEM = 100;

export async function loadDirect(
  dataDir: string,
  from: number,
  to: number,
  w: { tenantId: string; contextId: string; accountId: string; schemaId: string; bases: string[]; vectors: number[][] },
): Promise<{ perSec: number; upkeep: MaintainReport }> {
  const t0 = performance.now();
  // The search side's own database (DATA_DIR/pg-search, the default SEARCH_DB=separate): catalogue and keyword index.
  const sql = await openSql({ dataDir: join(dataDir, 'pg-search') });
  const embedder = new BuiltinEmbedder(); // only for its model name / dims (never loaded)
  // Kept as the service keeps it on PGlite (for its in-memory index: no SQL search statistics); rawSearch counts them.
  const text = new PgTextIndex(sql, { sqlSearch: false });
  // Upkeep runs once after the load (below), as the projector's background upkeep would have by then.
  const vectors = new LanceVectorIndex(join(dataDir, 'lancedb'), embedder.model, embedder.dims, {
    autoMaintain: false,
  });
  const catalogue = new SearchCatalogue(sql);
  try {
    await text.init();
    await vectors.init();
    await catalogue.init();
    let pendingRows: VectorRow[] = [];
    const flushVectors = async () => {
      if (!pendingRows.length) return;
      // The adapter's own table write (replaceItem minus its per-item delete, which would cost one Lance version per
      // item).
      await vectors.add(pendingRows);
      pendingRows = [];
    };
    for (let start = from; start < to; start += PASSAGES_PER_ITEM) {
      const itemId = `bench-item-${start}`;
      const passages: Passage[] = [];
      const vecs: number[][] = [];
      for (let k = 0; k < PASSAGES_PER_ITEM && start + k < to; k++) {
        const p = syntheticPassage(start + k, w.bases);
        passages.push({ chunkNo: k, chunkText: p.text, contextText: p.text });
        vecs.push(perturb(w.vectors[p.base], rng(start + k), 0.01));
      }
      const createdAt = new Date(Date.UTC(2024, 0, 1) + start * 1000).toISOString();
      const attrs = { typeName: SEARCH_SCHEMA.typeName, status: 'ACTIVE', schemaId: w.schemaId, indexMode: 'HYBRID' };
      const ci: CatalogueItem = {
        itemId,
        tenantId: w.tenantId,
        contextId: w.contextId,
        accountId: w.accountId,
        sourceType: 'record',
        typeName: SEARCH_SCHEMA.typeName,
        schemaId: w.schemaId,
        externalId: null,
        indexMode: 'HYBRID',
        folderId: null,
        userId: null,
        scopes: [],
        attrs,
        createdAt,
        metadata: {
          typeName: SEARCH_SCHEMA.typeName,
          schemaId: w.schemaId,
          externalId: null,
          status: 'ACTIVE',
          folderId: null,
          userId: null,
          scopes: [],
          attributes: attrs,
        },
        revision: 0,
        vectors: passages.length,
      };
      await text.replaceItem({ ...ci, passages });
      await catalogue.put(ci);
      for (let k = 0; k < passages.length; k++)
        pendingRows.push({
          itemId,
          chunkNo: k,
          tenantId: w.tenantId,
          contextId: w.contextId,
          chunkText: passages[k].chunkText,
          contextText: passages[k].contextText,
          vector: vecs[k],
        });
      if (pendingRows.length >= 10_000) await flushVectors();
    }
    await flushVectors();
    const perSec = (to - from) / ((performance.now() - t0) / 1000);
    // ANN index (built, or retrained as the table grew) and scalar indexes; compaction.
    const upkeep = await vectors.maintain({ force: true });
    return { perSec, upkeep };
  } finally {
    await vectors.close();
    await sql.close();
  }
}

// --- (c) search over HTTP and raw ---------------------------------------------------------------------
export type Mode = 'TEXT' | 'SEMANTIC' | 'HYBRID';
export const MODES: Mode[] = ['TEXT', 'SEMANTIC', 'HYBRID'];
/**
 * Modes measured again with cold queries: every text new, so no query-vector cache can answer (the model runs per
 * request).
 */
export const COLD_MODES = ['SEMANTIC', 'HYBRID'] as const;
export type ColdMode = (typeof COLD_MODES)[number];
const queryOf = (seq: number) => QUERIES[seq % QUERIES.length].q;
/**
 * Never-seen query texts: a rotating query plus a token unique in this run (matching no passage, so the keyword leg's
 * work is unchanged).
 */
let coldSeq = 0;
const coldQuery = (seq: number) => `${queryOf(seq)} q${++coldSeq}x`;

export type HttpResult = LoadResult & { hits: number };

async function httpSearch(
  pool: Pool,
  headers: Record<string, string>,
  t: Timing,
): Promise<{ rotating: Record<Mode, HttpResult>; cold: Record<ColdMode, HttpResult>; sent: Record<Mode, number> }> {
  const sent = { TEXT: 0, SEMANTIC: 0, HYBRID: 0 } as Record<Mode, number>;
  const run = async (mode: Mode, text: (seq: number) => string): Promise<HttpResult> => {
    let hits = 0;
    const r = await closedLoop({
      ...t,
      // No shared pause of the 16 clients every 50 ms (it is for loops over in-process PGlite calls; here the
      // sockets give the event loop its turns, and the pause would send the requests in bursts).
      yieldEveryMs: 0,
      op: async (_w, seq) => {
        if (text === queryOf) sent[mode]++;
        const res = await pool.request({
          method: 'POST',
          path: '/v1/search',
          headers,
          body: JSON.stringify({ query: text(seq), mode, limit: 20 }),
        });
        const body = await res.body.text();
        if (res.statusCode !== 200) throw new Error(`POST /v1/search ${mode} ${res.statusCode}: ${body.slice(0, 200)}`);
        hits = body.split('"documentId":').length - 1;
      },
    });
    return { ...r, hits };
  };
  const rotating = {} as Record<Mode, HttpResult>;
  for (const mode of MODES) rotating[mode] = await run(mode, queryOf);
  const cold = {} as Record<ColdMode, HttpResult>;
  for (const mode of COLD_MODES) cold[mode] = await run(mode, coldQuery);
  return { rotating, cold, sent };
}

export interface RagResult {
  /** Time from the request to the first content_delta frame (ops/s: whole calls). */
  firstDelta: LoadResult;
  whole: LoadResult;
}

/** RAG over HTTP: each call read to its end; the time to its first content_delta frame is recorded apart. */
async function httpRag(pool: Pool, headers: Record<string, string>, t: Timing): Promise<RagResult> {
  const firsts: number[] = [];
  let measuring = false;
  const whole = await closedLoop({
    ...t,
    yieldEveryMs: 0,
    onMeasureStart: async () => void (measuring = true),
    op: async (_w, seq) => {
      const t0 = performance.now();
      const res = await pool.request({
        method: 'POST',
        path: '/v1/rag',
        headers,
        body: JSON.stringify({ query: queryOf(seq), search: { mode: 'HYBRID', limit: 10 } }),
      });
      if (res.statusCode !== 200)
        throw new Error(`POST /v1/rag ${res.statusCode}: ${(await res.body.text()).slice(0, 200)}`);
      let first = NaN;
      let text = '';
      for await (const chunk of res.body) {
        text += chunk.toString();
        if (Number.isNaN(first) && text.includes('event: content_delta')) first = performance.now() - t0;
      }
      if (!text.includes('event: done')) throw new Error(`POST /v1/rag: no done frame in ${text.slice(-200)}`);
      if (measuring) firsts.push(first);
    },
  });
  const sorted = Float64Array.from(firsts).sort();
  const firstDelta: LoadResult = {
    ...whole,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? NaN,
  };
  return { firstDelta, whole };
}

export type RawKey = Mode | 'SEMANTIC_COLD' | 'HYBRID_COLD' | 'VECTOR' | 'EMBED';
export interface RawResults {
  runs: Record<RawKey, LoadResult>;
  /** The query-vector cache over the rotating SEMANTIC and HYBRID runs (measured, in this process). */
  cache: QueryCacheStats;
  /** Texts per model call over the cold and EMBED runs (the micro-batcher at work). */
  textsPerModelCall: number;
  /**
   * Time to count the SQL search's term statistics again (the service keeps none on PGlite; not measured in the runs).
   */
  recountMs: number;
}

/**
 * The same work as the route, in this process with the service stopped: text.search (limit 100, as the
 * route asks), embedQuery (the route's cached query vector) + vectors.search (limit 100); HYBRID = both
 * legs in parallel; *_COLD: never-seen query texts; VECTOR: vectors.search alone (vectors embedded
 * beforehand); EMBED: one uncached model call per operation (16 concurrent, batched).
 */
async function rawSearch(dataDir: string, t: Timing, w: { tenantId: string; contextId: string }): Promise<RawResults> {
  // The search side's own database (DATA_DIR/pg-search, the default SEARCH_DB=separate): catalogue and keyword index.
  const sql = await openSql({ dataDir: join(dataDir, 'pg-search') });
  const embedder = new BuiltinEmbedder();
  const text = new PgTextIndex(sql);
  // The service keeps no SQL search statistics on PGlite (its in-memory index answers): init counts them again.
  const r0 = performance.now();
  await text.init();
  const recountMs = performance.now() - r0;
  const vectors = new LanceVectorIndex(join(dataDir, 'lancedb'), embedder.model, embedder.dims, {
    autoMaintain: false,
  });
  const filter: ItemFilter = { tenantId: w.tenantId, contextId: w.contextId, clauses: [] };
  const limit = 100; // what the route asks each leg for with limit 20 (max(100, 3 × 20))
  const textLeg = (q: string) => text.search({ filter, query: q, textMode: 'OR', slop: 0, limit, trackTotal: false });
  const vecLeg = async (q: string) =>
    vectors.search({ tenantId: w.tenantId, contextId: w.contextId, vector: await embedQuery(embedder, q), limit });
  try {
    await embedder.embed(['warm up'], { purpose: 'query' });
    const queryVecs = await embedder.embed(
      QUERIES.map((q) => q.q),
      { purpose: 'query' },
    );
    const runs = {} as Record<RawKey, LoadResult>;
    runs.TEXT = await closedLoop({ ...t, op: async (_w, seq) => void (await textLeg(queryOf(seq))) });
    const cache0 = queryCacheStats(embedder);
    runs.SEMANTIC = await closedLoop({ ...t, op: async (_w, seq) => void (await vecLeg(queryOf(seq))) });
    runs.HYBRID = await closedLoop({
      ...t,
      op: async (_w, seq) => void (await Promise.all([textLeg(queryOf(seq)), vecLeg(queryOf(seq))])),
    });
    const c = queryCacheStats(embedder);
    const cache = {
      ...c,
      hits: c.hits - cache0.hits,
      joined: c.joined - cache0.joined,
      misses: c.misses - cache0.misses,
    };
    const m0 = { ...builtinModelStats()! };
    runs.SEMANTIC_COLD = await closedLoop({ ...t, op: async (_w, seq) => void (await vecLeg(coldQuery(seq))) });
    runs.HYBRID_COLD = await closedLoop({
      ...t,
      op: async (_w, seq) => {
        const q = coldQuery(seq);
        await Promise.all([textLeg(q), vecLeg(q)]);
      },
    });
    runs.VECTOR = await closedLoop({
      ...t,
      op: async (_w, seq) =>
        void (await vectors.search({
          tenantId: w.tenantId,
          contextId: w.contextId,
          vector: queryVecs[seq % queryVecs.length],
          limit,
        })),
    });
    runs.EMBED = await closedLoop({
      ...t,
      op: async (_w, seq) => void (await embedder.embed([coldQuery(seq)], { purpose: 'query' })),
    });
    const m1 = builtinModelStats()!;
    return { runs, cache, textsPerModelCall: (m1.texts - m0.texts) / Math.max(1, m1.calls - m0.calls), recountMs };
  } finally {
    await vectors.close();
    await embedder.close();
    await sql.close();
  }
}

export interface SearchTier {
  chunks: number;
  label: string;
  loadPerSec: number;
  upkeep: MaintainReport;
  http: Record<Mode, HttpResult>;
  httpCold: Record<ColdMode, HttpResult>;
  /**
   * Share of the rotating HTTP queries the service's query-vector cache answered: all but the first sight of each of
   * the 48 texts (warm-up included).
   */
  httpCacheHitRate: number;
  raw: RawResults;
  /** POST /v1/rag (16 clients, rotating queries): time to the first content_delta, and the whole stream. */
  rag?: RagResult;
}
export interface SearchBenchResults {
  indexing: IndexingResult;
  baseCount: number;
  tiers: SearchTier[];
}

export async function benchSearch(
  dataDir: string,
  o: { timing: Timing; indexRecords: number; tiers: number[]; bases: number; log: (m: string) => void },
): Promise<SearchBenchResults> {
  const bases = basePassages(o.bases);
  const baseEmbedder = new BuiltinEmbedder();
  const vecs = await baseVectors(baseEmbedder, bases, o.log);
  await baseEmbedder.close();
  let svc = await startHttpService(dataDir);
  const live = svc.bootstrap.tenants.live;
  const headers = { authorization: `Bearer ${live.rootKey}`, 'content-type': 'application/json' };
  let pool = new Pool(svc.url, { connections: o.timing.concurrency, pipelining: 1 });
  let indexing: IndexingResult;
  let schemaId: string;
  try {
    const s = await pool.request({ method: 'POST', path: '/v1/schemas', headers, body: JSON.stringify(SEARCH_SCHEMA) });
    const st = await s.body.text();
    if (s.statusCode !== 201) throw new Error(`schema create failed: ${s.statusCode} ${st}`);
    schemaId = JSON.parse(st).id;
    indexing = await indexingThroughput(svc, pool, headers, o.indexRecords, bases);
    o.log(
      `S0 indexing: ${indexing.records} records (1 passage each) written in ` +
        `${indexing.writeSeconds.toFixed(1)} s, all settled in ${indexing.toIndexedSeconds.toFixed(1)} s: ` +
        `${indexing.chunksPerSec.toFixed(1)} chunks/s ${JSON.stringify(indexing.statuses)}`,
    );
  } finally {
    await pool.close();
    await svc.stop();
  }
  const accountId = svc.bootstrap.accountId;
  const tiers: SearchTier[] = [];
  let have = 0;
  for (const size of o.tiers) {
    const { perSec: loadPerSec, upkeep } = await loadDirect(dataDir, have, size - indexing.records, {
      tenantId: live.tenantId,
      contextId: live.contextId,
      accountId,
      schemaId,
      bases,
      vectors: vecs,
    });
    o.log(
      `loaded ${(size - indexing.records - have).toLocaleString('en-US')} passages through the adapters ` +
        `at ${Math.round(loadPerSec)}/s (service stopped)`,
    );
    o.log(
      `vector index upkeep on ${upkeep.rows.toLocaleString('en-US')} rows: ` +
        `${upkeep.action}${upkeep.partitions ? ` (${upkeep.partitions} partition(s))` : ''} in ` +
        `${(upkeep.ms / 1000).toFixed(1)} s`,
    );
    have = size - indexing.records;
    svc = await startHttpService(dataDir);
    o.log(`service restarted on ${size.toLocaleString('en-US')} chunks`);
    pool = new Pool(svc.url, { connections: o.timing.concurrency, pipelining: 1 });
    let http;
    let rag: RagResult | undefined;
    try {
      // Start-up costs, reported here, not in the runs: the first semantic query starts the model's thread, loads
      // the model and the context's vectors; the first keyword query loads the context's keyword index.
      const firstQuery = async (mode: Mode, what: string) => {
        const w0 = performance.now();
        const res = await pool.request({
          method: 'POST',
          path: '/v1/search',
          headers,
          body: JSON.stringify({ query: 'first query after start', mode, limit: 20 }),
        });
        await res.body.text();
        o.log(`first ${mode} query after start (${what}): ${Math.round(performance.now() - w0)} ms`);
      };
      await firstQuery('SEMANTIC', 'model load included');
      await firstQuery('TEXT', 'loads the keyword index');
      http = await httpSearch(pool, headers, o.timing);
      rag = await httpRag(pool, headers, o.timing);
    } catch (e) {
      console.error(svc.output().slice(-3000));
      throw e;
    } finally {
      await pool.close();
      await svc.stop();
    }
    const line = (r: HttpResult) =>
      `p50 ${r.p50.toFixed(1)} p99 ${r.p99.toFixed(1)} ms, ${Math.round(r.opsPerSec)}/s, ${r.hits} ` +
      `results/page${stealNote(r.steal)}` +
      (r.clientGc ? `, load generator GC ${Math.round(r.clientGc.ms)} ms (longest ${r.clientGc.max.toFixed(1)})` : '') +
      (r.errors ? `, ${r.errors} errors: ${r.firstError}` : '');
    for (const m of MODES)
      o.log(`${size} HTTP ${m} (rotating queries, cached query vectors): ${line(http.rotating[m])}`);
    for (const m of COLD_MODES)
      o.log(`${size} HTTP ${m} cold (every query new: the model runs per request): ${line(http.cold[m])}`);
    // A tier whose loaded passages the service cannot find measures an empty index: stop rather than print its figures.
    const empty = MODES.filter((m) => http.rotating[m].hits === 0);
    if (empty.length)
      throw new Error(
        `${size}-passage tier: ${empty.join(', ')} answered 0 results/page; the passages loaded are not ` +
          `searchable by the service`,
      );
    // Every rotating SEMANTIC/HYBRID request (warm-up included) after the first sight of each of the 48 texts was a
    // cache hit (capacity ≫ 48).
    const sent = http.sent.SEMANTIC + http.sent.HYBRID;
    const httpCacheHitRate = Math.max(0, (sent - Math.min(sent, QUERIES.length)) / Math.max(1, sent));
    const raw = await rawSearch(dataDir, o.timing, live);
    o.log(
      `${size} raw TEXT: the SQL search's term statistics counted from the stored passages in ` +
        `${(raw.recountMs / 1000).toFixed(1)} s (not measured below)`,
    );
    for (const m of ['TEXT', 'SEMANTIC', 'HYBRID', 'SEMANTIC_COLD', 'HYBRID_COLD', 'VECTOR', 'EMBED'] as const)
      o.log(
        `${size} raw ${m}: p50 ${raw.runs[m].p50.toFixed(1)} p99 ${raw.runs[m].p99.toFixed(1)} ms, ` +
          `${Math.round(raw.runs[m].opsPerSec)}/s`,
      );
    const c = raw.cache;
    o.log(
      `${size} query-vector cache: raw rotating runs ${c.hits} hits, ${c.joined} joined, ${c.misses} ` +
        `misses (${((100 * (c.hits + c.joined)) / Math.max(1, c.hits + c.joined + c.misses)).toFixed(1)}% ` +
        `answered without a model call); ` +
        `HTTP rotating ≈${(100 * httpCacheHitRate).toFixed(1)}%, HTTP cold 0% by construction; ` +
        `${raw.textsPerModelCall.toFixed(1)} texts per model call (cold + EMBED runs)`,
    );
    if (rag)
      o.log(
        `${size} HTTP RAG (HYBRID, limit 10, built-in model): first content_delta p50 ` +
          `${rag.firstDelta.p50.toFixed(1)} p99 ${rag.firstDelta.p99.toFixed(1)} ms; whole stream p50 ` +
          `${rag.whole.p50.toFixed(1)} p99 ${rag.whole.p99.toFixed(1)} ms, ` +
          `${Math.round(rag.whole.opsPerSec)}/s`,
      );
    tiers.push({
      chunks: size,
      label: `${size.toLocaleString('en-US')} chunks`,
      loadPerSec,
      upkeep,
      http: http.rotating,
      httpCold: http.cold,
      httpCacheHitRate,
      raw,
      rag,
    });
  }
  return { indexing, baseCount: bases.length, tiers };
}
