import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startService, type TestService } from '../support/service';

/**
 * List and lookup pages are cached in process until the records they show change. An index outcome changes a
 * record's indexStatus, so it drops the pages of its context: a list read while the record was PENDING_INDEX does
 * not keep answering PENDING_INDEX once it is INDEXED.
 */
let svc: TestService;

beforeAll(async () => {
  svc = await startService();
});

afterAll(async () => {
  await svc?.stop();
});

describe('cached list pages and index outcomes', () => {
  it('a list page read while a record was PENDING_INDEX shows INDEXED once the record is indexed', async () => {
    const root = svc.bootstrap.tenants.live.rootKey;
    const schema = await svc.api.post('/v1/schemas', root, {
      typeName: `Paged_${randomUUID().slice(0, 8)}`,
      displayName: 'Paged',
      allowedSurfaces: ['record'],
      indexMode: 'TEXT',
      fields: [{ fieldId: 'name', fieldType: 'string', searchable: true }],
    });
    expect(schema.status, schema.text).toBe(201);
    const indexer = svc.service.searchIndexer!;
    await indexer.stop(); // so the first page is read before the outcome exists
    const c = await svc.api.post('/v1/records', root, {
      typeName: schema.body.typeName,
      payload: { name: 'a harbour crane' },
    });
    expect(c.status, c.text).toBe(201);
    const list = () => svc.api.get(`/v1/records?typeName=${schema.body.typeName}&limit=20`, root);
    const first = await list();
    expect(first.status, first.text).toBe(200);
    expect(first.body.data.map((r: { indexStatus: string }) => r.indexStatus)).toEqual(['PENDING_INDEX']);
    expect((await list()).body.data[0].indexStatus).toBe('PENDING_INDEX'); // served from the cache
    indexer.start();
    await eventually(
      async () => (await svc.api.get(`/v1/records/${c.body.id}`, root)).body.indexStatus === 'INDEXED',
      30_000,
    );
    expect((await list()).body.data.map((r: { indexStatus: string }) => r.indexStatus)).toEqual(['INDEXED']);
  });
});
