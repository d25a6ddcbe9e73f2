/**
 * Offline ranking experiments for issue 7 (no service): what would BM25
 * parameters, analyzers, chunk sizes, passage→document aggregation, title
 * handling and fusion give on a BEIR split, with the service's own tokenisation.
 *
 *   npx tsx tests/eval/offline.ts --dataset <dir> [--split train] [--exp <list>] [--data-dir <eval DATA_DIR>]
 *
 *   --exp (comma-separated; default bm25,analyzer,chunks,agg,title,qtf):
 *     baseline  the engine as it is          bm25      k1 × b grid, passages and whole documents
 *     chunks    passage size                 agg       passage → document aggregation
 *     title     title handling               analyzer  english / english_nostop / english_parts / simple
 *     parts     english_parts × unit × k1/b  qtf       repeated query terms
 *     item      document-level BM25 from the stored passages (passage vs item df)
 *     runs      fusion formulas over the service's own TEXT and SEMANTIC rankings (an eval:search
 *               run's .cache/eval-search-<split>-runs.json, or --runs <file>)
 *     semantic, fusion, semdoc, extra, final   need --data-dir: the DATA_DIR of an eval:search ingest,
 *               whose LanceDB vectors are read (cached in .cache); final = the candidate configurations
 *   Tune on --split train; run `final` on test once to report.
 *
 * - Lexemes come from PostgreSQL's own to_tsvector (an in-memory PGlite), so the
 *   tokens, stemming and stop words are exactly the embedded text leg's
 *   (`english`); other configurations (`simple`, english stems without stop words)
 *   are built the same way. |p| = the passage's position count, as pg-fts.ts.
 * - Passages are cut by domain/src/search/chunking.ts (chunkText) at the size tried.
 * - BM25 is pg-fts.ts's formula: Σ_{t ∈ unique q} idf(t)·tf·(k1+1)/(tf + k1·(1−b+b·|p|/avgdl)),
 *   idf = ln(1 + (N − df + 0.5)/(df + 0.5)), over passages; the service's
 *   uniqueDocuments = the best passage per document, from the top max(100, 3·100) = 300
 *   passages (query-api/src/search/routes.ts), reproduced by agg "max300".
 * - Semantic: the passage vectors the service stored (LanceDB in --data-dir), query
 *   vectors from the built-in model (cached in .cache), cosine, best passage per document.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { chunkText } from '@svc/domain';
import { documentText, loadBeir, loadQrels, type CorpusDoc } from './dataset';
import { evaluate } from './metrics';

const ROOT = resolve(import.meta.dirname, '../..');
const CACHE = join(ROOT, '.cache');

// --- tokenisation through PostgreSQL -------------------------------------------------------------
type Bag = { tf: Map<string, number>; len: number };
type Analyzer = 'english' | 'simple' | 'english_nostop' | 'english_parts';

let pgPromise: Promise<PGlite> | undefined;
const pglite = () =>
  (pgPromise ??= (async () => {
    const db = await PGlite.create({});
    await db.exec(
      `
      CREATE TEXT SEARCH DICTIONARY english_stem_nostop (TEMPLATE = snowball, Language = ` +
        `english);
      CREATE TEXT SEARCH CONFIGURATION english_nostop (COPY = english);
      ALTER TEXT ` +
        `SEARCH CONFIGURATION english_nostop ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, ` +
        `hword, hword_part WITH english_stem_nostop;
      CREATE TEXT SEARCH CONFIGURATION english_parts ` +
        `(COPY = english);
      ALTER TEXT SEARCH CONFIGURATION english_parts DROP MAPPING FOR asciihword, ` +
        `hword, numhword;`,
    );
    return db;
  })());

/** Term bags of `texts` under `cfg`, cached on disk by content. */
async function bags(texts: string[], cfg: Analyzer): Promise<Bag[]> {
  const key = createHash('sha256').update(cfg).update('\u0000').update(texts.join('\u0001')).digest('hex').slice(0, 20);
  const file = join(CACHE, `eval-offline-tok-${key}.json`);
  if (existsSync(file)) {
    const raw = JSON.parse(readFileSync(file, 'utf8')) as Array<[Array<[string, number]>, number]>;
    return raw.map(([tf, len]) => ({ tf: new Map(tf), len }));
  }
  const db = await pglite();
  const out: Bag[] = texts.map(() => ({ tf: new Map(), len: 0 }));
  for (let i = 0; i < texts.length; i += 500) {
    const slice = texts.slice(i, i + 500);
    const { rows } = await db.query<{ i: number; lexeme: string; n: number }>(
      `SELECT t.i::int AS i, u.lexeme, array_length(u.positions, 1) AS n
       FROM unnest($1::text[]) WITH ORDINALITY t(txt, i), unnest(to_tsvector('${cfg}'::regconfig, t.txt)) u`,
      [slice],
    );
    for (const r of rows) {
      const b = out[i + r.i - 1];
      b.tf.set(r.lexeme, r.n);
      b.len += r.n;
    }
  }
  mkdirSync(CACHE, { recursive: true });
  writeFileSync(file, JSON.stringify(out.map((b) => [[...b.tf], b.len])));
  return out;
}

/** Query lexemes in order with repeats (the engine scores the unique ones). */
async function queryLexemes(texts: string[], cfg: Analyzer): Promise<string[][]> {
  const db = await pglite();
  const { rows } = await db.query<{ i: number; lexeme: string; p: number }>(
    `SELECT t.i::int AS i, u.lexeme, p FROM unnest($1::text[]) WITH ORDINALITY t(txt, i), ` +
      `unnest(to_tsvector('${cfg}'::regconfig, t.txt)) u, unnest(u.positions) p ORDER BY 1, 3`,
    [texts],
  );
  const out: string[][] = texts.map(() => []);
  for (const r of rows) out[r.i - 1].push(r.lexeme);
  return out;
}

// --- BM25 over units (passages), aggregated to documents ---------------------------------------------
interface Units {
  doc: string[]; // unit -> corpus id
  bags: Bag[];
}
interface Index {
  units: Units;
  N: number;
  avgdl: number;
  df: Map<string, number>;
  postings: Map<string, Array<[number, number]>>;
}
function buildIndex(units: Units): Index {
  const df = new Map<string, number>();
  const postings = new Map<string, Array<[number, number]>>();
  let total = 0;
  units.bags.forEach((b, u) => {
    total += b.len;
    for (const [t, n] of b.tf) {
      df.set(t, (df.get(t) ?? 0) + 1);
      let p = postings.get(t);
      if (!p) postings.set(t, (p = []));
      p.push([u, n]);
    }
  });
  const N = units.bags.length;
  return { units, N, avgdl: Math.max(1, total / Math.max(1, N)), df, postings };
}

interface Bm25Opts {
  k1: number;
  b: number;
  /** Count repeated query terms (Lucene sums duplicate clauses); the engine does not. */
  qtf?: boolean;
}
/** Unit scores for one query (sparse). */
function bm25(ix: Index, q: string[], o: Bm25Opts): Map<number, number> {
  const counts = new Map<string, number>();
  for (const t of q) counts.set(t, o.qtf ? (counts.get(t) ?? 0) + 1 : 1);
  const s = new Map<number, number>();
  for (const [t, qn] of counts) {
    const p = ix.postings.get(t);
    if (!p) continue;
    const df = ix.df.get(t)!;
    const idf = Math.log(1 + (ix.N - df + 0.5) / (df + 0.5));
    for (const [u, tf] of p) {
      const len = ix.units.bags[u].len;
      const w = (idf * tf * (o.k1 + 1)) / (tf + o.k1 * (1 - o.b + (o.b * len) / ix.avgdl));
      s.set(u, (s.get(u) ?? 0) + qn * w);
    }
  }
  return s;
}

type Agg = 'max300' | 'max' | 'sum' | 'max+0.1sum' | 'max+0.3rest';
/** Ranked document ids (top 100) from unit scores. */
function aggregate(ix: Index, scores: Map<number, number>, agg: Agg, depth = 100): Array<[string, number]> {
  const ranked = [...scores].sort((a, b) => b[1] - a[1]);
  const per = new Map<string, number[]>();
  const src = agg === 'max300' ? ranked.slice(0, 300) : ranked;
  for (const [u, s] of src) {
    const d = ix.units.doc[u];
    let l = per.get(d);
    if (!l) per.set(d, (l = []));
    l.push(s); // descending within a doc
  }
  const docScore = (l: number[]) => {
    switch (agg) {
      case 'max300':
      case 'max':
        return l[0];
      case 'sum':
        return l.reduce((a, b) => a + b, 0);
      case 'max+0.1sum':
        return l[0] + 0.1 * l.reduce((a, b) => a + b, 0);
      case 'max+0.3rest':
        return l[0] + 0.3 * l.slice(1).reduce((a, b) => a + b, 0);
    }
  };
  return [...per]
    .map(([d, l]) => [d, docScore(l)] as [string, number])
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, depth);
}

// --- setup -------------------------------------------------------------------------------------------
const { values: args } = parseArgs({
  options: {
    dataset: { type: 'string' },
    split: { type: 'string', default: 'train' },
    exp: { type: 'string', default: 'bm25,analyzer,chunks,agg,title,qtf' },
    'data-dir': { type: 'string' },
    runs: { type: 'string' },
  },
  strict: true,
});
if (!args.dataset) throw new Error('--dataset <dir> is required');
const data = loadBeir(resolve(args.dataset));
const qrels = loadQrels(resolve(args.dataset), args.split!);
const qids = [...qrels.keys()].filter((q) => data.queries.has(q));
const qtexts = qids.map((q) => data.queries.get(q)!);
const exps = new Set(args.exp!.split(','));

type UnitSpec = { chunk: number | 'doc'; title: 'lead' | 'every' | 'none' | 'lead2' };
function unitTexts(docs: CorpusDoc[], s: UnitSpec): { doc: string[]; texts: string[] } {
  const doc: string[] = [];
  const texts: string[] = [];
  for (const d of docs) {
    const title = d.title.trim();
    const body =
      s.title === 'lead' ? documentText(d, true) : s.title === 'lead2' ? `${title}\n\n${title}\n\n${d.text}` : d.text;
    const pieces =
      s.chunk === 'doc'
        ? [body.replace(/\s+/g, ' ').trim()]
        : chunkText(body, { maxChars: s.chunk }).map((p) => p.chunkText);
    for (const p of pieces) {
      doc.push(d._id);
      texts.push(s.title === 'every' && title ? `${title}. ${p}` : p);
    }
  }
  return { doc, texts };
}
const indexCache = new Map<string, Index>();
async function index(s: UnitSpec, cfg: Analyzer = 'english'): Promise<Index> {
  const key = `${s.chunk}/${s.title}/${cfg}`;
  let ix = indexCache.get(key);
  if (!ix) {
    const u = unitTexts(data.corpus, s);
    ix = buildIndex({ doc: u.doc, bags: await bags(u.texts, cfg) });
    indexCache.set(key, ix);
  }
  return ix;
}
const qlexCache = new Map<Analyzer, string[][]>();
async function qlex(cfg: Analyzer = 'english') {
  let q = qlexCache.get(cfg);
  if (!q) qlexCache.set(cfg, (q = await queryLexemes(qtexts, cfg)));
  return q;
}

function score(runs: Map<string, string[]>) {
  const e = evaluate(runs, qrels);
  return { ndcg: e.ndcg10, recall: e.recall100, per: e.perQuery };
}
async function runBm25(s: UnitSpec, o: Bm25Opts, agg: Agg = 'max300', cfg: Analyzer = 'english') {
  const ix = await index(s, cfg);
  const ql = await qlex(cfg);
  const runs = new Map<string, string[]>();
  const scored = new Map<string, Array<[string, number]>>();
  qids.forEach((q, i) => {
    const r = aggregate(ix, bm25(ix, ql[i], o), agg);
    scored.set(q, r);
    runs.set(
      q,
      r.map(([d]) => d),
    );
  });
  return { ...score(runs), runs: scored, units: ix.N };
}
const f3 = (x: number) => x.toFixed(3);
const row = (label: string, r: { ndcg: number; recall: number }) =>
  console.log(`${label.padEnd(58)} nDCG@10 ${f3(r.ndcg)}  R@100 ${f3(r.recall)}`);

// --- experiments -----------------------------------------------------------------------------------------
async function main() {
  console.log(`${args.split} split: ${qids.length} judged queries, ${data.corpus.length} documents\n`);
  const base: UnitSpec = { chunk: 700, title: 'lead' };
  if (exps.has('bm25') || exps.has('baseline')) {
    console.log(
      '## the engine as it is (english, 700-char passages, title leads the text, k1 1.2 b 0.75, best ' +
        'passage of top 300)',
    );
    const r = await runBm25(base, { k1: 1.2, b: 0.75 });
    row(`baseline (${r.units} passages)`, r);
  }
  if (exps.has('bm25')) {
    console.log('\n## k1 / b, 700-char passages');
    for (const k1 of [0.6, 0.9, 1.2, 1.5, 2.0])
      for (const b of [0.3, 0.4, 0.5, 0.75, 0.9]) row(`k1 ${k1} b ${b}`, await runBm25(base, { k1, b }));
    console.log('\n## k1 / b, whole documents (title + abstract)');
    for (const k1 of [0.6, 0.9, 1.2, 1.5, 2.0])
      for (const b of [0.3, 0.4, 0.5, 0.75, 0.9, 1.0])
        row(`doc k1 ${k1} b ${b}`, await runBm25({ chunk: 'doc', title: 'lead' }, { k1, b }, 'max'));
  }
  if (exps.has('chunks')) {
    console.log('\n## passage size (k1 1.2 b 0.75, and k1 0.9 b 0.4), best passage per document');
    for (const chunk of [350, 500, 700, 1000, 1500, 2000, 3000, 'doc'] as const)
      for (const o of [
        { k1: 1.2, b: 0.75 },
        { k1: 0.9, b: 0.4 },
      ]) {
        const r = await runBm25({ chunk, title: 'lead' }, o);
        row(`chunk ${chunk} (${r.units} units) k1 ${o.k1} b ${o.b}`, r);
      }
  }
  if (exps.has('agg')) {
    console.log('\n## passage -> document aggregation (700-char passages)');
    for (const o of [
      { k1: 1.2, b: 0.75 },
      { k1: 0.9, b: 0.4 },
    ])
      for (const agg of ['max300', 'max', 'sum', 'max+0.1sum', 'max+0.3rest'] as const)
        row(`${agg} k1 ${o.k1} b ${o.b}`, await runBm25(base, o, agg));
  }
  if (exps.has('title')) {
    console.log('\n## title handling');
    for (const chunk of [700, 'doc'] as const)
      for (const title of ['none', 'lead', 'lead2', 'every'] as const)
        for (const o of [
          { k1: 1.2, b: 0.75 },
          { k1: 0.9, b: 0.4 },
        ])
          row(
            `chunk ${chunk} title ${title} k1 ${o.k1} b ${o.b}`,
            await runBm25({ chunk, title }, o, chunk === 'doc' ? 'max' : 'max300'),
          );
  }
  if (exps.has('analyzer')) {
    console.log('\n## analyzer (PostgreSQL configurations)');
    for (const cfg of ['english', 'english_nostop', 'english_parts', 'simple'] as const)
      for (const chunk of [700, 'doc'] as const)
        for (const o of [
          { k1: 1.2, b: 0.75 },
          { k1: 0.9, b: 0.4 },
        ])
          row(
            `${cfg} chunk ${chunk} k1 ${o.k1} b ${o.b}`,
            await runBm25({ chunk, title: 'lead' }, o, chunk === 'doc' ? 'max' : 'max300', cfg),
          );
  }
  if (exps.has('parts')) {
    console.log('\n## english without hyphenated compounds (english_parts) x unit x k1/b');
    for (const chunk of [700, 1500, 2000, 'doc'] as const)
      for (const o of [
        { k1: 0.9, b: 0.4 },
        { k1: 1.2, b: 0.5 },
        { k1: 1.2, b: 0.75 },
      ])
        row(
          `english_parts chunk ${chunk} k1 ${o.k1} b ${o.b}`,
          await runBm25({ chunk, title: 'lead' }, o, chunk === 'doc' ? 'max' : 'max300', 'english_parts'),
        );
  }
  if (exps.has('qtf')) {
    console.log('\n## repeated query terms counted (Lucene) vs unique (engine)');
    for (const chunk of [700, 'doc'] as const)
      for (const qtf of [false, true])
        row(
          `chunk ${chunk} qtf ${qtf} k1 0.9 b 0.4`,
          await runBm25({ chunk, title: 'lead' }, { k1: 0.9, b: 0.4, qtf }, chunk === 'doc' ? 'max' : 'max300'),
        );
  }
  if (exps.has('item')) {
    console.log(
      '\n## document-level BM25 from the 700-char passages the engine already stores (tf and |d| summed per item)',
    );
    const pass = await index(base);
    const whole = await index({ chunk: 'doc', title: 'lead' });
    for (const o of [
      { k1: 1.2, b: 0.75 },
      { k1: 1.2, b: 0.5 },
      { k1: 0.9, b: 0.4 },
    ]) {
      // (a) idf from the passage statistics the engine keeps (ti_terms df over passages, N passages), avgdl over items
      const a: Index = { ...whole, N: pass.N, df: pass.df };
      const ql = await qlex();
      const runs = new Map(qids.map((q, i) => [q, aggregate(a, bm25(a, ql[i], o), 'max').map(([d]) => d)]));
      row(`item tf/len, passage df/N, k1 ${o.k1} b ${o.b}`, score(runs));
      row(
        `item tf/len, item df/N (exact), k1 ${o.k1} b ${o.b}`,
        await runBm25({ chunk: 'doc', title: 'lead' }, o, 'max'),
      );
    }
  }
  if (exps.has('fusion') || exps.has('semantic')) await semanticAndFusion();
  if (exps.has('runs')) serviceRunsFusion();
  if (exps.has('vecchunks')) await vectorPassageSizes();
  if (exps.has('final')) await finalFigures();
  if (exps.has('extra')) await extra();
}

// --- semantic leg and fusion, from an eval:search ingest -------------------------------------------------
type Vec = Float32Array;
async function loadVectors(dataDir: string): Promise<{ doc: string[]; chunk: number[]; vecs: Vec[] }> {
  const state = JSON.parse(readFileSync(join(dataDir, 'eval-search-state.json'), 'utf8')) as {
    ids: Record<string, string>;
  };
  const file = join(
    CACHE,
    `eval-offline-vectors-${createHash('sha256').update(dataDir).digest('hex').slice(0, 12)}.bin`,
  );
  const meta = `${file}.json`;
  if (existsSync(file) && existsSync(meta)) {
    const m = JSON.parse(readFileSync(meta, 'utf8')) as { doc: string[]; chunk: number[]; dims: number };
    const buf = readFileSync(file);
    const all = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
    return { doc: m.doc, chunk: m.chunk, vecs: m.doc.map((_, i) => all.subarray(i * m.dims, (i + 1) * m.dims)) };
  }
  const lancedb = await import('@lancedb/lancedb');
  const db = await lancedb.connect(join(dataDir, 'lancedb'));
  const names = await db.tableNames();
  const doc: string[] = [];
  const chunk: number[] = [];
  const vecs: Vec[] = [];
  for (const n of names) {
    const t = await db.openTable(n);
    const rows = (await t.query().limit(100_000_000).toArray()) as Array<Record<string, unknown>>;
    for (const r of rows) {
      const itemId = (r.item_id ?? r.itemId) as string;
      const id = state.ids[itemId];
      if (!id) continue;
      doc.push(id);
      chunk.push(Number(r.chunk_no ?? r.chunkNo));
      const vec = r.vector as { toArray?: () => ArrayLike<number> } & ArrayLike<number>;
      vecs.push(Float32Array.from(vec.toArray ? vec.toArray() : vec));
    }
  }
  if (!vecs.length)
    throw new Error(`no vectors of the eval ingest found in ${join(dataDir, 'lancedb')} (tables: ${names.join(', ')})`);
  const dims = vecs[0].length;
  const all = new Float32Array(vecs.length * dims);
  vecs.forEach((v, i) => all.set(v, i * dims));
  mkdirSync(CACHE, { recursive: true });
  writeFileSync(file, Buffer.from(all.buffer));
  writeFileSync(meta, JSON.stringify({ doc, chunk, dims }));
  return { doc, chunk, vecs };
}
async function embedCached(texts: string[], tag: string): Promise<Vec[]> {
  const { BuiltinEmbedder } = await import('@svc/search');
  const e = new BuiltinEmbedder();
  // Query texts are embedded as queries (bge prefixes its instruction); the cache is per model.
  const purpose = tag.startsWith('queries') ? 'query' : 'passage';
  const digest = createHash('sha256').update(texts.join('\u0001')).digest('hex').slice(0, 16);
  const file = join(CACHE, `eval-offline-emb-${e.model}-${tag}-${digest}.json`);
  if (existsSync(file)) {
    await e.close();
    return (JSON.parse(readFileSync(file, 'utf8')) as number[][]).map((v) => Float32Array.from(v));
  }
  const t0 = performance.now();
  const out: number[][] = [];
  for (let i = 0; i < texts.length; i += 64) {
    out.push(...(await e.embed(texts.slice(i, i + 64), { purpose })));
    process.stderr.write(
      `\rembedding ${tag}: ${out.length}/${texts.length} ` +
        `(${(out.length / ((performance.now() - t0) / 1000)).toFixed(1)}/s)`,
    );
  }
  process.stderr.write('\n');
  await e.close();
  mkdirSync(CACHE, { recursive: true });
  writeFileSync(file, JSON.stringify(out));
  return out.map((v) => Float32Array.from(v));
}
const dot = (a: Vec, b: Vec) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};

/** Document rankings of the vector leg: best passage per document (cosine), top `depth` documents. */
function vectorRuns(v: { doc: string[]; vecs: Vec[] }, qv: Vec[], depth = 100, passageDepth = 300) {
  const out = new Map<string, Array<[string, number]>>();
  qids.forEach((q, i) => {
    const sims = v.vecs.map((x, u) => [u, dot(qv[i], x)] as [number, number]).sort((a, b) => b[1] - a[1]);
    const best = new Map<string, number>();
    for (const [u, s] of sims.slice(0, passageDepth)) if (!best.has(v.doc[u])) best.set(v.doc[u], s);
    out.set(q, [...best].slice(0, depth));
  });
  return out;
}
const idsOf = (r: Map<string, Array<[string, number]>>) => new Map([...r].map(([q, l]) => [q, l.map(([d]) => d)]));

/** Fusion of two document rankings. */
function fuse(
  a: Array<[string, number]>,
  b: Array<[string, number]>,
  how: { kind: 'rrf'; k: number; wa: number; wb: number } | { kind: 'minmax' | 'z'; alpha: number },
  depth = 100,
) {
  const s = new Map<string, number>();
  if (how.kind === 'rrf') {
    a.forEach(([d], i) => s.set(d, (s.get(d) ?? 0) + how.wa / (how.k + i + 1)));
    b.forEach(([d], i) => s.set(d, (s.get(d) ?? 0) + how.wb / (how.k + i + 1)));
  } else {
    const norm = (l: Array<[string, number]>) => {
      if (!l.length) return new Map<string, number>();
      const xs = l.map(([, x]) => x);
      if (how.kind === 'minmax') {
        const lo = Math.min(...xs);
        const hi = Math.max(...xs);
        return new Map(l.map(([d, x]) => [d, hi > lo ? (x - lo) / (hi - lo) : 1]));
      }
      const mu = xs.reduce((p, c) => p + c, 0) / xs.length;
      const sd = Math.sqrt(xs.reduce((p, c) => p + (c - mu) ** 2, 0) / xs.length) || 1;
      return new Map(l.map(([d, x]) => [d, (x - mu) / sd]));
    };
    const na = norm(a);
    const nb = norm(b);
    // a document missing from a list gets that list's floor (0 for min-max, the lowest z seen)
    const floorA = how.kind === 'minmax' ? 0 : Math.min(0, ...na.values());
    const floorB = how.kind === 'minmax' ? 0 : Math.min(0, ...nb.values());
    for (const d of new Set([...na.keys(), ...nb.keys()]))
      s.set(d, how.alpha * (na.get(d) ?? floorA) + (1 - how.alpha) * (nb.get(d) ?? floorB));
  }
  return [...s].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).slice(0, depth);
}
function fuseRuns(
  text: Map<string, Array<[string, number]>>,
  vec: Map<string, Array<[string, number]>>,
  how: Parameters<typeof fuse>[2],
) {
  return new Map(qids.map((q) => [q, fuse(text.get(q) ?? [], vec.get(q) ?? [], how).map(([d]) => d)]));
}

async function semanticAndFusion() {
  if (!args['data-dir']) throw new Error('fusion/semantic need --data-dir <DATA_DIR of an eval:search ingest>');
  const v = await loadVectors(resolve(args['data-dir']));
  console.log(`\n## semantic leg: ${v.vecs.length} stored passage vectors (the built-in model)`);
  const qv = await embedCached(qtexts, `queries-${args.split}`);
  const sem = vectorRuns(v, qv);
  row('SEMANTIC best passage (as the service)', score(idsOf(sem)));
  // mean of a document's passage vectors ("document vector") and first-passage only
  const byDoc = new Map<string, Vec[]>();
  v.doc.forEach((d, i) => {
    let l = byDoc.get(d);
    if (!l) byDoc.set(d, (l = []));
    l.push(v.vecs[i]);
  });
  const docIds = [...byDoc.keys()];
  const meanVecs = docIds.map((d) => {
    const l = byDoc.get(d)!;
    const m = new Float32Array(l[0].length);
    for (const x of l) for (let i = 0; i < m.length; i++) m[i] += x[i] / l.length;
    const n = Math.hypot(...m) || 1;
    return m.map((x) => x / n);
  });
  row(
    'SEMANTIC mean of passage vectors per document',
    score(idsOf(vectorRuns({ doc: docIds, vecs: meanVecs }, qv, 100, 100000))),
  );
  if (exps.has('semantic')) {
    const titles = data.corpus.map((d) => d.title || d.text.slice(0, 200));
    const tv = await embedCached(titles, 'titles');
    row(
      'SEMANTIC title only',
      score(idsOf(vectorRuns({ doc: data.corpus.map((d) => d._id), vecs: tv }, qv, 100, 100000))),
    );
    // best of passage and title
    const both = { doc: [...v.doc, ...data.corpus.map((d) => d._id)], vecs: [...v.vecs, ...tv] };
    row('SEMANTIC best of passages and title', score(idsOf(vectorRuns(both, qv, 100, 400))));
  }
  if (exps.has('semdoc')) {
    // one vector per document (title + abstract, whole): what a larger chunk would give the vector leg
    const dv = await embedCached(
      data.corpus.map((d) => documentText(d, true)),
      'docs',
    );
    row(
      'SEMANTIC whole document (one vector)',
      score(idsOf(vectorRuns({ doc: data.corpus.map((d) => d._id), vecs: dv }, qv, 100, 100000))),
    );
    const both = { doc: [...v.doc, ...data.corpus.map((d) => d._id)], vecs: [...v.vecs, ...dv] };
    row('SEMANTIC best of passages and whole document', score(idsOf(vectorRuns(both, qv, 100, 400))));
  }
  if (!exps.has('fusion')) return;
  console.log('\n## fusion of document rankings (text: BM25 variants; vector: best passage)');
  const texts: Array<[string, UnitSpec, Bm25Opts, Agg]> = [
    ['engine BM25 (700, k1 1.2 b 0.75)', { chunk: 700, title: 'lead' }, { k1: 1.2, b: 0.75 }, 'max300'],
    ['doc BM25 (k1 0.9 b 0.4)', { chunk: 'doc', title: 'lead' }, { k1: 0.9, b: 0.4 }, 'max'],
    ['doc BM25 (k1 1.2 b 0.5)', { chunk: 'doc', title: 'lead' }, { k1: 1.2, b: 0.5 }, 'max'],
  ];
  for (const [label, spec, o, agg] of texts) {
    const t = (await runBm25(spec, o, agg)).runs;
    row(`TEXT ${label}`, score(idsOf(t)));
    for (const k of [1, 5, 10, 20, 30, 60, 100])
      row(`  RRF k ${k} equal weights`, score(fuseRuns(t, sem, { kind: 'rrf', k, wa: 1, wb: 1 })));
    for (const k of [10, 60])
      for (const wb of [0.1, 0.25, 0.5, 0.75])
        row(`  RRF k ${k} w_text 1 w_vector ${wb}`, score(fuseRuns(t, sem, { kind: 'rrf', k, wa: 1, wb })));
    for (const alpha of [0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9])
      row(`  min-max convex alpha_text ${alpha}`, score(fuseRuns(t, sem, { kind: 'minmax', alpha })));
    for (const alpha of [0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85])
      row(`  z-score convex alpha_text ${alpha}`, score(fuseRuns(t, sem, { kind: 'z', alpha })));
  }
  // Passage-level fusion, then the best passage per document (what routes.ts does with uniqueDocuments)
  console.log('\n## fusion of passage lists (top 300 of each leg), then the best passage per document');
  const ix = await index({ chunk: 700, title: 'lead' });
  const ql = await qlex();
  const legs = qids.map((q, i) => ({
    q,
    tl: [...bm25(ix, ql[i], { k1: 1.2, b: 0.75 })]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 300)
      .map(([u, x]) => [`${ix.units.doc[u]}#${chunkNoOf(ix, u)}`, x] as [string, number]),
    vl: v.vecs
      .map((x, u) => [u, dot(qv[i], x)] as [number, number])
      .sort((a, b) => b[1] - a[1])
      .slice(0, 300)
      .map(([u, x]) => [`${v.doc[u]}#${v.chunk[u]}`, x] as [string, number]),
  }));
  const passageFusion = (how: Parameters<typeof fuse>[2]) =>
    new Map(
      legs.map(({ q, tl, vl }) => {
        const fused = fuse(tl, vl, how, 600);
        const seen = new Set<string>();
        const docs: string[] = [];
        for (const [key] of fused) {
          const d = key.slice(0, key.indexOf('#'));
          if (!seen.has(d)) (seen.add(d), docs.push(d));
          if (docs.length === 100) break;
        }
        return [q, docs];
      }),
    );
  row(
    'HYBRID as the service (passage RRF k 60 equal, then best passage)',
    score(passageFusion({ kind: 'rrf', k: 60, wa: 1, wb: 1 })),
  );
  for (const alpha of [0.7, 0.8])
    row(`passage min-max convex alpha_text ${alpha}`, score(passageFusion({ kind: 'minmax', alpha })));
  for (const alpha of [0.7, 0.8])
    row(`passage z-score convex alpha_text ${alpha}`, score(passageFusion({ kind: 'z', alpha })));
  row('passage RRF k 10 w_vector 0.25', score(passageFusion({ kind: 'rrf', k: 10, wa: 1, wb: 0.25 })));
}
/**
 * Fusion of the service's own TEXT and SEMANTIC rankings (an eval:search run's
 * .cache/eval-search-<split>-runs.json, or --runs <file>): what HYBRID would
 * give with each formula, documents fused as routes.ts does with uniqueDocuments.
 */
function serviceRunsFusion() {
  const file = args.runs ? resolve(args.runs) : join(CACHE, `eval-search-${args.split}-runs.json`);
  const all = JSON.parse(readFileSync(file, 'utf8')) as Record<
    string,
    Record<string, Array<{ id: string; score: number }>>
  >;
  const asRuns = (mode: string) =>
    new Map(
      Object.entries(all[mode] ?? {}).map(([q, hits]) => [q, hits.map((h) => [h.id, h.score] as [string, number])]),
    );
  const t = asRuns('TEXT');
  const sem = asRuns('SEMANTIC');
  console.log(`\n## fusion of the service's runs (${file})`);
  row('TEXT (service)', score(idsOf(t)));
  row('SEMANTIC (service)', score(idsOf(sem)));
  if (all.HYBRID) row('HYBRID (service, as run)', score(idsOf(asRuns('HYBRID'))));
  for (const k of [10, 60]) row(`RRF k ${k} equal weights`, score(fuseRuns(t, sem, { kind: 'rrf', k, wa: 1, wb: 1 })));
  for (const alpha of [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95])
    row(`min-max convex alpha_text ${alpha}`, score(fuseRuns(t, sem, { kind: 'minmax', alpha })));
  for (const alpha of [0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85])
    row(`z-score convex alpha_text ${alpha}`, score(fuseRuns(t, sem, { kind: 'z', alpha })));
}

/** Chunk number of unit u: units of a document are consecutive. */
function chunkNoOf(ix: Index, u: number): number {
  let n = 0;
  while (u - n - 1 >= 0 && ix.units.doc[u - n - 1] === ix.units.doc[u]) n++;
  return n;
}

async function finalFigures() {
  console.log(`\n## candidate configurations (chosen on train), ${args.split} split`);
  const configs: Array<[string, UnitSpec, Bm25Opts, Agg, Analyzer]> = [
    [
      'TEXT engine today: english, 700-char passages, k1 1.2 b 0.75, best passage',
      { chunk: 700, title: 'lead' },
      { k1: 1.2, b: 0.75 },
      'max300',
      'english',
    ],
    [
      'TEXT english, 1500-char passages, k1 0.9 b 0.4',
      { chunk: 1500, title: 'lead' },
      { k1: 0.9, b: 0.4 },
      'max300',
      'english',
    ],
    [
      'TEXT english, document-level BM25, k1 1.2 b 0.75',
      { chunk: 'doc', title: 'lead' },
      { k1: 1.2, b: 0.75 },
      'max',
      'english',
    ],
    [
      'TEXT english_parts, 700-char passages, k1 1.2 b 0.75',
      { chunk: 700, title: 'lead' },
      { k1: 1.2, b: 0.75 },
      'max300',
      'english_parts',
    ],
    [
      'TEXT english_parts, 1500-char passages, k1 1.2 b 0.5',
      { chunk: 1500, title: 'lead' },
      { k1: 1.2, b: 0.5 },
      'max300',
      'english_parts',
    ],
    [
      'TEXT english_parts, document-level BM25, k1 1.2 b 0.75',
      { chunk: 'doc', title: 'lead' },
      { k1: 1.2, b: 0.75 },
      'max',
      'english_parts',
    ],
  ];
  const textRuns = new Map<string, Map<string, Array<[string, number]>>>();
  const per = new Map<string, Record<string, { ndcg10: number }>>();
  for (const [label, spec, o, agg, cfg] of configs) {
    const r = await runBm25(spec, o, agg, cfg);
    textRuns.set(label, r.runs);
    per.set(label, r.per);
    row(label, r);
  }
  const paired = (
    a: string,
    b: string,
    pa: Record<string, { ndcg10: number }>,
    pb: Record<string, { ndcg10: number }>,
  ) => {
    const d = Object.keys(pa).map((q) => pb[q].ndcg10 - pa[q].ndcg10);
    const mu = d.reduce((x, y) => x + y, 0) / d.length;
    const se = Math.sqrt(d.reduce((x, y) => x + (y - mu) ** 2, 0) / (d.length - 1) / d.length);
    console.log(
      `  paired: ${b} − ${a}: ${mu >= 0 ? '+' : ''}${mu.toFixed(3)} ± ${se.toFixed(3)} (1 s.e.; ` +
        `${d.filter((x) => x > 0).length} up, ${d.filter((x) => x < 0).length} down)`,
    );
  };
  const base = configs[0][0];
  for (const [label] of configs.slice(1)) paired('today', label.replace(/^TEXT /, ''), per.get(base)!, per.get(label)!);
  if (!args['data-dir']) return;
  const v = await loadVectors(resolve(args['data-dir']));
  const qv = await embedCached(qtexts, `queries-${args.split}`);
  const sem = vectorRuns(v, qv);
  row('SEMANTIC built-in model, 700-char passages, best passage', score(idsOf(sem)));
  for (const label of [configs[0][0], configs[5][0], configs[4][0]]) {
    const t = textRuns.get(label)!;
    const short = label.replace(/^TEXT /, '').slice(0, 40);
    row(`HYBRID doc RRF k 60 equal [${short}]`, score(fuseRuns(t, sem, { kind: 'rrf', k: 60, wa: 1, wb: 1 })));
    const hz = score(fuseRuns(t, sem, { kind: 'z', alpha: 0.75 }));
    row(`HYBRID doc z-score alpha 0.75 [${short}]`, hz);
    paired('its TEXT', 'HYBRID z 0.75', per.get(label)!, hz.per);
    row(`HYBRID doc min-max alpha 0.8 [${short}]`, score(fuseRuns(t, sem, { kind: 'minmax', alpha: 0.8 })));
  }
}

/** More text/fusion variants on top of document-level BM25 (train only). */
async function extra() {
  if (!args['data-dir']) throw new Error('extra needs --data-dir');
  const v = await loadVectors(resolve(args['data-dir']));
  const qv = await embedCached(qtexts, `queries-${args.split}`);
  const sem = vectorRuns(v, qv);
  const docT = (await runBm25({ chunk: 'doc', title: 'lead' }, { k1: 1.2, b: 0.5 }, 'max')).runs;
  const pasT = (await runBm25({ chunk: 700, title: 'lead' }, { k1: 1.2, b: 0.75 }, 'max300')).runs;
  console.log('\n## multi-granularity text: z(doc BM25) + w * z(best-passage BM25)');
  for (const w of [0, 0.25, 0.5, 1]) {
    const runs = new Map(qids.map((q) => [q, fuse(docT.get(q)!, pasT.get(q)!, { kind: 'z', alpha: 1 / (1 + w) })]));
    row(`doc + ${w} passage`, score(idsOf(runs)));
  }
  // Vector scores for every text candidate (exact best-passage cosine), not only the vector leg's own top 100
  console.log(
    '\n## text candidates re-scored with the exact cosine of their best passage (no floor for vector misses)',
  );
  const passagesOf = new Map<string, number[]>();
  v.doc.forEach((d, i) => {
    let l = passagesOf.get(d);
    if (!l) passagesOf.set(d, (l = []));
    l.push(i);
  });
  const z = (xs: number[]) => {
    const mu = xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mu) ** 2, 0) / xs.length) || 1;
    return xs.map((x) => (x - mu) / sd);
  };
  for (const alpha of [0.6, 0.7, 0.75, 0.8, 0.85, 0.9]) {
    const runs = new Map<string, string[]>();
    qids.forEach((q, i) => {
      const t = docT.get(q)!;
      const cos = t.map(([d]) => Math.max(...(passagesOf.get(d) ?? []).map((u) => dot(qv[i], v.vecs[u])), -1));
      const zt = z(t.map(([, x]) => x));
      const zc = z(cos);
      runs.set(
        q,
        t
          .map(([d], k) => [d, alpha * zt[k] + (1 - alpha) * zc[k]] as [string, number])
          .sort((a, b) => b[1] - a[1])
          .map(([d]) => d),
      );
    });
    row(`rerank text top 100: z-score alpha_text ${alpha}`, score(runs));
  }
  console.log('\n## union of both legs, every candidate scored by both (exact BM25 and exact cosine)');
  const ix = await index({ chunk: 'doc', title: 'lead' });
  const ql = await qlex();
  const docPos = new Map(ix.units.doc.map((d, u) => [d, u]));
  for (const alpha of [0.7, 0.75, 0.8]) {
    const runs = new Map<string, string[]>();
    qids.forEach((q, i) => {
      const bm = bm25(ix, ql[i], { k1: 1.2, b: 0.5 });
      const cands = [...new Set([...docT.get(q)!.map(([d]) => d), ...sem.get(q)!.map(([d]) => d)])];
      const tb = cands.map((d) => bm.get(docPos.get(d)!) ?? 0);
      const cs = cands.map((d) => Math.max(...(passagesOf.get(d) ?? []).map((u) => dot(qv[i], v.vecs[u])), -1));
      const zt = z(tb);
      const zc = z(cs);
      runs.set(
        q,
        cands
          .map((d, k) => [d, alpha * zt[k] + (1 - alpha) * zc[k]] as [string, number])
          .sort((a, b) => b[1] - a[1])
          .slice(0, 100)
          .map(([d]) => d),
      );
    });
    row(`union, exact scores, z-score alpha_text ${alpha}`, score(runs));
  }
}

/**
 * Passage size for both legs together, now that the vector leg carries weight (issue 16): SEMANTIC (the built-in
 * model, passages embedded offline at each size; cached in .cache) and HYBRID (z-score convex fusion of the BM25
 * run at the same size with it, documents fused as the service does), best passage per document. Train only.
 */
async function vectorPassageSizes() {
  console.log('\n## passage size for both legs (built-in model), best passage per document');
  const qv = await embedCached(qtexts, `queries-${args.split}`);
  for (const size of (process.env.VEC_SIZES ?? '1000,2000').split(',').map(Number)) {
    const doc: string[] = [];
    const texts: string[] = [];
    for (const d of data.corpus)
      for (const p of chunkText(documentText(d, true), { maxChars: size })) {
        doc.push(d._id);
        texts.push(p.chunkText);
      }
    const vecs = await embedCached(texts, `passages-${size}`);
    const sem = vectorRuns({ doc, vecs }, qv);
    const t = (await runBm25({ chunk: size, title: 'lead' }, { k1: 1.2, b: 0.75 }, 'max300')).runs;
    row(`${size} chars (${texts.length} passages): TEXT`, score(idsOf(t)));
    row(`${size} chars: SEMANTIC`, score(idsOf(sem)));
    for (const alpha of [0.4, 0.5, 0.6, 0.7, 0.8])
      row(`${size} chars: HYBRID z-score alpha_text ${alpha}`, score(fuseRuns(t, sem, { kind: 'z', alpha })));
  }
}
main().then(
  () => process.exit(0),
  (e) => {
    console.error(e instanceof Error ? e.stack : e);
    process.exit(1);
  },
);
