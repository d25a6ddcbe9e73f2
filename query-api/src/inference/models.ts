import { type ChatMessage, type ModelEntry, PLAN_TIERS, ServiceError } from '@svc/contracts';
import { chooseSentences, type Embedder, type ExtractiveSource, NOTHING_FOUND, type SearchEngines } from '@svc/domain';

/**
 * The models inference can use (decisions §8) and the one way each is called:
 * `stream(request)` yields the answer's text in pieces. The built-in model is
 * extractive (domain/src/inference/extractive.ts); an OpenAI-compatible
 * endpoint (`LLM_URL`) would be one more adapter of the same interface.
 */
export interface InferenceRequest {
  surface: 'rag' | 'ask' | 'chat';
  /** The system prompt (RAG `instructions`, chat `system` messages). */
  system?: string;
  /** The question: the RAG query, the ask prompt, the last user message of a chat. */
  question: string;
  /** What the answer is drawn from: passages (RAG), the document (ask), the earlier messages (chat). */
  sources: ExtractiveSource[];
  /** The conversation as sent (chat), for models that take messages. */
  messages?: ChatMessage[];
  maxTokens: number;
  temperature?: number;
  topP?: number;
  signal: AbortSignal;
}

/** A model (or its server) failed to answer: mid-stream it becomes an `error` event; it is never an HTTP status. */
export class ModelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelError';
  }
}

/** Token counts as the model's provider reports them (they replace the service's own cl100k counts). */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
}

export interface InferenceModel {
  entry: ModelEntry;
  /**
   * The answer in pieces, and the provider's token counts if it reports them. Throws on a failure of the model
   * (mid-stream: an `error` event).
   */
  stream(request: InferenceRequest): AsyncIterable<string | ModelUsage>;
}

export const BUILTIN_MODEL_ID = 'builtin-extractive';

/**
 * The built-in extractive model: no server, no weights beyond the search
 * embedder. It answers with the sentences of the sources that best match the
 * question, verbatim, each followed by its source label when there are
 * several sources, word by word; or says plainly that nothing relevant was found.
 */
export function builtinModel(
  o: {
    embedder?: Embedder;
    embedQuery?: (text: string) => Promise<number[]>;
    contextWindow?: number;
    rerank?: number;
    /** Prices per 1k tokens (PRICES_JSON `inference`; default 0 and 0: its calls are counted, not charged). */
    inputCreditsPer1kTokens?: number;
    outputCreditsPer1kTokens?: number;
  } = {},
): InferenceModel {
  const entry: ModelEntry = {
    id: BUILTIN_MODEL_ID,
    name: 'Built-in extractive (answers with sentences from your content)',
    provider: 'builtin',
    contextWindow: o.contextWindow ?? 8192,
    inputCreditsPer1kTokens: o.inputCreditsPer1kTokens ?? 0,
    outputCreditsPer1kTokens: o.outputCreditsPer1kTokens ?? 0,
    availableOn: [...PLAN_TIERS],
  };
  const embedder = o.embedder;
  // Optional (`rerank` > 0): the question's vector from the search's query cache (RAG has just embedded the same
  // text) against the few best keyword candidates embedded as passages; vectors are unit length, so the dot
  // product is the cosine. Off by default: with 16 concurrent calls the embedding of candidate sentences queued
  // behind the model pool (RAG's first token at p99 755 ms at 10,000 passages); the embedding model still weighs
  // in through each passage's search score.
  const similarity = embedder
    ? async (question: string, sentences: string[]) => {
        const [q, vs] = await Promise.all([
          o.embedQuery ? o.embedQuery(question) : embedder.embed([question], { purpose: 'query' }).then((v) => v[0]),
          embedder.embed(sentences, { purpose: 'passage' }),
        ]);
        return vs.map((v) => v.reduce((a, x, i) => a + x * q[i], 0));
      }
    : undefined;
  return {
    entry,
    async *stream(r) {
      const rerank = o.rerank ?? 0;
      const choice = await chooseSentences(r.question, r.sources, {
        similarity: rerank > 0 ? similarity : undefined,
        maxSentences: 3,
        rerank,
      });
      if (r.signal.aborted) return;
      // RAG labels each sentence with its passage's place in search_results ([1] is the first).
      const labelled = r.surface === 'rag';
      const text = choice.sentences.length
        ? choice.sentences.map((s) => (labelled ? `${s.text} [${r.sources[s.source].label}]` : s.text)).join(' ')
        : NOTHING_FOUND;
      // Word by word, as a generating model would stream.
      for (const m of text.matchAll(/\S+\s*/g)) {
        if (r.signal.aborted) return;
        yield m[0];
      }
    },
  };
}

/**
 * The built-in model of a deployment: ranking sentences with the search's embedder, or, without an embedding model
 * (BUILTIN_EMBEDDINGS_MODEL=none) or without search, by their words alone.
 */
export function searchBuiltinModel(
  search?: SearchEngines,
  prices: Pick<ModelEntry, 'inputCreditsPer1kTokens' | 'outputCreditsPer1kTokens'> = {
    inputCreditsPer1kTokens: 0,
    outputCreditsPer1kTokens: 0,
  },
): InferenceModel {
  const embedder = search && search.embedder.unavailable === undefined ? search.embedder : undefined;
  return builtinModel({ embedder, embedQuery: embedder ? (q) => search!.embedQuery(q) : undefined, ...prices });
}

/** The catalog: every model this deployment serves, and the default. */
export class ModelCatalog {
  private readonly byId: Map<string, InferenceModel>;

  /**
   * `centsPerCredit`: what a credit of the models' prices costs on the inference balance (PRICES_JSON `inference`).
   */
  constructor(
    readonly models: InferenceModel[],
    readonly defaultModel: string = models[0]?.entry.id ?? BUILTIN_MODEL_ID,
    readonly centsPerCredit = 0.1,
  ) {
    this.byId = new Map(models.map((m) => [m.entry.id, m]));
  }

  list() {
    return { models: this.models.map((m) => m.entry), defaultModel: this.defaultModel };
  }

  /**
   * The model a call asked for (or the default) for an account on `plan`: 402 outside the plan, an unknown model
   * included (spec: "A model outside the plan gives 402").
   */
  resolve(id: string | undefined, plan: string): InferenceModel {
    const m = this.byId.get(id ?? this.defaultModel);
    if (!m)
      throw new ServiceError(
        'PAYMENT_REQUIRED',
        `Model '${String(id).slice(0, 200)}' is not available on any plan: GET /v1/models lists the models`,
      );
    const tier = (PLAN_TIERS as readonly string[]).includes(plan) ? plan : 'free';
    if (!(m.entry.availableOn as string[]).includes(tier))
      throw new ServiceError(
        'PAYMENT_REQUIRED',
        `Model '${m.entry.id}' is not available on the ${tier} plan (available on: ${m.entry.availableOn.join(', ')})`,
      );
    return m;
  }
}

/**
 * Whole cents charged to the inference balance for a call, rounded up (decisions §5, §8: 1 credit = 0.1 cent unless
 * configured).
 */
export function costCents(entry: ModelEntry, inputTokens: number, outputTokens: number, centsPerCredit = 0.1): number {
  const credits =
    (inputTokens / 1000) * entry.inputCreditsPer1kTokens + (outputTokens / 1000) * entry.outputCreditsPer1kTokens;
  return Math.ceil(credits * centsPerCredit);
}
