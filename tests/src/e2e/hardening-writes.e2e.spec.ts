import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppendRequest } from '@svc/domain/ports/event-store';
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
  const s = await api.post('/v1/schemas', root, { typeName, displayName: 'Writes', allowedSurfaces: ['record'], fields: [{ fieldId: 'n', fieldType: 'number' }] });
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
        i % 2 ? api.patch(`/v1/records/${c.body.id}`, root, { payload: { n: i + 1 } }) : api.put(`/v1/records/${c.body.id}`, root, { typeName, payload: { n: i + 1 } }),
      ),
    );
    expect(rs.map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
    const g = await api.get(`/v1/records/${c.body.id}`, root);
    expect(g.body.version).toBe(101);
  });

  it('50 concurrent document PUTs without expectedVersion all succeed', async () => {
    const d = await api.post('/v1/documents', root, { title: 't0', text: 'hello', indexMode: 'NONE' });
    expect(d.status, d.text).toBe(201);
    const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => api.patch(`/v1/documents/${d.body.id}`, root, { title: `t${i + 1}` })));
    expect(rs.map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
    expect((await api.get(`/v1/documents/${d.body.id}`, root)).body.version).toBe(51);
  });

  it('with expectedVersion exactly one of 20 concurrent writers wins; the rest get 409 VERSION_CONFLICT', async () => {
    const c = await api.post('/v1/records', root, { typeName, payload: { n: 0 } });
    const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => api.patch(`/v1/records/${c.body.id}`, root, { payload: { n: i }, expectedVersion: 1 })));
    expect(rs.filter((r) => r.status === 200)).toHaveLength(1);
    const losers = rs.filter((r) => r.status !== 200);
    expect(losers.every((r) => r.status === 409 && r.body.errorCode === 'VERSION_CONFLICT')).toBe(true);
  });
});

describe('batch write', () => {
  it('an unexpected failure of item k is that item\'s error; the others keep their own results', async () => {
    const store = svc.service.store;
    const original = store.appendMulti.bind(store);
    store.appendMulti = (requests: AppendRequest[]) =>
      requests.some((r) => r.events.some((e) => (e.data as { payload?: { n?: number } }).payload?.n === 666)) ? Promise.reject(new Error('disk on fire')) : original(requests);
    try {
      const r = await api.post('/v1/records/batch', root, { records: [0, 1, 666, 3].map((n) => ({ typeName, payload: { n } })) });
      expect(r.status, r.text).toBe(200);
      expect(r.body.results.map((x: { status: string }) => x.status)).toEqual(['created', 'created', 'error', 'created']);
      expect(r.body.results[2].error.code).toBe('INTERNAL');
      expect(r.body.results[2].error.message).not.toMatch(/disk on fire/);
    } finally {
      store.appendMulti = original;
    }
  });
});

describe('a folder outside the credential\'s data scope', () => {
  it('is 404 for creating records and documents in it, as for reading it; nothing is created', async () => {
    const f = await api.post('/v1/folders', root, { name: `owned-${randomUUID().slice(0, 6)}`, userId: 'alice' });
    expect(f.status, f.text).toBe(201);
    const m = await api.post('/v1/tokens', root, { scope: { allowedActions: ['records:c', 'records:r', 'documents:c', 'documents:r', 'folders:r', 'folders:c'], dataScope: { userId: 'mallory' } } });
    expect(m.status, m.text).toBe(201);
    const mallory = m.body.token;
    expect((await api.get(`/v1/folders/${f.body.id}`, mallory)).status).toBe(404);
    const rec = await api.post('/v1/records', mallory, { typeName, payload: { n: 1 }, folderId: f.body.id });
    expect(rec.status, rec.text).toBe(404);
    const doc = await api.post('/v1/documents', mallory, { title: 'x', text: 'y', indexMode: 'NONE', folderId: f.body.id });
    expect(doc.status, doc.text).toBe(404);
    const sub = await api.post('/v1/folders', mallory, { name: 'sub', parentFolderId: f.body.id });
    expect(sub.status, sub.text).toBe(404);
    // The owner's folder is still empty: deleting it works.
    expect((await api.del(`/v1/folders/${f.body.id}`, root)).status).toBe(204);
  });
});
