import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript module of the model thread (no declarations)
import { clsPool, encode, loadBge, loadTokenizer, truncateIds } from '../../../search/src/engines/bge.mjs';
import { BGE_SMALL_Q, installedModel } from '../../../search/src/engines/models.mjs';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { BuiltinEmbedder, BuiltinModelMissing, describeEmbedder } from '@svc/search';
import { tempDir } from '../support/engines';
import { ROOT } from '../support/service';

/**
 * The built-in model (bge-small-en-v1.5, int8 ONNX; search/src/engines/bge.mjs): tokenizer
 * truncation, CLS pooling and normalisation, the query instruction, checked on known sentences
 * by cosine similarity rather than against a stored vector. Needs the model in the cache (the
 * install step fetches it); without it the service refuses to start (checked last, with the model hidden).
 */
const have = installedModel(BGE_SMALL_Q);
const cos = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};
const row = (m: Float32Array, i: number, d: number) => m.subarray(i * d, (i + 1) * d);

describe('truncation and pooling (no model needed)', () => {
  it('keeps the first 511 ids and closes with [SEP]; shorter encodings stay as they are', () => {
    const ids = [101, ...Array.from({ length: 700 }, (_, i) => 1000 + i), 102];
    const t = truncateIds(ids, 512);
    expect(t).toHaveLength(512);
    expect(t[0]).toBe(101);
    expect(t[510]).toBe(1000 + 509);
    expect(t[511]).toBe(102);
    expect(truncateIds([101, 5, 102], 512)).toEqual([101, 5, 102]);
  });

  it('CLS pooling takes row 0 of the hidden state and normalises it', () => {
    const hidden = new Float32Array([3, 4, 0, 9, 9, 9]); // [CLS] = (3, 4, 0), then another token
    const out = clsPool(hidden, 3, new Float32Array(3));
    expect(out[0]).toBeCloseTo(0.6, 6);
    expect(out[1]).toBeCloseTo(0.8, 6);
    expect(out[2]).toBe(0);
  });
});

describe.skipIf(!have.ok)('bge-small-en-v1.5 (int8 ONNX)', () => {
  let m: { embed(texts: string[], purpose?: string): Promise<Float32Array>; close(): Promise<void>; dims: number };
  beforeAll(async () => {
    m = await loadBge({ dir: have.dir });
  }, 60_000);
  afterAll(async () => m?.close());

  it(
    'tokenizes a known sentence with [CLS] … [SEP], the query instruction on queries only, and truncates ' +
      'long texts to 512',
    async () => {
      const tok = await loadTokenizer(have.dir);
      const ids = encode(tok, 'Hello world, this is a test of the tokenizer.', 'passage');
      expect(ids).toEqual([101, 7592, 2088, 1010, 2023, 2003, 1037, 3231, 1997, 1996, 19204, 17629, 1012, 102]);
      const q = encode(tok, 'Hello world, this is a test of the tokenizer.', 'query');
      expect(q.length).toBeGreaterThan(ids.length + 5);
      expect(q.slice(-13)).toEqual(ids.slice(1));
      const long = encode(tok, 'The quick brown fox jumps over the lazy dog. '.repeat(200), 'passage');
      expect(long).toHaveLength(512);
      expect(long[0]).toBe(101);
      expect(long[511]).toBe(102);
    },
  );

  it(
    'gives unit vectors, 384 wide; related texts are closer than unrelated ones; a truncated text keeps its ' +
      'meaning',
    async () => {
      const d = BGE_SMALL_Q.dims;
      const [query] = [await m.embed(['what do cats eat'], 'query')];
      const ps = await m.embed([
        'Cats are carnivores and eat meat such as mice and birds.',
        'The stock market fell sharply on Tuesday.',
        'Domestic cats are fed meat-based food.',
      ]);
      expect(ps.length).toBe(3 * d);
      for (let i = 0; i < 3; i++) expect(Math.hypot(...row(ps, i, d))).toBeCloseTo(1, 5);
      const qv = row(query, 0, d);
      expect(cos(qv, row(ps, 0, d))).toBeGreaterThan(cos(qv, row(ps, 1, d)) + 0.2);
      expect(cos(qv, row(ps, 2, d))).toBeGreaterThan(cos(qv, row(ps, 1, d)) + 0.2);
      // A text far past 512 tokens embeds (no error) and stays close to its opening.
      const head = 'Whales are large marine mammals that sing complex songs during migration. ';
      const [a, b] = [
        await m.embed([head.repeat(3)]),
        await m.embed([head.repeat(3) + 'Unrelated filler text about accounting ledgers. '.repeat(300)]),
      ];
      expect(cos(a, b)).toBeGreaterThan(0.8);
    },
    60_000,
  );

  it('the embedder runs it in its pool, names it, and treats queries differently from passages', async () => {
    const e = new BuiltinEmbedder();
    try {
      expect(describeEmbedder(e)).toMatchObject({ model: 'bge-small-en-v1.5-q', dims: 384, kind: 'builtin' });
      const [asQuery] = await e.embed(['what do cats eat'], { purpose: 'query' });
      const [asPassage] = await e.embed(['what do cats eat'], { purpose: 'passage' });
      const direct = await m.embed(['what do cats eat'], 'query');
      expect(cos(asQuery, direct)).toBeGreaterThan(0.9999);
      expect(cos(asQuery, asPassage)).toBeLessThan(0.999);
    } finally {
      await e.close();
    }
  }, 60_000);
});

/**
 * The model processes this process started (embed-worker.mjs children), with their niceness (/proc/<pid>/stat field
 * 19).
 */
function modelProcesses(): Array<{ pid: number; nice: number }> {
  const out: Array<{ pid: number; nice: number }> = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from 3 (state) on
      if (Number(f[1]) !== process.pid || !readFileSync(`/proc/${d}/cmdline`, 'utf8').includes('embed-worker.mjs'))
        continue;
      out.push({ pid: Number(d), nice: Number(f[16]) });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

describe.skipIf(!have.ok || process.platform !== 'linux')('model processes and the scheduler', () => {
  it("a model process loads its model at the service's priority, then lowers its own (EMBEDDING_NICE)", async () => {
    // Started at niceness 19, a member took 28 s to answer its first call while other processes kept the cores busy.
    const e = new BuiltinEmbedder({ env: { ...process.env, EMBEDDING_NICE: '19', EMBEDDING_THREADS: '1' } });
    try {
      const first = e.embed(['what do cats eat'], { purpose: 'passage' });
      let loading: Array<{ pid: number; nice: number }> = [];
      for (let i = 0; i < 200 && !loading.length; i++) {
        loading = modelProcesses();
        if (!loading.length) await new Promise((r) => setTimeout(r, 5));
      }
      expect(loading).toHaveLength(1);
      expect(loading[0].nice).toBe(getPriority());
      await first;
      expect(modelProcesses()).toEqual([{ pid: loading[0].pid, nice: 19 }]);
    } finally {
      await e.close();
    }
  }, 60_000);
});

describe('without the model', () => {
  const missing = { ...process.env, MODEL_CACHE_DIR: '/nonexistent/models' };
  it('the built-in embedder refuses to start, naming the ways out (there is no weaker stand-in)', () => {
    for (const model of [undefined, 'auto', 'bge'] as const) {
      const start = () => new BuiltinEmbedder({ model, env: missing });
      expect(start).toThrow(BuiltinModelMissing);
      expect(start).toThrow(
        new RegExp(
          'bge-small-en-v1\\.5-q is not installed \\(the model is not in /nonexistent/models/.*\\): ' +
            'fetch it with `node deploy/scripts/fetch-model\\.mjs`.*BUILTIN_EMBEDDINGS_MODEL=none.*EMBEDDINGS_URL',
        ),
      );
    }
  });

  // The launcher, as an operator runs it: one line on stderr and exit code 1, for the default (auto) and for bge.
  it.each([[undefined], ['bge']])(
    'the service does not start (BUILTIN_EMBEDDINGS_MODEL=%s): `cannot start:` and the fix',
    async (model) => {
      const data = tempDir('svc-no-model-');
      try {
        const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'deploy/src/start.ts')], {
          cwd: ROOT,
          env: {
            ...missing,
            DATABASE_URL: '',
            EVENTSTORE_URL: '',
            KAFKA_BROKERS: '',
            ELASTICSEARCH_URL: '',
            REDIS_URL: '',
            EMBEDDINGS_URL: '',
            BUILTIN_EMBEDDINGS_MODEL: model ?? '',
            DATA_DIR: data.dir,
            PORT: '0',
            LOG_LEVEL: 'silent',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let err = '';
        child.stderr!.on('data', (d) => (err += d));
        const code = await new Promise<number | null>((r) => child.once('exit', r));
        expect(code).toBe(1);
        expect(err).toMatch(
          new RegExp(
            '^cannot start: the built-in embedding model bge-small-en-v1\\.5-q is not installed ' +
              '.*BUILTIN_EMBEDDINGS_MODEL=none to run without semantic search',
            'm',
          ),
        );
        expect(err).not.toMatch(/\n\s+at /);
      } finally {
        data.remove();
      }
    },
    60_000,
  );
});
