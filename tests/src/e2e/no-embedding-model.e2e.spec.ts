import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, eventually, startService, type TestService } from '../support/service';

/**
 * BUILTIN_EMBEDDINGS_MODEL=none (docs/search.md, "Running without an embedding model"): the service starts without
 * any model (the model cache is pointed at nothing, so a start that still wanted one would fail), says so in /readyz
 * and /metrics, indexes SEMANTIC and HYBRID items for keywords, refuses SEMANTIC searches with a 503 that names the
 * setting (no Retry-After: retrying does not help), answers HYBRID from its keyword leg marked degraded (503 with
 * requireComplete), and RAG retrieves with it the same way.
 */
let svc: TestService;
let key: string;
const cacheDir = process.env.MODEL_CACHE_DIR;
const docs: Record<string, string> = {};
const texts = {
  HYBRID: 'Humpback whales sing long songs while they migrate across the ocean.',
  SEMANTIC: 'Lava flows from the volcano destroyed several villages on the island of whales.',
};

beforeAll(async () => {
  process.env.MODEL_CACHE_DIR = '/nonexistent/models';
  svc = await startService({ env: { BUILTIN_EMBEDDINGS_MODEL: 'none' } });
  key = svc.bootstrap.tenants.live.rootKey;
  for (const [mode, text] of Object.entries(texts)) {
    const r = await svc.api.post('/v1/documents', key, { title: mode, text, indexMode: mode });
    expect(r.status, r.text).toBe(201);
    docs[mode] = r.body.id;
  }
  for (const id of Object.values(docs))
    await eventually(
      async () => ((await svc.api.get(`/v1/documents/${id}`, key)).body.status === 'INDEXED' ? true : null),
      60_000,
      50,
    );
}, 120_000);

afterAll(async () => {
  await svc?.stop();
  if (cacheDir === undefined) delete process.env.MODEL_CACHE_DIR;
  else process.env.MODEL_CACHE_DIR = cacheDir;
});

const search = (body: Record<string, unknown>) => svc.api.post('/v1/search', key, { query: 'whales', ...body });

describe('BUILTIN_EMBEDDINGS_MODEL=none', () => {
  it('/readyz and /metrics say there is no model', async () => {
    const ready = await svc.api.get('/readyz', '');
    expect(ready.status).toBe(200);
    expect(ready.body.embeddings).toEqual({
      model: null,
      dims: 0,
      kind: 'none',
      reason: 'BUILTIN_EMBEDDINGS_MODEL=none',
    });
    const metrics = await svc.api.get('/metrics', '');
    expect(metrics.text).toMatch(/^svc_embeddings_model\{model="",dims="0",kind="none"[^}]*\} 1$/m);
  });

  it('SEMANTIC and HYBRID documents are indexed for keywords: TEXT finds both', async () => {
    for (const id of Object.values(docs))
      expect((await svc.api.get(`/v1/documents/${id}`, key)).body).toMatchObject({ status: 'INDEXED' });
    const r = await search({ mode: 'TEXT' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.results.map((x: { documentId: string }) => x.documentId).sort()).toEqual(Object.values(docs).sort());
    expect(r.body).toMatchObject({ degraded: false, degradedLegs: [] });
  });

  it('SEMANTIC: 503 naming the setting, without Retry-After', async () => {
    const r = await search({ mode: 'SEMANTIC' });
    expect(r.status).toBe(503);
    expect(r.body.errorCode).toBe('UNAVAILABLE');
    expect(r.body.message).toMatch(/without an embedding model \(BUILTIN_EMBEDDINGS_MODEL=none\)/);
    expect(r.headers.get('retry-after')).toBeNull();
  });

  it('HYBRID (the default mode): the keyword leg answers, marked degraded; 503 with requireComplete', async () => {
    const r = await search({});
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ degraded: true, degradedLegs: ['vector'] });
    expect(r.body.results.map((x: { documentId: string }) => x.documentId).sort()).toEqual(Object.values(docs).sort());
    for (const x of r.body.results) expect(x.semanticScore).toBe(0);
    const strict = await search({ requireComplete: true });
    expect(strict.status).toBe(503);
    expect(strict.body.message).toMatch(/degraded \(vector unavailable\)/);
  });

  it(
    'RAG retrieves from the keyword leg (degraded) and answers; with search.mode SEMANTIC it is refused ' +
      'before the stream',
    async () => {
      const res = await new Api(svc.url).fetch('POST', '/v1/rag', {
        token: key,
        body: { query: 'Which whales sing songs?' },
      });
      expect(res.status).toBe(200);
      const frames: Array<{ event: string; data: any }> = [];
      const parser = createParser({
        onEvent: (m: EventSourceMessage) => frames.push({ event: m.event ?? 'message', data: JSON.parse(m.data) }),
      });
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
        parser.feed(decoder.decode(chunk, { stream: true }));
      expect(frames[0].event).toBe('search_results');
      expect(frames[0].data).toMatchObject({ degraded: true, degradedLegs: ['vector'] });
      expect(frames[0].data.results[0].documentId).toBe(docs.HYBRID);
      expect(
        frames
          .filter((f) => f.event === 'content_delta')
          .map((f) => f.data.delta)
          .join(''),
      ).toContain('Humpback whales sing long songs');
      expect(frames[frames.length - 1].event).toBe('done');
      const refused = await svc.api.post('/v1/rag', key, {
        query: 'Which whales sing songs?',
        search: { mode: 'SEMANTIC' },
      });
      expect(refused.status).toBe(503);
      expect(refused.body.message).toMatch(/BUILTIN_EMBEDDINGS_MODEL=none/);
    },
  );
});
