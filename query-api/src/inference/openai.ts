import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { request } from 'undici';
import { type ModelEntry, PLAN_TIERS } from '@svc/contracts';
import { type InferenceModel, type InferenceRequest, ModelError, type ModelUsage } from './models';

/**
 * An OpenAI-compatible chat-completions endpoint (decisions §8: `LLM_URL`,
 * `LLM_API_KEY`, `LLM_MODELS`), called through undici with streaming:
 * `POST <LLM_URL>/chat/completions` with `stream: true` and
 * `stream_options.include_usage`, read as server-sent `data:` chunks up to
 * `[DONE]`. A connection failure, a 429 or a 5xx before the first token is
 * retried (twice, with a short backoff); after the first token a failure ends
 * the answer (the route sends an `error` event). A stream that sends nothing
 * for `stallMs` is abandoned the same way. The provider's token counts are
 * used when it reports them.
 */
export interface OpenAiModelOptions {
  url: string;
  apiKey?: string;
  id: string;
  contextWindow?: number;
  inputCreditsPer1kTokens?: number;
  outputCreditsPer1kTokens?: number;
  availableOn?: ModelEntry['availableOn'];
  /** Time to the response headers (default 30 s). */
  headersTimeoutMs?: number;
  /** Longest silence inside the stream (default 30 s). */
  stallMs?: number;
  /** Attempts before the first token (default 3). */
  attempts?: number;
}

const RETRYABLE = (status: number) => status === 429 || status >= 500;

export function openAiModel(o: OpenAiModelOptions): InferenceModel {
  const entry: ModelEntry = {
    id: o.id,
    name: o.id,
    provider: 'openai-compatible',
    contextWindow: o.contextWindow ?? 128_000,
    inputCreditsPer1kTokens: o.inputCreditsPer1kTokens ?? 1,
    outputCreditsPer1kTokens: o.outputCreditsPer1kTokens ?? 2,
    availableOn: o.availableOn ?? PLAN_TIERS.filter((t) => t !== 'free'),
  };
  const endpoint = `${o.url.replace(/\/+$/, '')}/chat/completions`;
  return {
    entry,
    async *stream(r: InferenceRequest): AsyncGenerator<string | ModelUsage> {
      const body = JSON.stringify({
        model: o.id,
        messages: messagesOf(r),
        max_tokens: r.maxTokens,
        ...(r.temperature !== undefined ? { temperature: r.temperature } : {}),
        ...(r.topP !== undefined ? { top_p: r.topP } : {}),
        stream: true,
        stream_options: { include_usage: true },
      });
      const attempts = o.attempts ?? 3;
      let res: Awaited<ReturnType<typeof request>> | undefined;
      for (let attempt = 1; ; attempt++) {
        try {
          res = await request(endpoint, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              accept: 'text/event-stream',
              ...(o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {}),
            },
            body,
            signal: r.signal,
            headersTimeout: o.headersTimeoutMs ?? 30_000,
            bodyTimeout: o.stallMs ?? 30_000,
          });
          if (res.statusCode === 200) break;
          const text = (await res.body.text()).slice(0, 300);
          if (!RETRYABLE(res.statusCode) || attempt >= attempts)
            throw new ModelError(`model endpoint answered ${res.statusCode}: ${text}`);
        } catch (e) {
          if (r.signal.aborted || attempt >= attempts || e instanceof ModelError) throw e;
        }
        await new Promise((ok) => setTimeout(ok, 200 * attempt));
      }
      const queue: Array<string | ModelUsage> = [];
      let done = false;
      let failure: ModelError | undefined;
      const parser = createParser({
        onEvent: (m: EventSourceMessage) => {
          if (m.data === '[DONE]') return void (done = true);
          const chunk = JSON.parse(m.data) as {
            choices?: Array<{ delta?: { content?: string } }>;
            usage?: { prompt_tokens?: number; completion_tokens?: number };
            error?: { message?: string };
          };
          if (chunk.error) failure = new ModelError(`model endpoint error: ${chunk.error.message ?? 'unknown'}`);
          const delta = chunk.choices?.[0]?.delta?.content;
          if (delta) queue.push(delta);
          if (
            chunk.usage &&
            typeof chunk.usage.prompt_tokens === 'number' &&
            typeof chunk.usage.completion_tokens === 'number'
          )
            queue.push({ inputTokens: chunk.usage.prompt_tokens, outputTokens: chunk.usage.completion_tokens });
        },
      });
      const decoder = new TextDecoder();
      for await (const bytes of res!.body) {
        parser.feed(decoder.decode(bytes as Buffer, { stream: true }));
        while (queue.length) yield queue.shift()!;
        if (failure) throw failure;
        if (done) return;
      }
      if (!done) throw new ModelError('model endpoint closed the stream before [DONE]');
    },
  };
}

/** The chat messages for a call: the system prompt, the sources as context, then the conversation or the question. */
function messagesOf(r: InferenceRequest): Array<{ role: string; content: string }> {
  if (r.surface === 'chat' && r.messages) return r.messages.map((m) => ({ role: m.role, content: m.content }));
  const context = r.sources.map((s) => `[${s.label}] ${s.text}`).join('\n\n');
  const system = [
    r.system,
    r.surface === 'rag'
      ? 'Answer from the numbered passages below; cite them as [n]. If they do not answer the question, say so.'
      : 'Answer from the document below. If it does not answer the question, say so.',
  ]
    .filter(Boolean)
    .join('\n\n');
  return [
    { role: 'system', content: system },
    {
      role: 'user',
      content: `${r.surface === 'rag' ? 'Passages' : 'Document'}:\n${context}\n\nQuestion: ${r.question}`,
    },
  ];
}
