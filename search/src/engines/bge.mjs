// bge-small-en-v1.5 in ONNX (models.mjs), run with onnxruntime-node on the CPU and tokenized with
// @huggingface/tokenizers. Plain JavaScript: it runs in the model's worker thread (embed-worker.mjs),
// which has no TypeScript loader; the unit test imports it directly.
//
//   - Tokens: the tokenizer's own [CLS] … [SEP]; it has no truncation option, so a text longer than
//     the model's 512 positions keeps its first 511 ids and is closed with [SEP] (truncateIds).
//   - Queries (not passages) are prefixed with the model's instruction.
//   - The vector is the last hidden state at [CLS] (CLS pooling), L2-normalised.
//   - One text per model call, one intra-op thread; the pool's processes give the parallelism. Batches
//     measured no faster here even of texts of similar token lengths (little padding): CPU per SciFact
//     passage 88-102 ms one at a time, 91-111 ms in fours, 128-143 ms in sixteens; and the int8 model
//     quantises activations over the whole batch, so a passage's vector would depend on its neighbours
//     (cosine 0.995-0.997 against one at a time). Two intra-op threads: 119-190 ms (issues 16 and 46;
//     tests/bench/embed-throughput.mjs).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { BGE_SMALL_Q } from './models.mjs';

const require = createRequire(import.meta.url);

/** The first `max - 1` ids and the last one ([SEP]) of an encoding longer than `max`; shorter ones as they are. */
export function truncateIds(ids, max = BGE_SMALL_Q.maxTokens) {
  if (ids.length <= max) return ids;
  return [...ids.slice(0, max - 1), ids[ids.length - 1]];
}

/**
 * CLS pooling of one sequence's last hidden state (row 0 of `hidden`, `dims` wide), L2-normalised, into `out` at `at`.
 */
export function clsPool(hidden, dims, out, at = 0) {
  let s = 0;
  for (let k = 0; k < dims; k++) s += hidden[k] * hidden[k];
  const inv = 1 / (Math.sqrt(s) || 1);
  for (let k = 0; k < dims; k++) out[at + k] = hidden[k] * inv;
  return out;
}

/** The tokenizer of a model directory (tokenizer.json). */
export async function loadTokenizer(dir) {
  const { Tokenizer } = await import('@huggingface/tokenizers');
  return new Tokenizer(JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')), {});
}

/** Token ids of a text as the model sees them (instruction for queries, truncated to the model's positions). */
export function encode(tokenizer, text, purpose = 'passage', spec = BGE_SMALL_Q) {
  const t = purpose === 'query' ? spec.queryInstruction + text : text;
  return truncateIds(tokenizer.encode(t).ids, spec.maxTokens);
}

/**
 * Loads the model of `dir` (model.onnx, tokenizer.json). `threads`: onnxruntime intra-op threads
 * of this session (1 in a pool of one thread per core). Returns `embed(texts, purpose)` → Float32Array
 * of n × dims unit vectors, row-major.
 */
export async function loadBge({ dir, threads = 1, spec = BGE_SMALL_Q }) {
  const ort = require('onnxruntime-node');
  const [tokenizer, session] = await Promise.all([
    loadTokenizer(dir),
    ort.InferenceSession.create(join(dir, 'model.onnx'), {
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
      executionMode: 'sequential',
    }),
  ]);
  const dims = spec.dims;
  const embed = async (texts, purpose = 'passage') => {
    const out = new Float32Array(texts.length * dims);
    for (let i = 0; i < texts.length; i++) {
      const ids = encode(tokenizer, texts[i], purpose, spec);
      const n = ids.length;
      const inputIds = new BigInt64Array(n);
      const mask = new BigInt64Array(n).fill(1n);
      for (let j = 0; j < n; j++) inputIds[j] = BigInt(ids[j]);
      const r = await session.run({
        input_ids: new ort.Tensor('int64', inputIds, [1, n]),
        attention_mask: new ort.Tensor('int64', mask, [1, n]),
        token_type_ids: new ort.Tensor('int64', new BigInt64Array(n), [1, n]),
      });
      const h = r.last_hidden_state;
      if (h.dims[2] !== dims) throw new Error(`model answered ${h.dims[2]} dimensions, expected ${dims}`);
      clsPool(h.data, dims, out, i * dims);
      h.dispose?.();
    }
    return out;
  };
  return { dims, tokenizer, embed, close: () => session.release() };
}
