import { availableParallelism } from 'node:os';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { BGE_SMALL_Q, installedModel } from './models.mjs';
import { busyGapMs, PassagePacing, RequestPressure } from './request-pressure';

// The port (domain/src/ports/search.ts) is the one declaration; re-exported for this package's callers.
import type { EmbedPurpose, Embedder, VectorHit, VectorIndex } from '@svc/domain';
export type { EmbedPurpose, Embedder };

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

// --- the built-in model's thread pool ---------------------------------------------------------------

/**
 * Largest model call for queries (texts); passages being indexed go one a call (bge), PASSAGE_BATCH per round per
 * member.
 */
export const QUERY_BATCH = 16;
export const PASSAGE_BATCH = 8;
/** How long the first query of an idle model waits for others to share its call (ms). */
export const BATCH_WINDOW_MS = 2;

/**
 * HYBRID's keyword weight α with bge-small-en-v1.5 (z-score convex fusion, domain/src/search/fusion.ts), chosen on
 * BEIR SciFact train (809 queries, the service's own TEXT and SEMANTIC runs re-fused): α 0.3 0.767, 0.4 0.773,
 * 0.5 0.766, 0.6 0.756, 0.8 (the default, FUSION_TEXT_WEIGHT) 0.730.
 */
export const BGE_FUSION_TEXT_WEIGHT = 0.4;

/**
 * HYBRID's similarity floor for passages only the vector leg found, with bge-small-en-v1.5 (queries with its
 * instruction), between what matches nothing and what a one-word query means: queries of random letters or off
 * topic measured 0.30-0.52 against short records and up to 0.617 against SciFact abstracts; one-word queries
 * against short records about them 0.639-0.80. On SciFact train, floors of 0.55-0.7 left HYBRID nDCG@10 at 0.773.
 */
export const BGE_HYBRID_SIMILARITY_FLOOR = 0.63;

/** Which built-in model: bge-small-en-v1.5 (files in the model cache), the only one. */
export type BuiltinModelKind = 'bge';

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
  /** Model calls made (messages to the pool), texts embedded, and the largest batch seen. */
  calls: number;
  texts: number;
  queryTexts: number;
  maxBatch: number;
  /** Threads in the pool (at most), and threads started so far. */
  threads: number;
  started: number;
  /**
   * Passages embedded, and the milliseconds members spent on their calls, summed over members (posted to answered):
   * against members × wall time, what the indexing pipeline leaves the model idle.
   */
  passages: number;
  passageBusyMs: number;
}

/** One process of the pool. */
interface Host {
  post(m: unknown): void;
  ref(): void;
  unref(): void;
  terminate(): Promise<unknown>;
}
interface PoolThread {
  w: Host;
  inflight: { id: number; slots: Slot[]; query: boolean; at: number } | undefined;
  /** Set once it answered: its process has the model loaded. */
  loaded?: boolean;
}
type Answer = { id: number; n?: number; dims?: number; buf?: ArrayBuffer; error?: string };

/**
 * Starts one member of the pool running embed-worker.mjs in a child process: onnxruntime-node is not safe with
 * several worker_threads of one process (a native abort took the whole service down in the first SciFact ingest
 * with a pool of two threads); a process of its own per model instance is, and a crash then costs only that
 * member's call.
 */
function startHost(data: Record<string, unknown>, on: { message(m: Answer): void; lost(e: Error): void }): Host {
  const file = new URL('./embed-worker.mjs', import.meta.url);
  // Below the service in the scheduler once its model is loaded (the process sets its own niceness, embed-worker.mjs):
  // on a machine with few cores an indexing backlog would otherwise take the CPU from the requests (it yields when the
  // API is busy and runs at full speed when it is not).
  const c = fork(fileURLToPath(file), [], {
    execArgv: [],
    serialization: 'advanced',
    env: { ...process.env, SVC_EMBED_WORKER: JSON.stringify(data) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  c.on('message', (m) => on.message(m as Answer));
  c.on('error', on.lost);
  c.on('exit', (code, signal) => on.lost(new Error(`model process exited (${signal ?? `code ${code}`})`)));
  return {
    post: (m) => c.send(m as never),
    ref: () => (c.ref(), c.channel?.ref()),
    unref: () => (c.unref(), c.channel?.unref()),
    terminate: () =>
      new Promise<void>((resolve) => {
        if (c.exitCode !== null || c.signalCode !== null) return resolve();
        c.once('exit', () => resolve());
        c.ref(); // so this process waits for the exit
        c.kill();
      }),
  };
}

/**
 * Scheduling niceness of the model processes: EMBEDDING_NICE (0-19), default 19 (the requests' CPU first;
 * docs/search.md).
 */
export const modelNiceness = (env: NodeJS.ProcessEnv = process.env): number => {
  const n = Number(env.EMBEDDING_NICE);
  return env.EMBEDDING_NICE !== undefined && env.EMBEDDING_NICE !== '' && Number.isInteger(n) && n >= 0 && n <= 19
    ? n
    : 19;
};

/** Threads of the pool: EMBEDDING_THREADS, else one per core. */
export const defaultPoolSize = (env: NodeJS.ProcessEnv = process.env): number => {
  const n = Number(env.EMBEDDING_THREADS);
  return Number.isInteger(n) && n > 0 ? n : Math.max(1, availableParallelism());
};

/**
 * A pool of worker_threads running one model (embed-worker.mjs), shared by
 * every BuiltinEmbedder of the process that uses that model, so the model is
 * loaded once per thread and never runs on the event loop. In front of it, a
 * micro-batcher: queries that arrive while every thread is busy (or within
 * BATCH_WINDOW_MS of an idle one) share one message of up to QUERY_BATCH
 * texts; queries go before passages; passages go out `passagesPerCall` at a
 * time to whichever thread is free, so `size` threads embed in parallel.
 * Threads start on demand and hold the process open only while they have work.
 */
class ModelPool {
  private readonly threads: PoolThread[] = [];
  private readonly queries: Slot[] = [];
  private readonly passages: Slot[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Set while indexing calls wait for the requests (PassagePacing). */
  private paced: NodeJS.Timeout | undefined;
  private seq = 0;
  users = 0;
  readonly stats: ModelThreadStats;

  constructor(
    private readonly workerData: Record<string, unknown>,
    readonly size: number,
    private readonly passagesPerCall: number,
    private readonly pacing: PassagePacing,
  ) {
    this.stats = {
      calls: 0,
      texts: 0,
      queryTexts: 0,
      maxBatch: 0,
      threads: size,
      started: 0,
      passages: 0,
      passageBusyMs: 0,
    };
  }

  embed(texts: string[], purpose: EmbedPurpose): Promise<number[][]> {
    if (!texts.length) return Promise.resolve([]);
    return new Promise<number[][]>((resolve, reject) => {
      const p: Pending = { texts, out: new Array(texts.length), left: texts.length, done: false, resolve, reject };
      const lane = purpose === 'query' ? this.queries : this.passages;
      for (let i = 0; i < texts.length; i++) lane.push({ p, i });
      this.schedule();
    });
  }

  /**
   * Starts one member and loads the model in it (a one-text call), which is what a query needs; the others start with
   * bulk work.
   */
  async warm(): Promise<void> {
    await this.embed(['warm up'], 'query');
  }

  /** Whether a member of the pool is running with the model loaded (readiness says so). */
  get loaded(): boolean {
    return this.threads.some((t) => t.loaded);
  }

  private idle(): boolean {
    return this.threads.length < this.size || this.threads.some((t) => !t.inflight);
  }

  private schedule() {
    if (!this.idle()) return; // an answer starts the next call
    if (this.queries.length >= QUERY_BATCH || (!this.queries.length && this.passages.length >= this.passagesPerCall))
      return this.flush();
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

  /** Gives every free thread a call: queries first, then passages. */
  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (;;) {
      let slots = this.take(this.queries, QUERY_BATCH);
      const query = slots.length > 0;
      if (!query && this.passages.length) {
        // Indexing yields to the requests while they keep the event loop busy (one call at a time, at most one a gap).
        const wait = this.pacing.wait(this.threads.filter((t) => t.inflight && !t.inflight.query).length);
        if (wait > 0) {
          this.paced ??= setTimeout(() => {
            this.paced = undefined;
            this.flush();
          }, wait);
          break;
        }
      }
      if (!query) slots = this.take(this.passages, this.passagesPerCall);
      if (!slots.length) break;
      let t: PoolThread | undefined;
      try {
        t = this.freeThread();
      } catch (e) {
        for (const s of slots) this.fail(s.p, e as Error);
        continue;
      }
      if (!t) {
        // Every thread is busy: back to the front of its lane, in order.
        (query ? this.queries : this.passages).unshift(...slots);
        break;
      }
      const id = ++this.seq;
      t.inflight = { id, slots, query, at: performance.now() };
      if (!query) this.pacing.started();
      this.stats.calls++;
      this.stats.texts += slots.length;
      if (query) this.stats.queryTexts += slots.length;
      this.stats.maxBatch = Math.max(this.stats.maxBatch, slots.length);
      t.w.ref();
      t.w.post({ id, texts: slots.map((s) => s.p.texts[s.i]), purpose: query ? 'query' : 'passage' });
    }
    for (const t of this.threads) if (!t.inflight) t.w.unref();
  }

  private freeThread(): PoolThread | undefined {
    const free = this.threads.find((t) => !t.inflight);
    if (free) return free;
    if (this.threads.length >= this.size) return undefined;
    const t: PoolThread = { w: undefined as unknown as Host, inflight: undefined };
    t.w = startHost(this.workerData, { message: (m) => this.answer(t, m), lost: (e) => this.lost(t, e) });
    this.threads.push(t);
    this.stats.started++;
    return t;
  }

  private answer(t: PoolThread, m: Answer) {
    const f = t.inflight;
    if (!f || f.id !== m.id) return;
    t.inflight = undefined;
    if (!f.query) {
      this.stats.passages += f.slots.length;
      this.stats.passageBusyMs += performance.now() - f.at;
    }
    if (m.error === undefined) t.loaded = true;
    if (m.error !== undefined || !m.buf || m.n !== f.slots.length) {
      const err = new EmbeddingError(
        `built-in embedding model failed: ${m.error ?? `returned ${m.n} vectors for ${f.slots.length} texts`}`,
      );
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

  /** A thread died: its call fails (the next call starts a new thread). */
  private lost(t: PoolThread, e: Error) {
    const i = this.threads.indexOf(t);
    if (i < 0) return;
    this.threads.splice(i, 1);
    const slots = t.inflight?.slots ?? [];
    t.inflight = undefined;
    for (const s of slots) this.fail(s.p, e);
    this.flush();
  }

  async close() {
    const threads = this.threads.splice(0);
    const slots = [
      ...threads.flatMap((t) => t.inflight?.slots ?? []),
      ...this.queries.splice(0),
      ...this.passages.splice(0),
    ];
    clearTimeout(this.timer);
    this.timer = undefined;
    clearTimeout(this.paced);
    this.paced = undefined;
    for (const s of slots) this.fail(s.p, new Error('the embedder was closed'));
    await Promise.all(threads.map((t) => t.w.terminate()));
  }
}

const pools = new Map<BuiltinModelKind, ModelPool>();
/** Counters of the process's built-in model pool (benchmarks). */
export const builtinModelStats = (): ModelThreadStats | undefined => pools.get('bge')?.stats;

export interface BuiltinEmbedderOptions {
  /**
   * 'auto' (the default) and 'bge' both mean bge-small-en-v1.5; without it in the model cache the constructor throws
   * BuiltinModelMissing.
   */
  model?: 'auto' | BuiltinModelKind;
  /** Threads of the pool (default EMBEDDING_THREADS, else one per core). */
  threads?: number;
  env?: NodeJS.ProcessEnv;
}

/** What /readyz and /metrics say about the embedder in use. */
export interface EmbedderInfo {
  /** null: no model (BUILTIN_EMBEDDINGS_MODEL=none). */
  model: string | null;
  dims: number;
  /** 'builtin' (in this process), 'endpoint' (OpenAI-compatible) or 'none' (semantic search off). */
  kind: 'builtin' | 'endpoint' | 'none';
  /** Threads of the built-in model's pool. */
  threads?: number;
  /**
   * Built-in model: whether a model process is running with it loaded, read when asked. false: installed, and
   * loaded on the first embedding need (the first semantic query then waits about 1-3 s for it).
   */
  loaded?: boolean;
  /** kind 'none': why there is no model. */
  reason?: string;
}

/** Names the embedder (readiness and metrics). */
export const describeEmbedder = (e: Embedder): EmbedderInfo =>
  e instanceof BuiltinEmbedder
    ? {
        model: e.model,
        dims: e.dims,
        kind: 'builtin',
        threads: e.threads,
        // A getter: /readyz spreads and serialises this object per request, so it says the state of the moment.
        get loaded() {
          return e.loaded;
        },
      }
    : e.unavailable !== undefined
      ? { model: null, dims: 0, kind: 'none', reason: e.unavailable }
      : { model: e.model, dims: e.dims, kind: 'endpoint' };

/**
 * The built-in model is not in the model cache: the message names the ways out (the service stops at start with it).
 */
export class BuiltinModelMissing extends EmbeddingError {
  constructor(reason: string) {
    super(
      `the built-in embedding model ${BGE_SMALL_Q.name} is not installed (${reason}): fetch it with ` +
        `\`node deploy/scripts/fetch-model.mjs\` (what \`npm ci\` runs), ` +
        `or set BUILTIN_EMBEDDINGS_MODEL=none to run without semantic search, or EMBEDDINGS_URL (with ` +
        `EMBEDDINGS_MODEL) for an external model`,
    );
    this.name = 'BuiltinModelMissing';
  }
}

/**
 * No embedding model (BUILTIN_EMBEDDINGS_MODEL=none): semantic search is off. The search projector writes no vectors
 * (SEMANTIC and HYBRID items are indexed for keywords only), SEMANTIC search is refused and HYBRID answers from the
 * keyword leg alone, marked degraded (query-api/src/search/routes.ts).
 */
export class NoEmbedder implements Embedder {
  readonly model = 'none';
  readonly dims = 0;
  constructor(readonly unavailable: string) {}
  async embed(texts: string[]): Promise<number[][]> {
    if (!texts.length) return [];
    throw new EmbeddingError(`semantic search is off: ${this.unavailable}`);
  }
}

/** The vector index beside a NoEmbedder: holds nothing, finds nothing (no vector table is opened). */
export class NoVectorIndex implements VectorIndex {
  async init(): Promise<void> {}
  async replaceItem(): Promise<void> {}
  async replaceItems(): Promise<void> {}
  async deleteItem(): Promise<void> {}
  async deleteContext(): Promise<void> {}
  async search(): Promise<VectorHit[]> {
    return [];
  }
  async hydrate(): Promise<void> {}
  async drop(): Promise<void> {}
  async close(): Promise<void> {}
}

/**
 * The built-in model, run offline in a pool of model processes shared by the process (ModelPool above),
 * loaded once per member, on first use, never on the event loop; concurrent calls are batched.
 *
 * bge-small-en-v1.5 (int8 ONNX, 384-d, onnxruntime-node on the CPU, bge.mjs), whose files the install step
 * fetched into the model cache (models.mjs, deploy/scripts/fetch-model.mjs); one member per core, one intra-op
 * thread each. Queries get the model's instruction; passages do not. Without those files the constructor
 * throws BuiltinModelMissing: there is no weaker stand-in.
 *
 * close() releases this instance's use; the pool ends when the last user closes.
 */
export class BuiltinEmbedder implements Embedder {
  readonly model: string;
  readonly dims: number;
  readonly passageBatch: number;
  /** HYBRID's keyword weight for this model (tuned on SciFact train: docs/search.md). */
  readonly fusionTextWeight: number | undefined;
  readonly hybridSimilarityFloor: number | undefined;
  readonly kind: BuiltinModelKind;
  readonly threads: number;
  private readonly workerData: Record<string, unknown>;
  private readonly perCall: number;
  private readonly busyGapMs: number;
  private using = false;

  constructor(o: BuiltinEmbedderOptions = {}) {
    const env = o.env ?? process.env;
    this.busyGapMs = busyGapMs(env);
    const bge = installedModel(BGE_SMALL_Q, env);
    if (!bge.ok) throw new BuiltinModelMissing(bge.reason);
    this.kind = 'bge';
    this.model = BGE_SMALL_Q.name;
    this.dims = BGE_SMALL_Q.dims;
    this.threads = o.threads ?? defaultPoolSize(env);
    this.perCall = 1;
    // A round of the vector queue keeps every member busy for a few passages.
    this.passageBatch = 4 * this.threads;
    this.fusionTextWeight = BGE_FUSION_TEXT_WEIGHT;
    this.hybridSimilarityFloor = BGE_HYBRID_SIMILARITY_FLOOR;
    this.workerData = { model: 'bge', dir: bge.dir, threads: 1, nice: modelNiceness(env) };
  }

  private pool(): ModelPool {
    let p = pools.get(this.kind);
    if (!p)
      pools.set(
        this.kind,
        (p = new ModelPool(
          this.workerData,
          this.threads,
          this.perCall,
          new PassagePacing(new RequestPressure(), this.busyGapMs),
        )),
      );
    if (!this.using) {
      this.using = true;
      p.users++;
    }
    return p;
  }

  async embed(texts: string[], o?: { purpose?: EmbedPurpose }): Promise<number[][]> {
    if (!texts.length) return [];
    return this.pool().embed(texts, o?.purpose ?? 'passage');
  }

  /** Whether the process's pool has a member running with the model loaded. */
  get loaded(): boolean {
    return pools.get(this.kind)?.loaded ?? false;
  }

  /** Starts one member of the pool and loads the model (1–3 s here), so the first query does not wait for it. */
  async warm(): Promise<void> {
    await this.pool().warm();
  }

  async close(): Promise<void> {
    const p = pools.get(this.kind);
    if (!this.using || !p) return;
    this.using = false;
    if (--p.users > 0) return;
    pools.delete(this.kind);
    await p.close();
  }
}

// --- query vectors: an LRU cache in front of any embedder -------------------------------------------

/** Query texts whose vectors are kept per embedder (384-d float32: ~1.5 KB each, ~15 MB in all). */
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
    private readonly o: {
      url: string;
      apiKey?: string;
      model: string;
      dims: number;
      batchSize?: number;
      timeoutMs?: number;
    },
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
          headers: {
            'content-type': 'application/json',
            ...(this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {}),
          },
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
      if (!Array.isArray(data) || data.length !== input.length)
        throw new EmbeddingError(
          `embeddings endpoint returned ${data?.length ?? 0} vectors for ${input.length} inputs`,
        );
      const ordered = data.every((d) => typeof d.index === 'number')
        ? [...data].sort((a, b) => a.index! - b.index!)
        : data;
      for (const d of ordered) {
        if (!Array.isArray(d.embedding) || d.embedding.length !== this.o.dims)
          throw new EmbeddingError(`embedding has ${d.embedding?.length} dimensions, expected ${this.o.dims}`);
        out.push(normalise(d.embedding));
      }
    }
    return out;
  }
}
