import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresEventStore } from '@svc/deploy';
import { FileBlobStore, openPglite } from '@svc/deploy';
import { type Sql, streams, type VectorRow } from '@svc/domain';
import { catchUpFeed } from '@svc/projectors';
import { type Embedder, LanceVectorIndex, PgTextIndex, SearchCatalogue, SearchIndexer } from '@svc/search';
import { recordOutcomes } from './outcome-stream';
import { tempDir } from '../support/engines';
import { eventMetadata } from '../support/events';

/**
 * The search projector's vector write per batch (issue 7): one VectorIndex.replaceItems call for
 * every item of a batch; when it fails, the items are written one by one and only those whose own
 * write fails are marked EMBEDDING_FAILED (the per-item semantics of the old path).
 */
const DIMS = 8;
const T = 'tenant-1';
const C = 'context-1';

/** A deterministic stand-in for the model: a vector from the text's characters. */
const embedder: Embedder = {
  model: 'fake',
  dims: DIMS,
  embed: async (texts) =>
    texts.map((t) => Array.from({ length: DIMS }, (_, k) => 1 + ((t.charCodeAt(k % t.length) * (k + 1)) % 7))),
};

class SpyLance extends LanceVectorIndex {
  calls = { replaceItems: 0, replaceItem: 0 };
  failBatch = false;
  failItem = new Set<string>();
  override async replaceItems(items: Array<{ itemId: string; rows: VectorRow[] }>) {
    this.calls.replaceItems++;
    if (this.failBatch) throw new Error('batch write refused');
    return super.replaceItems(items);
  }
  override async replaceItem(itemId: string, rows: VectorRow[]) {
    this.calls.replaceItem++;
    if (this.failItem.has(itemId)) throw new Error(`write of ${itemId} refused`);
    return super.replaceItem(itemId, rows);
  }
}

describe('search projector: batched vector writes', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  async function setup() {
    const tmp = tempDir('svc-indexer-batch-');
    const sql: Sql = await openPglite(`${tmp.dir}/pg`);
    const store = await PostgresEventStore.open(sql);
    const vectors = new SpyLance(`${tmp.dir}/lancedb`, embedder.model, DIMS, { autoMaintain: false });
    const catalogue = new SearchCatalogue(sql);
    const indexer = new SearchIndexer(
      sql,
      store,
      { text: new PgTextIndex(sql), vectors, embedder, catalogue },
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
    const ids: string[] = [];
    const write = async (n: number) => {
      const reqs = Array.from({ length: n }, (_, i) => {
        const recordId = randomUUID();
        ids.push(recordId);
        const data = {
          recordId,
          schemaId,
          schemaVersion: 1,
          typeName: 'note',
          payload: { body: `note ${ids.length} about volcano number ${i}` },
          status: 'ACTIVE',
          folderId: null,
          userId: null,
          scopes: [],
          externalId: null,
          indexMode: 'HYBRID',
        };
        return {
          streamId: streams.record(recordId),
          expectedRevision: 'any' as const,
          events: [{ id: randomUUID(), type: 'RecordCreated', data, metadata: meta }],
        };
      });
      await store.appendMulti(reqs);
    };
    const drain = async () => {
      for (;;) {
        // From the checkpoint (`current` stays behind queued vector jobs); at the end, wait for the vector queue.
        const events = await store.readAll((indexer as unknown as { position: number }).position, 500);
        if (!events.length) return indexer.settled();
        await (indexer as unknown as { applyBatch(e: unknown[]): Promise<number> }).applyBatch(events);
        (indexer as unknown as { position: number }).position = events[events.length - 1].position;
      }
    };
    const outcome = async (id: string) => {
      const last = (await recordOutcomes(store, T, C, id)).pop()?.split('@')[0];
      return last === undefined || last === 'INDEXED' || last === 'SKIPPED' ? last : `FAILED ${last}`;
    };
    return { vectors, catalogue, ids, write, drain, outcome };
  }

  it('writes the vectors of a whole batch with one replaceItems call', async () => {
    const s = await setup();
    await s.write(30);
    await s.drain();
    expect(s.vectors.calls).toEqual({ replaceItems: 1, replaceItem: 0 });
    for (const id of s.ids) expect(await s.outcome(id)).toBe('INDEXED');
    const hits = await s.vectors.search({
      tenantId: T,
      contextId: C,
      vector: (await embedder.embed(['note 1 about volcano number 0']))[0],
      limit: 100,
    });
    expect(new Set(hits.map((h) => h.itemId))).toEqual(new Set(s.ids));
    expect((await s.catalogue.items(s.ids)).get(s.ids[0])?.vectors).toBe(1);
  });

  it('a failed batch write falls back to item writes: only an item whose write fails is EMBEDDING_FAILED', async () => {
    const s = await setup();
    s.vectors.failBatch = true;
    await s.write(5);
    s.vectors.failItem.add(s.ids[2]);
    await s.drain();
    expect(s.vectors.calls).toEqual({ replaceItems: 1, replaceItem: 5 });
    const outcomes = await Promise.all(s.ids.map((id) => s.outcome(id)));
    expect(outcomes).toEqual(['INDEXED', 'INDEXED', 'FAILED EMBEDDING_FAILED', 'INDEXED', 'INDEXED']);
  });
});
