import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresEventStore } from '@svc/command-api';
import { EVENT_SCHEMA_VERSION } from '@svc/contracts';
import { FileBlobStore, openPglite } from '@svc/deploy';
import { type Sql, type StoredEvent, streams } from '@svc/domain';
import { type Embedder, LanceVectorIndex, PgTextIndex, SearchCatalogue, SearchIndexer } from '@svc/projectors';
import { tempDir } from '../support/engines';

/**
 * The search projector's index outcomes (RecordIndexed / RecordIndexFailed) in the record streams: exactly one per
 * indexed revision. A replay of the log (a crash before the checkpoint, `rebuild search-index`) appends none again
 * (each would fire a second record.indexed webhook), and an outcome for a revision that a newer write replaced
 * while it was being indexed is left out.
 */
const DIMS = 8;
const T = 'tenant-1';
const C = 'context-1';
const embedder: Embedder = { model: 'fake', dims: DIMS, embed: async (texts) => texts.map(() => Array.from({ length: DIMS }, (_, k) => k + 1)) };

describe('search projector: index outcomes in the record streams', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  async function setup() {
    const tmp = tempDir('svc-indexer-outcomes-');
    const sql: Sql = await openPglite(`${tmp.dir}/pg`);
    const store = await PostgresEventStore.open(sql);
    const vectors = new LanceVectorIndex(`${tmp.dir}/lancedb`, embedder.model, DIMS, { autoMaintain: false });
    const indexer = new SearchIndexer(sql, store, { text: new PgTextIndex(sql), vectors, embedder, catalogue: new SearchCatalogue(sql) }, { vectorCapacity: 1_000_000, blobs: new FileBlobStore(`${tmp.dir}/blobs`), attempts: 1 });
    await indexer.init();
    cleanup.push(() => tmp.remove(), () => sql.close(), () => vectors.close());
    const meta = { tenantId: T, contextId: C, accountId: 'acc', actorKeyId: null, userId: null, requestId: 'r', occurredAt: '2026-01-01T00:00:00.000Z', schemaVersion: EVENT_SCHEMA_VERSION };
    const schemaId = randomUUID();
    const definition = { typeName: 'note', displayName: 'Note', allowedSurfaces: ['record'], fields: [{ fieldId: 'body', fieldType: 'string', searchable: true }] };
    await store.appendMulti([{ streamId: streams.schema(schemaId), expectedRevision: 'any', events: [{ id: randomUUID(), type: 'SchemaCreated', data: { schemaId, typeName: 'note', definition }, metadata: meta }] }]);
    const data = (recordId: string, body: string) => ({ recordId, schemaId, schemaVersion: 1, typeName: 'note', payload: { body }, status: 'ACTIVE', folderId: null, userId: null, scopes: [], externalId: null, indexMode: 'TEXT' });
    const create = async (n: number) => {
      const ids = Array.from({ length: n }, () => randomUUID());
      await store.appendMulti(ids.map((recordId, i) => ({ streamId: streams.record(recordId), expectedRevision: 'any' as const, events: [{ id: randomUUID(), type: 'RecordCreated', data: data(recordId, `note ${i} about the harbour`), metadata: meta }] })));
      return ids;
    };
    const update = (recordId: string, body: string) =>
      store.appendMulti([{ streamId: streams.record(recordId), expectedRevision: 'any', events: [{ id: randomUUID(), type: 'RecordUpdated', data: data(recordId, body), metadata: meta }] }]);
    const ix = indexer as unknown as { position: number; applyBatch(e: StoredEvent[]): Promise<number> };
    /** Feeds the indexer the log from `from` (a replay when it is behind what it has already indexed). */
    const drain = async (from = ix.position) => {
      ix.position = from;
      for (;;) {
        const events = await store.readAll(ix.position, 500);
        if (!events.length) return indexer.settled();
        await ix.applyBatch(events);
        ix.position = events[events.length - 1].position;
      }
    };
    const outcomes = async (id: string) =>
      (await store.readStream(streams.record(id)))
        .filter((e) => e.type === 'RecordIndexed' || e.type === 'RecordIndexFailed')
        .map((e) => `${(e.data as { status?: string }).status ?? 'FAILED'}@${(e.data as { forRevision: number }).forRevision}`);
    return { store, ix, create, update, drain, outcomes };
  }

  it('one outcome per indexed revision; a replay of the whole log appends none again', async () => {
    const s = await setup();
    const ids = await s.create(20);
    await s.drain();
    for (const id of ids) expect(await s.outcomes(id)).toEqual(['INDEXED@0']);
    await s.update(ids[3], 'a new text about the lighthouse');
    await s.drain();
    expect(await s.outcomes(ids[3])).toEqual(['INDEXED@0', 'INDEXED@2']);
    const head = await s.store.headPosition();
    await s.drain(0);
    for (const id of ids) expect(await s.outcomes(id)).toEqual(id === ids[3] ? ['INDEXED@0', 'INDEXED@2'] : ['INDEXED@0']);
    expect(await s.store.headPosition()).toBe(head);
  });

  it('a replay that meets new records appends the new ones only', async () => {
    const s = await setup();
    const old = await s.create(5);
    await s.drain();
    const fresh = await s.create(5);
    await s.drain(0); // one batch: five records already settled, five never indexed
    for (const id of old) expect(await s.outcomes(id)).toEqual(['INDEXED@0']);
    for (const id of fresh) expect(await s.outcomes(id)).toEqual(['INDEXED@0']);
  });

  it('a revision replaced while it was being indexed gets no outcome; the newer one does', async () => {
    const s = await setup();
    const ids = await s.create(3);
    const created = await s.store.readAll(s.ix.position, 500);
    await s.update(ids[1], 'rewritten while the first text was indexed');
    await s.ix.applyBatch(created); // the batch as read before the update
    s.ix.position = created[created.length - 1].position;
    expect(await s.outcomes(ids[0])).toEqual(['INDEXED@0']);
    expect(await s.outcomes(ids[1])).toEqual([]);
    expect(await s.outcomes(ids[2])).toEqual(['INDEXED@0']);
    await s.drain();
    expect(await s.outcomes(ids[1])).toEqual(['INDEXED@1']);
  });
});
