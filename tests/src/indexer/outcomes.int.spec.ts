import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresEventStore } from '@svc/deploy';
import { EVENT_SCHEMA_VERSION } from '@svc/contracts';
import { FileBlobStore, openPglite } from '@svc/deploy';
import { type Sql, type StoredEvent, streams } from '@svc/domain';
import { catchUpFeed, ProjectionRunner, recordsProjection, schemasProjection, webhookSources } from '@svc/projectors';
import { type Embedder, LanceVectorIndex, PgTextIndex, SearchCatalogue, SearchIndexer } from '@svc/search';
import { tempDir } from '../support/engines';
import { recordOutcomes } from './outcome-stream';
import { eventMetadata } from '../support/events';

/**
 * The search projector's index outcomes (RecordsIndexed, in batches, to the context's outcome stream): exactly one
 * per indexed revision. A replay of the log (a crash before the checkpoint, `rebuild search-index`) appends none
 * again (each would fire a second record.indexed webhook); a batch holds many records' outcomes in one event.
 */
const DIMS = 8;
const T = 'tenant-1';
const C = 'context-1';
const embedder: Embedder = {
  model: 'fake',
  dims: DIMS,
  embed: async (texts) => texts.map(() => Array.from({ length: DIMS }, (_, k) => k + 1)),
};

describe('search projector: index outcomes in batches', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  async function setup() {
    const tmp = tempDir('svc-indexer-outcomes-');
    const sql: Sql = await openPglite(`${tmp.dir}/pg`);
    const store = await PostgresEventStore.open(sql);
    const vectors = new LanceVectorIndex(`${tmp.dir}/lancedb`, embedder.model, DIMS, { autoMaintain: false });
    const indexer = new SearchIndexer(
      sql,
      store,
      { text: new PgTextIndex(sql), vectors, embedder, catalogue: new SearchCatalogue(sql) },
      {
        vectorCapacity: 1_000_000,
        blobs: new FileBlobStore(`${tmp.dir}/blobs`),
        attempts: 1,
        feed: catchUpFeed(store),
      },
    );
    await indexer.init();
    cleanup.push(
      () => tmp.remove(),
      () => sql.close(),
      () => vectors.close(),
    );
    const meta = eventMetadata({ tenantId: T, contextId: C });
    const schemaId = randomUUID();
    const definition = {
      typeName: 'note',
      displayName: 'Note',
      allowedSurfaces: ['record'],
      fields: [{ fieldId: 'body', fieldType: 'string', searchable: true }],
    };
    await store.appendMulti([
      {
        streamId: streams.schema(schemaId),
        expectedRevision: 'any',
        events: [
          { id: randomUUID(), type: 'SchemaCreated', data: { schemaId, typeName: 'note', definition }, metadata: meta },
        ],
      },
    ]);
    const data = (recordId: string, body: string) => ({
      recordId,
      schemaId,
      schemaVersion: 1,
      typeName: 'note',
      payload: { body },
      status: 'ACTIVE',
      folderId: null,
      userId: null,
      scopes: [],
      externalId: null,
      indexMode: 'TEXT',
    });
    const create = async (n: number) => {
      const ids = Array.from({ length: n }, () => randomUUID());
      await store.appendMulti(
        ids.map((recordId, i) => ({
          streamId: streams.record(recordId),
          expectedRevision: 'any' as const,
          events: [
            {
              id: randomUUID(),
              type: 'RecordCreated',
              data: data(recordId, `note ${i} about the harbour`),
              metadata: meta,
            },
          ],
        })),
      );
      return ids;
    };
    const update = (recordId: string, body: string) =>
      store.appendMulti([
        {
          streamId: streams.record(recordId),
          expectedRevision: 'any',
          events: [{ id: randomUUID(), type: 'RecordUpdated', data: data(recordId, body), metadata: meta }],
        },
      ]);
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
    const outcomes = (id: string) => recordOutcomes(store, T, C, id);
    /** The records read model, following the log (what GET /v1/records/{id} reads). */
    const readModel = async () => {
      const runner = new ProjectionRunner('read-models', sql, store, [schemasProjection(), recordsProjection()]);
      await runner.init();
      runner.start();
      cleanup.push(() => runner.stop());
      const status = async (id: string) => {
        await runner.waitFor(await store.headPosition(), 10_000);
        return (
          await sql.query<{ index_status: string }>('SELECT index_status FROM rm_records WHERE record_id = $1', [id])
        ).rows[0]?.index_status;
      };
      return { status };
    };
    return { store, ix, create, update, drain, outcomes, readModel };
  }

  it('one outcome per indexed revision; a replay of the whole log appends none again', async () => {
    const s = await setup();
    const ids = await s.create(20);
    await s.drain();
    for (const id of ids) expect(await s.outcomes(id)).toEqual(['INDEXED@0']);
    await s.update(ids[3], 'a new text about the lighthouse');
    await s.drain();
    expect(await s.outcomes(ids[3])).toEqual(['INDEXED@0', 'INDEXED@1']);
    const head = await s.store.headPosition();
    await s.drain(0);
    for (const id of ids)
      expect(await s.outcomes(id)).toEqual(id === ids[3] ? ['INDEXED@0', 'INDEXED@1'] : ['INDEXED@0']);
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

  it(
    'many records, few events: one batch of 1,200 TEXT creates is reported in one append of 3 ' +
      'RecordsIndexed events (500, 500, 200 outcomes)',
    async () => {
      const s = await setup();
      const ids = await s.create(1200);
      const before = await s.store.headPosition();
      const all = await s.store.readAll(0, 5000);
      await s.ix.applyBatch(all); // one batch: more outcomes of one context than one event holds
      s.ix.position = all[all.length - 1].position;
      const events = await s.store.readAll(before, 1000);
      expect(events.map((e) => (e.type === 'RecordsIndexed' ? e.data.outcomes.length : e.type))).toEqual([
        500, 500, 200,
      ]);
      expect(new Set(events.map((e) => e.streamId)).size).toBe(1);
      for (const id of [ids[0], ids[700], ids[1199]]) expect(await s.outcomes(id)).toEqual(['INDEXED@0']);
      await s.drain(0); // a replay appends none of them again
      expect(await s.store.headPosition()).toBe(events[events.length - 1].position);
    },
  );

  it('a deleted record is not reported again by a replay', async () => {
    const s = await setup();
    const [id] = await s.create(1);
    await s.drain();
    await s.store.appendMulti([
      {
        streamId: streams.record(id),
        expectedRevision: 'any',
        events: [
          {
            id: randomUUID(),
            type: 'RecordDeleted',
            data: { recordId: id, typeName: 'note', externalId: null },
            metadata: {
              tenantId: T,
              contextId: C,
              accountId: 'acc',
              actorKeyId: null,
              userId: null,
              requestId: 'r',
              occurredAt: '2026-01-01T00:00:00.000Z',
              schemaVersion: EVENT_SCHEMA_VERSION,
            },
          },
        ],
      },
    ]);
    await s.drain();
    const head = await s.store.headPosition();
    // Replayed batch by batch: the create alone first (its outcome was appended before), then the delete.
    s.ix.position = 0;
    for (const e of await s.store.readAll(0, 100)) {
      await s.ix.applyBatch([e]);
      s.ix.position = e.position;
    }
    expect(await s.store.headPosition()).toBe(head);
    expect(await s.outcomes(id)).toEqual(['INDEXED@0']);
  });

  it(
    'an outcome of a revision replaced while it was being indexed changes neither the read model nor sends ' +
      'a webhook; the newer one does',
    async () => {
      const s = await setup();
      const rm = await s.readModel();
      const ids = await s.create(3);
      const created = await s.store.readAll(s.ix.position, 500);
      await s.update(ids[1], 'rewritten while the first text was indexed');
      await s.ix.applyBatch(created); // the batch as read before the update
      s.ix.position = created[created.length - 1].position;
      expect(await s.outcomes(ids[0])).toEqual(['INDEXED@0']);
      expect(await rm.status(ids[0])).toBe('INDEXED');
      // The stale outcome (revision 0 of a record now at 1) is left out by the read model and by webhooks.
      expect(await rm.status(ids[1])).toBe('PENDING_INDEX');
      const stale = (await s.store.readAll(0, 1000))
        .filter((e) => e.type === 'RecordsIndexed')
        .flatMap((e) => webhookSources(e, s.store))
        .filter((w) => w.sourceId === ids[1]);
      expect(stale).toHaveLength(1);
      expect(await stale[0].data()).toBeNull();
      await s.drain();
      expect((await s.outcomes(ids[1])).at(-1)).toBe('INDEXED@1');
      expect(await rm.status(ids[1])).toBe('INDEXED');
      const fresh = (await s.store.readAll(0, 1000))
        .filter((e) => e.type === 'RecordsIndexed')
        .flatMap((e) => webhookSources(e, s.store))
        .filter((w) => w.sourceId === ids[1]);
      expect(await fresh.at(-1)!.data()).toMatchObject({ id: ids[1], indexStatus: 'INDEXED' });
    },
  );
});
