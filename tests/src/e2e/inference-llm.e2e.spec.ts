/**
 * The OpenAI-compatible model adapter (LLM_URL; docs/inference.md) against a
 * chat-completions server on loopback that speaks the streaming protocol:
 * server-sent `data:` chunks, a usage chunk, `[DONE]`, errors before and inside
 * the stream, a stalled stream, and a client that goes away. No provider is
 * reachable from our machines; this server is the provider.
 */
import {
  createServer,
  type IncomingMessage,
  request as httpRequest,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, eventually, freePort, OPERATOR_TOKEN, startService, type TestService } from '../support/service';

interface Frame {
  event: string;
  data: any;
}

async function stream(url: string, token: string, body: unknown) {
  const u = new URL(url);
  const res = await new Api(u.origin).fetch('POST', u.pathname + u.search, { token, body });
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream'))
    return { status: res.status, frames: [] as Frame[], json: (await res.json()) as any };
  const frames: Frame[] = [];
  const parser = createParser({
    onEvent: (m: EventSourceMessage) => frames.push({ event: m.event ?? 'message', data: JSON.parse(m.data) }),
  });
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
    parser.feed(decoder.decode(chunk, { stream: true }));
  return { status: res.status, frames, json: undefined as any };
}

/** Reads a stream until its first content_delta, then closes the socket (a client that goes away). */
function disconnectAfterFirstDelta(url: string, token: string, body: unknown): Promise<Frame[]> {
  return new Promise((resolve, reject) => {
    const frames: Frame[] = [];
    const parser = createParser({
      onEvent: (m: EventSourceMessage) => frames.push({ event: m.event ?? 'message', data: JSON.parse(m.data) }),
    });
    const req = httpRequest(
      url,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        agent: false,
      },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          parser.feed(text);
          if (frames.some((f) => f.event === 'content_delta')) {
            req.destroy();
            resolve(frames);
          }
        });
        res.on('end', () => resolve(frames));
      },
    );
    req.on('error', (e) => (frames.length ? resolve(frames) : reject(e)));
    req.end(JSON.stringify(body));
  });
}

/** The provider: behaviour chosen by the last user message. */
function provider() {
  const seen: Array<Record<string, any>> = [];
  let flaky = 0;
  const closed: string[] = [];
  const chunk = (res: ServerResponse, data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  const delta = (content: string) => ({
    id: 'c1',
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { content } }],
  });
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    for await (const c of req) raw += c;
    const body = JSON.parse(raw);
    seen.push({ ...body, authorization: req.headers.authorization });
    const last = [...body.messages].reverse().find((m: { role: string }) => m.role === 'user')?.content ?? '';
    if (/flaky/.test(last) && flaky++ === 0) {
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"overloaded"}}');
      return;
    }
    if (/refuse/.test(last)) {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad request"}}');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.on('close', () => closed.push(last));
    if (/stall/.test(last)) return void chunk(res, delta('Thinking'));
    if (/midfail/.test(last)) {
      chunk(res, delta('Partial'));
      chunk(res, { error: { message: 'boom' } });
      return void res.end();
    }
    if (/slow/.test(last)) {
      for (let i = 0; i < 100 && !res.destroyed; i++) {
        chunk(res, delta(`word${i} `));
        await new Promise((r) => setTimeout(r, 50));
      }
      return void res.end();
    }
    for (const piece of ['Hello', ' from', ' the', ' model.']) chunk(res, delta(piece));
    chunk(res, {
      id: 'c1',
      object: 'chat.completion.chunk',
      choices: [],
      usage: { prompt_tokens: 1234, completion_tokens: 4, total_tokens: 1238 },
    });
    res.write('data: [DONE]\n\n');
    res.end();
  });
  return {
    server,
    seen,
    closed,
    /** Listens on a free loopback port; the base URL to give LLM_URL. */
    async listen(): Promise<string> {
      const port = await freePort();
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
      return `http://127.0.0.1:${port}/v1`;
    },
    async close(): Promise<void> {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('OpenAI-compatible model adapter (LLM_URL) against a loopback provider', () => {
  const p = provider();
  let svc: TestService;
  let pro: string;
  let free: string;

  beforeAll(async () => {
    svc = await startService({
      env: {
        LLM_URL: await p.listen(),
        LLM_API_KEY: 'sk-test-provider',
        LLM_MODELS: 'fake-large,fake-small',
        LLM_STALL_MS: '500',
      },
    });
    pro = (await svc.api.newAccount({ plan: 'pro', inferenceBalanceCents: 1000 })).tenants.live.rootKey;
    free = (await svc.api.newAccount({ plan: 'free', inferenceBalanceCents: 1000 })).tenants.live.rootKey;
  }, 120_000);
  afterAll(async () => {
    await p.close();
    await svc?.stop();
  });

  it('the catalog lists the configured models (the first is the default) beside the built-in one', async () => {
    const r = await svc.api.get('/v1/models', pro);
    expect(r.status).toBe(200);
    expect(r.body.defaultModel).toBe('fake-large');
    expect(r.body.models.map((m: { id: string }) => m.id)).toEqual(['fake-large', 'fake-small', 'builtin-extractive']);
    const m = r.body.models[0];
    expect(m.provider).toBe('openai-compatible');
    expect(m.availableOn).toEqual(['starter', 'pro', 'scale', 'enterprise']);
  });

  it("streams the provider's tokens as content_delta and charges its own token counts", async () => {
    const n = p.seen.length;
    const r = await stream(`${svc.url}/v1/chat`, pro, {
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say hello' },
      ],
      maxTokens: 99_999,
      temperature: 0.1,
      topP: 0.5,
    });
    expect(r.status).toBe(200);
    expect(r.frames.map((f) => f.event)).toEqual([
      'content_delta',
      'content_delta',
      'content_delta',
      'content_delta',
      'done',
    ]);
    expect(
      r.frames
        .slice(0, 4)
        .map((f) => f.data.delta)
        .join(''),
    ).toBe('Hello from the model.');
    const done = r.frames[4].data;
    expect(done).toMatchObject({ model: 'fake-large', inputTokens: 1234, outputTokens: 4, platformCreditsCharged: 0 });
    expect(done.inferenceBalanceCentsCharged).toBe(1); // (1.234 x 1 + 0.004 x 2) credits x 0.1 cent, rounded up
    const sent = p.seen[n];
    expect(sent).toMatchObject({
      model: 'fake-large',
      stream: true,
      max_tokens: 8192,
      temperature: 0.1,
      top_p: 0.5,
      authorization: 'Bearer sk-test-provider',
    });
    expect(sent.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Say hello' },
    ]);
  });

  it('a model outside the plan is 402 before the stream; the built-in model stays available', async () => {
    const r = await stream(`${svc.url}/v1/chat`, free, { messages: [{ role: 'user', content: 'Say hello' }] });
    expect(r.status).toBe(402);
    expect(r.frames).toEqual([]);
    const b = await stream(`${svc.url}/v1/chat`, free, {
      model: 'builtin-extractive',
      messages: [{ role: 'user', content: 'Say hello' }],
    });
    expect(b.status).toBe(200);
  });

  it('a 503 before the first token is retried; a refusal (400) is an error event', async () => {
    const ok = await stream(`${svc.url}/v1/chat`, pro, {
      model: 'fake-small',
      messages: [{ role: 'user', content: 'flaky please' }],
    });
    expect(ok.frames.map((f) => f.event).at(-1)).toBe('done');
    const bad = await stream(`${svc.url}/v1/chat`, pro, { messages: [{ role: 'user', content: 'refuse please' }] });
    expect(bad.status).toBe(200);
    expect(bad.frames.map((f) => f.event)).toEqual(['error']);
    expect(Object.keys(bad.frames[0].data).sort()).toEqual(['code', 'message']);
  });

  it('a failure inside the stream, or a stalled stream, ends it with an error event and no done', async () => {
    const mid = await stream(`${svc.url}/v1/chat`, pro, { messages: [{ role: 'user', content: 'midfail please' }] });
    expect(mid.frames.map((f) => f.event)).toEqual(['content_delta', 'error']);
    const t0 = Date.now();
    const stalled = await stream(`${svc.url}/v1/chat`, pro, { messages: [{ role: 'user', content: 'stall please' }] });
    expect(stalled.frames.map((f) => f.event)).toEqual(['content_delta', 'error']);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it('RAG sends the passages that fit as context to the provider; search_results comes first', async () => {
    const d = await svc.api.post('/v1/documents', pro, {
      title: 'Ferry',
      text: 'The island ferry leaves the harbour every two hours from seven in the morning.',
      indexMode: 'TEXT',
    });
    expect(d.status).toBe(201);
    await eventually(
      async () => (await svc.api.get(`/v1/documents/${d.body.id}`, pro)).body.status === 'INDEXED',
      30_000,
    );
    const n = p.seen.length;
    const r = await stream(`${svc.url}/v1/rag`, pro, {
      query: 'When does the island ferry leave?',
      instructions: 'Answer in one line.',
      search: { mode: 'TEXT' },
    });
    expect(r.frames[0].event).toBe('search_results');
    expect(r.frames.at(-1)!.event).toBe('done');
    const sent = p.seen[n];
    expect(sent.max_tokens).toBe(1024);
    expect(sent.messages[0].content).toContain('Answer in one line.');
    expect(sent.messages[1].content).toContain('[1] The island ferry leaves the harbour every two hours');
    expect(sent.messages[1].content).toContain('Question: When does the island ferry leave?');
  });

  it('a client that disconnects stops the upstream call, and the call is still counted once', async () => {
    const before = (await svc.api.get('/v1/usage', pro)).body.inference.endpoints.chat.calls;
    const t0 = Date.now();
    const frames = await disconnectAfterFirstDelta(`${svc.url}/v1/chat`, pro, {
      messages: [{ role: 'user', content: 'slow please' }],
    });
    expect(frames.filter((f) => f.event === 'content_delta').length).toBeGreaterThan(0);
    await eventually(async () => p.closed.includes('slow please'), 10_000);
    // The provider would have streamed for 5 s: the service hung up on it as soon as its client went away.
    expect(Date.now() - t0).toBeLessThan(3000);
    const after = await eventually(async () => {
      const c = (await svc.api.get('/v1/usage', pro)).body.inference.endpoints.chat.calls;
      return c > before ? c : null;
    }, 10_000);
    expect(after).toBe(before + 1);
  });

  it(
    'each call draws its cost from the balance; at zero the next call is 402 INSUFFICIENT_BALANCE, and a ' +
      'top-up restores it',
    async () => {
      const a = await svc.api.newAccount({ plan: 'pro', inferenceBalanceCents: 2 });
      const k = a.tenants.live.rootKey;
      const balance = async () => (await svc.api.get('/v1/usage', k)).body.inference;
      expect((await balance()).balanceCents).toBe(2);
      for (const left of [1, 0]) {
        const r = await stream(`${svc.url}/v1/chat`, k, { messages: [{ role: 'user', content: 'Say hello' }] });
        expect(r.frames.at(-1)!.data.inferenceBalanceCentsCharged).toBe(1);
        const b = await balance();
        expect(b.balanceCents).toBe(left);
        expect(b.costCents).toBe(2 - left);
      }
      const refused = await stream(`${svc.url}/v1/chat`, k, { messages: [{ role: 'user', content: 'Say hello' }] });
      expect(refused.status).toBe(402);
      expect(refused.json.errorCode).toBe('INSUFFICIENT_BALANCE');
      expect(
        (await svc.api.patch(`/operator/accounts/${a.accountId}`, OPERATOR_TOKEN, { inferenceBalanceCents: 5 })).status,
      ).toBe(200);
      expect((await balance()).balanceCents).toBe(5);
      expect(
        (await stream(`${svc.url}/v1/chat`, k, { messages: [{ role: 'user', content: 'Say hello' }] })).status,
      ).toBe(200);
    },
  );
});

describe('inference prices from PRICES_JSON (the inference section of the price table)', () => {
  const p = provider();
  let svc: TestService;
  const PRICES = {
    inference: {
      centsPerCredit: 1,
      llmInputCreditsPer1kTokens: 10,
      llmOutputCreditsPer1kTokens: 50,
      builtinInputCreditsPer1kTokens: 2.5,
    },
  };

  beforeAll(async () => {
    svc = await startService({
      env: { LLM_URL: await p.listen(), LLM_MODELS: 'fake-large', PRICES_JSON: JSON.stringify(PRICES) },
    });
  }, 120_000);
  afterAll(async () => {
    await p.close();
    await svc?.stop();
  });

  it('the catalog shows the configured prices; calls are charged by them', async () => {
    const a = await svc.api.newAccount({ plan: 'pro', inferenceBalanceCents: 1000 });
    const key = a.tenants.live.rootKey;
    const models = (await svc.api.get('/v1/models', key)).body.models as Array<Record<string, unknown>>;
    expect(models.map((m) => [m.id, m.inputCreditsPer1kTokens, m.outputCreditsPer1kTokens])).toEqual([
      ['fake-large', 10, 50],
      ['builtin-extractive', 2.5, 0], // the output price keeps its default
    ]);
    const balance = async () => (await svc.api.get('/v1/usage', key)).body.inference.balanceCents as number;

    const r = await stream(`${svc.url}/v1/chat`, key, { messages: [{ role: 'user', content: 'Say hello' }] });
    const done = r.frames.at(-1)!.data;
    expect(done).toMatchObject({ model: 'fake-large', inputTokens: 1234, outputTokens: 4 });
    // (1.234 x 10 + 0.004 x 50) credits x 1 cent = 12.54, rounded up.
    expect(done.inferenceBalanceCentsCharged).toBe(13);
    await eventually(async () => (await balance()) === 987, 10_000);

    const b = await stream(`${svc.url}/v1/chat`, key, {
      model: 'builtin-extractive',
      messages: [{ role: 'user', content: 'word '.repeat(1500) }],
    });
    const d = b.frames.at(-1)!.data;
    expect(d.model).toBe('builtin-extractive');
    expect(d.inputTokens).toBeGreaterThan(1000);
    expect(d.inferenceBalanceCentsCharged).toBe(Math.ceil((d.inputTokens / 1000) * 2.5));
    await eventually(async () => (await balance()) === 987 - d.inferenceBalanceCentsCharged, 10_000);
  });
});
