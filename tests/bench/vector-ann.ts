/**
 * The vector leg alone: LanceVectorIndex exact (flat) search against its ANN
 * index on the same table — latency (one query at a time, and 16 concurrent
 * clients) and recall@10 / recall@100 of the ANN answer against the exact one.
 *
 *   npx tsx tests/bench/vector-ann.ts [rows]        (default 10000)
 *
 * Env: VEC_DIST=dup|mix (default dup) — `dup`: the bench tiers' vectors (128
 * real passage embeddings, each reused with a small perturbation: clusters of
 * near-duplicates, the hardest case for quantised indexes); `mix`: each row a
 * random blend of two real embeddings plus noise (spread out, closer to real
 * data). VEC_KIND=IVF_HNSW_SQ|IVF_PQ, VEC_RPP (rows per partition), VEC_GRID="nprobes:refine:ef,..." (the
 * settings to measure), VEC_DIR keeps/reuses the table, VEC_MS (concurrent
 * phase, default 3000). Queries: the 48 relevance-set queries embedded with the
 * built-in model (real query vectors).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BuiltinEmbedder } from '@svc/projectors/search/embeddings';
import { LanceVectorIndex, type VectorHit, type VectorRow } from '@svc/projectors/search/vector-index';
import { QUERIES } from '../src/relevance/corpus';
import { closedLoop, percentile } from './load';
import { basePassages, baseVectors, perturb, rng, syntheticPassage } from './search';

const rows = Number(process.argv[2] ?? 10_000);
const dist = process.env.VEC_DIST ?? 'dup';
const kind = (process.env.VEC_KIND ?? 'IVF_HNSW_SQ') as 'IVF_HNSW_SQ' | 'IVF_PQ';
const grid = (process.env.VEC_GRID ?? '1:1:1.5,2:1:2,4:2:2,8:2:4').split(',').map((g) => g.split(':').map(Number) as [number, number, number]);
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
const queryVecs = await embedder.embed(QUERIES.map((q) => q.q), { purpose: 'query' });

function vectorOf(i: number): number[] {
  const r = rng(i + 1);
  if (dist === 'dup') return perturb(baseVecs[i % baseVecs.length], r, 0.01);
  const a = baseVecs[i % baseVecs.length];
  const b = baseVecs[Math.floor(r() * baseVecs.length)];
  const w = r() * 0.5;
  return perturb(a.map((x, k) => (1 - w) * x + w * b[k]), r, 0.02);
}

// Loading never builds an index (minRows ∞); the measured instances share the table.
const loader = new LanceVectorIndex(dir, embedder.model, embedder.dims, { ann: { minRows: Infinity } });
await loader.init();
const have = (loader as unknown as { table?: { countRows(): Promise<number> } }).table ? await (loader as unknown as { table: { countRows(): Promise<number> } }).table.countRows() : 0;
if (have === 0) {
  const t0 = performance.now();
  const batch: VectorRow[] = [];
  const push = async (r: VectorRow) => {
    batch.push(r);
    if (batch.length >= 10_000) await loader.add(batch.splice(0));
  };
  for (let i = 0; i < rows; i++) {
    const text = syntheticPassage(i, bases).text;
    await push({ itemId: `item-${Math.floor(i / 100)}`, chunkNo: i % 100, ...T, vector: vectorOf(i), chunkText: text, contextText: text });
  }
  for (const [k, s] of SMALL.entries())
    for (let i = 0; i < SMALL_ROWS; i++) {
      const n = 10_000_000 + k * SMALL_ROWS + i;
      const text = syntheticPassage(n, bases).text;
      await push({ itemId: `small-${k}-${Math.floor(i / 10)}`, chunkNo: i % 10, ...s, vector: vectorOf(n), chunkText: text, contextText: text });
    }
  await loader.add(batch.splice(0));
  log(`loaded ${rows} + ${SMALL.length}×${SMALL_ROWS} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const m = await loader.maintain({ force: true }); // compaction only (minRows ∞)
  log(`compacted in ${m.ms} ms`);
} else log(`reusing ${have} rows in ${dir}`);
await loader.close();

const idx = new LanceVectorIndex(dir, embedder.model, embedder.dims, { ann: { kind, ...(process.env.VEC_RPP ? { rowsPerPartition: Number(process.env.VEC_RPP) } : {}) } });
await idx.init();
const key = (h: VectorHit) => `${h.itemId}#${h.chunkNo}`;

async function serial(f: (q: number[]) => Promise<VectorHit[]>): Promise<{ p50: number; p99: number; answers: VectorHit[][] }> {
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
  closedLoop({ concurrency: 16, warmupMs: 500, durationMs: concurrentMs, op: async (_w, seq) => void (await f(queryVecs[seq % queryVecs.length])) });
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
/** How much worse, in exact cosine similarity, the ANN top-10 is than the exact top-10: largest gap at rank 10 over the queries. */
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
log(`flat (exact): one at a time p50 ${fmt(flat.p50)} ms; 16 clients p50 ${fmt(flatC.p50)} p99 ${fmt(flatC.p99)} ms, ${Math.round(flatC.opsPerSec)}/s`);
const smallTruth: VectorHit[][] = [];
const ts0 = performance.now();
for (const q of queryVecs) smallTruth.push(await exact(q, SMALL[0]));
const smallExactMs = (performance.now() - ts0) / queryVecs.length;

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
    `${kind} nprobes ${nprobes} refine ${refine} ef ${ef}×limit: recall@10 ${recall(flat.answers, s.answers, 10).toFixed(3)} recall@100 ${recall(flat.answers, s.answers, 100).toFixed(3)}, max similarity error ${simError(flat.answers, s.answers).toFixed(4)}, top-10 gap ${top10Gap(flat.answers, s.answers).toFixed(4)}; ` +
      `one at a time p50 ${fmt(s.p50)} ms; 16 clients p50 ${fmt(c.p50)} p99 ${fmt(c.p99)} ms, ${Math.round(c.opsPerSec)}/s; ` +
      `small tenant (${SMALL_ROWS} rows): recall@10 ${recall(smallTruth, small, 10).toFixed(3)}, ${shortSmall} short answers, ${fmt(smallMs)} ms/query (exact: ${fmt(smallExactMs)})`,
  );
}
await idx.close();
await embedder.close();
if (!keep) rmSync(dir, { recursive: true, force: true });
else if (!existsSync(dir)) log('table directory missing?');
