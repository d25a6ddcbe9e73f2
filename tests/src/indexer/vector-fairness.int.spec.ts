import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresEventStore } from '@svc/deploy';
import { FileBlobStore, openPglite } from '@svc/deploy';
import { readCheckpoint, type Sql, streams } from '@svc/domain';
import { catchUpFeed } from '@svc/projectors';
import {
  type Embedder,
  LanceVectorIndex,
  PgTextIndex,
  SEARCH_INDEX,
  SearchCatalogue,
  SearchIndexer,
} from '@svc/search';
import { recordOutcomes } from './outcome-stream';
import { tempDir } from '../support/engines';
import { eventMetadata } from '../support/events';

/**
 * The search projector's vector queue (docs/search.md, "Fairness"): semantic work is served per tenant, round-robin,
 * so a small item of one tenant is embedded and INDEXED while another tenant's big item is still being embedded; the
 * queued work is stored, so a crash after the checkpoint loses none of it; a newer revision or a delete replaces or
 * cancels an item's queued work.
 */
const DIMS = 8;
const vec = (t: string) => Array.from({ length: DIMS }, (_, k) => 1 + ((t.charCodeAt(k % t.length) * (k + 1)) % 7));

/** A stand-in model: `passageBatch` 8 like the built-in one; every call is logged and may be held until released. */
class FakeModel implements Embedder {
  readonly model = 'fake';
  readonly dims = DIMS;
  readonly passageBatch = 8;
  calls: string[][] = [];
  held = false;
  private release: Array<() => void> = [];
  constructor(private readonly msPerCall = 2) {}
  async embed(texts: string[]) {
    this.calls.push(texts);
    if (this.held) await new Promise<void>((r) => this.release.push(r));
    await new Promise((r) => setTimeout(r, this.msPerCall));
    return texts.map(vec);
  }
  hold() {
    this.held = true;
  }
  go() {
    this.held = false;
    for (const r of this.release.splice(0)) r();
  }
}

/** Sentences tagged with a word, about `passages` passages of ~2,000 characters. */
const text = (tag: string, passages: number) =>
  Array.from(
    { length: passages * 20 },
    (_, i) =>
      `The ${tag} ledger line ${i} records ${['salt', 'grain', 'wool', 'copper'][i % 4]} traded at the harbour market.`,
  ).join(' ');

describe('search projector: the per-tenant vector queue', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  async function setup() {
    const tmp = tempDir('svc-indexer-fair-');
    const sql: Sql = await openPglite(`${tmp.dir}/pg`);
    const store = await PostgresEventStore.open(sql);
    const vectors = new LanceVectorIndex(`${tmp.dir}/lancedb`, 'fake', DIMS, { autoMaintain: false });
    cleanup.push(
      () => tmp.remove(),
      () => sql.close(),
      () => vectors.close(),
    );
    const indexer = async (embedder: Embedder) => {
      const ix = new SearchIndexer(
        sql,
        store,
        { text: new PgTextIndex(sql), vectors, embedder, catalogue: new SearchCatalogue(sql) },
        {
          vectorCapacity: 1_000_000,
          blobs: new FileBlobStore(`${tmp.dir}/blobs`),
          attempts: 2,
          feed: catchUpFeed(store),
        },
      );
      await ix.init();
      cleanup.push(() => ix.stop());
      return ix;
    };
    const schemaId = randomUUID();
    const meta = (tenantId: string) => eventMetadata({ tenantId, contextId: 'ctx' });
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
          {
            id: randomUUID(),
            type: 'SchemaCreated',
            data: { schemaId, typeName: 'note', definition },
            metadata: meta('t0'),
          },
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
      indexMode: 'HYBRID',
    });
    const create = async (tenantId: string, body: string) => {
      const recordId = randomUUID();
      await store.appendMulti([
        {
          streamId: streams.record(recordId),
          expectedRevision: 'any',
          events: [{ id: randomUUID(), type: 'RecordCreated', data: data(recordId, body), metadata: meta(tenantId) }],
        },
      ]);
      return recordId;
    };
    const update = (tenantId: string, recordId: string, body: string) =>
      store.appendMulti([
        {
          streamId: streams.record(recordId),
          expectedRevision: 'any',
          events: [{ id: randomUUID(), type: 'RecordUpdated', data: data(recordId, body), metadata: meta(tenantId) }],
        },
      ]);
    const remove = (tenantId: string, recordId: string) =>
      store.appendMulti([
        {
          streamId: streams.record(recordId),
          expectedRevision: 'any',
          events: [{ id: randomUUID(), type: 'RecordDeleted', data: { recordId }, metadata: meta(tenantId) }],
        },
      ]);
    const outcomes = async (id: string) => [
      ...(await recordOutcomes(store, 'tenant-A', 'ctx', id)),
      ...(await recordOutcomes(store, 'tenant-B', 'ctx', id)),
    ];
    const jobRows = async () =>
      Number((await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM si_vector_jobs')).rows[0].n);
    const hits = (tenantId: string, probe: string) =>
      vectors.search({ tenantId, contextId: 'ctx', vector: vec(probe), limit: 1000 });
    const until = async (f: () => Promise<boolean> | boolean, ms = 30_000) => {
      for (const end = Date.now() + ms; !(await f());) {
        if (Date.now() > end) throw new Error('condition not met');
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    return { sql, store, indexer, create, update, remove, outcomes, jobRows, hits, until };
  }

  it("tenant B's small record is embedded and INDEXED while tenant A's big record is still embedding", async () => {
    const s = await setup();
    const model = new FakeModel(5);
    const ix = await s.indexer(model);
    const big = await s.create('tenant-A', text('alpha', 170)); // ~120 passages
    ix.start();
    await s.until(() => model.calls.length >= 2); // A's item is being embedded, a model call at a time
    const small = await s.create('tenant-B', 'Bees swarmed from the hive at noon.');
    await s.until(async () => (await s.outcomes(small)).length > 0);
    const aDone = model.calls.flat().filter((t) => t.includes('alpha')).length;
    expect(await s.outcomes(small)).toEqual(['INDEXED@0']);
    expect(await s.outcomes(big)).toEqual([]);
    expect(aDone).toBeLessThan(60); // of ~120: B did not wait for A
    expect((await s.hits('tenant-B', 'Bees swarmed from the hive at noon.')).map((h) => h.itemId)).toEqual([small]);
    // No call mixed more than one model batch, and B's passage rode in one of the first calls after it arrived.
    expect(Math.max(...model.calls.map((c) => c.length))).toBeLessThanOrEqual(8);
    const bCall = model.calls.findIndex((c) => c.some((t) => t.startsWith('Bees')));
    expect(bCall).toBeLessThan(6);
    // `current` stays before A's record until its vectors are written; then A is INDEXED with every passage.
    const head = await s.store.headPosition();
    expect(ix.current).toBeLessThan(head);
    await ix.settled();
    expect(await s.outcomes(big)).toEqual(['INDEXED@0']);
    const n = (await s.hits('tenant-A', 'x')).length;
    expect(n).toBe(model.calls.flat().filter((t) => t.includes('alpha')).length);
    expect(n).toBeGreaterThan(100);
    expect(await s.jobRows()).toBe(0);
  });

  it('queued vector work survives a crash after the checkpoint: a new projector finishes it', async () => {
    const s = await setup();
    const stuck = new FakeModel();
    stuck.hold(); // never answers: the process "dies" with the job queued
    const first = await s.indexer(stuck);
    const id = await s.create('tenant-A', text('beta', 3));
    first.start();
    const head = await s.store.headPosition();
    await s.until(async () => (await readCheckpoint(s.sql, SEARCH_INDEX)) >= head && stuck.calls.length > 0);
    expect(await s.jobRows()).toBe(1);
    expect(first.current).toBeLessThan(head);
    expect(await s.outcomes(id)).toEqual([]);

    const model = new FakeModel();
    const second = await s.indexer(model); // reads the checkpoint (past the record's event) and the stored job
    expect(second.current).toBeLessThan(head);
    second.start();
    await second.settled();
    expect(await s.outcomes(id)).toEqual(['INDEXED@0']);
    expect((await s.hits('tenant-A', 'x')).length).toBe(3);
    expect(await s.jobRows()).toBe(0);
    expect(second.current).toBeGreaterThanOrEqual(head);
  });

  it('a newer revision replaces queued work, a delete cancels it: no stale vectors, no stale outcome', async () => {
    const s = await setup();
    const model = new FakeModel();
    const ix = await s.indexer(model);
    model.hold();
    const id = await s.create('tenant-A', text('gamma', 2));
    const gone = await s.create('tenant-B', text('delta', 2));
    ix.start();
    await s.until(() => model.calls.length > 0);
    await s.update('tenant-A', id, 'A short new text about epsilon.');
    await s.remove('tenant-B', gone);
    const head = await s.store.headPosition();
    await s.until(async () => (await readCheckpoint(s.sql, SEARCH_INDEX)) >= head);
    model.go();
    await ix.settled();
    expect(await s.outcomes(id)).toEqual(['INDEXED@1']);
    expect(await s.outcomes(gone)).toEqual([]);
    const a = await s.hits('tenant-A', 'x');
    expect(a.map((h) => h.chunkText)).toEqual(['A short new text about epsilon.']);
    expect(await s.hits('tenant-B', 'x')).toEqual([]);
    expect(await s.jobRows()).toBe(0);
  });
});
