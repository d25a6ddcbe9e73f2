import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChangeEvent, openChanges } from '../support/changes';
import { SERVER_ENGINES, tempDir } from '../support/engines';
import {
  type Api,
  type Bootstrap,
  freePort,
  inProcessOnly,
  spawnService,
  startService,
  type TestService,
  THROUGH_ROUTER,
  waitForExit,
} from '../support/service';

/**
 * The change stream (GET /v1/changes): one Server-Sent Event per record, document and folder change the caller
 * could GET, each `id:` its log position; order and shape; resume with Last-Event-ID (no gap, no duplicate, also
 * across a restart of the service); the filters (types, entities, data scope, permissions); record.indexed once the
 * record is found by search; the per-context limit; refusals of bad queries before the stream opens.
 */
let svc: TestService;
let api: Api;
let root: string;

beforeAll(async () => {
  svc = await startService();
  api = svc.api;
  root = svc.bootstrap.tenants.live.rootKey;
}, 120_000);

afterAll(async () => {
  await svc?.stop();
});

const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;

async function mint(allowedActions: string[], extra: Record<string, unknown> = {}) {
  const { dataScope, ...rest } = extra;
  const r = await api.post('/v1/tokens', root, {
    scope: { allowedActions, ...(dataScope ? { dataScope } : {}) },
    ...rest,
  });
  expect(r.status, r.text).toBe(201);
  return r.body.token as string;
}

async function schema(token = root, over: Record<string, unknown> = {}) {
  const typeName = uniq('Change');
  const r = await api.post('/v1/schemas', token, {
    typeName,
    displayName: 'Changes',
    allowedSurfaces: ['record', 'document'],
    fields: [
      { fieldId: 'title', fieldType: 'string', searchable: true },
      { fieldId: 'n', fieldType: 'number' },
    ],
    ...over,
  });
  expect(r.status, r.text).toBe(201);
  return typeName;
}

async function record(
  typeName: string,
  payload: Record<string, unknown>,
  token = root,
  extra: Record<string, unknown> = {},
) {
  const r = await api.post('/v1/records', token, { typeName, payload, indexMode: 'NONE', ...extra });
  expect(r.status, r.text).toBe(201);
  return r.body;
}

/** The log position now: an event the caller sees, written and awaited on a stream of its own. */
async function headPosition(): Promise<number> {
  const s = await openChanges(api, root, { query: 'entities=folders' });
  const f = await api.post('/v1/folders', root, { name: uniq('mark') });
  expect(f.status, f.text).toBe(201);
  const e = await s.waitUntil((x) => x.data.entityId === f.body.id);
  s.close();
  return e.data.position;
}

const ids = (events: ChangeEvent[]) => events.map((e) => `${e.event}:${e.data.entityId}:${e.data.version}`);

describe('shape and order', () => {
  it('record created, updated, deleted: id is the position, entity is what GET returns, then null', async () => {
    const type = await schema();
    const s = await openChanges(api, root, { query: `types=${type}` });
    expect(s.status).toBe(200);
    expect(s.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const rec = await record(type, { title: 'first', n: 1 });
    const created = await s.waitUntil((e) => e.event === 'record.created');
    const gotCreated = await api.get(`/v1/records/${rec.id}`, root);
    expect(created.data.entity).toEqual(gotCreated.body);
    const patched = await api.patch(`/v1/records/${rec.id}`, root, { payload: { title: 'second' } });
    expect(patched.status, patched.text).toBe(200);
    const updated = await s.waitUntil((e) => e.event === 'record.updated');
    expect(updated.data.entity).toEqual((await api.get(`/v1/records/${rec.id}`, root)).body);
    expect((await api.del(`/v1/records/${rec.id}`, root)).status).toBe(204);
    const deleted = await s.waitUntil((e) => e.event === 'record.deleted');
    s.close();

    expect(ids(s.events)).toEqual([
      `record.created:${rec.id}:1`,
      `record.updated:${rec.id}:2`,
      `record.deleted:${rec.id}:3`,
    ]);
    for (const e of s.events) {
      expect(e.id).toBe(String(e.data.position));
      expect(Object.keys(e.data).sort()).toEqual([
        'at',
        'entity',
        'entityId',
        'position',
        'type',
        'typeName',
        'version',
      ]);
      expect(e.data.type).toBe(e.event);
      expect(e.data.typeName).toBe(type);
      expect(Number.isNaN(Date.parse(e.data.at))).toBe(false);
    }
    expect(created.data.position).toBeLessThan(updated.data.position);
    expect(updated.data.position).toBeLessThan(deleted.data.position);
    expect(updated.data.entity!.payload).toEqual({ title: 'second', n: 1 });
    expect(deleted.data.entity).toBeNull();
  });

  it('folder and document changes, in log order', async () => {
    const s = await openChanges(api, root, { query: 'entities=folders,documents' });
    const folder = await api.post('/v1/folders', root, { name: uniq('F') });
    expect(folder.status, folder.text).toBe(201);
    const renamed = await api.patch(`/v1/folders/${folder.body.id}`, root, { name: uniq('G') });
    expect(renamed.status, renamed.text).toBe(200);
    const doc = await api.post('/v1/documents', root, {
      title: 'Volcanoes',
      text: 'Basalt flows from shield volcanoes.',
      indexMode: 'TEXT',
      folderId: folder.body.id,
    });
    expect(doc.status, doc.text).toBe(201);
    const indexed = await s.waitUntil((e) => e.event === 'document.indexed' && e.data.entityId === doc.body.id, 30_000);
    expect(indexed.data.entity).toMatchObject({ id: doc.body.id, status: 'INDEXED' });
    expect((await api.del(`/v1/documents/${doc.body.id}`, root)).status).toBe(204);
    await s.waitUntil((e) => e.event === 'document.deleted');
    expect((await api.del(`/v1/folders/${folder.body.id}`, root)).status).toBe(204);
    await s.waitUntil((e) => e.event === 'folder.deleted');
    s.close();

    const mine = s.events.filter((e) => e.data.entityId === folder.body.id || e.data.entityId === doc.body.id);
    expect(mine.map((e) => e.event)).toEqual([
      'folder.created',
      'folder.updated',
      'document.created',
      'document.indexed',
      'document.deleted',
      'folder.deleted',
    ]);
    expect(mine.map((e) => e.data.position)).toEqual([...mine.map((e) => e.data.position)].sort((a, b) => a - b));
    expect(mine[1].data.entity).toEqual(renamed.body);
    expect(mine[2].data.entity).toMatchObject({ id: doc.body.id, title: 'Volcanoes', folderId: folder.body.id });
    expect(mine[4].data.entity).toBeNull();
    expect(mine[5].data.entity).toBeNull();
  });

  it('answers the response head at once, then a `: ping` comment after 15 s without a change', async () => {
    const opened = performance.now();
    const s = await openChanges(api, root, { query: `types=${uniq('Quiet')}` });
    expect(s.status).toBe(200);
    expect(performance.now() - opened).toBeLessThan(5000);
    expect(s.headers.get('cache-control')).toContain('no-cache');
    // The service asks a proxy not to buffer; nginx (the shipped router) takes that header for itself.
    if (!THROUGH_ROUTER) expect(s.headers.get('x-accel-buffering')).toBe('no');
    await new Promise((r) => setTimeout(r, 14_000));
    expect(s.comments).not.toContain('ping');
    for (const deadline = Date.now() + 5_000; !s.comments.includes('ping') && Date.now() < deadline;)
      await new Promise((r) => setTimeout(r, 100));
    s.close();
    expect(s.comments).toContain('ping');
    expect(s.events).toHaveLength(0);
  }, 30_000);

  it.skipIf(!!inProcessOnly)('each event sent is metered as one read of its bytes', async () => {
    const acct = await api.newAccount();
    const key = acct.tenants.live.rootKey;
    const s = await openChanges(api, key, { query: 'entities=folders' });
    for (let i = 0; i < 3; i++)
      expect((await api.post('/v1/folders', key, { name: uniq('metered') })).status).toBe(201);
    await s.waitFor(3);
    s.close();
    await svc.service.meter.flush();
    const usage = await api.get('/v1/usage', key);
    expect(usage.status, usage.text).toBe(200);
    expect(usage.body.reads.calls.used).toBe(3);
    expect(usage.body.reads.dataOut.bytes).toBeGreaterThan(3 * 200);
  });
});

describe('resume', () => {
  it(
    'Last-Event-ID after k of N events: exactly the rest, no gap, no duplicate; Last-Event-ID wins over ' + 'startFrom',
    async () => {
      const type = await schema();
      const before = await headPosition();
      const N = 20;
      const k = 7;
      const made: string[] = [];
      for (let i = 0; i < N; i++) made.push((await record(type, { title: `r${i}`, n: i })).id);
      const first = await openChanges(api, root, { query: `types=${type}&startFrom=${before}` });
      const seen = await first.waitFor(k);
      first.close();
      expect(seen.map((e) => e.data.entityId)).toEqual(made.slice(0, k));

      const rest = await openChanges(api, root, { query: `types=${type}&startFrom=0`, lastEventId: seen[k - 1].id });
      await rest.waitFor(N - k);
      // Written while the second stream is open: it follows on from the log.
      const late = (await record(type, { title: 'late', n: N })).id;
      await rest.waitFor(N - k + 1);
      await new Promise((r) => setTimeout(r, 300));
      rest.close();
      expect(rest.events.map((e) => e.data.entityId)).toEqual([...made.slice(k), late]);
    },
  );

  it('startFrom=0 replays the whole log; an entity changed since shows that version as history kept it', async () => {
    const type = await schema();
    const rec = await record(type, { title: 'v1', n: 1 });
    const patched = await api.patch(`/v1/records/${rec.id}`, root, { payload: { title: 'v2' } });
    expect(patched.status).toBe(200);
    const s = await openChanges(api, root, { query: `types=${type}&startFrom=0` });
    await s.waitFor(2);
    s.close();
    expect(ids(s.events)).toEqual([`record.created:${rec.id}:1`, `record.updated:${rec.id}:2`]);
    expect(s.events[0].data.entity).toMatchObject({ id: rec.id, version: 1, payload: { title: 'v1', n: 1 } });
    expect(s.events[1].data.entity).toEqual((await api.get(`/v1/records/${rec.id}`, root)).body);
  });
});

describe('resume after later changes', () => {
  it('a record updated and then deleted: replayed updates keep their type name, so `types` keeps them', async () => {
    const type = await schema();
    const before = await headPosition();
    const rec = await record(type, { title: 'v1', n: 1 });
    for (const title of ['v2', 'v3'])
      expect((await api.patch(`/v1/records/${rec.id}`, root, { payload: { title } })).status).toBe(200);
    expect((await api.del(`/v1/records/${rec.id}`, root)).status).toBe(204);
    const s = await openChanges(api, root, { query: `types=${type}&startFrom=${before}` });
    await s.waitUntil((e) => e.event === 'record.deleted');
    s.close();
    expect(ids(s.events)).toEqual([
      `record.created:${rec.id}:1`,
      `record.updated:${rec.id}:2`,
      `record.updated:${rec.id}:3`,
      `record.deleted:${rec.id}:4`,
    ]);
    expect(s.events.map((e) => e.data.typeName)).toEqual([type, type, type, type]);
    expect(s.events[2].data.entity).toMatchObject({ id: rec.id, version: 3, payload: { title: 'v3', n: 1 } });
  });

  it("a document's processing step, replayed after later edits, has the version it came after", async () => {
    const before = await headPosition();
    const doc = await api.post('/v1/documents', root, { title: 'v1', text: 'Basalt flows.', indexMode: 'TEXT' });
    expect(doc.status, doc.text).toBe(201);
    const live = await openChanges(api, root, { query: `entities=documents&startFrom=${before}` });
    const indexedLive = await live.waitUntil(
      (e) => e.event === 'document.indexed' && e.data.entityId === doc.body.id,
      30_000,
    );
    live.close();
    expect(indexedLive.data.version).toBe(1);
    for (const title of ['v2', 'v3'])
      expect((await api.patch(`/v1/documents/${doc.body.id}`, root, { title })).status).toBe(200);
    const s = await openChanges(api, root, { query: `entities=documents&startFrom=${before}` });
    await s.waitUntil((e) => e.event === 'document.updated' && e.data.version === 3);
    s.close();
    const mine = s.events.filter((e) => e.data.entityId === doc.body.id);
    const indexed = mine.find((e) => e.event === 'document.indexed')!;
    expect(indexed.data.version).toBe(1);
    expect(indexed.data.entity).toMatchObject({ id: doc.body.id, title: 'v1', version: 1, status: 'INDEXED' });
    // Exactly what the live stream sent then (what a GET answered): text size, times and all.
    expect(indexed.data.entity).toEqual(indexedLive.data.entity);
    // Versions never go backwards along the stream.
    const versions = mine.map((e) => e.data.version as number);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
  });
});

describe('filters', () => {
  it('types and entities', async () => {
    const a = await schema();
    const b = await schema();
    const s = await openChanges(api, root, { query: `types=${a}` });
    const onlyRecords = await openChanges(api, root, { query: 'entities=records' });
    const ra = await record(a, { title: 'a' });
    const rb = await record(b, { title: 'b' });
    const folder = await api.post('/v1/folders', root, { name: uniq('F') });
    const last = await record(a, { title: 'a2' });
    await s.waitUntil((e) => e.data.entityId === last.id);
    await onlyRecords.waitUntil((e) => e.data.entityId === last.id);
    s.close();
    onlyRecords.close();
    expect(s.events.map((e) => e.data.entityId)).toEqual([ra.id, last.id]);
    expect(onlyRecords.events.every((e) => e.event!.startsWith('record.'))).toBe(true);
    expect(onlyRecords.events.map((e) => e.data.entityId)).toEqual(expect.arrayContaining([ra.id, rb.id, last.id]));
    expect(onlyRecords.events.some((e) => e.data.entityId === folder.body.id)).toBe(false);
  });

  it("a user-scoped token sees only its own records' events, as its GETs do", async () => {
    const type = await schema();
    const u1 = await mint(['records:*'], { userId: 'u1' });
    const u2 = await mint(['records:*'], { userId: 'u2' });
    const s1 = await openChanges(api, u1, { query: `types=${type}` });
    const s2 = await openChanges(api, u2, { query: `types=${type}` });
    const sRoot = await openChanges(api, root, { query: `types=${type}` });
    const mine = await record(type, { title: 'u1' }, u1);
    const theirs = await record(type, { title: 'u2' }, u2);
    const rootOwned = await record(type, { title: 'root' });
    await sRoot.waitFor(3);
    await s2.waitFor(1);
    await s1.waitFor(1);
    await new Promise((r) => setTimeout(r, 300));
    for (const s of [s1, s2, sRoot]) s.close();
    expect(s1.events.map((e) => e.data.entityId)).toEqual([mine.id]);
    expect(s2.events.map((e) => e.data.entityId)).toEqual([theirs.id]);
    expect(sRoot.events.map((e) => e.data.entityId)).toEqual([mine.id, theirs.id, rootOwned.id]);
    expect((await api.get(`/v1/records/${theirs.id}`, u1)).status).toBe(404);
  });

  it('a scope-bound token sees only the changes of entities in its scopes', async () => {
    const type = await schema();
    const t = await mint(['records:r'], { dataScope: { scopes: ['org:a'] } });
    const s = await openChanges(api, t, { query: `types=${type}` });
    const inScope = await record(type, { title: 'a' }, root, { scopes: ['org:a', 'client:1'] });
    const outOfScope = await record(type, { title: 'b' }, root, { scopes: ['org:b'] });
    const last = await record(type, { title: 'a2' }, root, { scopes: ['org:a'] });
    await s.waitUntil((e) => e.data.entityId === last.id);
    await new Promise((r) => setTimeout(r, 300));
    s.close();
    expect(s.events.map((e) => e.data.entityId)).toEqual([inScope.id, last.id]);
    expect((await api.get(`/v1/records/${outOfScope.id}`, t)).status).toBe(404);
  });

  it(
    'a token without documents:r gets no document events; asking for them is 403; no read permission at all ' +
      'is 403',
    async () => {
      const t = await mint(['records:r', 'folders:r']);
      const s = await openChanges(api, t);
      expect(s.status).toBe(200);
      const doc = await api.post('/v1/documents', root, { title: 'Hidden', text: 'nothing to see', indexMode: 'NONE' });
      expect(doc.status, doc.text).toBe(201);
      const folder = await api.post('/v1/folders', root, { name: uniq('after') });
      await s.waitUntil((e) => e.data.entityId === folder.body.id);
      s.close();
      expect(s.events.some((e) => e.event!.startsWith('document.'))).toBe(false);

      const asked = await openChanges(api, t, { query: 'entities=records,documents' });
      expect(asked.status).toBe(403);
      const none = await openChanges(api, await mint(['schemas:r']));
      expect(none.status).toBe(403);
    },
  );

  it("a revoked token's stream ends within 5 s and sends nothing written after", async () => {
    const r = await api.post('/v1/tokens', root, { scope: { allowedActions: ['folders:r'] } });
    expect(r.status, r.text).toBe(201);
    const s = await openChanges(api, r.body.token, { query: 'entities=folders' });
    expect(s.status).toBe(200);
    expect((await api.del(`/v1/tokens/${r.body.id}`, root)).status).toBe(204);
    const ended = await Promise.race([
      s.ended.then(() => true),
      new Promise<boolean>((res) => setTimeout(() => res(false), 8_000)),
    ]);
    const later = await api.post('/v1/folders', root, { name: uniq('after-revoke') });
    await new Promise((res) => setTimeout(res, 500));
    s.close();
    expect(ended).toBe(true);
    expect(s.events.some((e) => e.data.entityId === later.body.id)).toBe(false);
  }, 20_000);

  it("a token of another tenant never sees this tenant's changes", async () => {
    const other = await api.newAccount();
    const s = await openChanges(api, other.tenants.live.rootKey);
    const type = await schema();
    await record(type, { title: 'private' });
    const mark = await api.post('/v1/folders', other.tenants.live.rootKey, { name: uniq('theirs') });
    await s.waitUntil((e) => e.data.entityId === mark.body.id);
    s.close();
    expect(s.events.map((e) => e.data.entityId)).toEqual([mark.body.id]);
  });
});

describe('record.indexed', () => {
  it('arrives once the record is found by search', async () => {
    const type = await schema();
    const word = `zq${randomUUID().replace(/-/g, '').slice(0, 10)}`;
    const s = await openChanges(api, root, { query: `types=${type}` });
    const rec = await record(type, { title: `about ${word}` }, root, { indexMode: 'TEXT' });
    const e = await s.waitUntil((x) => x.event === 'record.indexed' && x.data.entityId === rec.id, 60_000);
    const found = await api.post('/v1/search', root, { query: word, mode: 'TEXT' });
    s.close();
    expect(found.status, found.text).toBe(200);
    expect(found.body.results.map((r: any) => r.documentId)).toContain(rec.id);
    expect(e.data.entity).toMatchObject({ id: rec.id, indexStatus: 'INDEXED', version: 1 });
    expect(s.events.map((x) => x.event)).toEqual(['record.created', 'record.indexed']);
  });
});

describe('refusals', () => {
  it.each([
    ['entities=bogus', 'entities'],
    ['entities=records,', 'entities'],
    ['types=not%20a%20name', 'types'],
    ['startFrom=abc', 'startFrom'],
    ['startFrom=-1', 'startFrom'],
    ['unknown=1', 'unknown'],
  ])('%s: 400 VALIDATION_ERROR before the stream opens', async (query) => {
    const s = await openChanges(api, root, { query });
    expect(s.status).toBe(400);
    expect(s.body.errorCode).toBe('VALIDATION_ERROR');
  });

  it('an empty Last-Event-ID is no header: the stream starts at startFrom', async () => {
    const type = await schema();
    const before = await headPosition();
    const rec = await record(type, { title: 'after' });
    const s = await openChanges(api, root, { query: `types=${type}&startFrom=${before}`, lastEventId: '' });
    expect(s.status).toBe(200);
    await s.waitUntil((e) => e.data.entityId === rec.id);
    s.close();
  });

  it('a Last-Event-ID that is not a position: 400', async () => {
    const s = await openChanges(api, root, { lastEventId: 'abc' });
    expect(s.status).toBe(400);
    expect(s.body.errorCode).toBe('VALIDATION_ERROR');
  });

  it('a credential that reads no kind of entity: 403 before its query is judged, as on every route', async () => {
    const token = await mint(['search:r']);
    for (const query of ['unknown=1', 'startFrom=abc', 'entities=records']) {
      const s = await openChanges(api, token, { query });
      expect(s.status, query).toBe(403);
      expect(s.body.errorCode).toBe('FORBIDDEN');
    }
  });

  it('without a credential: 401', async () => {
    const r = await api.unchecked.call('GET', '/v1/changes');
    expect(r.status).toBe(401);
  });
});

describe.skipIf(!!inProcessOnly)('per-context limit (CHANGE_STREAMS_PER_CONTEXT=2)', () => {
  let small: TestService;
  beforeAll(async () => {
    small = await startService({ env: { CHANGE_STREAMS_PER_CONTEXT: '2' } });
  }, 120_000);
  afterAll(async () => {
    await small?.stop();
  });

  it(
    'the third open stream of a context is 429 RATE_LIMITED; another context is not affected; closing one ' +
      'makes room',
    async () => {
      const key = small.bootstrap.tenants.live.rootKey;
      const a = await openChanges(small.api, key);
      const b = await openChanges(small.api, key);
      expect([a.status, b.status]).toEqual([200, 200]);
      const c = await openChanges(small.api, key);
      expect(c.status).toBe(429);
      expect(c.body.errorCode).toBe('RATE_LIMITED');
      expect(c.headers.get('retry-after')).toMatch(/^\d+$/);
      // The rate-limit headers stay the account's (its plan's limit per minute), not the streams' limit.
      const counted = await small.api.post('/v1/folders', key, { name: uniq('limit') });
      expect(counted.headers.get('x-ratelimit-limit')).toMatch(/^\d+$/);
      expect(c.headers.get('x-ratelimit-limit')).toBe(counted.headers.get('x-ratelimit-limit'));
      expect(c.headers.get('x-ratelimit-remaining')).toBe('0');
      const otherTenant = await openChanges(small.api, small.bootstrap.tenants.test.rootKey);
      expect(otherTenant.status).toBe(200);
      a.close();
      await a.ended;
      const d = await (async () => {
        for (let i = 0; i < 50; i++) {
          const s = await openChanges(small.api, key);
          if (s.status === 200) return s;
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error('no room after closing a stream');
      })();
      expect(d.status).toBe(200);
      for (const s of [b, d, otherTenant]) s.close();
    },
  );
});

/** Embedded engines only: blank any server-engine variable the test process inherited. */
const EMBEDDED: Record<string, string> = Object.fromEntries(Object.values(SERVER_ENGINES).map((e) => [e.env, '']));

describe.skipIf(!!inProcessOnly)('resume across a restart of the service (same DATA_DIR)', () => {
  const dir = tempDir('svc-changes-restart-');
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    dir.remove();
  });

  it('events after Last-Event-ID, none lost or repeated, from the restarted process', async () => {
    const port = await freePort();
    const first = await spawnService(dir.dir, port, EMBEDDED);
    children.push(first.child);
    const { readFileSync } = await import('node:fs');
    const boot = JSON.parse(readFileSync(`${dir.dir}/bootstrap.json`, 'utf8')) as Bootstrap;
    const key = boot.tenants.live.rootKey;
    const a = first.api;
    const type = uniq('Restart');
    expect(
      (
        await a.post('/v1/schemas', key, {
          typeName: type,
          displayName: 'R',
          allowedSurfaces: ['record'],
          fields: [{ fieldId: 'n', fieldType: 'number' }],
        })
      ).status,
    ).toBe(201);
    const s = await openChanges(a, key, { query: `types=${type}&startFrom=0` });
    const before: string[] = [];
    for (let i = 0; i < 10; i++)
      before.push((await a.post('/v1/records', key, { typeName: type, payload: { n: i }, indexMode: 'NONE' })).body.id);
    const seen = await s.waitFor(4);
    s.close();
    first.child.kill('SIGTERM');
    await waitForExit(first.child);

    const second = await spawnService(dir.dir, port, EMBEDDED);
    children.push(second.child);
    const after: string[] = [];
    for (let i = 0; i < 5; i++)
      after.push(
        (await second.api.post('/v1/records', key, { typeName: type, payload: { n: 100 + i }, indexMode: 'NONE' })).body
          .id,
      );
    const resumed = await openChanges(second.api, key, { query: `types=${type}`, lastEventId: seen[3].id });
    await resumed.waitFor(6 + 5);
    await new Promise((r) => setTimeout(r, 300));
    resumed.close();
    expect(seen.map((e) => e.data.entityId)).toEqual(before.slice(0, 4));
    expect(resumed.events.map((e) => e.data.entityId)).toEqual([...before.slice(4), ...after]);
    second.child.kill('SIGTERM');
    await waitForExit(second.child);
  }, 120_000);
});
