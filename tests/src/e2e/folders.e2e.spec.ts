import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inProcessOnly, startService, type Api, type Bootstrap, type TestService } from '../support/service';

/**
 * Folders (spec "Folder", "Folders (operations by name)"): the lazy protected
 * context root, slugs, create / get / put / patch / delete, emptiness, lists,
 * ownership, version history, and the folderId check of records.
 */
let svc: TestService;
let api: Api;
let boot: Bootstrap;
let root: string; // live root key of the bootstrap account
let other: Bootstrap; // a second account (another tenant)

const FOLDER_KEYS = [
  'createdAt',
  'depth',
  'description',
  'id',
  'isProtected',
  'lastModified',
  'name',
  'parentFolderId',
  'scopes',
  'slug',
  'userId',
  'version',
];
const VERSION_KEYS = [
  'actor',
  'entityId',
  'entityKind',
  'eventType',
  'id',
  'recordedAt',
  'requestId',
  'state',
  'version',
];

type Res = Awaited<ReturnType<Api['call']>>;

beforeAll(async () => {
  svc = await startService();
  api = svc.api;
  boot = svc.bootstrap;
  root = boot.tenants.live.rootKey;
  other = await api.newAccount();
});

afterAll(async () => {
  await svc?.stop();
});

/** A request in a chosen context (root keys select one with x-context-id). */
const call = (method: string, path: string, token: string, body?: unknown, ctx?: string) =>
  api.call(method, path, { token, body, headers: ctx ? { 'x-context-id': ctx } : undefined });

async function newContext(name = `ctx-${randomUUID().slice(0, 8)}`): Promise<string> {
  const r = await api.post('/v1/contexts', root, { name });
  expect(r.status, r.text).toBe(201);
  return r.body.id;
}

async function mint(allowedActions: string[], extra: Record<string, unknown> = {}, by = root): Promise<string> {
  const r = await api.post('/v1/tokens', by, { scope: { allowedActions }, ...extra });
  expect(r.status, r.text).toBe(201);
  return r.body.token;
}

async function create(body: Record<string, unknown>, token = root, ctx?: string) {
  const r = await call('POST', '/v1/folders', token, body, ctx);
  expect(r.status, r.text).toBe(201);
  return r.body;
}

async function rootOf(token = root, ctx?: string) {
  const r = await call('GET', '/v1/folders?limit=100', token, undefined, ctx);
  expect(r.status, r.text).toBe(200);
  const roots = r.body.data.filter((f: any) => f.isProtected);
  expect(roots).toHaveLength(1);
  return roots[0];
}

const get = (id: string, token = root, ctx?: string) => call('GET', `/v1/folders/${id}`, token, undefined, ctx);
const versions = async (id: string, token = root) => {
  const r = await call('GET', `/v1/folders/${id}/versions?limit=100`, token);
  expect(r.status, r.text).toBe(200);
  return r.body.data as any[];
};

/** The folder and its history are exactly as they were before a rejected write. */
async function expectUnchanged(id: string, before: { folder: any; history: any[] }) {
  const now = await get(id);
  expect(now.status).toBe(200);
  expect(now.body).toEqual(before.folder);
  expect(await versions(id)).toEqual(before.history);
}
const snapshot = async (id: string) => ({ folder: (await get(id)).body, history: await versions(id) });

const withoutRequestId = (r: Res) => r.text.replace(JSON.stringify(r.body.requestId), '"<requestId>"');

async function schemaFor(typeName: string, token = root, ctx?: string) {
  const r = await call(
    'POST',
    '/v1/schemas',
    token,
    { typeName, displayName: typeName, allowedSurfaces: ['record'] },
    ctx,
  );
  expect([200, 201], r.text).toContain(r.status);
  return r.body.id as string;
}

describe('the context root folder', () => {
  it('is created by the first folder call of a context (a list): protected, no parent, depth 0', async () => {
    const ctx = await newContext();
    const r = await call('GET', '/v1/folders', root, undefined, ctx);
    expect(r.status, r.text).toBe(200);
    expect(r.body.nextCursor).toBeNull();
    expect(r.body.data).toHaveLength(1);
    const f = r.body.data[0];
    expect(Object.keys(f).sort()).toEqual(FOLDER_KEYS);
    expect(f).toMatchObject({
      isProtected: true,
      parentFolderId: null,
      depth: 0,
      slug: 'root',
      userId: null,
      scopes: [],
      version: 1,
      description: null,
    });
    expect(f.createdAt).toBe(f.lastModified);
    // later calls see the same root, never a second one
    const again = await call('GET', '/v1/folders', root, undefined, ctx);
    expect(again.body.data).toEqual([f]);
    expect((await get(f.id, root, ctx)).body).toEqual(f);
  });

  it(
    'a user-scoped token reads the root and its version history (the root is visible to every credential of ' +
      'its context)',
    async () => {
      const t = await mint(['folders:r'], {
        scope: { allowedActions: ['folders:r'], dataScope: { userId: 'history-user' } },
      });
      const list = await call('GET', '/v1/folders', t);
      const r0 = list.body.data.find((f: any) => f.isProtected);
      expect(r0).toBeDefined();
      expect((await get(r0.id, t)).status).toBe(200);
      const h = await call('GET', `/v1/folders/${r0.id}/versions`, t);
      expect(h.status, h.text).toBe(200);
      expect(h.body.data).toEqual((await call('GET', `/v1/folders/${r0.id}/versions`, root)).body.data);
      // Another user's folder stays out of reach, history included.
      const other = await call('POST', '/v1/folders', root, {
        name: `theirs-${randomUUID().slice(0, 8)}`,
        userId: 'someone-else',
      });
      expect(other.status, other.text).toBe(201);
      expect((await call('GET', `/v1/folders/${other.body.id}/versions`, t)).status).toBe(404);
    },
  );

  it('is created by a first GET by id (the id asked for is then a 404, the root exists)', async () => {
    const ctx = await newContext();
    const r = await call('GET', `/v1/folders/${randomUUID()}`, root, undefined, ctx);
    expect(r.status).toBe(404);
    const list = await call('GET', '/v1/folders', root, undefined, ctx);
    expect(list.body.data.map((f: any) => f.isProtected)).toEqual([true]);
  });

  it('is created by a first create, which lands under it at depth 1', async () => {
    const ctx = await newContext();
    const f = await create({ name: 'First' }, root, ctx);
    const rootFolder = await rootOf(root, ctx);
    expect(f.parentFolderId).toBe(rootFolder.id);
    expect(f.depth).toBe(1);
    expect(f.isProtected).toBe(false);
  });

  it('concurrent first calls of a context agree on one root', async () => {
    const ctx = await newContext();
    const rs = await Promise.all([
      call('GET', '/v1/folders', root, undefined, ctx),
      call('POST', '/v1/folders', root, { name: 'a' }, ctx),
      call('POST', '/v1/folders', root, { name: 'b' }, ctx),
      call('GET', '/v1/folders', root, undefined, ctx),
    ]);
    for (const r of rs) expect([200, 201], r.text).toContain(r.status);
    const list = await call('GET', '/v1/folders', root, undefined, ctx);
    const roots = list.body.data.filter((f: any) => f.isProtected);
    expect(roots).toHaveLength(1);
    expect(list.body.data.filter((f: any) => !f.isProtected).every((f: any) => f.parentFolderId === roots[0].id)).toBe(
      true,
    );
  });

  it('each context has its own root', async () => {
    const a = await rootOf();
    const ctx = await newContext();
    const b = await rootOf(root, ctx);
    expect(a.id).not.toBe(b.id);
    expect((await get(b.id)).status).toBe(404); // the other context's root is not visible from the default context
  });

  it('cannot be changed or deleted (400) and stays as it was', async () => {
    const r0 = await rootOf();
    const before = await snapshot(r0.id);
    for (const [method, body] of [
      ['PUT', { name: 'Renamed' }],
      ['PATCH', { name: 'Renamed' }],
      ['PATCH', { description: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      const r = await call(method, `/v1/folders/${r0.id}`, root, body);
      expect(r.status, `${method} ${r.text}`).toBe(400);
      expect(r.body.errorCode).toBe('VALIDATION_ERROR');
    }
    await expectUnchanged(r0.id, before);
  });

  it('a data-scoped caller sees the root (it belongs to nobody) and may create under it', async () => {
    const t = await mint(['folders:*'], {
      scope: { allowedActions: ['folders:*'], dataScope: { userId: 'scoped-user' } },
    });
    const r0 = await rootOf();
    expect((await get(r0.id, t)).status).toBe(200);
    const f = await create({ name: 'Mine' }, t);
    expect(f.userId).toBe('scoped-user');
    expect(f.parentFolderId).toBe(r0.id);
  });
});

describe('creating folders', () => {
  it('answers 201 with exactly the response fields', async () => {
    const r0 = await rootOf();
    const f = await create({ name: 'Reports', description: 'All reports', scopes: ['org:acme'], userId: 'u-1' });
    expect(Object.keys(f).sort()).toEqual(FOLDER_KEYS);
    expect(f).toMatchObject({
      name: 'Reports',
      description: 'All reports',
      parentFolderId: r0.id,
      depth: 1,
      isProtected: false,
      userId: 'u-1',
      scopes: ['org:acme'],
      version: 1,
    });
    expect(f.slug).toMatch(/^reports(-\d+)?$/);
    expect(new Date(f.createdAt).toISOString()).toBe(f.createdAt);
    expect(f.lastModified).toBe(f.createdAt);
    expect((await get(f.id)).body).toEqual(f);
  });

  it('description is null when omitted; userId null and scopes [] without ownership', async () => {
    const f = await create({ name: 'Plain' });
    expect(f.description).toBeNull();
    expect(f.userId).toBeNull();
    expect(f.scopes).toEqual([]);
  });

  it('derives the slug from the name: lowercase, other characters to one hyphen, trimmed, no accents', async () => {
    const parent = await create({ name: 'slug tests' });
    const cases: Array<[string, string]> = [
      ['Quarterly Reports 2026!', 'quarterly-reports-2026'],
      ['  --Hello,   World__  ', 'hello-world'],
      ['Zürich Café', 'zurich-cafe'],
      ['***', 'folder'],
      ['日本', 'folder-2'], // 'folder' is taken by the line above
    ];
    for (const [name, slug] of cases) expect((await create({ name, parentFolderId: parent.id })).slug, name).toBe(slug);
  });

  it('a derived slug that collides with a sibling gets -2, -3, ...', async () => {
    const parent = await create({ name: 'collisions' });
    const slugs = [];
    for (let i = 0; i < 4; i++) slugs.push((await create({ name: 'Same Name', parentFolderId: parent.id })).slug);
    expect(slugs).toEqual(['same-name', 'same-name-2', 'same-name-3', 'same-name-4']);
    // an explicit slug took 'x-2': deriving 'x' skips it
    const p2 = await create({ name: 'collisions 2' });
    await create({ name: 'other', slug: 'x-2', parentFolderId: p2.id });
    expect((await create({ name: 'x', parentFolderId: p2.id })).slug).toBe('x');
    expect((await create({ name: 'x', parentFolderId: p2.id })).slug).toBe('x-3');
  });

  it('concurrent creates with the same name all get distinct slugs', async () => {
    const parent = await create({ name: 'race' });
    const rs = await Promise.all(
      Array.from({ length: 5 }, () => call('POST', '/v1/folders', root, { name: 'Race', parentFolderId: parent.id })),
    );
    for (const r of rs) expect(r.status, r.text).toBe(201);
    expect(new Set(rs.map((r) => r.body.slug)).size).toBe(5);
  });

  it('an explicit slug a sibling holds is a 409 and creates nothing', async () => {
    const parent = await create({ name: 'explicit' });
    await create({ name: 'A', slug: 'taken', parentFolderId: parent.id });
    const before = await call('GET', `/v1/folders?parentFolderId=${parent.id}`, root);
    const r = await call('POST', '/v1/folders', root, { name: 'B', slug: 'taken', parentFolderId: parent.id });
    expect(r.status, r.text).toBe(409);
    expect(r.body.errorCode).toBe('CONFLICT');
    const after = await call('GET', `/v1/folders?parentFolderId=${parent.id}`, root);
    expect(after.body).toEqual(before.body);
    expect(after.body.data).toHaveLength(1);
  });

  it('slugs are unique among siblings only: the same slug under another parent is fine', async () => {
    const a = await create({ name: 'parent a' });
    const b = await create({ name: 'parent b' });
    expect((await create({ name: 'n', slug: 'shared', parentFolderId: a.id })).slug).toBe('shared');
    expect((await create({ name: 'n', slug: 'shared', parentFolderId: b.id })).slug).toBe('shared');
  });

  it('a deleted folder frees its slug', async () => {
    const parent = await create({ name: 'reuse' });
    const f = await create({ name: 'n', slug: 'again', parentFolderId: parent.id });
    expect((await call('DELETE', `/v1/folders/${f.id}`, root)).status).toBe(204);
    expect((await create({ name: 'n', slug: 'again', parentFolderId: parent.id })).slug).toBe('again');
  });

  it('nests: depth is the parent depth + 1', async () => {
    const a = await create({ name: 'd1' });
    const b = await create({ name: 'd2', parentFolderId: a.id });
    const c = await create({ name: 'd3', parentFolderId: b.id });
    expect([a.depth, b.depth, c.depth]).toEqual([1, 2, 3]);
    expect(c.parentFolderId).toBe(b.id);
  });

  it.each([
    ['no name', {}],
    ['an empty name', { name: '' }],
    ['a blank name', { name: '   ' }],
    ['a name that is not a string', { name: 42 }],
    ['an uppercase slug', { name: 'n', slug: 'Upper' }],
    ['a slug with an underscore', { name: 'n', slug: 'a_b' }],
    ['a slug with a space', { name: 'n', slug: 'a b' }],
    ['an empty slug', { name: 'n', slug: '' }],
    ['a slug over 64 characters', { name: 'n', slug: 'a'.repeat(65) }],
    ['three scopes', { name: 'n', scopes: ['org:a', 'org:b', 'org:c'] }],
    ['a malformed scope', { name: 'n', scopes: ['nocolon'] }],
    ['an unknown field', { name: 'n', colour: 'red' }],
    ['parentFolderId null', { name: 'n', parentFolderId: null }],
  ])('%s is a 400', async (_, body) => {
    const r = await call('POST', '/v1/folders', root, body);
    expect(r.status, r.text).toBe(400);
    expect(r.body.errorCode).toBe('VALIDATION_ERROR');
  });

  it('an unknown parentFolderId is a 404; so is a parent of another context or tenant, same body', async () => {
    const ctx = await newContext();
    const foreignCtx = await create({ name: 'elsewhere' }, root, ctx);
    const foreignTenant = await create({ name: 'other tenant' }, other.tenants.live.rootKey);
    const a = await call('POST', '/v1/folders', root, { name: 'n', parentFolderId: randomUUID() });
    const b = await call('POST', '/v1/folders', root, { name: 'n', parentFolderId: foreignCtx.id });
    const c = await call('POST', '/v1/folders', root, { name: 'n', parentFolderId: foreignTenant.id });
    for (const r of [a, b, c]) expect(r.status, r.text).toBe(404);
    expect(withoutRequestId(b)).toBe(withoutRequestId(a));
    expect(withoutRequestId(c)).toBe(withoutRequestId(a));
  });

  it('a deleted parent is a 404', async () => {
    const p = await create({ name: 'gone parent' });
    expect((await call('DELETE', `/v1/folders/${p.id}`, root)).status).toBe(204);
    expect((await call('POST', '/v1/folders', root, { name: 'n', parentFolderId: p.id })).status).toBe(404);
  });

  it('expectedVersion is ignored on create', async () => {
    expect((await create({ name: 'ev', expectedVersion: 7 })).version).toBe(1);
  });
});

describe('reading folders', () => {
  it('an unknown id, another context and another tenant all read the same 404', async () => {
    const ctx = await newContext();
    const inCtx = await create({ name: 'ctx folder' }, root, ctx);
    const inOther = await create({ name: 'tenant folder' }, other.tenants.live.rootKey);
    const a = await get(randomUUID());
    const b = await get(inCtx.id);
    const c = await get(inOther.id);
    for (const r of [a, b, c]) expect(r.status).toBe(404);
    expect(withoutRequestId(b)).toBe(withoutRequestId(a));
    expect(withoutRequestId(c)).toBe(withoutRequestId(a));
  });

  it('a folder outside the caller data scope is a 404', async () => {
    const f = await create({ name: 'owned', userId: 'owner-1' });
    const t = await mint(['folders:r'], { scope: { allowedActions: ['folders:r'], dataScope: { userId: 'owner-2' } } });
    expect((await get(f.id, t)).status).toBe(404);
    const t1 = await mint(['folders:r'], {
      scope: { allowedActions: ['folders:r'], dataScope: { userId: 'owner-1' } },
    });
    expect((await get(f.id, t1)).status).toBe(200);
  });

  it('needs folders:r (403 without it, never naming the permission)', async () => {
    const t = await mint(['records:r']);
    const r = await call('GET', '/v1/folders', t);
    expect(r.status).toBe(403);
    expect(r.text).not.toContain('folders');
    expect((await get((await rootOf()).id, t)).status).toBe(403);
  });
});

describe('listing folders', () => {
  it('filters by parentFolderId, userId and scope; pages with an encrypted cursor', async () => {
    const ctx = await newContext();
    const p = await create({ name: 'list parent' }, root, ctx);
    const made = [];
    for (let i = 0; i < 5; i++)
      made.push(
        await create(
          {
            name: `child ${i}`,
            parentFolderId: p.id,
            userId: i % 2 ? 'odd' : 'even',
            scopes: i < 2 ? ['org:first'] : [],
          },
          root,
          ctx,
        ),
      );
    const all = await call('GET', `/v1/folders?parentFolderId=${p.id}`, root, undefined, ctx);
    expect(all.body.data.map((f: any) => f.id)).toEqual(made.map((f) => f.id));
    const odd = await call('GET', `/v1/folders?parentFolderId=${p.id}&userId=odd`, root, undefined, ctx);
    expect(odd.body.data.map((f: any) => f.name)).toEqual(['child 1', 'child 3']);
    const scoped = await call('GET', `/v1/folders?scope=org:first`, root, undefined, ctx);
    expect(scoped.body.data.map((f: any) => f.name)).toEqual(['child 0', 'child 1']);
    // pages of 2 through the cursor
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string =
        `/v1/folders?parentFolderId=${p.id}&limit=2` + (cursor ? `&startFrom=${encodeURIComponent(cursor)}` : '');
      const r = await call('GET', q, root, undefined, ctx);
      expect(r.status, r.text).toBe(200);
      seen.push(...r.body.data.map((f: any) => f.id));
      cursor = r.body.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(seen).toEqual(made.map((f) => f.id));
    expect(pages).toBe(3);
  });

  it('lists the root and every folder, oldest first', async () => {
    const ctx = await newContext();
    const a = await create({ name: 'a' }, root, ctx);
    const b = await create({ name: 'b', parentFolderId: a.id }, root, ctx);
    const r = await call('GET', '/v1/folders', root, undefined, ctx);
    expect(r.body.data.map((f: any) => f.id)).toEqual([(await rootOf(root, ctx)).id, a.id, b.id]);
  });

  it('a data-scoped credential lists the root and its own folders only', async () => {
    const ctx = await newContext();
    await create({ name: 'theirs', userId: 'someone-else' }, root, ctx);
    const mine = await create({ name: 'mine', userId: 'me' }, root, ctx);
    const t = await mint(['folders:r'], {
      contextId: ctx,
      scope: { allowedActions: ['folders:r'], dataScope: { userId: 'me' } },
    });
    const r = await call('GET', '/v1/folders', t);
    expect(r.body.data.map((f: any) => f.name)).toEqual(['Root', mine.name]);
  });

  it('limit above 100 or a caller-built startFrom is a 400', async () => {
    expect((await call('GET', '/v1/folders?limit=101', root)).status).toBe(400);
    expect((await call('GET', '/v1/folders?limit=0', root)).status).toBe(400);
    expect((await call('GET', '/v1/folders?startFrom=abc', root)).status).toBe(400);
  });

  it('a cursor is bound to its parameters', async () => {
    const p = await create({ name: 'cursor parent' });
    await create({ name: 'c1', parentFolderId: p.id });
    await create({ name: 'c2', parentFolderId: p.id });
    const r = await call('GET', `/v1/folders?parentFolderId=${p.id}&limit=1`, root);
    expect(r.body.nextCursor).toBeTruthy();
    const bad = await call('GET', `/v1/folders?limit=1&startFrom=${encodeURIComponent(r.body.nextCursor)}`, root);
    expect(bad.status).toBe(400);
  });
});

describe('PUT /v1/folders/:id', () => {
  it('replaces name and description (an omitted description is cleared); slug, parent, depth stay', async () => {
    const f = await create({ name: 'Before', description: 'desc', scopes: ['org:x'] });
    const r = await call('PUT', `/v1/folders/${f.id}`, root, { name: 'After' });
    expect(r.status, r.text).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(FOLDER_KEYS);
    expect(r.body).toMatchObject({
      id: f.id,
      name: 'After',
      description: null,
      slug: f.slug,
      parentFolderId: f.parentFolderId,
      depth: f.depth,
      scopes: ['org:x'],
      version: 2,
      createdAt: f.createdAt,
    });
    expect((await get(f.id)).body).toEqual(r.body);
  });

  it('replaces ownership when given ([] clears scopes)', async () => {
    const f = await create({ name: 'own', userId: 'a', scopes: ['org:x'] });
    const r = await call('PUT', `/v1/folders/${f.id}`, root, { name: 'own', userId: 'b', scopes: [] });
    expect(r.body).toMatchObject({ userId: 'b', scopes: [] });
  });

  it('repeating the current slug and parent is fine; changing either is a 400 that changes nothing', async () => {
    const f = await create({ name: 'fixed' });
    expect(
      (
        await call('PUT', `/v1/folders/${f.id}`, root, {
          name: 'fixed',
          slug: f.slug,
          parentFolderId: f.parentFolderId,
        })
      ).status,
    ).toBe(200);
    const before = await snapshot(f.id);
    const other = await create({ name: 'other parent' });
    for (const body of [
      { name: 'x', slug: 'different' },
      { name: 'x', parentFolderId: other.id },
    ]) {
      const r = await call('PUT', `/v1/folders/${f.id}`, root, body);
      expect(r.status, r.text).toBe(400);
    }
    await expectUnchanged(f.id, before);
  });

  it('without a name is a 400', async () => {
    const f = await create({ name: 'named' });
    expect((await call('PUT', `/v1/folders/${f.id}`, root, { description: 'd' })).status).toBe(400);
  });

  it('a stale expectedVersion is a 409 VERSION_CONFLICT that changes nothing; the current one applies', async () => {
    const f = await create({ name: 'v' });
    await call('PUT', `/v1/folders/${f.id}`, root, { name: 'v2' });
    const before = await snapshot(f.id);
    const r = await call('PUT', `/v1/folders/${f.id}`, root, { name: 'v3', expectedVersion: 1 });
    expect(r.status).toBe(409);
    expect(r.body.errorCode).toBe('VERSION_CONFLICT');
    await expectUnchanged(f.id, before);
    const ok = await call('PUT', `/v1/folders/${f.id}`, root, { name: 'v3', expectedVersion: 2 });
    expect(ok.status).toBe(200);
    expect(ok.body.version).toBe(3);
  });

  it('an unknown folder is a 404', async () => {
    expect((await call('PUT', `/v1/folders/${randomUUID()}`, root, { name: 'x' })).status).toBe(404);
  });
});

describe('PATCH /v1/folders/:id', () => {
  it('changes only the keys it names', async () => {
    const f = await create({ name: 'p', description: 'keep me', userId: 'u', scopes: ['org:a'] });
    const r = await call('PATCH', `/v1/folders/${f.id}`, root, { name: 'p2' });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ name: 'p2', description: 'keep me', userId: 'u', scopes: ['org:a'], version: 2 });
    const r2 = await call('PATCH', `/v1/folders/${f.id}`, root, { description: 'new', scopes: ['org:b', 'client:1'] });
    expect(r2.body).toMatchObject({ name: 'p2', description: 'new', scopes: ['org:b', 'client:1'], version: 3 });
    const r3 = await call('PATCH', `/v1/folders/${f.id}`, root, { userId: 'v', expectedVersion: 3 });
    expect(r3.body).toMatchObject({ userId: 'v', version: 4 });
  });

  it.each([
    ['slug', { slug: 'new-slug' }],
    ['the unchanged slug', { slugs: undefined, slug: '__current__' }],
    ['parentFolderId', { parentFolderId: randomUUID() }],
    ['a top-level null', { name: null }],
    ['a null description', { description: null }],
    ['an unknown key', { colour: 'red' }],
    ['a name that is not a string', { name: 5 }],
    ['a blank name', { name: ' ' }],
    ['three scopes', { scopes: ['org:a', 'org:b', 'org:c'] }],
    ['expectedVersion that is not a number', { expectedVersion: 'one' }],
  ])('%s is a 400 that changes nothing', async (_, body) => {
    const f = await create({ name: 'patch me', description: 'd' });
    const before = await snapshot(f.id);
    const b = Object.fromEntries(
      Object.entries(body)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, v === '__current__' ? f.slug : v]),
    );
    const r = await call('PATCH', `/v1/folders/${f.id}`, root, b);
    expect(r.status, r.text).toBe(400);
    expect(r.body.errorCode).toBe('VALIDATION_ERROR');
    await expectUnchanged(f.id, before);
  });

  it('a stale expectedVersion is a 409 VERSION_CONFLICT that changes nothing', async () => {
    const f = await create({ name: 'pv' });
    const before = await snapshot(f.id);
    const r = await call('PATCH', `/v1/folders/${f.id}`, root, { name: 'x', expectedVersion: 5 });
    expect(r.status).toBe(409);
    expect(r.body.errorCode).toBe('VERSION_CONFLICT');
    await expectUnchanged(f.id, before);
  });

  it('an unknown folder, or one outside the data scope, is a 404', async () => {
    expect((await call('PATCH', `/v1/folders/${randomUUID()}`, root, { name: 'x' })).status).toBe(404);
    const f = await create({ name: 'private', userId: 'p-owner' });
    const t = await mint(['folders:*'], {
      scope: { allowedActions: ['folders:*'], dataScope: { userId: 'intruder' } },
    });
    const before = await snapshot(f.id);
    expect((await call('PATCH', `/v1/folders/${f.id}`, t, { name: 'x' })).status).toBe(404);
    expect((await call('PUT', `/v1/folders/${f.id}`, t, { name: 'x' })).status).toBe(404);
    expect((await call('DELETE', `/v1/folders/${f.id}`, t)).status).toBe(404);
    await expectUnchanged(f.id, before);
  });
});

describe('identity auto-assign and permissions on writes', () => {
  it('a token bound to an identity stamps its userId; naming another is a 403', async () => {
    const t = await mint(['folders:*'], { userId: 'bound-user' });
    const f = await create({ name: 'stamped' }, t);
    expect(f.userId).toBe('bound-user');
    const r = await call('POST', '/v1/folders', t, { name: 'x', userId: 'someone-else' });
    expect(r.status).toBe(403);
    expect((await call('PATCH', `/v1/folders/${f.id}`, t, { userId: 'someone-else' })).status).toBe(403);
  });

  it('a token limited to scopes stamps them when the write names none; other scopes are a 403', async () => {
    const t = await mint(['folders:*'], {
      scope: { allowedActions: ['folders:*'], dataScope: { scopes: ['org:acme'] } },
    });
    const f = await create({ name: 'scoped' }, t);
    expect(f.scopes).toEqual(['org:acme']);
    expect((await call('POST', '/v1/folders', t, { name: 'x', scopes: ['org:other'] })).status).toBe(403);
  });

  it('each write needs its permission: folders:c, folders:u, folders:d', async () => {
    const f = await create({ name: 'perm' });
    const reader = await mint(['folders:r']);
    expect((await call('POST', '/v1/folders', reader, { name: 'x' })).status).toBe(403);
    expect((await call('PUT', `/v1/folders/${f.id}`, reader, { name: 'x' })).status).toBe(403);
    expect((await call('PATCH', `/v1/folders/${f.id}`, reader, { name: 'x' })).status).toBe(403);
    expect((await call('DELETE', `/v1/folders/${f.id}`, reader)).status).toBe(403);
    const creator = await mint(['folders:c']);
    expect((await call('POST', '/v1/folders', creator, { name: 'x' })).status).toBe(201);
    const updater = await mint(['folders:u']);
    expect((await call('PATCH', `/v1/folders/${f.id}`, updater, { name: 'y' })).status).toBe(200);
    const deleter = await mint(['folders:d']);
    expect((await call('DELETE', `/v1/folders/${f.id}`, deleter)).status).toBe(204);
  });
});

describe('DELETE /v1/folders/:id', () => {
  it('deletes an empty folder: then 404, and a second delete is a 404', async () => {
    const f = await create({ name: 'bye' });
    expect((await call('DELETE', `/v1/folders/${f.id}`, root)).status).toBe(204);
    expect((await get(f.id)).status).toBe(404);
    expect((await call('DELETE', `/v1/folders/${f.id}`, root)).status).toBe(404);
    const list = await call('GET', `/v1/folders?parentFolderId=${f.parentFolderId}&limit=100`, root);
    expect(list.body.data.map((x: any) => x.id)).not.toContain(f.id);
  });

  it('a folder with a sub-folder is a 400 that changes nothing; empty again, it deletes', async () => {
    const f = await create({ name: 'has child' });
    const child = await create({ name: 'child', parentFolderId: f.id });
    const before = await snapshot(f.id);
    const r = await call('DELETE', `/v1/folders/${f.id}`, root);
    expect(r.status, r.text).toBe(400);
    expect(r.body.errorCode).toBe('VALIDATION_ERROR');
    await expectUnchanged(f.id, before);
    expect((await call('DELETE', `/v1/folders/${child.id}`, root)).status).toBe(204);
    expect((await call('DELETE', `/v1/folders/${f.id}`, root)).status).toBe(204);
  });

  it('a folder holding a record is a 400; after the record moves out, it deletes', async () => {
    await schemaFor('folder_note');
    const f = await create({ name: 'has record' });
    const dest = await create({ name: 'destination' });
    const rec = await call('POST', '/v1/records', root, { typeName: 'folder_note', payload: { a: 1 }, folderId: f.id });
    expect(rec.status, rec.text).toBe(201);
    const before = await snapshot(f.id);
    expect((await call('DELETE', `/v1/folders/${f.id}`, root)).status).toBe(400);
    await expectUnchanged(f.id, before);
    expect((await call('PATCH', `/v1/records/${rec.body.id}`, root, { folderId: dest.id })).status).toBe(200);
    expect((await call('DELETE', `/v1/folders/${f.id}`, root)).status).toBe(204);
  });

  it('counts items the caller cannot read: a scoped caller still gets 400', async () => {
    await schemaFor('folder_secret');
    const t = await mint(['folders:*'], { scope: { allowedActions: ['folders:*'], dataScope: { userId: 'viewer' } } });
    const f = await create({ name: 'shared box' }, t);
    // a sub-folder and a record owned by someone else, invisible to the caller
    const hiddenChild = await create({ name: 'hidden', parentFolderId: f.id, userId: 'stranger' });
    expect((await get(hiddenChild.id, t)).status).toBe(404);
    const r1 = await call('DELETE', `/v1/folders/${f.id}`, t);
    expect(r1.status).toBe(400);
    expect((await call('DELETE', `/v1/folders/${hiddenChild.id}`, root)).status).toBe(204);
    const rec = await call('POST', '/v1/records', root, {
      typeName: 'folder_secret',
      payload: {},
      folderId: f.id,
      userId: 'stranger',
    });
    expect(rec.status, rec.text).toBe(201);
    expect((await call('DELETE', `/v1/folders/${f.id}`, t)).status).toBe(400);
    expect((await call('DELETE', `/v1/records/${rec.body.id}`, root)).status).toBe(204);
    expect((await call('DELETE', `/v1/folders/${f.id}`, t)).status).toBe(204);
  });

  it('a stale ?expectedVersion is a 409 that changes nothing; the current one deletes', async () => {
    const f = await create({ name: 'dv' });
    const before = await snapshot(f.id);
    const r = await call('DELETE', `/v1/folders/${f.id}?expectedVersion=3`, root);
    expect(r.status).toBe(409);
    expect(r.body.errorCode).toBe('VERSION_CONFLICT');
    await expectUnchanged(f.id, before);
    expect((await call('DELETE', `/v1/folders/${f.id}?expectedVersion=1`, root)).status).toBe(204);
  });

  it('an unknown folder or one of another tenant is a 404', async () => {
    expect((await call('DELETE', `/v1/folders/${randomUUID()}`, root)).status).toBe(404);
    const f = await create({ name: 'foreign' }, other.tenants.live.rootKey);
    expect((await call('DELETE', `/v1/folders/${f.id}`, root)).status).toBe(404);
    expect((await get(f.id, other.tenants.live.rootKey)).status).toBe(200);
  });
});

describe('version history', () => {
  it('one row per change: create, put, patch, delete (state null), oldest first, with a tombstone', async () => {
    const f = await create({ name: 'history', description: 'v1' });
    const v1 = await versions(f.id);
    expect(v1).toHaveLength(1);
    expect(Object.keys(v1[0]).sort()).toEqual(VERSION_KEYS);
    expect(v1[0]).toMatchObject({
      entityId: f.id,
      entityKind: 'folder',
      version: 1,
      eventType: 'FolderCreated',
      state: f,
    });
    expect(v1[0].actor.keyId).toBeTruthy();

    const put = await call('PUT', `/v1/folders/${f.id}`, root, { name: 'history 2', description: 'v2' });
    const patch = await call('PATCH', `/v1/folders/${f.id}`, root, { description: 'v3' });
    const v3 = await versions(f.id);
    expect(v3.map((r) => [r.version, r.eventType])).toEqual([
      [1, 'FolderCreated'],
      [2, 'FolderUpdated'],
      [3, 'FolderUpdated'],
    ]);
    expect(v3[1].state).toEqual(put.body);
    expect(v3[2].state).toEqual(patch.body);
    expect(v3[2].requestId).toBe(patch.headers.get('x-request-id'));

    expect((await call('DELETE', `/v1/folders/${f.id}`, root)).status).toBe(204);
    const v4 = await versions(f.id);
    expect(v4.map((r) => [r.version, r.eventType])).toEqual([
      [1, 'FolderCreated'],
      [2, 'FolderUpdated'],
      [3, 'FolderUpdated'],
      [4, 'FolderDeleted'],
    ]);
    expect(v4[3].state).toBeNull();
    const t = await call('GET', `/v1/folders/${f.id}/tombstone`, root);
    expect(t.status, t.text).toBe(200);
    expect(t.body).toMatchObject({ id: f.id, entityKind: 'folder', lastVersion: 3 });
  });

  it('pages with limit and the plain id of the last row', async () => {
    const f = await create({ name: 'paged' });
    for (let i = 0; i < 3; i++) await call('PATCH', `/v1/folders/${f.id}`, root, { name: `paged ${i}` });
    const p1 = await call('GET', `/v1/folders/${f.id}/versions?limit=3`, root);
    expect(p1.body.data.map((r: any) => r.version)).toEqual([1, 2, 3]);
    expect(p1.body.nextCursor).toBe(p1.body.data[2].id);
    const p2 = await call('GET', `/v1/folders/${f.id}/versions?limit=3&startFrom=${p1.body.nextCursor}`, root);
    expect(p2.body.data.map((r: any) => r.version)).toEqual([4]);
    expect(p2.body.nextCursor).toBeNull();
  });

  it('rejected writes add no rows', async () => {
    const f = await create({ name: 'steady' });
    await create({ name: 'kid', parentFolderId: f.id });
    await call('PATCH', `/v1/folders/${f.id}`, root, { slug: 'x' });
    await call('PUT', `/v1/folders/${f.id}`, root, { name: 'x', expectedVersion: 9 });
    await call('DELETE', `/v1/folders/${f.id}`, root);
    expect((await versions(f.id)).map((r) => r.version)).toEqual([1]);
  });

  it('the root has its creation row; another context or tenant reads 404', async () => {
    const r0 = await rootOf();
    const v = await versions(r0.id);
    expect(v[0]).toMatchObject({ version: 1, eventType: 'FolderCreated', state: r0 });
    expect((await call('GET', `/v1/folders/${r0.id}/versions`, other.tenants.live.rootKey)).status).toBe(404);
  });
});

describe('records in folders', () => {
  it('a record may name a folder of its tenant and context; anything else is a 404 and creates nothing', async () => {
    await schemaFor('foldered');
    const f = await create({ name: 'records here' });
    const ok = await call('POST', '/v1/records', root, { typeName: 'foldered', payload: {}, folderId: f.id });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body.folderId).toBe(f.id);

    const ctx = await newContext();
    const elsewhere = await create({ name: 'ctx' }, root, ctx);
    const foreign = await create({ name: 'tenant' }, other.tenants.live.rootKey);
    const gone = await create({ name: 'deleted' });
    await call('DELETE', `/v1/folders/${gone.id}`, root);
    const before = await call('GET', '/v1/records?type=foldered&limit=100', root);
    for (const folderId of [randomUUID(), elsewhere.id, foreign.id, gone.id]) {
      const r = await call('POST', '/v1/records', root, { typeName: 'foldered', payload: {}, folderId });
      expect(r.status, r.text).toBe(404);
    }
    expect((await call('GET', '/v1/records?type=foldered&limit=100', root)).body).toEqual(before.body);
  });

  it('moving a record needs the destination folder to exist (404 otherwise; the record is unchanged)', async () => {
    await schemaFor('movable');
    const a = await create({ name: 'from' });
    const b = await create({ name: 'to' });
    const rec = await call('POST', '/v1/records', root, { typeName: 'movable', payload: { n: 1 }, folderId: a.id });
    const bad = await call('PATCH', `/v1/records/${rec.body.id}`, root, { folderId: randomUUID() });
    expect(bad.status).toBe(404);
    const badPut = await call('PUT', `/v1/records/${rec.body.id}`, root, { payload: { n: 2 }, folderId: randomUUID() });
    expect(badPut.status).toBe(404);
    const now = await call('GET', `/v1/records/${rec.body.id}`, root);
    expect(now.body).toMatchObject({ folderId: a.id, version: 1, payload: { n: 1 } });
    const put = await call('PUT', `/v1/records/${rec.body.id}`, root, { payload: { n: 2 }, folderId: b.id });
    expect(put.status, put.text).toBe(200);
    expect(put.body.folderId).toBe(b.id);
    // the unchanged folder needs no check
    expect(
      (await call('PATCH', `/v1/records/${rec.body.id}`, root, { folderId: b.id, payload: { n: 3 } })).status,
    ).toBe(200);
  });

  it('a record may sit in the context root', async () => {
    await schemaFor('rooted');
    const r0 = await rootOf();
    const rec = await call('POST', '/v1/records', root, { typeName: 'rooted', payload: {}, folderId: r0.id });
    expect(rec.status, rec.text).toBe(201);
  });
});

describe('context teardown', () => {
  it.skipIf(!!inProcessOnly)('deleting a context removes its folders from the read models', async () => {
    const ctx = await newContext();
    await create({ name: 'doomed' }, root, ctx);
    const count = async () =>
      Number(
        (
          await svc.service.sql.query<{ n: string }>('SELECT count(*) AS n FROM rm_folders WHERE context_id = $1', [
            ctx,
          ])
        ).rows[0].n,
      );
    expect(await count()).toBe(2); // the root and the folder
    const del = await api.del(`/v1/contexts/${ctx}`, root);
    expect(del.status, del.text).toBe(204);
    expect(await count()).toBe(0);
  });
});
