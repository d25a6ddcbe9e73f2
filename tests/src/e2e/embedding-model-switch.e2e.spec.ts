import { afterAll, describe, expect, it } from 'vitest';
import { BGE_SMALL_Q, installedModel } from '../../../projectors/src/search/models.mjs';
import { tempDir } from '../support/engines';
import { eventually, startService, type TestService } from '../support/service';

/**
 * A change of the built-in embedding model (docs/search.md, "Changing the embedding model"): documents indexed
 * with the Universal Sentence Encoder, then the service restarted with bge-small-en-v1.5 on the same data. The
 * context is rebuilt in the background from the log; SEMANTIC search answers throughout (the old vectors, with
 * the query embedded by the old model, until the new ones are written), and afterwards from the new model only.
 */
const texts = {
  whales: 'Humpback whales sing long songs while they migrate across the ocean.',
  bread: 'Sourdough bread rises slowly because wild yeast ferments the dough.',
  volcano: 'Lava flows from the volcano destroyed several villages on the island.',
};
const data = tempDir('svc-model-switch-');
let svc: TestService | undefined;

afterAll(async () => {
  await svc?.stop();
  data.remove();
});

describe.skipIf(!installedModel(BGE_SMALL_Q).ok)('changing the embedding model', () => {
  it('rebuilds the context for the new model without a gap in SEMANTIC search', async () => {
    svc = await startService({ dataDir: data.dir, env: { BUILTIN_EMBEDDINGS_MODEL: 'use' } });
    const key = svc.bootstrap.tenants.live.rootKey;
    expect((await svc.api.get('/readyz', '')).body.embeddings).toMatchObject({ model: 'builtin-use-512', dims: 512 });
    const ids: Record<string, string> = {};
    for (const [k, text] of Object.entries(texts)) {
      const r = await svc.api.post('/v1/documents', key, { title: k, text, indexMode: 'HYBRID' });
      expect(r.status, r.text).toBe(201);
      ids[k] = r.body.id;
    }
    for (const id of Object.values(ids))
      expect((await eventually(async () => ((await svc!.api.get(`/v1/documents/${id}`, key)).body.status === 'INDEXED' ? true : null), 60_000, 50))).toBe(true);
    const semantic = async () => (await svc!.api.post('/v1/search', key, { query: 'marine mammals singing', mode: 'SEMANTIC' })).body;
    expect((await semantic()).results[0].documentId).toBe(ids.whales);
    await svc.stop();

    // The same data, the default model: the context is recorded with USE, so it is rebuilt.
    svc = await startService({ dataDir: data.dir });
    expect((await svc.api.get('/readyz', '')).body.embeddings).toMatchObject({ model: 'bge-small-en-v1.5-q', dims: 384 });
    const during = await semantic();
    expect(during.results.length).toBeGreaterThan(0);
    expect(during.results[0].documentId).toBe(ids.whales);
    const done = await eventually(async () => {
      const r = (await svc!.api.get('/readyz', '')).body.embeddings.rebuild;
      return r && !r.running && r.contextsDone === 1 ? r : null;
    }, 90_000, 100);
    expect(done).toMatchObject({ contexts: 1, contextsDone: 1, items: 3, itemsDone: 3, failures: 0 });
    const after = await semantic();
    expect(after.results[0].documentId).toBe(ids.whales);
    expect(after.results.map((r: { documentId: string }) => r.documentId).sort()).toEqual(Object.values(ids).sort());
    // The record names the new model, and the old model's vectors of the context are gone.
    const { rows } = await svc.service.searchSql.query<{ model: string; dims: number }>('SELECT model, dims FROM si_vector_models');
    expect(rows).toEqual([{ model: 'bge-small-en-v1.5-q', dims: 384 }]);
    const { LanceVectorIndex } = await import('@svc/projectors');
    const old = new LanceVectorIndex(`${data.dir}/lancedb`, 'builtin-use-512', 512);
    const t = svc.bootstrap.tenants.live;
    expect(await old.countRows({ tenantId: t.tenantId, contextId: t.contextId })).toBe(0);
    await old.close();
    await svc.stop();

    // A second start finds nothing to rebuild.
    svc = await startService({ dataDir: data.dir });
    const again = await eventually(async () => {
      const r = (await svc!.api.get('/readyz', '')).body.embeddings.rebuild;
      return r && !r.running ? r : null;
    }, 30_000, 100);
    expect(again).toMatchObject({ contexts: 0, items: 0 });
    expect((await semantic()).results[0].documentId).toBe(ids.whales);
  }, 240_000);
});
