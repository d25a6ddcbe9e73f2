import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_SCHEMA_VERSION } from '@svc/contracts';
import { openPglite, openPostgres, PostgresEventStore } from '@svc/deploy';
import { type Sql, type StoredEvent, streams } from '@svc/domain';
import { ProjectionRunner, recordsProjection, schemasProjection } from '@svc/projectors';
import { asJsonb, RecordReads, rowOfCreated } from '@svc/query-api';
import { freshPostgresSchema, serverUrl, tempDir } from '../support/engines';
import { eventMetadata } from '../support/events';

/**
 * A record's first read (a GET, the change stream's entity) is served from its RecordCreated event when the record was
 * created lately and has not changed since (RecentRecords, beside the projector). That row must be the one the
 * database gives back, to the byte: the same fields and values, the payload's keys in jsonb's order.
 */
const T = 'tenant-1';
const C = 'context-1';

/** Payloads whose stored form differs from what the client sent: key order, nesting, Unicode keys, -0, large ones. */
const PAYLOADS: Array<Record<string, unknown>> = [
  { zeta: 1, a: 'x', mid: true, bb: null },
  { title: 'Nested', meta: { zz: [3, 2, { y: 1, x: 2 }], b: { dd: 1, c: 2 } }, tags: ['b', 'a'] },
  { é: 1, e: 2, 日本: 3, z: 4, '😀': 5, ab: 6, aé: 7 },
  { '10': 'ten', '2': 'two', b: 'bee', a1: 'ay' },
  { n: -0, f: 1.5, big: 9007199254740991, small: 1e-7, huge: 1e21, neg: -12.25 },
  { text: 'quotes " and \\ and \n newlines\tand \u2028 separators', empty: {}, list: [] },
  { body: 'x'.repeat(5000), kind: 'large enough to be stored out of line' },
];

async function engines(): Promise<
  Array<{ name: string; open: () => Promise<{ sql: Sql; done: () => Promise<void> }> }>
> {
  const out = [
    {
      name: 'embedded (PGlite)',
      open: async () => {
        const tmp = tempDir('svc-recent-records-');
        const sql = await openPglite(`${tmp.dir}/pg`);
        return { sql, done: async () => (await sql.close(), tmp.remove()) };
      },
    },
  ];
  const url = serverUrl('postgres');
  if (url)
    out.push({
      name: 'PostgreSQL',
      open: async () => {
        const s = await freshPostgresSchema(url);
        const sql = await openPostgres(s.url);
        return { sql, done: async () => (await sql.close(), await s.drop()) };
      },
    });
  return out;
}

for (const engine of await engines()) {
  describe(`a lately created record's row from its event equals the read model's (${engine.name})`, () => {
    let sql: Sql;
    let done: () => Promise<void>;
    let runner: ProjectionRunner;
    const created: StoredEvent<'RecordCreated'>[] = [];

    beforeAll(async () => {
      ({ sql, done } = await engine.open());
      const store = await PostgresEventStore.open(sql);
      const meta = (actorKeyId: string | null) => ({
        tenantId: T,
        contextId: C,
        accountId: 'acc',
        actorKeyId,
        userId: null,
        requestId: 'r',
        occurredAt: new Date().toISOString(),
        schemaVersion: EVENT_SCHEMA_VERSION,
      });
      const schemaId = randomUUID();
      const definition = {
        typeName: 'note',
        displayName: 'Note',
        allowedSurfaces: ['record'],
        fields: [{ fieldId: 'title', fieldType: 'string' }],
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
              metadata: meta(null),
            },
          ],
        },
      ]);
      const ids = PAYLOADS.map(() => randomUUID());
      await store.appendMulti(
        PAYLOADS.map((payload, i) => ({
          streamId: streams.record(ids[i]),
          expectedRevision: 'any' as const,
          events: [
            {
              id: randomUUID(),
              type: 'RecordCreated',
              data: {
                recordId: ids[i],
                schemaId,
                schemaVersion: 1,
                typeName: 'note',
                payload,
                status: 'ACTIVE',
                // Every optional column both set and unset across the records.
                folderId: i % 2 ? randomUUID() : null,
                userId: i % 2 ? 'user-1' : null,
                scopes: i % 2 ? ['org:b', 'org:a'] : [],
                externalId: i % 3 ? `ext-${i}` : null,
                indexMode: [null, 'NONE', 'TEXT'][i % 3],
              },
              metadata: meta(i % 2 ? 'key-1' : null),
            },
          ],
        })),
      );
      runner = new ProjectionRunner('read-models', sql, store, [schemasProjection(), recordsProjection()]);
      await runner.init();
      runner.start();
      await runner.waitFor(await store.headPosition(), 10_000);
      for (const e of await store.readAll(0, 100)) if (e.type === 'RecordCreated') created.push(e);
    });
    afterAll(async () => {
      await runner?.stop();
      await done?.();
    });

    it('field for field and byte for byte, for every payload shape, as sent or as the log keeps it', async () => {
      expect(created).toHaveLength(PAYLOADS.length);
      const reads = new RecordReads(sql);
      const rows = new Map((await reads.byIds(created.map((e) => e.data.recordId))).map((r) => [r.id, r]));
      created.forEach((e, i) => {
        const stored = rows.get(e.data.recordId)!;
        // The PostgreSQL event store gives the payload back in jsonb's order; KurrentDB in the order it was sent.
        for (const payload of [e.data.payload, PAYLOADS[i]]) {
          const kept = rowOfCreated({ ...e, data: { ...e.data, payload } });
          expect(kept).toEqual(stored);
          expect(JSON.stringify(kept)).toBe(JSON.stringify(stored));
        }
      });
      // Not a tautology: the payload as sent is in another order than the stored one.
      expect(JSON.stringify(PAYLOADS[0])).not.toBe(JSON.stringify(rows.get(created[0].data.recordId)!.payload));
    });

    it('asJsonb orders keys as jsonb does, whatever the input order', async () => {
      const { rows } = await sql.query<{ v: unknown }>('SELECT $1::jsonb AS v', [JSON.stringify(PAYLOADS[2])]);
      expect(JSON.stringify(asJsonb(PAYLOADS[2]))).toBe(JSON.stringify(rows[0].v));
    });
  });
}

describe('the records projection hands on only the records a batch inserted and left unchanged', () => {
  let sql: Sql;
  let tmp: { dir: string; remove: () => void };
  beforeAll(async () => {
    tmp = tempDir('svc-recent-hook-');
    sql = await openPglite(`${tmp.dir}/pg`);
  });
  afterAll(async () => {
    await sql?.close();
    tmp?.remove();
  });

  const meta = eventMetadata({ tenantId: T, contextId: C, occurredAt: '2026-12-07T00:00:00.000Z' });
  let position = 0;
  const ev = (type: string, data: Record<string, unknown>) =>
    ({ id: randomUUID(), type, data, metadata: meta, streamId: 's', revision: 0, position: ++position }) as StoredEvent;
  const create = (recordId: string) =>
    ev('RecordCreated', {
      recordId,
      schemaId: randomUUID(),
      schemaVersion: 1,
      typeName: 'note',
      payload: { title: recordId },
      status: 'ACTIVE',
      folderId: null,
      userId: null,
      scopes: [],
      externalId: null,
      indexMode: 'NONE',
    });

  it('not a record changed later in the batch, none before a context went, none on a replay', async () => {
    const heard: Array<{ ids: string[] | null; created: string[] }> = [];
    const projection = recordsProjection((ids, created) =>
      heard.push({ ids, created: created.map((e) => e.data.recordId) }),
    );
    for (const p of [schemasProjection(), projection]) await sql.exec(p.ddl);
    /** Applies a batch's creates, then runs the commit hook over the whole batch, in log order. */
    const batch = async (events: StoredEvent[]) => {
      await sql.tx((q) =>
        projection.applyMany!(
          q,
          events.filter((e) => e.type === 'RecordCreated'),
        ),
      );
      projection.afterCommit!(events);
      return heard.pop()!;
    };
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => `${n}-${randomUUID()}`);
    // b is changed by a later event of its batch: only a is handed on.
    const first = await batch([create(a), create(b), ev('RecordDeleted', { recordId: b })]);
    expect(first.created).toEqual([a]);
    expect(first.ids?.sort()).toEqual([a, b].sort());
    // The same create again (a replay): nothing was inserted, nothing is handed on.
    expect((await batch([create(a)])).created).toEqual([]);
    // A context went after c and before d: every record may have changed (null), only d is handed on.
    expect(await batch([create(c), ev('ContextDeleted', { contextId: C }), create(d)])).toEqual({
      ids: null,
      created: [d],
    });
  });
});
