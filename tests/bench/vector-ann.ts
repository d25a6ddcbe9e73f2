/**
 * The vector leg alone: LanceVectorIndex exact (flat) search against its ANN
 * index on the same table — latency (one query at a time, and 16 concurrent
 * clients) and recall@10 / recall@100 of the ANN answer against the exact one,
 * the largest similarity error, and the top-10 gap (how much lower, in exact
 * similarity, the worst ANN top-10 passage is than the exact 10th).
 *
 *   npx tsx tests/bench/vector-ann.ts [rows]        (default 10000)
 *
 * Env:
 *   VEC_DIST=dup|mix   dup (default): the bench tiers' vectors (128 real passage
 *                      embeddings, each reused with a small perturbation: clusters
 *                      of near-duplicates); mix: each row a random blend of two
 *                      real embeddings plus noise (spread out, closer to real data)
 *   VEC_KIND           IVF_FLAT (default) | IVF_HNSW_SQ | IVF_PQ
 *   VEC_GRID           "nprobes:refineFactor:efFactor,..." settings to measure
 *   VEC_RPP            IVF_HNSW_SQ rows per partition
 *   VEC_DIR            keep / reuse the table there
 *   VEC_MS             concurrent phase (ms, default 3000)
 *   VEC_FRAGMENTS=n    leave the load uncompacted, plus n one-row fragments (as
 *                      a projector's writes would leave them)
 *   VEC_MEM_GRID       "nprobes:minCandidates[:refine],..." settings of the in-memory index
 *                      (MemoryVectorIndex over the same table) to measure before
 *                      LanceDB's ANN; "" skips it (default "20:2000")
 *   VEC_LANCE=0        skip LanceDB's ANN grid (and its index build)
 * Queries: the 48 relevance-set queries embedded with the built-in model. Four
 * extra 250-row tenants check the small-tenant path (exact) inside a big table.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BuiltinEmbedder, LanceVectorIndex, MEMORY_VECTOR_DEFAULTS, MemoryVectorIndex } from '@svc/search';
import type { VectorHit, VectorRow } from '@svc/domain';
import { QUERIES } from '../src/relevance/corpus';
import { closedLoop, percentile } from './load';
import { basePassages, baseVectors, perturb, rng, syntheticPassage } from './search';

const rows = Number(process.argv[2] ?? 10_000);
const dist = process.env.VEC_DIST ?? 'dup';
const kind = (process.env.VEC_KIND ?? 'IVF_FLAT') as 'IVF_HNSW_SQ' | 'IVF_PQ' | 'IVF_FLAT';
const grid = (process.env.VEC_GRID ?? '10:0:1,20:0:1,32:0:1')
  .split(',')
  .map((g) => g.split(':').map(Number) as [number, number, number]);
const concurrentMs = Number(process.env.VEC_MS ?? 3000);
const keep = process.env.VEC_DIR;
const dir = keep ?? mkdtempSync(join(tmpdir(), 'vec-ann-'));
const log = (m: string) => console.log(`[vec ${rows} ${dist}] ${m}`);
const T = { tenantId: 'bench', contextId: 'main' };
const SMALL = Array.from({ length: 4 }, (_, k) => ({ tenantId: `small-${k}`, contextId: 'ctx' }));
const SMALL_ROWS = 250;
const LIMIT = 100;

const embedder = new BuiltinEmbedder();
const bases = basePassages(128);
const baseVecs = await baseVectors(embedder, bases, log);
const queryVecs = await embedder.embed(
  QUERIES.map((q) => q.q),
  { purpose: 'query' },
);

function vectorOf(i: number): number[] {
  const r = rng(i + 1);
  if (dist === 'dup') return perturb(baseVecs[i % baseVecs.length], r, 0.01);
  const a = baseVecs[i % baseVecs.length];
  const b = baseVecs[Math.floor(r() * baseVecs.length)];
  const w = r() * 0.5;
  return perturb(
    a.map((x, k) => (1 - w) * x + w * b[k]),
    r,
    0.02,
  );
}

// Loading never builds an index (minRows ∞); the measured instances share the table.
const loader = new LanceVectorIndex(dir, embedder.model, embedder.dims, { ann: { minRows: Infinity } });
await loader.init();
const have = (loader as unknown as { table?: { countRows(): Promise<number> } }).table
  ? await (loader as unknown as { table: { countRows(): Promise<number> } }).table.countRows()
  : 0;
if (have === 0) {
  const t0 = performance.now();
  const batch: VectorRow[] = [];
  const push = async (r: VectorRow) => {
    batch.push(r);
    if (batch.length >= 10_000) await loader.add(batch.splice(0));
  };
  for (let i = 0; i < rows; i++) {
    const text = syntheticPassage(i, bases).text;
    await push({
      itemId: `item-${Math.floor(i / 100)}`,
      chunkNo: i % 100,
      ...T,
      vector: vectorOf(i),
      chunkText: text,
      contextText: text,
    });
  }
  for (const [k, s] of SMALL.entries())
    for (let i = 0; i < SMALL_ROWS; i++) {
      const n = 10_000_000 + k * SMALL_ROWS + i;
      const text = syntheticPassage(n, bases).text;
      await push({
        itemId: `small-${k}-${Math.floor(i / 10)}`,
        chunkNo: i % 10,
        ...s,
        vector: vectorOf(n),
        chunkText: text,
        contextText: text,
      });
    }
  await loader.add(batch.splice(0));
  log(`loaded ${rows} + ${SMALL.length}×${SMALL_ROWS} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  if (process.env.VEC_FRAGMENTS) {
    // Like the service: one small fragment per projector write.
    for (let i = 0; i < Number(process.env.VEC_FRAGMENTS); i++) {
      const text = syntheticPassage(20_000_000 + i, bases).text;
      await loader.add([
        { itemId: `late-${i}`, chunkNo: 0, ...T, vector: vectorOf(20_000_000 + i), chunkText: text, contextText: text },
      ]);
    }
    log(`added ${process.env.VEC_FRAGMENTS} one-row fragments, not compacted`);
  } else {
    const m = await loader.maintain({ force: true }); // compaction only (minRows ∞)
    log(`compacted in ${m.ms} ms`);
  }
} else log(`reusing ${have} rows in ${dir}`);
await loader.close();

const idx = new LanceVectorIndex(dir, embedder.model, embedder.dims, {
  ann: { kind, ...(process.env.VEC_RPP ? { rowsPerPartition: Number(process.env.VEC_RPP) } : {}) },
});
await idx.init();
const key = (h: VectorHit) => `${h.itemId}#${h.chunkNo}`;

async function serial(
  f: (q: number[]) => Promise<VectorHit[]>,
): Promise<{ p50: number; p99: number; answers: VectorHit[][] }> {
  const t: number[] = [];
  const answers: VectorHit[][] = [];
  for (let round = 0; round < 2; round++)
    for (const q of queryVecs) {
      const t0 = performance.now();
      const a = await f(q);
      t.push(performance.now() - t0);
      if (round === 1) answers.push(a);
    }
  const s = Float64Array.from(t.slice(queryVecs.length)).sort();
  return { p50: percentile(s, 0.5), p99: percentile(s, 0.99), answers };
}
const concurrent = (f: (q: number[]) => Promise<unknown>) =>
  closedLoop({
    concurrency: 16,
    warmupMs: 500,
    durationMs: concurrentMs,
    op: async (_w, seq) => void (await f(queryVecs[seq % queryVecs.length])),
  });
const recall = (truth: VectorHit[][], got: VectorHit[][], k: number) => {
  let hit = 0;
  let all = 0;
  truth.forEach((tr, i) => {
    const want = new Set(tr.slice(0, k).map(key));
    all += want.size;
    for (const h of got[i].slice(0, k)) if (want.has(key(h))) hit++;
  });
  return all ? hit / all : 1;
};
/** Largest |ANN similarity − exact similarity| over passages both answers hold. */
const simError = (truth: VectorHit[][], got: VectorHit[][]) => {
  let worst = 0;
  truth.forEach((tr, i) => {
    const exactSim = new Map(tr.map((h) => [key(h), h.similarity]));
    for (const h of got[i]) {
      const e = exactSim.get(key(h));
      if (e !== undefined) worst = Math.max(worst, Math.abs(e - h.similarity));
    }
  });
  return worst;
};
/**
 * How much worse, in exact cosine similarity, the ANN top-10 is than the exact top-10: largest gap at rank 10 over the
 * queries.
 */
const top10Gap = (truth: VectorHit[][], got: VectorHit[][]) => {
  let worst = 0;
  truth.forEach((tr, i) => {
    const exactSim = new Map(tr.map((h) => [key(h), h.similarity]));
    const tenth = tr[Math.min(9, tr.length - 1)]?.similarity ?? 0;
    const annTop = got[i].slice(0, 10).map((h) => exactSim.get(key(h)) ?? 0);
    worst = Math.max(worst, tenth - Math.min(...annTop));
  });
  return worst;
};
const fmt = (x: number) => x.toFixed(1);

const exact = (q: number[], t = T) => idx.search({ ...t, vector: q, limit: LIMIT, exact: true });
const flat = await serial((q) => exact(q));
const flatC = await concurrent((q) => exact(q));
log(
  `flat (exact): one at a time p50 ${fmt(flat.p50)} ms; 16 clients p50 ${fmt(flatC.p50)} p99 ` +
    `${fmt(flatC.p99)} ms, ${Math.round(flatC.opsPerSec)}/s`,
);
const smallTruth: VectorHit[][] = [];
const ts0 = performance.now();
for (const q of queryVecs) smallTruth.push(await exact(q, SMALL[0]));
const smallExactMs = (performance.now() - ts0) / queryVecs.length;

// The page's texts read from LanceDB afterwards (what a `text: false` search would need): one more query per request.
{
  const page = (q: number[]) =>
    idx.hydrate(
      flat.answers[queryVecs.indexOf(q)]
        .slice(0, 20)
        .map((h) => ({ itemId: h.itemId, chunkNo: h.chunkNo, similarity: h.similarity })),
      T,
    );
  const h = await serial(async (q) => (await page(q), []));
  const hc = await concurrent(page);
  log(
    `hydrate a page of 20 hits from LanceDB: one at a time p50 ${fmt(h.p50)} ms; 16 clients p50 ` +
      `${fmt(hc.p50)} p99 ${fmt(hc.p99)} ms, ${Math.round(hc.opsPerSec)}/s`,
  );
}

const memGrid = (process.env.VEC_MEM_GRID ?? '20:2000')
  .split(',')
  .filter(Boolean)
  .map((g) => g.split(':').map(Number));
if (memGrid.length) {
  // VEC_EXACT_BELOW: the in-memory index's exactBelow (contexts up to that many rows scored exactly).
  const mem = new MemoryVectorIndex(idx, {
    log: (m) => log(m),
    ...(process.env.VEC_EXACT_BELOW ? { exactBelow: Number(process.env.VEC_EXACT_BELOW) } : {}),
  });
  const heap0 = process.memoryUsage();
  const t0 = performance.now();
  await mem.load(T);
  await mem.load(SMALL[0]);
  const loadMs = performance.now() - t0;
  const st = mem.stats;
  const heap1 = process.memoryUsage();
  log(
    `memory index: loaded ${st.rows} vectors in ${(loadMs / 1000).toFixed(2)} s; vectors + codes ` +
      `${(st.bytes / 2 ** 20).toFixed(1)} MiB (${Math.round(st.bytes / st.rows)} B/vector incl. spare ` +
      `capacity), texts ${(st.textBytes / 2 ** 20).toFixed(1)} MiB (UTF-8, outside the heap); ` +
      `process heap +${((heap1.heapUsed - heap0.heapUsed) / 2 ** 20).toFixed(1)} MiB, arrayBuffers ` +
      `+${((heap1.arrayBuffers - heap0.arrayBuffers) / 2 ** 20).toFixed(1)} MiB`,
  );
  for (const [nprobes, minCandidates, refine = MEMORY_VECTOR_DEFAULTS.refine] of memGrid) {
    Object.assign(mem.settings, { nprobes, minCandidates, refine });
    const f = (q: number[], t = T) => mem.search({ ...t, vector: q, limit: LIMIT, text: false });
    const s = await serial((q) => f(q));
    const c = await concurrent((q) => f(q));
    const small: VectorHit[][] = [];
    for (const q of queryVecs) small.push(await f(q, SMALL[0]));
    log(
      `memory nprobes ${nprobes}, ≥ ${minCandidates} rows, refine ${refine || 'off (float32 only)'}: ` +
        `recall@10 ${recall(flat.answers, s.answers, 10).toFixed(3)} recall@100 ` +
        `${recall(flat.answers, s.answers, 100).toFixed(3)}, max similarity error ` +
        `${simError(flat.answers, s.answers).toFixed(6)}, top-10 gap ` +
        `${top10Gap(flat.answers, s.answers).toFixed(4)}; ` +
        `one at a time p50 ${fmt(s.p50)} p99 ${fmt(s.p99)} ms; 16 clients p50 ${fmt(c.p50)} p99 ` +
        `${fmt(c.p99)} ms, ${Math.round(c.opsPerSec)}/s; small tenant recall@10 ` +
        `${recall(smallTruth, small, 10).toFixed(3)}`,
    );
  }
  const pageOf = (q: number[]) =>
    mem.hydrate(
      flat.answers[queryVecs.indexOf(q)]
        .slice(0, 20)
        .map((h) => ({ itemId: h.itemId, chunkNo: h.chunkNo, similarity: h.similarity })),
      T,
    );
  const hm = await concurrent(pageOf);
  log(
    `memory hydrate, a page of 20 hits: 16 clients p50 ${fmt(hm.p50)} p99 ${fmt(hm.p99)} ms, ` +
      `${Math.round(hm.opsPerSec)}/s`,
  );
  const ex = await serial((q) => mem.search({ ...T, vector: q, limit: LIMIT, exact: true, text: false }));
  log(
    `memory exact (every row scored): recall@100 ${recall(flat.answers, ex.answers, 100).toFixed(3)}, one ` +
      `at a time p50 ${fmt(ex.p50)} ms`,
  );
  mem.unload();
}

if (process.env.VEC_LANCE === '0') {
  await idx.close();
  await embedder.close();
  if (!keep) rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}
const built = await idx.maintain({ force: true });
log(`${kind} index: ${built.action} in ${(built.ms / 1000).toFixed(1)} s, ${built.partitions} partition(s)`);

for (const [nprobes, refine, ef] of grid) {
  Object.assign(idx.ann, { nprobes, refineFactor: refine, efFactor: ef });
  const ann = (q: number[], t = T) => idx.search({ ...t, vector: q, limit: LIMIT });
  const s = await serial((q) => ann(q));
  const c = await concurrent((q) => ann(q));
  const small: VectorHit[][] = [];
  const ts = performance.now();
  for (const q of queryVecs) small.push(await ann(q, SMALL[0]));
  const smallMs = (performance.now() - ts) / queryVecs.length;
  const shortSmall = small.filter((a) => a.length < Math.min(LIMIT, SMALL_ROWS)).length;
  log(
    `${kind} nprobes ${nprobes} refine ${refine} ef ${ef}×limit: recall@10 ` +
      `${recall(flat.answers, s.answers, 10).toFixed(3)} recall@100 ` +
      `${recall(flat.answers, s.answers, 100).toFixed(3)}, max similarity error ` +
      `${simError(flat.answers, s.answers).toFixed(4)}, top-10 gap ` +
      `${top10Gap(flat.answers, s.answers).toFixed(4)}; ` +
      `one at a time p50 ${fmt(s.p50)} ms; 16 clients p50 ${fmt(c.p50)} p99 ${fmt(c.p99)} ms, ` +
      `${Math.round(c.opsPerSec)}/s; ` +
      `small tenant (${SMALL_ROWS} rows): recall@10 ${recall(smallTruth, small, 10).toFixed(3)}, ` +
      `${shortSmall} short answers, ${fmt(smallMs)} ms/query (exact: ${fmt(smallExactMs)})`,
  );
}
await idx.close();
await embedder.close();
if (!keep) rmSync(dir, { recursive: true, force: true });
else if (!existsSync(dir)) log('table directory missing?');
