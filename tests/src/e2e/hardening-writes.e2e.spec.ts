import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppendRequest } from '@svc/domain';
import { startService, type Api, type Bootstrap, type TestService } from '../support/service';

/**
 * Hardening, write path: last-write-wins never answers 409 under contention
 * (only expectedVersion does); a batch item that fails unexpectedly gets its own
 * error result; a folder the credential cannot read is not found for writes too.
 */
let svc: TestService;
let api: Api;
let acct: Bootstrap;
let root: string;
let typeName: string;

beforeAll(async () => {
  svc = await startService();
  api = svc.api;
  acct = await api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 });
  root = acct.tenants.live.rootKey;
  typeName = `W_${randomUUID().slice(0, 8)}`;
  const s = await api.post('/v1/schemas', root, {
    typeName,
    displayName: 'Writes',
    allowedSurfaces: ['record'],
    fields: [{ fieldId: 'n', fieldType: 'number' }],
  });
  expect(s.status, s.text).toBe(201);
});

afterAll(async () => {
  await svc?.stop();
});

describe('last-write-wins under contention', () => {
  it('100 concurrent PUTs and PATCHes without expectedVersion all succeed, each one version', async () => {
    const c = await api.post('/v1/records', root, { typeName, payload: { n: 0 } });
    expect(c.status).toBe(201);
    const rs = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        i % 2
          ? api.patch(`/v1/records/${c.body.id}`, root, { payload: { n: i + 1 } })
          : api.put(`/v1/records/${c.body.id}`, root, { typeName, payload: { n: i + 1 } }),
      ),
    );
    expect(rs.map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
    const g = await api.get(`/v1/records/${c.body.id}`, root);
    expect(g.body.version).toBe(101);
  });

  it('50 concurrent document PUTs without expectedVersion all succeed', async () => {
    const d = await api.post('/v1/documents', root, { title: 't0', text: 'hello', indexMode: 'NONE' });
    expect(d.status, d.text).toBe(201);
    const rs = await Promise.all(
      Array.from({ length: 50 }, (_, i) => api.patch(`/v1/documents/${d.body.id}`, root, { title: `t${i + 1}` })),
    );
    expect(rs.map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
    expect((await api.get(`/v1/documents/${d.body.id}`, root)).body.version).toBe(51);
  });

  it('with expectedVersion exactly one of 20 concurrent writers wins; the rest get 409 VERSION_CONFLICT', async () => {
    const c = await api.post('/v1/records', root, { typeName, payload: { n: 0 } });
    const rs = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.patch(`/v1/records/${c.body.id}`, root, { payload: { n: i }, expectedVersion: 1 }),
      ),
    );
    expect(rs.filter((r) => r.status === 200)).toHaveLength(1);
    const losers = rs.filter((r) => r.status !== 200);
    expect(losers.every((r) => r.status === 409 && r.body.errorCode === 'VERSION_CONFLICT')).toBe(true);
  });
});

describe('batch write', () => {
  it("an unexpected failure of item k is that item's error; the others keep their own results", async () => {
    const store = svc.service.store;
    const original = store.appendMulti.bind(store);
    store.appendMulti = (requests: AppendRequest[]) =>
      requests.some((r) => r.events.some((e) => (e.data as { payload?: { n?: number } }).payload?.n === 666))
        ? Promise.reject(new Error('disk on fire'))
        : original(requests);
    try {
      const r = await api.post('/v1/records/batch', root, {
        records: [0, 1, 666, 3].map((n) => ({ typeName, payload: { n } })),
      });
      expect(r.status, r.text).toBe(200);
      expect(r.body.results.map((x: { status: string }) => x.status)).toEqual([
        'created',
        'created',
        'error',
        'created',
      ]);
      expect(r.body.results[2].error.code).toBe('INTERNAL');
      expect(r.body.results[2].error.message).not.toMatch(/disk on fire/);
    } finally {
      store.appendMulti = original;
    }
  });
});

describe("a folder outside the credential's data scope", () => {
  it('is 404 for creating records and documents in it, as for reading it; nothing is created', async () => {
    const f = await api.post('/v1/folders', root, { name: `owned-${randomUUID().slice(0, 6)}`, userId: 'alice' });
    expect(f.status, f.text).toBe(201);
    const m = await api.post('/v1/tokens', root, {
      scope: {
        allowedActions: ['records:c', 'records:r', 'documents:c', 'documents:r', 'folders:r', 'folders:c'],
        dataScope: { userId: 'mallory' },
      },
    });
    expect(m.status, m.text).toBe(201);
    const mallory = m.body.token;
    expect((await api.get(`/v1/folders/${f.body.id}`, mallory)).status).toBe(404);
    const rec = await api.post('/v1/records', mallory, { typeName, payload: { n: 1 }, folderId: f.body.id });
    expect(rec.status, rec.text).toBe(404);
    const doc = await api.post('/v1/documents', mallory, {
      title: 'x',
      text: 'y',
      indexMode: 'NONE',
      folderId: f.body.id,
    });
    expect(doc.status, doc.text).toBe(404);
    const sub = await api.post('/v1/folders', mallory, { name: 'sub', parentFolderId: f.body.id });
    expect(sub.status, sub.text).toBe(404);
    // The owner's folder is still empty: deleting it works.
    expect((await api.del(`/v1/folders/${f.body.id}`, root)).status).toBe(204);
  });
});

describe('size and shape limits (docs/limits.md)', () => {
  const big = (bytes: number) => 'x'.repeat(bytes);
  it('a payload over 1 MiB is 413 on create and on PUT, and the record is unchanged', async () => {
    const c = await api.post('/v1/records', root, { typeName, payload: { n: 1 } });
    expect((await api.post('/v1/records', root, { typeName, payload: { n: 2, blob: big(1024 * 1024) } })).status).toBe(
      413,
    );
    const put = await api.put(`/v1/records/${c.body.id}`, root, {
      typeName,
      payload: { n: 3, blob: big(1024 * 1024) },
    });
    expect(put.status).toBe(413);
    expect(put.body).toMatchObject({ errorCode: 'PAYLOAD_TOO_LARGE', limitBytes: 1024 * 1024 });
    const g = await api.get(`/v1/records/${c.body.id}`, root);
    expect(g.body).toMatchObject({ version: 1, payload: { n: 1 } });
    // Just under the limit is accepted.
    expect(
      (await api.post('/v1/records', root, { typeName, payload: { n: 4, blob: big(1024 * 1024 - 100) } })).status,
    ).toBe(201);
  });

  it('document inline text over 5 MiB is 413 and creates nothing', async () => {
    const before = await api.get('/v1/documents?limit=100', root);
    const r = await api.post('/v1/documents', root, {
      title: 'too big',
      text: big(5 * 1024 * 1024 + 1),
      indexMode: 'NONE',
    });
    expect(r.status).toBe(413);
    expect(r.body.errorCode).toBe('PAYLOAD_TOO_LARGE');
    expect((await api.get('/v1/documents?limit=100', root)).body.data.length).toBe(before.body.data.length);
  });

  it('a body over 8 MiB is 413; depth over 32, over 1,000 keys in an object, over 50,000 values are 400', async () => {
    expect((await api.post('/v1/records', root, { typeName, payload: { blob: big(8 * 1024 * 1024) } })).status).toBe(
      413,
    );
    let deep: unknown = 1;
    for (let i = 0; i < 32; i++) deep = { d: deep };
    // The body is level 1, the payload (the outermost of 32 nested objects) level 2: 33 levels.
    const r = await api.post('/v1/records', root, { typeName, payload: deep });
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/deeper than 32/);
    const wide = await api.post('/v1/records', root, {
      typeName,
      payload: Object.fromEntries(Array.from({ length: 1_001 }, (_, i) => [`k${i}`, i])),
    });
    expect(wide.status).toBe(400);
    expect(wide.body.message).toMatch(/1000 keys/);
    const many = await api.post('/v1/records', root, {
      typeName,
      payload: { list: Array.from({ length: 50_001 }, (_, i) => i) },
    });
    expect(many.status).toBe(400);
    expect(many.body.message).toMatch(/50000 values/);
    // 1,000 keys and 32 levels are fine.
    let ok: unknown = 1;
    for (let i = 0; i < 31; i++) ok = { d: ok };
    expect((await api.post('/v1/records', root, { typeName, payload: ok })).status).toBe(201);
    expect(
      (
        await api.post('/v1/records', root, {
          typeName,
          payload: Object.fromEntries(Array.from({ length: 1_000 }, (_, i) => [`k${i}`, i])),
        })
      ).status,
    ).toBe(201);
  });

  it('NUL and lone surrogates are 400 in a body, a path and a query, and change nothing', async () => {
    const c = await api.post('/v1/records', root, { typeName, payload: { n: 1 } });
    for (const raw of ['{"payload":{"s":"a\\u0000"}}', '{"payload":{"s":"\\ud800"}}', '{"payload":{"\\udfff":1}}']) {
      const r = await api.call('PATCH', `/v1/records/${c.body.id}`, { token: root, raw });
      expect(r.status, raw).toBe(400);
    }
    expect((await api.get(`/v1/records/${c.body.id}%00`, root)).status).toBe(400);
    expect((await api.get(`/v1/records?type=${typeName}%00`, root)).status).toBe(400);
    expect((await api.get(`/v1/records/${c.body.id}`, root)).body.version).toBe(1);
  });
});
