import { z } from 'zod';
import { searchBody, searchResponse } from './search';

/**
 * Inference (spec "Inference operations", "Inference stream events"; decisions §1, §8):
 * POST /v1/rag, POST /v1/documents/{id}/ask, POST /v1/chat (Server-Sent Events) and
 * GET /v1/models. `maxTokens` above a surface's cap is floored to the cap, not refused.
 */
export const INFERENCE_CAPS = {
  rag: { defaultMaxTokens: 1024, maxTokens: 4096, temperature: 0.3 },
  ask: { defaultMaxTokens: 2048, maxTokens: 8192 },
  chat: { defaultMaxTokens: 2048, maxTokens: 8192, temperature: 0.7 },
} as const;
export const RAG_SEARCH_LIMIT = { default: 10, max: 50 } as const;
/** Document ask: the most input (document text, prompt and framing) one call takes. */
export const ASK_INPUT_LIMIT_TOKENS = 32_000;

const maxTokens = z.number().int().min(1);
const model = z.string().min(1).max(200);

/** RAG's `search` object: the content search's parameters a RAG call may set (its query is the RAG query). */
export const ragSearch = searchBody
  .pick({
    mode: true,
    typeName: true,
    folderId: true,
    rootFolderId: true,
    userId: true,
    orgId: true,
    clientId: true,
    filters: true,
    contentTypes: true,
    createdAfter: true,
    createdBefore: true,
    requireComplete: true,
  })
  .extend({ limit: z.number().int().min(1).max(RAG_SEARCH_LIMIT.max).default(RAG_SEARCH_LIMIT.default) })
  .strict();

export const ragBody = z
  .object({
    query: z.string().trim().min(1).max(4000),
    model: model.optional(),
    maxTokens: maxTokens.optional(),
    temperature: z.number().min(0).max(2).default(INFERENCE_CAPS.rag.temperature),
    instructions: z.string().max(8000).optional(),
    search: ragSearch.default({ mode: 'HYBRID', requireComplete: false, limit: RAG_SEARCH_LIMIT.default }),
    allowGlobalRegion: z.boolean().optional(),
  })
  .strict();
export type RagBody = z.infer<typeof ragBody>;

export const askBody = z
  .object({
    /** The document asked about (spec: required): the path's id, which it must repeat. */
    id: z.string().uuid(),
    /**
     * No length cap of its own (the request body limit bounds it): over ASK_INPUT_LIMIT_TOKENS with the document is the
     * 413.
     */
    prompt: z.string().trim().min(1),
    model: model.optional(),
    maxTokens: maxTokens.optional(),
    allowGlobalRegion: z.boolean().optional(),
  })
  .strict();
export type AskBody = z.infer<typeof askBody>;

export const CHAT_ROLES = ['system', 'user', 'assistant'] as const;
export const chatMessage = z.object({ role: z.enum(CHAT_ROLES), content: z.string().max(200_000) }).strict();
export type ChatMessage = z.infer<typeof chatMessage>;

export const chatBody = z
  .object({
    messages: z.array(chatMessage).min(1).max(500),
    model: model.optional(),
    maxTokens: maxTokens.optional(),
    temperature: z.number().min(0).max(2).default(INFERENCE_CAPS.chat.temperature),
    topP: z.number().gt(0).max(1).optional(),
    allowGlobalRegion: z.boolean().optional(),
  })
  .strict()
  .refine((b) => b.messages.some((m) => m.role === 'user'), {
    message: 'messages must hold at least one user message',
    path: ['messages'],
  });
export type ChatBody = z.infer<typeof chatBody>;

export const PLAN_TIERS = ['free', 'starter', 'pro', 'scale', 'enterprise'] as const;

export const modelEntry = z.object({
  id: z.string(),
  name: z.string(),
  provider: z.string(),
  contextWindow: z.number().int(),
  inputCreditsPer1kTokens: z.number(),
  outputCreditsPer1kTokens: z.number(),
  availableOn: z.array(z.enum(PLAN_TIERS)),
});
export type ModelEntry = z.infer<typeof modelEntry>;
export const modelCatalogResponse = z.object({ models: z.array(modelEntry), defaultModel: z.string() });

/** The data of each frame of an inference stream, by event name (spec "Inference stream events"). */
export const inferenceEventData = {
  search_results: searchResponse,
  truncation_warning: z.object({
    resultsRequested: z.number().int(),
    resultsUsed: z.number().int(),
    reason: z.string(),
  }),
  document_context: z.object({
    documentId: z.string(),
    title: z.string(),
    textBytes: z.number().int(),
    model: z.string(),
  }),
  content_delta: z.object({ delta: z.string() }),
  done: z.object({
    inputTokens: z.number().int(),
    outputTokens: z.number().int(),
    model: z.string(),
    platformCreditsCharged: z.number(),
    inferenceBalanceCentsCharged: z.number(),
    cacheReadTokens: z.number().int().optional(),
    cacheCreateTokens: z.number().int().optional(),
  }),
  error: z.object({ message: z.string(), code: z.string() }),
} as const;
export type InferenceEvents = { [K in keyof typeof inferenceEventData]: z.infer<(typeof inferenceEventData)[K]> };

const eventsOf = <K extends keyof typeof inferenceEventData>(...names: K[]) =>
  Object.fromEntries(names.map((n) => [n, inferenceEventData[n]])) as Pick<typeof inferenceEventData, K>;
/**
 * The events of each stream, in the order they may come (RouteSpec `stream`; /openapi.json; the client). RAG:
 * search_results, optional truncation_warning, content_delta+, done (or error).
 */
export const ragStreamEvents = eventsOf('search_results', 'truncation_warning', 'content_delta', 'done', 'error');
/** Document ask: document_context, content_delta+, done (or error). */
export const askStreamEvents = eventsOf('document_context', 'content_delta', 'done', 'error');
/** Chat: content_delta+, done (or error). */
export const chatStreamEvents = eventsOf('content_delta', 'done', 'error');
export type InferenceEventName = keyof InferenceEvents;
