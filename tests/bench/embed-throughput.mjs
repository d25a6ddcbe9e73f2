// Raw throughput of the built-in model (bge-small-en-v1.5 int8, bge.mjs) in one process, over BEIR SciFact
// passages as the service cuts them (title + blank line + abstract, chunkText), in a tight loop: one text per call
// (the service's way) against batches of texts, and intra-op threads. Configurations are run in turn, round after
// round, so a shared machine's load falls on all of them alike; each line says the wall rate, the process's CPU
// milliseconds per passage (less sensitive to other load) and the smallest cosine of its vectors against one text per
// call with one thread (the first configuration).
//
//   node tests/bench/embed-throughput.mjs [dataset]   (default BENCH_PEERS_DATASET, else /work/shared/datasets/scifact)
//   N=96 ROUNDS=3 CONFIGS=t1b1,t1b4s,t1b16s,t2b1          t<threads>b<batch>, s: batches of similar token lengths
//
// Needs `npm run build` of domain (the chunker is read from domain/dist).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { chunkText } from '../../domain/dist/search/chunking.js';
import { clsPool, encode, loadTokenizer } from '../../search/src/engines/bge.mjs';
import { BGE_SMALL_Q, installedModel } from '../../search/src/engines/models.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');
const dataset = process.argv[2] ?? process.env.BENCH_PEERS_DATASET ?? '/work/shared/datasets/scifact';
const model = installedModel(BGE_SMALL_Q);
if (!model.ok) throw new Error(model.reason);
const dims = BGE_SMALL_Q.dims;
const docs = readFileSync(join(dataset, 'corpus.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l));
const texts = docs.flatMap((d) =>
  chunkText(d.title.trim() ? `${d.title.trim()}\n\n${d.text}` : d.text).map((p) => p.chunkText),
);
const tokenizer = await loadTokenizer(model.dir);
const N = Number(process.env.N ?? 96);
// A sample spread evenly over the corpus.
const step = Math.floor(texts.length / N);
const ids = Array.from({ length: N }, (_, i) => encode(tokenizer, texts[i * step], 'passage'));
const lengths = texts.map((t) => encode(tokenizer, t).length).sort((a, b) => a - b);
const at = (q) => lengths[Math.floor(lengths.length * q)];
console.log(
  `${texts.length} passages; tokens p10 ${at(0.1)} p50 ${at(0.5)} p90 ${at(0.9)} max ${lengths.at(-1)}; ` +
    `sample of ${N}`,
);

const session = (threads) =>
  ort.InferenceSession.create(join(model.dir, 'model.onnx'), {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });

/** One model call over `group` (token ids), padded to its longest with the attention mask 0 over the padding. */
async function call(s, group) {
  const b = group.length;
  const L = Math.max(...group.map((g) => g.length));
  const input = new BigInt64Array(b * L);
  const mask = new BigInt64Array(b * L);
  group.forEach((g, r) => {
    for (let j = 0; j < g.length; j++) {
      input[r * L + j] = BigInt(g[j]);
      mask[r * L + j] = 1n;
    }
  });
  const t = (data) => new ort.Tensor('int64', data, [b, L]);
  const res = await s.run({
    input_ids: t(input),
    attention_mask: t(mask),
    token_type_ids: t(new BigInt64Array(b * L)),
  });
  const h = res.last_hidden_state.data;
  const out = new Float32Array(b * dims);
  for (let r = 0; r < b; r++) clsPool(h.subarray(r * L * dims, r * L * dims + dims), dims, out, r * dims);
  return out;
}

async function embedAll(s, batch, bucketed) {
  const order = ids.map((_, i) => i);
  if (bucketed) order.sort((a, b) => ids[a].length - ids[b].length);
  const out = new Float32Array(N * dims);
  for (let i = 0; i < N; i += batch) {
    const part = order.slice(i, i + batch);
    const v = await call(
      s,
      part.map((k) => ids[k]),
    );
    part.forEach((k, r) => out.set(v.subarray(r * dims, (r + 1) * dims), k * dims));
  }
  return out;
}

const configs = (process.env.CONFIGS ?? 't1b1,t1b4s,t1b16s,t2b1').split(',');
const sessions = new Map();
let reference;
const cpu = {};
for (let round = 0; round < Number(process.env.ROUNDS ?? 3); round++)
  for (const c of configs) {
    const m = /^t(\d+)b(\d+)(s?)$/.exec(c);
    if (!m) throw new Error(`configuration ${c}: t<threads>b<batch>[s]`);
    let s = sessions.get(m[1]);
    if (!s) {
      sessions.set(m[1], (s = await session(Number(m[1]))));
      await call(s, [ids[0]]); // the first run of a session is the slow one
    }
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const out = await embedAll(s, Number(m[2]), m[3] === 's');
    const secs = (performance.now() - t0) / 1000;
    const u = process.cpuUsage(c0);
    const cpuMs = (u.user + u.system) / 1000 / N;
    reference ??= out;
    let minCos = 1;
    for (let i = 0; i < N; i++) {
      let d = 0;
      for (let k = 0; k < dims; k++) d += out[i * dims + k] * reference[i * dims + k];
      minCos = Math.min(minCos, d);
    }
    (cpu[c] ??= []).push(cpuMs);
    console.log(
      `round ${round} ${c}: ${(N / secs).toFixed(1)} passages/s, ${cpuMs.toFixed(1)} CPU ms/passage, ` +
        `min cosine ${minCos.toFixed(6)}, load ${loadavg()[0].toFixed(2)}`,
    );
  }
for (const [c, v] of Object.entries(cpu)) console.log(`${c}: CPU ms/passage ${v.map((x) => x.toFixed(1)).join(' ')}`);
