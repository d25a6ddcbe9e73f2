/**
 * Inference over Server-Sent Events, end to end (spec "Inference operations",
 * "Inference stream events", "Pre-flight order for inference"; decisions §8):
 * GET /v1/models, POST /v1/rag, POST /v1/documents/{id}/ask, POST /v1/chat on
 * the built-in extractive model. Streams are parsed frame by frame with
 * eventsource-parser, never matched as raw text.
 */
import { randomUUID } from 'node:crypto';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100kRanks from 'js-tiktoken/ranks/cl100k_base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, eventually, startService, type TestService } from '../support/service';
import { searchE2eEngine } from './search-engine';

interface Frame {
  event: string;
  data: any;
}

/** POSTs and reads the answer: the frames of a stream (200), or the JSON body of a refusal. */
async function stream(url: string, token: string, body: unknown, headers: Record<string, string> = {}) {
  const u = new URL(url);
  const res = await new Api(u.origin).fetch('POST', u.pathname + u.search, { token, body, headers });
  const type = res.headers.get('content-type') ?? '';
  if (!type.startsWith('text/event-stream'))
    return {
      status: res.status,
      headers: res.headers,
      frames: [] as Frame[],
      json: (await res.json().catch(() => undefined)) as any,
    };
  const frames: Frame[] = [];
  const parser = createParser({
    onEvent: (m: EventSourceMessage) => frames.push({ event: m.event ?? 'message', data: JSON.parse(m.data) }),
  });
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
    parser.feed(decoder.decode(chunk, { stream: true }));
  return { status: res.status, headers: res.headers, frames, json: undefined as any };
}

const answerOf = (frames: Frame[]) =>
  frames
    .filter((f) => f.event === 'content_delta')
    .map((f) => f.data.delta)
    .join('');
const names = (frames: Frame[]) => frames.map((f) => f.event);

/**
 * The one grammar every stream keeps: `done` exactly once and last, no frame after it, content between the lead and it.
 */
function expectWellFormed(frames: Frame[], lead: string[]) {
  const n = names(frames);
  expect(n.slice(0, lead.length)).toEqual(lead);
  expect(n.filter((x) => x === 'done')).toHaveLength(1);
  expect(n[n.length - 1]).toBe('done');
  expect(n.slice(lead.length, -1).every((x) => x === 'content_delta')).toBe(true);
  expect(n.slice(lead.length, -1).length).toBeGreaterThan(0);
  const done = frames[frames.length - 1].data;
  expect(Object.keys(done).sort()).toEqual([
    'inferenceBalanceCentsCharged',
    'inputTokens',
    'model',
    'outputTokens',
    'platformCreditsCharged',
  ]);
  expect(done.model).toBe('builtin-extractive');
  expect(done.inputTokens).toBeGreaterThan(0);
  expect(done.outputTokens).toBeGreaterThan(0);
  return done;
}

const FACTS = {
  penguins: 'Emperor penguins incubate their eggs on their feet through the Antarctic winter.',
  copper: 'Copper conducts electricity well because its outer electron moves freely through the metal lattice.',
  volcano: 'Mount Etna on Sicily is one of the most active volcanoes in Europe.',
};
const FILLER = [
  'The committee met on Tuesday to review the quarterly budget.',
  'Several members asked for more detail on travel expenses.',
  'Lunch was served in the main hall after the meeting.',
];

describe('inference (built-in extractive model)', () => {
  let svc: TestService;
  let api: Api;
  let key: string; // tenant A, balance 500 cents
  let other: string; // tenant B of another account
  const docs: Record<string, string> = {};

  const docDone = (token: string, id: string) =>
    eventually(
      async () => {
        const g = await api.get(`/v1/documents/${id}`, token);
        return ['INDEXED', 'SKIPPED', 'STORED', 'FAILED'].includes(g.body.status) ? g.body : null;
      },
      60_000,
      50,
    );
  async function ingest(token: string, title: string, text: string, indexMode = 'HYBRID') {
    const r = await api.post('/v1/documents', token, { title, text, indexMode });
    expect(r.status, r.text).toBe(201);
    expect((await docDone(token, r.body.id)).status).toBe(indexMode === 'NONE' ? 'STORED' : 'INDEXED');
    return r.body.id as string;
  }

  beforeAll(async () => {
    svc = await startService({ env: searchE2eEngine.env });
    api = svc.api;
    key = (await api.newAccount({ plan: 'pro', inferenceBalanceCents: 500 })).tenants.live.rootKey;
    other = (await api.newAccount({ plan: 'pro', inferenceBalanceCents: 500 })).tenants.live.rootKey;
    for (const [k, fact] of Object.entries(FACTS))
      docs[k] = await ingest(key, `Notes on ${k}`, [FILLER[0], fact, FILLER[1], FILLER[2]].join(' '));
    docs.otherPenguins = await ingest(
      other,
      'Other tenant penguins',
      'Penguins of the other tenant secretly eat chocolate pudding every Sunday.',
    );
  }, 240_000);
  afterAll(async () => svc?.stop());

  it('GET /v1/models lists the built-in model with every field of the spec, and the default', async () => {
    const r = await api.get('/v1/models', key);
    expect(r.status, r.text).toBe(200);
    expect(r.body.defaultModel).toBe('builtin-extractive');
    const m = r.body.models.find((x: { id: string }) => x.id === 'builtin-extractive');
    expect(Object.keys(m).sort()).toEqual([
      'availableOn',
      'contextWindow',
      'id',
      'inputCreditsPer1kTokens',
      'name',
      'outputCreditsPer1kTokens',
      'provider',
    ]);
    expect(m.provider).toBe('builtin');
    expect(m.availableOn).toEqual(['free', 'starter', 'pro', 'scale', 'enterprise']);
    expect(m.contextWindow).toBeGreaterThan(1000);
  });

  it('RAG: search_results first, then the answering sentence with its source, then exactly one done', async () => {
    const r = await stream(`${svc.url}/v1/rag`, key, { query: 'How do emperor penguins incubate their eggs?' });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const done = expectWellFormed(r.frames, ['search_results']);
    const sr = r.frames[0].data;
    expect(Object.keys(sr).sort()).toEqual(['degraded', 'degradedLegs', 'results', 'searchTimeMs', 'totalResults']);
    expect(sr.results[0].documentId).toBe(docs.penguins);
    for (const x of sr.results)
      expect(Object.keys(x)).toEqual(
        expect.arrayContaining([
          'documentId',
          'score',
          'textScore',
          'semanticScore',
          'chunkText',
          'contextText',
          'snippet',
          'metadata',
          'sourceType',
          'typeName',
          'createdAt',
        ]),
      );
    const answer = answerOf(r.frames);
    expect(answer).toContain(FACTS.penguins);
    expect(answer).toContain('[1]'); // the passage's place in search_results
    expect(answer).not.toContain('chocolate'); // nothing of the other tenant
    expect(done.platformCreditsCharged).toBe(0);
    expect(done.inferenceBalanceCentsCharged).toBe(0); // the built-in model is free
  });

  it(
    "RAG draws on records too: a searchable record's sentence answers, labelled with its place in " + 'search_results',
    async () => {
      const typeName = `Note_${randomUUID().slice(0, 8)}`;
      const sc = await api.post('/v1/schemas', key, {
        typeName,
        displayName: 'Notes',
        allowedSurfaces: ['record'],
        fields: [
          { fieldId: 'title', fieldType: 'string', searchable: true },
          { fieldId: 'body', fieldType: 'string', searchable: true },
        ],
      });
      expect(sc.status, sc.text).toBe(201);
      const sentence = 'The night ferry to the glacier islands departs from pier nine at eleven.';
      const rec = await api.post('/v1/records', key, {
        typeName,
        payload: { title: 'Ferry timetable', body: `${FILLER[1]} ${sentence} ${FILLER[2]}` },
      });
      expect(rec.status, rec.text).toBe(201);
      await eventually(
        async () => (await api.get(`/v1/records/${rec.body.id}`, key)).body.indexStatus === 'INDEXED',
        60_000,
        50,
      );
      const r = await stream(`${svc.url}/v1/rag`, key, {
        query: 'When does the night ferry to the glacier islands depart?',
        search: { contentTypes: ['records'] },
      });
      expect(r.status).toBe(200);
      expectWellFormed(r.frames, ['search_results']);
      const results = r.frames[0].data.results;
      expect(results[0]).toMatchObject({ documentId: rec.body.id, sourceType: 'GenericRecord', typeName });
      expect(answerOf(r.frames)).toContain(`${sentence} [1]`);
    },
  );

  it('RAG with no matching content: search_results (empty) first, then says plainly nothing was found', async () => {
    const r = await stream(`${svc.url}/v1/rag`, key, { query: 'zyxwvut qqqplm', search: { mode: 'TEXT' } });
    expect(r.status).toBe(200);
    expectWellFormed(r.frames, ['search_results']);
    expect(r.frames[0].data.results).toEqual([]);
    expect(r.frames[0].data.totalResults).toBe(0);
    expect(answerOf(r.frames)).toMatch(/found nothing/i);
  });

  it(
    'RAG with a failed search leg: degraded results are streamed; with requireComplete it is 503 before the ' +
      'stream',
    async () => {
      await searchE2eEngine.breakTextLeg(svc);
      try {
        const r = await stream(`${svc.url}/v1/rag`, key, { query: 'How do emperor penguins incubate their eggs?' });
        expect(r.status).toBe(200);
        expectWellFormed(r.frames, ['search_results']);
        expect(r.frames[0].data).toMatchObject({ degraded: true, degradedLegs: ['text'] });
        const refused = await stream(`${svc.url}/v1/rag`, key, {
          query: 'How do emperor penguins incubate their eggs?',
          search: { requireComplete: true },
        });
        expect(refused.status).toBe(503);
        expect(refused.frames).toEqual([]);
      } finally {
        await searchE2eEngine.restoreTextLeg(svc);
      }
    },
  );

  it("RAG never reaches another tenant's content", async () => {
    const r = await stream(`${svc.url}/v1/rag`, other, { query: 'How do emperor penguins incubate their eggs?' });
    expect(r.status).toBe(200);
    expectWellFormed(r.frames, ['search_results']);
    for (const x of r.frames[0].data.results) expect(x.documentId).toBe(docs.otherPenguins);
    expect(answerOf(r.frames)).not.toContain('incubate');
  });

  it(
    'RAG fits passages into the model window and warns when it drops some (truncation_warning before the ' + 'answer)',
    async () => {
      const word = `lorem${randomUUID().slice(0, 6)}`;
      const para = (i: number) =>
        `Section ${i} about ${word}: ` +
        Array.from(
          { length: 40 },
          (_, j) => `the ${word} measurement ${i}.${j} was recorded in the field notebook`,
        ).join('; ') +
        '.';
      await ingest(key, `Long ${word}`, Array.from({ length: 40 }, (_, i) => para(i)).join('\n\n'), 'TEXT');
      const r = await stream(`${svc.url}/v1/rag`, key, { query: word, search: { mode: 'TEXT', limit: 50 } });
      expect(r.status).toBe(200);
      expectWellFormed(r.frames, ['search_results', 'truncation_warning']);
      const w = r.frames[1].data;
      expect(Object.keys(w).sort()).toEqual(['reason', 'resultsRequested', 'resultsUsed']);
      // resultsRequested is the search.limit asked for (50), not how many results came back
      expect(w.resultsRequested).toBe(50);
      expect(w.resultsUsed).toBeGreaterThan(0);
      expect(w.resultsUsed).toBeLessThan(r.frames[0].data.results.length);
    },
  );

  it('truncation_warning.resultsRequested is the search.limit of the call even with fewer results found', async () => {
    const word = `ipsum${randomUUID().slice(0, 6)}`;
    const para = (i: number) =>
      `Part ${i} on ${word}: ` +
      Array.from({ length: 40 }, (_, j) => `the ${word} reading ${i}.${j} was logged in the ship journal`).join('; ') +
      '.';
    await ingest(key, `Long ${word}`, Array.from({ length: 16 }, (_, i) => para(i)).join('\n\n'), 'TEXT');
    // about 20 passages: fewer than the limit, more than fit beside a 4,096-token answer
    const r = await stream(`${svc.url}/v1/rag`, key, {
      query: word,
      maxTokens: 4096,
      search: { mode: 'TEXT', limit: 50 },
    });
    expect(r.status).toBe(200);
    const found = r.frames[0].data.results.length;
    expect(found).toBeLessThan(50);
    const w = r.frames.find((f) => f.event === 'truncation_warning')?.data;
    expect(w, 'the passages do not all fit the model window').toBeDefined();
    expect(w).toEqual({ resultsRequested: 50, resultsUsed: expect.any(Number), reason: 'context_window' });
    expect(w.resultsUsed).toBeLessThan(found);
  });

  it(
    'RAG validation: search.limit above 50 and unknown keys are 400 before any stream; maxTokens above the ' +
      'cap is floored',
    async () => {
      for (const body of [
        { query: 'x', search: { limit: 51 } },
        { query: 'x', search: { query: 'y' } },
        { query: '' },
        { query: 'x', nope: 1 },
      ]) {
        const r = await stream(`${svc.url}/v1/rag`, key, body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.json.errorCode).toBe('VALIDATION_ERROR');
      }
      const r = await stream(`${svc.url}/v1/rag`, key, { query: 'penguins eggs', maxTokens: 1_000_000 });
      expect(r.status).toBe(200);
      expectWellFormed(r.frames, ['search_results']);
    },
  );

  it(
    'a model outside the plan, an unknown one included, is 402 before any stream (spec: "A model outside ' +
      'the plan gives 402")',
    async () => {
      const calls = [
        stream(`${svc.url}/v1/rag`, key, { query: 'x', model: 'no-such-model' }),
        stream(`${svc.url}/v1/chat`, key, { messages: [{ role: 'user', content: 'hi' }], model: 'gpt-9-turbo' }),
        stream(`${svc.url}/v1/documents/${docs.copper}/ask`, key, {
          id: docs.copper,
          prompt: 'copper?',
          model: 'no-such-model',
        }),
      ];
      for (const r of await Promise.all(calls)) {
        expect(r.status).toBe(402);
        expect(r.json.errorCode).toBe('PAYMENT_REQUIRED');
        expect(r.frames).toEqual([]);
      }
    },
  );

  it('maxTokens bounds the answer: outputTokens never exceeds it', async () => {
    const r = await stream(`${svc.url}/v1/rag`, key, {
      query: 'How do emperor penguins incubate their eggs?',
      maxTokens: 5,
    });
    expect(r.status).toBe(200);
    const done = expectWellFormed(r.frames, ['search_results']);
    expect(done.outputTokens).toBeLessThanOrEqual(5);
    expect(answerOf(r.frames).length).toBeLessThan(FACTS.penguins.length);
  });

  it('outputTokens is the cl100k count of the answer sent; maxTokens 1 still sends its first token', async () => {
    const cl100k = new Tiktoken(cl100kRanks);
    const r = await stream(`${svc.url}/v1/rag`, key, { query: 'How do emperor penguins incubate their eggs?' });
    expect(r.status).toBe(200);
    const done = expectWellFormed(r.frames, ['search_results']);
    const text = answerOf(r.frames);
    expect(text.length).toBeGreaterThan(20);
    expect(done.outputTokens).toBe(cl100k.encode(text).length);
    for (const maxTokens of [1, 3]) {
      const short = await stream(`${svc.url}/v1/rag`, key, {
        query: 'How do emperor penguins incubate their eggs?',
        maxTokens,
      });
      const d = expectWellFormed(short.frames, ['search_results']);
      expect(short.frames.some((f) => f.event === 'content_delta')).toBe(true);
      expect(d.outputTokens).toBe(cl100k.encode(answerOf(short.frames)).length);
      expect(d.outputTokens).toBeLessThanOrEqual(maxTokens);
      expect(d.outputTokens).toBeGreaterThan(maxTokens - 2);
    }
  });

  it('document ask: document_context first, then the answer from that document', async () => {
    const r = await stream(`${svc.url}/v1/documents/${docs.copper}/ask`, key, {
      id: docs.copper,
      prompt: 'Why does copper conduct electricity?',
    });
    expect(r.status).toBe(200);
    expectWellFormed(r.frames, ['document_context']);
    const c = r.frames[0].data;
    expect(c).toEqual({
      documentId: docs.copper,
      title: 'Notes on copper',
      textBytes: expect.any(Number),
      model: 'builtin-extractive',
    });
    expect(c.textBytes).toBe(Buffer.byteLength([FILLER[0], FACTS.copper, FILLER[1], FILLER[2]].join(' ')));
    expect(answerOf(r.frames)).toContain(FACTS.copper);
    // The body repeats the path's id (spec: required); a missing or different one is 400.
    expect((await stream(`${svc.url}/v1/documents/${docs.copper}/ask`, key, { prompt: 'copper?' })).status).toBe(400);
    expect(
      (await stream(`${svc.url}/v1/documents/${docs.copper}/ask`, key, { id: docs.volcano, prompt: 'copper?' })).status,
    ).toBe(400);
  });

  it(
    "document ask: 404 for another tenant's or a missing document; 409 while the document is not processed " + 'yet',
    async () => {
      expect(
        (
          await stream(`${svc.url}/v1/documents/${docs.otherPenguins}/ask`, key, {
            id: docs.otherPenguins,
            prompt: 'penguins?',
          })
        ).status,
      ).toBe(404);
      const missing = randomUUID();
      expect(
        (await stream(`${svc.url}/v1/documents/${missing}/ask`, key, { id: missing, prompt: 'anything?' })).status,
      ).toBe(404);
      const up = await api.post('/v1/documents/upload', key, {
        title: 'never uploaded',
        fileName: 'a.txt',
        fileType: 'text/plain',
        indexMode: 'TEXT',
      });
      expect(up.status, up.text).toBe(201);
      const r = await stream(`${svc.url}/v1/documents/${up.body.id}/ask`, key, {
        id: up.body.id,
        prompt: 'what is in it?',
      });
      expect(r.status).toBe(409);
      expect(r.frames).toEqual([]);
    },
  );

  it('document ask over 32,000 input tokens is 413 with estimatedTokens and limitTokens, charges nothing', async () => {
    const big = Array.from({ length: 9000 }, (_, i) => `Line ${i} of a very long report about harbour logistics.`).join(
      ' ',
    );
    const id = await ingest(key, 'Huge report', big, 'NONE');
    const before = (await api.get('/v1/usage', key)).body.inference.endpoints.ask.calls;
    const r = await stream(`${svc.url}/v1/documents/${id}/ask`, key, { id, prompt: 'Summarise the report' });
    expect(r.status).toBe(413);
    expect(r.json.limitTokens).toBe(32_000);
    expect(r.json.estimatedTokens).toBeGreaterThan(32_000);
    expect(typeof r.json.message).toBe('string');
    expect((await api.get('/v1/usage', key)).body.inference.endpoints.ask.calls).toBe(before);
  });

  it(
    "document ask with a prompt over 32,000 tokens is the same 413 (not a 400 on the prompt's length), and " +
      'charges nothing',
    async () => {
      const prompt = Array.from({ length: 40_000 }, (_, i) => `word${i % 97}`).join(' ');
      expect(prompt.length).toBeGreaterThan(32_000);
      const before = (await api.get('/v1/usage', key)).body.inference.endpoints.ask.calls;
      const r = await stream(`${svc.url}/v1/documents/${docs.copper}/ask`, key, { id: docs.copper, prompt });
      expect(r.status, JSON.stringify(r.json)).toBe(413);
      expect(r.json.errorCode).toBe('PAYLOAD_TOO_LARGE');
      expect(r.json.limitTokens).toBe(32_000);
      expect(r.json.estimatedTokens).toBeGreaterThan(32_000);
      expect(typeof r.json.message).toBe('string');
      expect((await api.get('/v1/usage', key)).body.inference.endpoints.ask.calls).toBe(before);
    },
  );

  it('chat: content_delta+ then done; answers from the conversation; bad roles are 400', async () => {
    const r = await stream(`${svc.url}/v1/chat`, key, {
      messages: [
        { role: 'system', content: 'You answer from the notes given.' },
        { role: 'user', content: `Here are my notes. ${FACTS.volcano} ${FILLER[0]}` },
        { role: 'assistant', content: 'Thanks, noted.' },
        { role: 'user', content: 'Which volcano is one of the most active in Europe?' },
      ],
      temperature: 0.2,
      topP: 0.9,
    });
    expect(r.status).toBe(200);
    expectWellFormed(r.frames, []);
    expect(answerOf(r.frames)).toContain(FACTS.volcano);
    for (const messages of [[], [{ role: 'tool', content: 'x' }], [{ role: 'assistant', content: 'only me' }]])
      expect((await stream(`${svc.url}/v1/chat`, key, { messages })).status).toBe(400);
  });

  it(
    'pre-flight: no inference:r is 403; a zero balance is 402 INSUFFICIENT_BALANCE; allowGlobalRegion needs ' +
      'the entitlement; all before any frame',
    async () => {
      const t = await api.post('/v1/tokens', key, { scope: { allowedActions: ['search:r'] } });
      expect(t.status, t.text).toBe(201);
      const denied = await stream(`${svc.url}/v1/chat`, t.body.token, { messages: [{ role: 'user', content: 'hi' }] });
      expect(denied.status).toBe(403);
      expect((await api.get('/v1/models', t.body.token)).status).toBe(403);

      const broke = await api.newAccount({ plan: 'pro', inferenceBalanceCents: 0 });
      const r = await stream(`${svc.url}/v1/rag`, broke.tenants.live.rootKey, { query: 'penguins' });
      expect(r.status).toBe(402);
      expect(r.json.errorCode).toBe('INSUFFICIENT_BALANCE');
      expect(r.frames).toEqual([]);

      const region = await stream(`${svc.url}/v1/chat`, key, {
        messages: [{ role: 'user', content: 'hi' }],
        allowGlobalRegion: true,
      });
      expect(region.status).toBe(403);
      const entitled = await api.newAccount({
        plan: 'pro',
        inferenceBalanceCents: 10,
        entitlements: { allowGlobalRegion: true },
      });
      const ok = await stream(`${svc.url}/v1/chat`, entitled.tenants.live.rootKey, {
        messages: [{ role: 'user', content: 'hi' }],
        allowGlobalRegion: true,
      });
      expect(ok.status).toBe(200);
    },
  );

  it('a streaming surface ignores Service-Version, even an unsupported one', async () => {
    const r = await stream(
      `${svc.url}/v1/chat`,
      key,
      { messages: [{ role: 'user', content: 'hello there' }] },
      { 'service-version': '1999-01-01' },
    );
    expect(r.status).toBe(200);
    expectWellFormed(r.frames, []);
  });

  it('each call is counted per endpoint in the usage report once its stream has ended', async () => {
    const calls = async () => (await api.get('/v1/usage', other)).body.inference.endpoints;
    const before = await calls();
    await stream(`${svc.url}/v1/rag`, other, { query: 'penguins' });
    await stream(`${svc.url}/v1/chat`, other, { messages: [{ role: 'user', content: 'hi' }] });
    await stream(`${svc.url}/v1/chat`, other, { messages: [{ role: 'user', content: 'hi again' }] });
    await stream(`${svc.url}/v1/documents/${docs.otherPenguins}/ask`, other, {
      id: docs.otherPenguins,
      prompt: 'What do they eat?',
    });
    const after = await eventually(async () => {
      const c = await calls();
      return c.chat.calls === before.chat.calls + 2 ? c : null;
    });
    expect(after.rag.calls).toBe(before.rag.calls + 1);
    expect(after.ask.calls).toBe(before.ask.calls + 1);
  });
});
