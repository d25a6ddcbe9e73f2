import {
  ASK_INPUT_LIMIT_TOKENS,
  askBody,
  askStreamEvents,
  chatBody,
  chatStreamEvents,
  forbidden,
  idParam,
  INFERENCE_CAPS,
  invalid,
  modelCatalogResponse,
  notFound,
  type Principal,
  ragBody,
  ragStreamEvents,
  type RequestMeta,
  route,
  type RouteSpec,
  searchBody,
  ServiceError,
} from '@svc/contracts';
import {
  type BlobStore,
  canReach,
  type ExtractiveSource,
  type SearchEngines,
  type Sql,
  TEXT_READY_STATUSES,
  type UsageCharges,
} from '@svc/domain';
import type { DocumentReads } from '../documents/reads';
import { runSearch } from '../search/routes';
import { costCents, type InferenceModel, type InferenceRequest, type ModelCatalog } from './models';
import { frame, sendEventStream } from './sse';
import { tokenCounter, type TokenCounter } from './tokens';

/**
 * Inference (spec "Inference operations", "Inference stream events"; decisions §8;
 * docs/inference.md). The edge has already run the pre-flight gates in the spec's
 * order (permission 403, credit ceiling 402, burst limit 429, balance 402). Every
 * refusal of the call itself (a model outside the plan, unknown ones included, 402,
 * `allowGlobalRegion` not entitled 403, document not askable 409, input too large
 * 413, `requireComplete` with a degraded search 503) is answered as JSON before the
 * first byte of the stream; after that, a model failure is an `error` event and the
 * end. The cost is recorded once the stream has ended, also when the client went
 * away (what was produced by then).
 */
export interface InferenceDeps {
  sql: Sql;
  catalog: ModelCatalog;
  /** Content search (RAG); absent in a process without search engines. */
  search?: SearchEngines;
  documents: DocumentReads;
  blobs: BlobStore;
  /** The caller's account (plan, entitlements). */
  account(accountId: string): Promise<Record<string, unknown> | null>;
  meter?: UsageCharges;
  log?: (message: string) => void;
}

/** Tokens of framing around the parts of a prompt (role markers, separators), counted once per call. */
const FRAMING_TOKENS = 16;

/** Every answering endpoint (RAG, ask, chat): a data-plane read of `inference:r` that counts toward the burst limit. */
const ANSWERING = { auth: 'data', permission: 'inference:r', rateLimited: true } as const;

export function inferenceRoutes(d: InferenceDeps): RouteSpec[] {
  /** The model for this call, after the plan and region checks. */
  async function modelFor(
    p: Principal,
    body: { model?: string; allowGlobalRegion?: boolean },
  ): Promise<InferenceModel> {
    const account = p.accountId ? await d.account(p.accountId) : null;
    if (body.allowGlobalRegion === true) {
      const ent = account?.entitlements as { allowGlobalRegion?: unknown } | undefined;
      if (ent?.allowGlobalRegion !== true) throw forbidden();
    }
    return d.catalog.resolve(body.model, typeof account?.plan === 'string' ? account.plan : 'free');
  }

  /**
   * The frames of one call: `lead` frames first, then the answer as content_delta frames (stopped at
   * `maxTokens` output tokens), then exactly one `done`, or an `error` when the model fails.
   */
  async function* answer(
    meta: RequestMeta,
    model: InferenceModel,
    req: Omit<InferenceRequest, 'signal'>,
    inputTokens: number,
    lead: string[],
    tokens: TokenCounter,
  ): AsyncGenerator<string> {
    const abort = new AbortController();
    let outputTokens = 0;
    let finished = false;
    // Whitespace that ended the last piece goes out with the next one: cl100k reads " sky" as one token and "sky " as
    // two, so a delta that starts with its space counts what the whole answer counts (and none ends with one).
    let pending = '';
    try {
      for (const f of lead) yield f;
      try {
        for await (const piece of model.stream({ ...req, signal: abort.signal })) {
          if (typeof piece !== 'string') {
            // The provider's own counts, when it reports them, are what is charged.
            inputTokens = piece.inputTokens;
            outputTokens = Math.min(piece.outputTokens, req.maxTokens);
            continue;
          }
          const core = piece.trimEnd();
          if (!core) {
            pending += piece;
            continue;
          }
          const delta = pending + core;
          pending = piece.slice(core.length);
          const n = tokens.count(delta);
          if (outputTokens + n > req.maxTokens) {
            // The tokens of this piece that still fit (a word longer than what is left is cut between its tokens).
            const start = tokens.head(delta, req.maxTokens - outputTokens);
            if (start) {
              outputTokens += tokens.count(start);
              yield frame('content_delta', { delta: start });
            }
            break;
          }
          outputTokens += n;
          yield frame('content_delta', { delta });
        }
      } catch (e) {
        d.log?.(`inference: model ${model.entry.id} failed: ${e instanceof Error ? e.message : String(e)}`);
        finished = true;
        yield frame('error', {
          message: 'The model failed while answering; nothing more will be sent',
          code: 'MODEL_ERROR',
        });
        return;
      }
      finished = true;
      yield frame('done', {
        inputTokens,
        outputTokens,
        model: model.entry.id,
        platformCreditsCharged: 0,
        inferenceBalanceCentsCharged: costCents(model.entry, inputTokens, outputTokens, d.catalog.centsPerCredit),
      });
    } finally {
      // Also reached when the client goes away mid-stream: the model is stopped and charged what it produced.
      if (!finished) abort.abort();
      const cents = costCents(model.entry, inputTokens, outputTokens, d.catalog.centsPerCredit);
      await d.meter
        ?.inferenceCall(meta, req.surface, cents)
        .catch((e) => d.log?.(`inference: usage not recorded: ${e instanceof Error ? e.message : String(e)}`));
    }
  }

  const capped = (asked: number | undefined, cap: { defaultMaxTokens: number; maxTokens: number }) =>
    Math.min(asked ?? cap.defaultMaxTokens, cap.maxTokens);

  return [
    route({
      method: 'GET',
      url: '/v1/models',
      operationId: 'listModels',
      auth: 'data',
      permission: 'inference:r',
      summary:
        'The model catalog: {models, defaultModel}; each model with its context window, prices per 1k ' +
        'tokens and the plans it is available on',
      response: modelCatalogResponse,
      handler: async () => d.catalog.list(),
    }),
    route({
      method: 'POST',
      url: '/v1/rag',
      operationId: 'rag',
      stream: ragStreamEvents,
      errors: [503],
      ...ANSWERING,
      summary:
        'Answer grounded in the content search (Server-Sent Events: search_results, optional ' +
        'truncation_warning, content_delta+, done)',
      body: ragBody,
      handler: async ({ body, principal: p, meta, reply }) => {
        const model = await modelFor(p, body);
        if (!d.search) throw new ServiceError('UNAVAILABLE', 'Search is not available in this process');
        const { limit, ...search } = body.search;
        const parsed = searchBody.safeParse({ ...search, query: body.query, limit });
        if (!parsed.success)
          throw invalid(
            `Invalid search: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
          );
        // 503 here when requireComplete meets a degraded leg
        const found = await runSearch(d.sql, d.search, p, parsed.data);
        const tokens = await tokenCounter();
        const maxTokens = capped(body.maxTokens, INFERENCE_CAPS.rag);
        // Passages in rank order while they fit the model's window beside the answer and the question.
        let budget =
          model.entry.contextWindow -
          maxTokens -
          tokens.count(body.instructions ?? '') -
          tokens.count(body.query) -
          FRAMING_TOKENS;
        const sources: ExtractiveSource[] = [];
        let passageTokens = 0;
        for (const [i, r] of found.results.entries()) {
          const n = tokens.count(r.chunkText) + 4;
          if (n > budget) break;
          budget -= n;
          passageTokens += n;
          sources.push({ label: String(i + 1), text: r.chunkText, score: r.score });
        }
        const lead = [frame('search_results', found)];
        if (sources.length < found.results.length)
          // resultsRequested: the search.limit of the call (what was asked for), not how many results came back.
          lead.push(
            frame('truncation_warning', {
              resultsRequested: limit,
              resultsUsed: sources.length,
              reason: 'context_window',
            }),
          );
        const inputTokens =
          tokens.count(body.instructions ?? '') + tokens.count(body.query) + passageTokens + FRAMING_TOKENS;
        return sendEventStream(
          reply,
          answer(
            meta,
            model,
            {
              surface: 'rag',
              system: body.instructions,
              question: body.query,
              sources,
              maxTokens,
              temperature: body.temperature,
            },
            inputTokens,
            lead,
            tokens,
          ),
        );
      },
    }),
    route({
      method: 'POST',
      url: '/v1/documents/:id/ask',
      operationId: 'askDocument',
      stream: askStreamEvents,
      errors: [409, 413],
      ...ANSWERING,
      summary:
        "Answer a prompt over one document's retained text (Server-Sent Events: document_context, " +
        'content_delta+, done); 409 while processing, failed or without retained text; 413 over 32,000 ' +
        'input tokens',
      params: idParam,
      body: askBody,
      handler: async ({ params, body, principal: p, meta, reply }) => {
        if (body.id !== params.id) throw invalid("id: the body's id must be the document of the path");
        const doc = await d.documents.byId(params.id);
        if (!doc || !canReach(p, doc)) throw notFound();
        const model = await modelFor(p, body);
        if (doc.status === 'FAILED')
          throw new ServiceError('CONFLICT', 'The document failed processing: there is no text to ask about');
        if (!TEXT_READY_STATUSES.includes(doc.status))
          throw new ServiceError(
            'CONFLICT',
            `The document is still processing (${doc.status}): ask again once its text is extracted`,
          );
        if (!doc.textRetained || !doc.textRef)
          throw new ServiceError(
            'CONFLICT',
            "The document's text is not retained: ask needs documents stored with their text",
          );
        const blob = await d.blobs.get(doc.textRef);
        if (!blob)
          throw new ServiceError(
            'CONFLICT',
            "The document's text is not retained: ask needs documents stored with their text",
          );
        const text = blob.toString('utf8');
        const tokens = await tokenCounter();
        const inputTokens =
          tokens.countUpTo(text, ASK_INPUT_LIMIT_TOKENS).tokens +
          tokens.countUpTo(body.prompt, ASK_INPUT_LIMIT_TOKENS).tokens +
          FRAMING_TOKENS;
        if (inputTokens > ASK_INPUT_LIMIT_TOKENS)
          throw new ServiceError(
            'PAYLOAD_TOO_LARGE',
            `The document and prompt come to about ${inputTokens} tokens, over the ` +
              `${ASK_INPUT_LIMIT_TOKENS}-token limit of document ask: use RAG over the document instead`,
            {
              details: { estimatedTokens: inputTokens, limitTokens: ASK_INPUT_LIMIT_TOKENS },
            },
          );
        const maxTokens = capped(body.maxTokens, INFERENCE_CAPS.ask);
        const lead = [
          frame('document_context', {
            documentId: doc.id,
            title: doc.title,
            textBytes: blob.length,
            model: model.entry.id,
          }),
        ];
        return sendEventStream(
          reply,
          answer(
            meta,
            model,
            { surface: 'ask', question: body.prompt, sources: [{ label: doc.title || doc.id, text }], maxTokens },
            inputTokens,
            lead,
            tokens,
          ),
        );
      },
    }),
    route({
      method: 'POST',
      url: '/v1/chat',
      operationId: 'chat',
      stream: chatStreamEvents,
      ...ANSWERING,
      summary:
        'Chat over the messages sent (Server-Sent Events: content_delta+, done); stores nothing, ' +
        'multi-turn by sending the messages again',
      body: chatBody,
      handler: async ({ body, principal: p, meta, reply }) => {
        const model = await modelFor(p, body);
        const tokens = await tokenCounter();
        const lastUser = body.messages.map((m) => m.role).lastIndexOf('user');
        const system =
          body.messages
            .filter((m) => m.role === 'system')
            .map((m) => m.content)
            .join('\n\n') || undefined;
        // What the built-in model can draw on: everything said before the question (system prompt included).
        const sources = body.messages
          .filter((m, i) => i !== lastUser && m.content.trim())
          .map((m, i) => ({ label: `${m.role} ${i + 1}`, text: m.content }));
        const inputTokens =
          body.messages.reduce((a, m) => a + tokens.countUpTo(m.content, model.entry.contextWindow).tokens + 4, 0) +
          FRAMING_TOKENS;
        if (inputTokens > model.entry.contextWindow)
          throw new ServiceError(
            'PAYLOAD_TOO_LARGE',
            `The messages come to about ${inputTokens} tokens, over the ` +
              `${model.entry.contextWindow}-token window of ${model.entry.id}`,
            {
              details: { estimatedTokens: inputTokens, limitTokens: model.entry.contextWindow },
            },
          );
        const maxTokens = capped(body.maxTokens, INFERENCE_CAPS.chat);
        const req = {
          surface: 'chat' as const,
          system,
          question: body.messages[lastUser].content,
          sources,
          messages: body.messages,
          maxTokens,
          temperature: body.temperature,
          topP: body.topP,
        };
        return sendEventStream(reply, answer(meta, model, req, inputTokens, [], tokens));
      },
    }),
  ];
}
