import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_SCHEMA_VERSION } from '@svc/contracts';
import { type StoredEvent, streams } from '@svc/domain';
import { eventually, startService, type Api, type TestService } from '../support/service';

/**
 * Reads never write (issue 13): the context root folder comes into being with
 * its context, so no folder read appends anything. A context created before
 * that (its root never materialised) reads as if it had its root, still
 * without a write, and gets the same root on its first folder write.
 */
let svc: TestService;
let api: Api;
let root: string;
let tenantId: string;

beforeAll(async () => {
  svc = await startService();
  api = svc.api;
  root = svc.bootstrap.tenants.live.rootKey;
  tenantId = svc.bootstrap.tenants.live.tenantId;
});

afterAll(async () => {
  await svc?.stop();
});

const call = (method: string, path: string, ctx: string, body?: unknown) =>
  api.call(method, path, { token: root, body, headers: { 'x-context-id': ctx } });

/** Every event after `after`, metering tallies aside (read calls are counted on the usage streams by design). */
async function appendedSince(after: number): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  for (let from = after; ;) {
    const page = await svc.service.store.readAll(from, 1000);
    if (!page.length) return out.filter((e) => !e.streamId.startsWith('usage-'));
    out.push(...page);
    from = page[page.length - 1].position;
  }
}

/** Every folder read there is, on a context and its root. */
async function readEverything(ctx: string, rootId?: string) {
  const statuses: number[] = [];
  statuses.push((await call('GET', '/v1/folders', ctx)).status);
  statuses.push((await call('GET', '/v1/folders?limit=1', ctx)).status);
  statuses.push((await call('GET', `/v1/folders/${randomUUID()}`, ctx)).status);
  statuses.push((await call('GET', `/v1/folders/${randomUUID()}/versions`, ctx)).status);
  statuses.push((await call('GET', `/v1/folders/${randomUUID()}/tombstone`, ctx)).status);
  if (rootId) {
    statuses.push((await call('GET', `/v1/folders/${rootId}`, ctx)).status);
    statuses.push((await call('GET', `/v1/folders/${rootId}/versions`, ctx)).status);
  }
  return statuses;
}

describe('folder reads never write', () => {
  it('a fresh context already has its root: no folder read appends an event', async () => {
    const created = await api.post('/v1/contexts', root, { name: `fresh-${randomUUID().slice(0, 8)}` });
    expect(created.status, created.text).toBe(201);
    const ctx = created.body.id as string;
    const head = await svc.service.store.headPosition();

    const list = await call('GET', '/v1/folders', ctx);
    expect(list.status, list.text).toBe(200);
    expect(list.body.data).toHaveLength(1);
    const rootFolder = list.body.data[0];
    expect(rootFolder).toMatchObject({
      isProtected: true,
      parentFolderId: null,
      depth: 0,
      slug: 'root',
      name: 'Root',
      userId: null,
      scopes: [],
      version: 1,
      description: null,
    });
    expect(rootFolder.createdAt).toBe(rootFolder.lastModified);
    expect(new Date(rootFolder.createdAt).getTime()).toBeLessThan(new Date(created.body.createdAt).getTime());
    expect(await readEverything(ctx, rootFolder.id)).toEqual([200, 200, 404, 404, 404, 200, 200]);

    expect(await appendedSince(head)).toEqual([]);
    // The root's history holds its creation, recorded with the context.
    const v = await call('GET', `/v1/folders/${rootFolder.id}/versions`, ctx);
    expect(v.body.data.map((r: any) => [r.version, r.eventType])).toEqual([[1, 'FolderCreated']]);
    expect(v.body.data[0].state).toEqual(rootFolder);
  });

  it("each new account's default contexts have their root from the start", async () => {
    const acct = await api.newAccount();
    const head = await svc.service.store.headPosition();
    for (const env of ['live', 'test'] as const) {
      const r = await api.get('/v1/folders', acct.tenants[env].rootKey);
      expect(r.status, r.text).toBe(200);
      expect(r.body.data.map((f: any) => f.slug)).toEqual(['root']);
    }
    expect(await appendedSince(head)).toEqual([]);
  });

  it(
    'a context created before roots came with contexts reads its root without a write; the first folder ' +
      'write materialises the same root',
    async () => {
      // What POST /v1/contexts appended before: the ContextCreated alone.
      const ctx = randomUUID();
      const at = new Date(Date.now() - 60_000).toISOString();
      await svc.service.store.append(
        streams.context(ctx),
        [
          {
            id: randomUUID(),
            type: 'ContextCreated',
            data: { contextId: ctx, tenantId, accountId: svc.bootstrap.accountId, name: 'legacy', isDefault: false },
            metadata: {
              tenantId,
              contextId: ctx,
              accountId: svc.bootstrap.accountId,
              actorKeyId: null,
              userId: null,
              requestId: null,
              occurredAt: at,
              schemaVersion: EVENT_SCHEMA_VERSION,
            },
          },
        ],
        'no_stream',
      );
      await eventually(async () => {
        const r = await api.get('/v1/contexts?limit=100', root);
        if (!r.body?.data?.some((c: any) => c.id === ctx))
          throw new Error(`context not projected yet: ${r.status} ${r.text}`);
        return true;
      });
      const head = await svc.service.store.headPosition();

      const list = await call('GET', '/v1/folders', ctx);
      expect(list.status, list.text).toBe(200);
      expect(list.body.data).toHaveLength(1);
      const implicit = list.body.data[0];
      expect(implicit).toMatchObject({
        isProtected: true,
        parentFolderId: null,
        depth: 0,
        slug: 'root',
        name: 'Root',
        userId: null,
        scopes: [],
        version: 1,
        description: null,
      });
      expect(new Date(implicit.createdAt).getTime()).toBe(new Date(at).getTime() - 1);
      expect((await call('GET', `/v1/folders/${implicit.id}`, ctx)).body).toEqual(implicit);
      // Filters and cursors treat it as they treat a stored root.
      expect((await call('GET', '/v1/folders?userId=someone', ctx)).body.data).toEqual([]);
      expect((await call('GET', `/v1/folders?parentFolderId=${implicit.id}`, ctx)).body.data).toEqual([]);
      expect((await call('GET', '/v1/folders?scope=team', ctx)).body.data).toEqual([]);
      await readEverything(ctx, implicit.id);
      expect(await appendedSince(head)).toEqual([]);

      // Another context never sees it.
      expect((await api.get(`/v1/folders/${implicit.id}`, root)).status).toBe(404);

      // The first write materialises the root it was shown.
      const child = await call('POST', '/v1/folders', ctx, { name: 'First' });
      expect(child.status, child.text).toBe(201);
      expect(child.body).toMatchObject({ parentFolderId: implicit.id, depth: 1 });
      const after = await call('GET', '/v1/folders', ctx);
      expect(after.body.data.map((f: any) => f.id)).toEqual([implicit.id, child.body.id]);
      expect(after.body.data[0]).toEqual(implicit);
      expect((await appendedSince(head)).filter((e) => e.type === 'FolderCreated').map((e) => e.streamId)).toEqual([
        streams.folder(implicit.id),
        streams.folder(child.body.id),
      ]);
    },
  );
});
