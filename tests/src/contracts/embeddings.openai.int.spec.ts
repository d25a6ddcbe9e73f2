import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuiltinEmbedder, EmbeddingError, OpenAiEmbedder } from '@svc/search';
import { eventually, startService, type TestService } from '../support/service';

/**
 * The OpenAI-compatible embeddings adapter (EMBEDDINGS_URL) against a real
 * embeddings server on loopback: POST /v1/embeddings with the OpenAI request
 * and response shapes, serving the built-in model's vectors (no external
 * endpoint is reachable from our machines). The server answers `data` in
 * reverse order with each `index`, as the API allows, and can be told to fail.
 */
type Seen = { inputs: number; auth: string | undefined; model: string };
const seen: Seen[] = [];
let fault: 'none' | '500' | 'dims' | 'count' | 'html' = 'none';
let server: Server;
let url: string;
const model = new BuiltinEmbedder();

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      if (req.method !== 'POST' || req.url !== '/v1/embeddings') return res.writeHead(404).end();
      const { model: m, input } = JSON.parse(body) as { model: string; input: string[] };
      seen.push({ inputs: input.length, auth: req.headers.authorization, model: m });
      if (fault === '500')
        return res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"overloaded"}}');
      if (fault === 'html') return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy error</html>');
      const vectors = await model.embed(input);
      let data = vectors.map((v, index) => ({
        object: 'embedding',
        index,
        embedding: fault === 'dims' ? v.slice(0, 100) : v,
      }));
      if (fault === 'count') data = data.slice(1);
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          object: 'list',
          model: m,
          data: data.reverse(),
          usage: { prompt_tokens: 0, total_tokens: 0 },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/embeddings`;
}, 60_000);

afterAll(async () => {
  await new Promise((r) => server.close(r));
  await model.close?.();
});

const cosine = (a: number[], b: number[]) =>
  a.reduce((s, x, i) => s + x * b[i], 0) / (Math.hypot(...a) * Math.hypot(...b));

describe('OpenAI-compatible embeddings adapter (EMBEDDINGS_URL)', () => {
  it('batches requests, sends the key and model, and returns unit vectors in input order', async () => {
    seen.length = 0;
    fault = 'none';
    const texts = Array.from(
      { length: 150 },
      (_, i) => `Passage ${i} about ${i % 2 ? 'volcanoes and lava' : 'oceans and whales'}.`,
    );
    const e = new OpenAiEmbedder({ url, apiKey: 'sk-test', model: 'bge-served', dims: model.dims });
    expect(e.model).toBe('openai:bge-served');
    const got = await e.embed(texts);
    expect(seen.map((s) => s.inputs)).toEqual([64, 64, 22]);
    expect(seen.every((s) => s.auth === 'Bearer sk-test' && s.model === 'bge-served')).toBe(true);
    const direct = await model.embed([texts[0], texts[1], texts[149]]);
    expect(got).toHaveLength(150);
    expect(cosine(got[0], direct[0])).toBeGreaterThan(0.9999);
    expect(cosine(got[1], direct[1])).toBeGreaterThan(0.9999);
    expect(cosine(got[149], direct[2])).toBeGreaterThan(0.9999);
    for (const v of [got[0], got[77]]) expect(Math.hypot(...v)).toBeCloseTo(1, 6);
  }, 60_000);

  it('a failing or malformed endpoint is an EmbeddingError (the indexer retries, marks EMBEDDING_FAILED)', async () => {
    const e = new OpenAiEmbedder({ url, model: 'bge-served', dims: model.dims });
    for (const f of ['500', 'dims', 'count', 'html'] as const) {
      fault = f;
      await expect(e.embed(['one text', 'two texts']), f).rejects.toBeInstanceOf(EmbeddingError);
    }
    fault = 'none';
    const gone = new OpenAiEmbedder({
      url: 'http://127.0.0.1:1/v1/embeddings',
      model: 'x',
      dims: model.dims,
      timeoutMs: 2000,
    });
    await expect(gone.embed(['x'])).rejects.toBeInstanceOf(EmbeddingError);
  }, 60_000);
});

describe('the service with EMBEDDINGS_URL', () => {
  let svc: TestService;
  beforeAll(async () => {
    fault = 'none';
    svc = await startService({
      env: {
        EMBEDDINGS_URL: url,
        EMBEDDINGS_MODEL: 'bge-served',
        EMBEDDINGS_DIMENSIONS: String(model.dims),
        EMBEDDINGS_API_KEY: 'sk-svc',
      },
    });
  }, 120_000);
  afterAll(async () => svc?.stop());

  it('indexes and answers SEMANTIC search through the endpoint', async () => {
    seen.length = 0;
    const key = svc.bootstrap.tenants.live.rootKey;
    const texts = {
      whales: 'Humpback whales sing long songs while they migrate across the ocean.',
      bread: 'Sourdough bread rises slowly because wild yeast ferments the dough.',
    };
    const ids: Record<string, string> = {};
    for (const [k, text] of Object.entries(texts)) {
      const r = await svc.api.post('/v1/documents', key, { title: k, text, indexMode: 'SEMANTIC' });
      expect(r.status, r.text).toBe(201);
      ids[k] = r.body.id;
    }
    for (const id of Object.values(ids)) {
      const d = await eventually(
        async () => {
          const g = await svc.api.get(`/v1/documents/${id}`, key);
          return ['INDEXED', 'SKIPPED', 'STORED', 'FAILED'].includes(g.body.status) ? g.body : null;
        },
        60_000,
        50,
      );
      expect(d.status, JSON.stringify(d.indexFailure ?? null)).toBe('INDEXED');
    }
    expect(seen.some((s) => s.auth === 'Bearer sk-svc')).toBe(true);
    const r = (await eventually(
      async () => {
        const s = await svc.api.post('/v1/search', key, { query: 'marine mammals singing', mode: 'SEMANTIC' });
        return s.body.results?.length ? s : null;
      },
      20_000,
      100,
    ))!;
    expect(r.status, r.text).toBe(200);
    expect(r.body.results[0].documentId).toBe(ids.whales);
    expect(r.body.results[0].semanticScore).toBeGreaterThan(
      r.body.results.find((x: { documentId: string }) => x.documentId === ids.bread)?.semanticScore ?? -1,
    );
  }, 120_000);
});
