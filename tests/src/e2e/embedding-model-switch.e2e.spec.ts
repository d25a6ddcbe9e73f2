import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { BuiltinEmbedder } from '@svc/search';
import { BGE_SMALL_Q, installedModel } from '../../../search/src/engines/models.mjs';
import { tempDir } from '../support/engines';
import { eventually, startService, type TestService } from '../support/service';

/**
 * A change of the embedding model (docs/search.md, "Changing the embedding model"): documents indexed with the
 * built-in bge-small-en-v1.5, then the service restarted on the same data with an OpenAI-compatible endpoint
 * (EMBEDDINGS_URL: a real embeddings server on loopback). The context is rebuilt in the background from the log;
 * SEMANTIC search answers throughout (the old vectors, with the query embedded by the built-in model, until the new
 * ones are written), and afterwards from the new model only.
 *
 * The endpoint serves another vector space: bge's vectors with their dimensions in reverse order (cosines among its
 * own vectors are bge's, so rankings compare; a bge query against its vectors would rank at random). It holds every
 * request that embeds one of the documents until told to go on, so the test sees the rebuild under way.
 */
const texts = {
  whales: 'Humpback whales sing long songs while they migrate across the ocean.',
  bread: 'Sourdough bread rises slowly because wild yeast ferments the dough.',
  volcano: 'Lava flows from the volcano destroyed several villages on the island.',
};
const data = tempDir('svc-model-switch-');
let svc: TestService | undefined;
let server: Server | undefined;
let bge: BuiltinEmbedder | undefined;
let release: () => void = () => {};
let held: Promise<void> = Promise.resolve();
let passageCalls = 0;

afterAll(async () => {
  release();
  await svc?.stop();
  if (server) await new Promise((r) => server!.close(r));
  await bge?.close();
  data.remove();
});

async function startEndpoint(): Promise<string> {
  bge = new BuiltinEmbedder();
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      const { input } = JSON.parse(body) as { input: string[] };
      if (input.some((t) => Object.values(texts).some((d) => t.includes(d.slice(0, 20))))) {
        passageCalls++;
        await held;
      }
      const vectors = await bge!.embed(input);
      const data = vectors.map((v, index) => ({ object: 'embedding', index, embedding: [...v].reverse() }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data }));
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/embeddings`;
}

describe.skipIf(!installedModel(BGE_SMALL_Q).ok)('changing the embedding model', () => {
  it('rebuilds the context for the new model without a gap in SEMANTIC search', async () => {
    svc = await startService({ dataDir: data.dir });
    const key = svc.bootstrap.tenants.live.rootKey;
    expect((await svc.api.get('/readyz', '')).body.embeddings).toMatchObject({
      model: 'bge-small-en-v1.5-q',
      dims: 384,
      kind: 'builtin',
    });
    const ids: Record<string, string> = {};
    for (const [k, text] of Object.entries(texts)) {
      const r = await svc.api.post('/v1/documents', key, { title: k, text, indexMode: 'HYBRID' });
      expect(r.status, r.text).toBe(201);
      ids[k] = r.body.id;
    }
    for (const id of Object.values(ids))
      expect(
        await eventually(
          async () => ((await svc!.api.get(`/v1/documents/${id}`, key)).body.status === 'INDEXED' ? true : null),
          60_000,
          50,
        ),
      ).toBe(true);
    const semantic = async () =>
      (await svc!.api.post('/v1/search', key, { query: 'marine mammals singing', mode: 'SEMANTIC' })).body;
    expect((await semantic()).results[0].documentId).toBe(ids.whales);
    await svc.stop();

    // The same data, another model: the context is recorded with bge, so it is rebuilt; the endpoint holds its
    // passages.
    const url = await startEndpoint();
    held = new Promise<void>((r) => (release = r));
    const endpoint = { EMBEDDINGS_URL: url, EMBEDDINGS_MODEL: 'bge-reversed', EMBEDDINGS_DIMENSIONS: '384' };
    svc = await startService({ dataDir: data.dir, env: endpoint });
    expect((await svc.api.get('/readyz', '')).body.embeddings).toMatchObject({
      model: 'openai:bge-reversed',
      dims: 384,
      kind: 'endpoint',
    });
    const underWay = await eventually(
      async () => {
        const r = (await svc!.api.get('/readyz', '')).body.embeddings.rebuild;
        return r && r.running && r.items === 3 && passageCalls > 0 ? r : null;
      },
      60_000,
      50,
    );
    expect(underWay).toMatchObject({ contexts: 1, contextsDone: 0, itemsDone: 0 });
    // Nothing of the new model is written yet: bge's vectors answer, the query embedded by bge.
    const during = await semantic();
    expect(during.degraded).toBe(false);
    expect(during.results[0].documentId).toBe(ids.whales);
    expect(during.results.map((r: { documentId: string }) => r.documentId).sort()).toEqual(Object.values(ids).sort());
    release();
    const done = await eventually(
      async () => {
        const r = (await svc!.api.get('/readyz', '')).body.embeddings.rebuild;
        return r && !r.running && r.contextsDone === 1 ? r : null;
      },
      90_000,
      100,
    );
    expect(done).toMatchObject({ contexts: 1, contextsDone: 1, items: 3, itemsDone: 3, failures: 0 });
    const after = await semantic();
    expect(after.results[0].documentId).toBe(ids.whales);
    expect(after.results.map((r: { documentId: string }) => r.documentId).sort()).toEqual(Object.values(ids).sort());
    // The record names the new model, and the old model's vectors of the context are gone.
    const { rows } = await svc.service.searchSql.query<{ model: string; dims: number }>(
      'SELECT model, dims FROM si_vector_models',
    );
    expect(rows).toEqual([{ model: 'openai:bge-reversed', dims: 384 }]);
    const { LanceVectorIndex } = await import('@svc/search');
    const old = new LanceVectorIndex(`${data.dir}/lancedb`, 'bge-small-en-v1.5-q', 384);
    const t = svc.bootstrap.tenants.live;
    expect(await old.countRows({ tenantId: t.tenantId, contextId: t.contextId })).toBe(0);
    await old.close();
    await svc.stop();

    // A second start finds nothing to rebuild.
    svc = await startService({ dataDir: data.dir, env: endpoint });
    const again = await eventually(
      async () => {
        const r = (await svc!.api.get('/readyz', '')).body.embeddings.rebuild;
        return r && !r.running ? r : null;
      },
      30_000,
      100,
    );
    expect(again).toMatchObject({ contexts: 0, items: 0 });
    expect((await semantic()).results[0].documentId).toBe(ids.whales);
  }, 240_000);
});
