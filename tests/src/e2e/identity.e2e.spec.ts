import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registeredNamespaces } from '@svc/command-api';
import { LocalIssuer } from '../support/oidc-issuer';
import { OPERATOR_TOKEN, startService, type Api, type Bootstrap, type TestService } from '../support/service';

/**
 * Identity (decisions §1 and §4): namespaces per tenant (org and client built
 * in), users and entities per tenant and context, with their uniqueness,
 * schema binding, data scopes and errors.
 */
let svc: TestService;
let api: Api;
let boot: Bootstrap;
let root: string;
let other: Bootstrap;
/** The tenant's identity provider: the access cases run with its tokens as with minted ones. */
let idp: LocalIssuer;
let idpKey: string;
const JWT_AUDIENCE = 'identity-e2e';

const NS_KEYS = ['createdAt', 'description', 'name'];
const ENTITY_KEYS = ['id', 'key', 'namespace', 'payload', 'version'];

type Res = Awaited<ReturnType<Api['call']>>;

beforeAll(async () => {
  svc = await startService();
  api = svc.api;
  boot = svc.bootstrap;
  root = boot.tenants.live.rootKey;
  other = await api.newAccount();
  idp = await LocalIssuer.start();
  idpKey = await idp.addKey('ES256');
  const r = await api.call('PUT', `/operator/tenants/${boot.tenants.live.tenantId}/jwt-issuers`, {
    token: OPERATOR_TOKEN,
    body: { issuers: [{ issuer: idp.url, audience: JWT_AUDIENCE, jwksUrl: idp.jwksUrl }] },
  });
  expect(r.status, r.text).toBe(200);
});

afterAll(async () => {
  await idp?.close();
  await svc?.stop();
});

const call = (method: string, path: string, token: string, body?: unknown, ctx?: string) =>
  api.call(method, path, { token, body, headers: ctx ? { 'x-context-id': ctx } : undefined });
const withoutRequestId = (r: Res) => r.text.replace(JSON.stringify(r.body.requestId), '"<requestId>"');
const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;

async function newContext(): Promise<string> {
  const r = await api.post('/v1/contexts', root, { name: uniq('ctx') });
  expect(r.status, r.text).toBe(201);
  return r.body.id;
}

async function mint(allowedActions: string[], extra: Extra = {}, by = root): Promise<string> {
  const { dataScope, ...rest } = extra;
  const r = await api.post('/v1/tokens', by, {
    scope: { allowedActions, ...(dataScope ? { dataScope } : {}) },
    ...rest,
  });
  expect(r.status, r.text).toBe(201);
  return r.body.token;
}

type Extra = { dataScope?: { userId?: string; scopes?: string[] }; userId?: string; contextId?: string };

/**
 * What `mint` asks for, as a token of the tenant's identity provider (default claims: sub, svc_scopes, svc_context,
 * svc_permissions).
 */
async function signIn(allowedActions: string[], extra: Extra = {}): Promise<string> {
  return idp.sign(idpKey, {
    aud: JWT_AUDIENCE,
    sub: extra.userId ?? extra.dataScope?.userId,
    svc_scopes: extra.dataScope?.scopes,
    svc_context: extra.contextId,
    svc_permissions: allowedActions,
  });
}

/** The two ways an app hands a narrowed credential to its users: the access cases run with each. */
const CREDENTIALS: Array<[string, (allowedActions: string[], extra?: Extra) => Promise<string>]> = [
  ['minted token', (a, e) => mint(a, e)],
  ['JWT', signIn],
];

async function ok(r: Res, status = 201) {
  expect(r.status, r.text).toBe(status);
  return r.body;
}

async function schema(body: Record<string, unknown>, token = root, ctx?: string) {
  return (await ok(await call('POST', '/v1/schemas', token, { displayName: 'identity schema', ...body }, ctx)))
    .id as string;
}

async function allNamespaces(token = root): Promise<any[]> {
  const r = await call('GET', '/v1/namespaces?limit=100', token);
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

describe('namespaces', () => {
  it('org and client are built in and always listed first', async () => {
    const fresh = await api.newAccount();
    const r = await call('GET', '/v1/namespaces', fresh.tenants.live.rootKey);
    expect(r.status, r.text).toBe(200);
    expect(r.body.nextCursor).toBeNull();
    expect(r.body.data.map((n: any) => n.name)).toEqual(['org', 'client']);
    for (const n of r.body.data) {
      expect(Object.keys(n).sort()).toEqual(NS_KEYS);
      expect(new Date(n.createdAt).toISOString()).toBe(n.createdAt);
    }
    for (const name of ['org', 'client']) {
      const g = await call('GET', `/v1/namespaces/${name}`, fresh.tenants.live.rootKey);
      expect(g.status).toBe(200);
      expect(g.body.name).toBe(name);
    }
  });

  it('POST registers a namespace: 201 {name, description?, createdAt}, listed after the built-ins', async () => {
    const name = uniq('team');
    const r = await call('POST', '/v1/namespaces', root, { name, description: 'Teams' });
    const body = await ok(r);
    expect(Object.keys(body).sort()).toEqual(NS_KEYS);
    expect(body).toMatchObject({ name, description: 'Teams' });
    const bare = await ok(await call('POST', '/v1/namespaces', root, { name: uniq('bare') }));
    expect(Object.keys(bare).sort()).toEqual(['createdAt', 'name']);
    const names = (await allNamespaces()).map((n) => n.name);
    expect(names.slice(0, 2)).toEqual(['org', 'client']);
    expect(names.indexOf(name)).toBeLessThan(names.indexOf(bare.name));
    expect((await call('GET', `/v1/namespaces/${name}`, root)).body).toEqual(body);
  });

  it.each([
    ['org', { name: 'org' }],
    ['client', { name: 'client' }],
    ['a name with a space', { name: 'my team' }],
    ['a name with a colon', { name: 'a:b' }],
    ['an empty name', { name: '' }],
    ['a 65-character name', { name: 'n'.repeat(65) }],
    ['no name', {}],
    ['an unknown field', { name: 'fine', colour: 'red' }],
  ])('%s is a 400', async (_, body) => {
    const r = await call('POST', '/v1/namespaces', root, body);
    expect(r.status, r.text).toBe(400);
    expect(r.body.errorCode).toBe('VALIDATION_ERROR');
  });

  it('registering an existing name is a 409 that changes nothing', async () => {
    const name = uniq('dup');
    const first = await ok(await call('POST', '/v1/namespaces', root, { name, description: 'first' }));
    const r = await call('POST', '/v1/namespaces', root, { name, description: 'second' });
    expect(r.status).toBe(409);
    expect(r.body.errorCode).toBe('CONFLICT');
    expect((await call('GET', `/v1/namespaces/${name}`, root)).body).toEqual(first);
  });

  it('namespaces are the tenant’s: seen from every context, not from another tenant', async () => {
    const name = uniq('tenantwide');
    await ok(await call('POST', '/v1/namespaces', root, { name }));
    const ctx = await newContext();
    expect((await call('GET', `/v1/namespaces/${name}`, root, undefined, ctx)).status).toBe(200);
    const elsewhere = await call('GET', `/v1/namespaces/${name}`, other.tenants.live.rootKey);
    const missing = await call('GET', `/v1/namespaces/${uniq('nothing')}`, root);
    expect(elsewhere.status).toBe(404);
    expect(withoutRequestId(elsewhere)).toBe(withoutRequestId(missing));
    // the test tenant of the same account is another tenant too
    expect((await call('GET', `/v1/namespaces/${name}`, boot.tenants.test.rootKey)).status).toBe(404);
  });

  it('pages: built-ins, then registered names, through one cursor', async () => {
    const fresh = await api.newAccount();
    const key = fresh.tenants.live.rootKey;
    for (const n of ['alpha', 'beta', 'gamma']) await ok(await call('POST', '/v1/namespaces', key, { name: n }));
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r = await call(
        'GET',
        `/v1/namespaces?limit=2${cursor ? `&startFrom=${encodeURIComponent(cursor)}` : ''}`,
        key,
      );
      expect(r.status, r.text).toBe(200);
      seen.push(...r.body.data.map((n: any) => n.name));
      cursor = r.body.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(seen).toEqual(['org', 'client', 'alpha', 'beta', 'gamma']);
    expect(pages).toBe(3);
    expect((await call('GET', '/v1/namespaces?startFrom=forged', key)).status).toBe(400);
    expect((await call('GET', '/v1/namespaces?limit=101', key)).status).toBe(400);
  });

  it('DELETE removes a registered namespace; built-ins are a 400; unknown is a 404', async () => {
    const name = uniq('gone');
    await ok(await call('POST', '/v1/namespaces', root, { name }));
    expect((await call('DELETE', `/v1/namespaces/${name}`, root)).status).toBe(204);
    expect((await call('GET', `/v1/namespaces/${name}`, root)).status).toBe(404);
    expect((await allNamespaces()).map((n) => n.name)).not.toContain(name);
    expect((await call('DELETE', `/v1/namespaces/${name}`, root)).status).toBe(404);
    for (const b of ['org', 'client']) {
      const r = await call('DELETE', `/v1/namespaces/${b}`, root);
      expect(r.status).toBe(400);
    }
    // the name can be registered again
    expect((await call('POST', '/v1/namespaces', root, { name })).status).toBe(201);
  });

  it('a namespace with entities (in any context of the tenant) cannot be deleted (400, nothing changes)', async () => {
    const name = uniq('busy');
    const ns = await ok(await call('POST', '/v1/namespaces', root, { name }));
    const ctx = await newContext();
    const e = await ok(await call('POST', '/v1/entities', root, { namespace: name, key: 'k1' }, ctx));
    const r = await call('DELETE', `/v1/namespaces/${name}`, root);
    expect(r.status, r.text).toBe(400);
    expect((await call('GET', `/v1/namespaces/${name}`, root)).body).toEqual(ns);
    expect((await call('DELETE', `/v1/entities/${e.id}`, root, undefined, ctx)).status).toBe(204);
    expect((await call('DELETE', `/v1/namespaces/${name}`, root)).status).toBe(204);
  });

  it('needs namespaces:c, namespaces:r, namespaces:d', async () => {
    const t = await mint(['records:r']);
    expect((await call('GET', '/v1/namespaces', t)).status).toBe(403);
    expect((await call('GET', '/v1/namespaces/org', t)).status).toBe(403);
    expect((await call('POST', '/v1/namespaces', t, { name: uniq('x') })).status).toBe(403);
    const name = uniq('perm');
    const creator = await mint(['namespaces:c']);
    expect((await call('POST', '/v1/namespaces', creator, { name })).status).toBe(201);
    expect((await call('DELETE', `/v1/namespaces/${name}`, creator)).status).toBe(403);
    const reader = await mint(['namespaces:r']);
    expect((await call('GET', `/v1/namespaces/${name}`, reader)).status).toBe(200);
    const deleter = await mint(['namespaces:d']);
    expect((await call('DELETE', `/v1/namespaces/${name}`, deleter)).status).toBe(204);
  });

  it('registeredNamespaces reads the tenant registry from the event store', async () => {
    const fresh = await api.newAccount();
    const key = fresh.tenants.live.rootKey;
    expect(await registeredNamespaces(svc.service.store, fresh.tenants.live.tenantId)).toEqual(['org', 'client']);
    await ok(await call('POST', '/v1/namespaces', key, { name: 'region' }));
    await ok(await call('POST', '/v1/namespaces', key, { name: 'team' }));
    await call('DELETE', '/v1/namespaces/region', key);
    expect(await registeredNamespaces(svc.service.store, fresh.tenants.live.tenantId)).toEqual([
      'org',
      'client',
      'team',
    ]);
    expect(await registeredNamespaces(svc.service.store, fresh.tenants.test.tenantId)).toEqual(['org', 'client']);
  });

  it('scopes name org, client or a registered namespace: another is a 400 on each write, stores nothing', async () => {
    const fresh = await api.newAccount();
    const key = fresh.tenants.live.rootKey;
    const typeName = uniq('scoped').toLowerCase();
    await schema(
      { typeName, allowedSurfaces: ['record', 'document'], fields: [{ fieldId: 'n', fieldType: 'number' }] },
      key,
    );
    const rec = await ok(await call('POST', '/v1/records', key, { typeName, payload: { n: 1 }, scopes: ['org:a'] }));
    const doc = await ok(
      await call('POST', '/v1/documents', key, { title: 'd', text: 'hello', indexMode: 'NONE', scopes: ['client:b'] }),
    );
    const folder = await ok(await call('POST', '/v1/folders', key, { name: 'F', scopes: ['org:a'] }));
    const refused = async (method: string, path: string, body: Record<string, unknown>) => {
      const r = await call(method, path, key, body);
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(400);
      expect(r.body.errorCode).toBe('VALIDATION_ERROR');
      expect(r.body.message).toContain("'team'");
    };
    await refused('POST', '/v1/records', { typeName, payload: { n: 2 }, scopes: ['team:x'] });
    await refused('POST', '/v1/records', { typeName, payload: { n: 2 }, scopes: ['org:a', 'team:x'] });
    await refused('PATCH', `/v1/records/${rec.id}`, { scopes: ['team:x'] });
    await refused('PUT', `/v1/records/${rec.id}`, { payload: { n: 3 }, scopes: ['team:x'] });
    await refused('POST', '/v1/documents', { title: 'd2', text: 'hello', indexMode: 'NONE', scopes: ['team:x'] });
    await refused('PATCH', `/v1/documents/${doc.id}`, { scopes: ['team:x'] });
    await refused('POST', '/v1/folders', { name: 'G', scopes: ['team:x'] });
    await refused('PATCH', `/v1/folders/${folder.id}`, { scopes: ['team:x'] });
    await refused('POST', '/v1/users', { email: `${uniq('u')}@example.com`, scopes: ['team:x'] });
    const batch = await call('POST', '/v1/records/batch', key, {
      records: [{ typeName, payload: { n: 4 }, scopes: ['team:x'] }],
    });
    expect(batch.status, batch.text).toBe(200);
    expect(JSON.stringify(batch.body)).toContain('VALIDATION_ERROR');
    // Nothing stored or changed.
    expect(
      (await call('GET', `/v1/records?type=${typeName}`, key)).body.data.map((r: any) => [r.id, r.scopes, r.payload.n]),
    ).toEqual([[rec.id, ['org:a'], 1]]);
    expect((await call('GET', `/v1/documents/${doc.id}`, key)).body.scopes).toEqual(['client:b']);
    expect((await call('GET', `/v1/folders/${folder.id}`, key)).body.scopes).toEqual(['org:a']);
    expect((await call('GET', '/v1/users?limit=100', key)).body.data).toEqual([]);
    // Registered, the same writes go through.
    await ok(await call('POST', '/v1/namespaces', key, { name: 'team' }));
    expect((await ok(await call('PATCH', `/v1/records/${rec.id}`, key, { scopes: ['team:x'] }), 200)).scopes).toEqual([
      'team:x',
    ]);
    await ok(await call('POST', '/v1/folders', key, { name: 'G', scopes: ['team:x'] }));
    await ok(await call('POST', '/v1/users', key, { email: `${uniq('u')}@example.com`, scopes: ['team:x'] }));
  });
});

describe('users', () => {
  const email = () => `${randomUUID().slice(0, 8)}@example.com`;

  it('POST creates a user: 201 with id, the fields given, payload and scopes', async () => {
    const bare = await ok(await call('POST', '/v1/users', root, {}));
    expect(Object.keys(bare).sort()).toEqual(['id', 'payload', 'scopes']);
    expect(bare).toMatchObject({ payload: {}, scopes: [] });
    const e = email();
    const full = await ok(
      await call('POST', '/v1/users', root, {
        email: e,
        displayName: 'Ada',
        payload: { level: 3 },
        scopes: ['org:acme'],
      }),
    );
    expect(full).toEqual({ id: full.id, email: e, displayName: 'Ada', payload: { level: 3 }, scopes: ['org:acme'] });
    expect((await call('GET', `/v1/users/${full.id}`, root)).body).toEqual(full);
  });

  it.each([
    ['a malformed email', { email: 'not-an-email' }],
    ['an empty displayName', { displayName: '' }],
    ['three scopes', { scopes: ['org:a', 'org:b', 'org:c'] }],
    ['a payload that is not an object', { payload: [1] }],
    ['a reserved payload key', { payload: { userId: 'x' } }],
    ['an unknown field', { name: 'x' }],
    ['an id', { id: randomUUID() }],
  ])('%s is a 400', async (_, body) => {
    const r = await call('POST', '/v1/users', root, body);
    expect(r.status, r.text).toBe(400);
    expect(r.body.errorCode).toBe('VALIDATION_ERROR');
  });

  it('an email is unique per tenant, without case: another context is a 409 too; another tenant is not', async () => {
    const e = email();
    await ok(await call('POST', '/v1/users', root, { email: e }));
    const before = await call('GET', `/v1/users?email=${encodeURIComponent(e)}`, root);
    expect(before.body.data).toHaveLength(1);
    const dup = await call('POST', '/v1/users', root, { email: e.toUpperCase() });
    expect(dup.status).toBe(409);
    expect(dup.body.errorCode).toBe('CONFLICT');
    const ctx = await newContext();
    expect((await call('POST', '/v1/users', root, { email: e }, ctx)).status).toBe(409);
    expect((await call('GET', `/v1/users?email=${encodeURIComponent(e)}`, root)).body).toEqual(before.body);
    expect((await call('POST', '/v1/users', other.tenants.live.rootKey, { email: e })).status).toBe(201);
  });

  it('concurrent creates with one email: exactly one wins', async () => {
    const e = email();
    const rs = await Promise.all(Array.from({ length: 4 }, () => call('POST', '/v1/users', root, { email: e })));
    expect(rs.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
  });

  it('deleting a user or changing its email frees the email; taking a held one is a 409, changes nothing', async () => {
    const e1 = email();
    const e2 = email();
    const a = await ok(await call('POST', '/v1/users', root, { email: e1 }));
    const b = await ok(await call('POST', '/v1/users', root, { email: e2 }));
    const r = await call('PATCH', `/v1/users/${b.id}`, root, { email: e1 });
    expect(r.status).toBe(409);
    expect((await call('GET', `/v1/users/${b.id}`, root)).body).toEqual(b);
    const moved = await call('PATCH', `/v1/users/${a.id}`, root, { email: email() });
    expect(moved.status).toBe(200);
    expect((await call('PATCH', `/v1/users/${b.id}`, root, { email: e1 })).status).toBe(200);
    // b's old email is free now
    expect((await call('POST', '/v1/users', root, { email: e2 })).status).toBe(201);
    expect((await call('DELETE', `/v1/users/${a.id}`, root)).status).toBe(204);
    expect((await call('POST', '/v1/users', root, { email: moved.body.email })).status).toBe(201);
  });

  it('PUT replaces email, displayName and payload (omitted: cleared) and keeps scopes when omitted', async () => {
    const u = await ok(
      await call('POST', '/v1/users', root, {
        email: email(),
        displayName: 'Old',
        payload: { a: 1, b: 2 },
        scopes: ['org:x'],
      }),
    );
    const r = await call('PUT', `/v1/users/${u.id}`, root, { payload: { c: 3 } });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ id: u.id, payload: { c: 3 }, scopes: ['org:x'] });
    const r2 = await call('PUT', `/v1/users/${u.id}`, root, { displayName: 'New', scopes: [] });
    expect(r2.body).toEqual({ id: u.id, displayName: 'New', payload: {}, scopes: [] });
    expect((await call('GET', `/v1/users/${u.id}`, root)).body).toEqual(r2.body);
  });

  it('PATCH merges (RFC 7386): null inside payload deletes a key', async () => {
    const u = await ok(
      await call('POST', '/v1/users', root, { displayName: 'P', payload: { a: 1, b: { c: 2, d: 3 } } }),
    );
    const r = await call('PATCH', `/v1/users/${u.id}`, root, { payload: { a: null, b: { d: 4 } } });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ id: u.id, displayName: 'P', payload: { b: { c: 2, d: 4 } }, scopes: [] });
  });

  it.each([
    ['schemaId', { schemaId: randomUUID() }],
    ['id', { id: randomUUID() }],
    ['a top-level null', { displayName: null }],
    ['a null email', { email: null }],
    ['an unknown key', { nickname: 'x' }],
    ['expectedVersion (users have no version)', { expectedVersion: 1 }],
    ['a malformed email', { email: 'nope' }],
    ['a payload that is not an object', { payload: 'x' }],
  ])('PATCH with %s is a 400 that changes nothing', async (_, body) => {
    const u = await ok(await call('POST', '/v1/users', root, { displayName: 'Steady', payload: { k: 1 } }));
    const r = await call('PATCH', `/v1/users/${u.id}`, root, body);
    expect(r.status, r.text).toBe(400);
    expect((await call('GET', `/v1/users/${u.id}`, root)).body).toEqual(u);
  });

  it('DELETE removes a user: then 404, again 404', async () => {
    const u = await ok(await call('POST', '/v1/users', root, {}));
    expect((await call('DELETE', `/v1/users/${u.id}`, root)).status).toBe(204);
    expect((await call('GET', `/v1/users/${u.id}`, root)).status).toBe(404);
    expect((await call('DELETE', `/v1/users/${u.id}`, root)).status).toBe(404);
    expect((await call('PATCH', `/v1/users/${u.id}`, root, { displayName: 'x' })).status).toBe(404);
  });

  it('an unknown id, another context and another tenant read the same 404', async () => {
    const ctx = await newContext();
    const inCtx = await ok(await call('POST', '/v1/users', root, {}, ctx));
    const inOther = await ok(await call('POST', '/v1/users', other.tenants.live.rootKey, {}));
    const a = await call('GET', `/v1/users/${randomUUID()}`, root);
    const b = await call('GET', `/v1/users/${inCtx.id}`, root);
    const c = await call('GET', `/v1/users/${inOther.id}`, root);
    for (const r of [a, b, c]) expect(r.status).toBe(404);
    expect(withoutRequestId(b)).toBe(withoutRequestId(a));
    expect(withoutRequestId(c)).toBe(withoutRequestId(a));
    expect((await call('PUT', `/v1/users/${inOther.id}`, root, {})).status).toBe(404);
    expect((await call('DELETE', `/v1/users/${inCtx.id}`, root)).status).toBe(404);
  });

  it('lists oldest first with email and scope filters and a cursor', async () => {
    const ctx = await newContext();
    const made = [];
    for (let i = 0; i < 5; i++)
      made.push(
        await ok(
          await call(
            'POST',
            '/v1/users',
            root,
            { email: `list${i}-${randomUUID().slice(0, 6)}@x.io`, scopes: i < 2 ? ['client:7'] : [] },
            ctx,
          ),
        ),
      );
    const all = await call('GET', '/v1/users?limit=100', root, undefined, ctx);
    expect(all.body.data.map((u: any) => u.id)).toEqual(made.map((u) => u.id));
    const byEmail = await call(
      'GET',
      `/v1/users?email=${encodeURIComponent(made[3].email.toUpperCase())}`,
      root,
      undefined,
      ctx,
    );
    expect(byEmail.body.data.map((u: any) => u.id)).toEqual([made[3].id]);
    const byScope = await call('GET', '/v1/users?scope=client:7', root, undefined, ctx);
    expect(byScope.body.data.map((u: any) => u.id)).toEqual([made[0].id, made[1].id]);
    const p1 = await call('GET', '/v1/users?limit=3', root, undefined, ctx);
    const p2 = await call(
      'GET',
      `/v1/users?limit=3&startFrom=${encodeURIComponent(p1.body.nextCursor)}`,
      root,
      undefined,
      ctx,
    );
    expect([...p1.body.data, ...p2.body.data].map((u: any) => u.id)).toEqual(made.map((u) => u.id));
    expect(p2.body.nextCursor).toBeNull();
    expect((await call('GET', '/v1/users?limit=101', root)).status).toBe(400);
  });

  describe('bound to a user schema', () => {
    let userSchemaId: string;
    let recordSchemaId: string;
    beforeAll(async () => {
      userSchemaId = await schema({
        typeName: uniq('person'),
        allowedSurfaces: ['user'],
        fields: [
          { fieldId: 'age', fieldType: 'number', required: true },
          { fieldId: 'ssn', fieldType: 'string', sensitive: true },
        ],
      });
      recordSchemaId = await schema({ typeName: uniq('notuser'), allowedSurfaces: ['record'] });
    });

    it('the root key creates one; the payload is validated; sensitive values read back masked', async () => {
      const u = await ok(
        await call('POST', '/v1/users', root, { schemaId: userSchemaId, payload: { age: 30, ssn: '123-45-6789' } }),
      );
      expect(u).toMatchObject({ schemaId: userSchemaId, payload: { age: 30, ssn: '********' } });
      expect((await call('GET', `/v1/users/${u.id}`, root)).body.payload.ssn).toBe('********');
      for (const payload of [{}, { age: 'thirty' }]) {
        const r = await call('POST', '/v1/users', root, { schemaId: userSchemaId, payload });
        expect(r.status, r.text).toBe(400);
      }
    });

    it('a scoped credential cannot create or write such a user (403, nothing changes)', async () => {
      const t = await mint(['users:*']);
      const r = await call('POST', '/v1/users', t, { schemaId: userSchemaId, payload: { age: 1 } });
      expect(r.status).toBe(403);
      const u = await ok(
        await call('POST', '/v1/users', root, { schemaId: userSchemaId, payload: { age: 40 }, displayName: 'Bound' }),
      );
      const before = (await call('GET', `/v1/users/${u.id}`, root)).body;
      expect((await call('PATCH', `/v1/users/${u.id}`, t, { displayName: 'x' })).status).toBe(403);
      expect((await call('PUT', `/v1/users/${u.id}`, t, { payload: { age: 41 } })).status).toBe(403);
      expect((await call('DELETE', `/v1/users/${u.id}`, t)).status).toBe(403);
      expect((await call('GET', `/v1/users/${u.id}`, t)).body).toEqual(before);
      // the root key may
      expect((await call('PATCH', `/v1/users/${u.id}`, root, { payload: { age: 41 } })).body.payload.age).toBe(41);
    });

    it('a change that breaks the schema is a 400 that changes nothing', async () => {
      const u = await ok(await call('POST', '/v1/users', root, { schemaId: userSchemaId, payload: { age: 5 } }));
      expect((await call('PATCH', `/v1/users/${u.id}`, root, { payload: { age: null } })).status).toBe(400);
      expect(
        (await call('PUT', `/v1/users/${u.id}`, root, { schemaId: userSchemaId, payload: { age: 'x' } })).status,
      ).toBe(400);
      expect(
        (await call('PUT', `/v1/users/${u.id}`, root, { schemaId: recordSchemaId, payload: { age: 6 } })).status,
      ).toBe(400);
      expect((await call('GET', `/v1/users/${u.id}`, root)).body).toEqual(u);
    });

    it('a schema without the user surface, or an unknown schema, is a 400', async () => {
      expect((await call('POST', '/v1/users', root, { schemaId: recordSchemaId })).status).toBe(400);
      expect((await call('POST', '/v1/users', root, { schemaId: randomUUID() })).status).toBe(400);
    });
  });

  describe.each(CREDENTIALS)('credentials bound to an identity or limited to scopes: %s', (_, mint) => {
    it('a token bound to user U reads and writes U only, and cannot create users', async () => {
      const u = await ok(await call('POST', '/v1/users', root, { displayName: 'Self' }));
      const someone = await ok(await call('POST', '/v1/users', root, { displayName: 'Someone' }));
      const t = await mint(['users:*'], { userId: u.id });
      expect((await call('GET', `/v1/users/${u.id}`, t)).status).toBe(200);
      expect((await call('GET', `/v1/users/${someone.id}`, t)).status).toBe(404);
      expect((await call('PATCH', `/v1/users/${someone.id}`, t, { displayName: 'x' })).status).toBe(404);
      expect((await call('PATCH', `/v1/users/${u.id}`, t, { displayName: 'Me' })).body.displayName).toBe('Me');
      expect((await call('GET', '/v1/users?limit=100', t)).body.data.map((x: any) => x.id)).toEqual([u.id]);
      expect((await call('POST', '/v1/users', t, {})).status).toBe(403);
    });

    it('a token limited to scopes sees users sharing one, stamps its scopes, and cannot name others', async () => {
      const scope = `org:${randomUUID().slice(0, 6)}`;
      const t = await mint(['users:*'], { dataScope: { scopes: [scope] } });
      const mine = await ok(await call('POST', '/v1/users', t, {}));
      expect(mine.scopes).toEqual([scope]);
      const theirs = await ok(await call('POST', '/v1/users', root, { scopes: ['org:elsewhere'] }));
      expect((await call('GET', `/v1/users/${theirs.id}`, t)).status).toBe(404);
      expect((await call('GET', `/v1/users/${mine.id}`, t)).status).toBe(200);
      expect((await call('POST', '/v1/users', t, { scopes: ['org:elsewhere'] })).status).toBe(403);
      expect((await call('PATCH', `/v1/users/${mine.id}`, t, { scopes: ['org:elsewhere'] })).status).toBe(403);
    });

    it('each operation needs its permission', async () => {
      const u = await ok(await call('POST', '/v1/users', root, {}));
      const none = await mint(['records:r']);
      expect((await call('POST', '/v1/users', none, {})).status).toBe(403);
      expect((await call('GET', `/v1/users/${u.id}`, none)).status).toBe(403);
      expect((await call('GET', '/v1/users', none)).status).toBe(403);
      expect((await call('PUT', `/v1/users/${u.id}`, none, {})).status).toBe(403);
      expect((await call('PATCH', `/v1/users/${u.id}`, none, {})).status).toBe(403);
      expect((await call('DELETE', `/v1/users/${u.id}`, none)).status).toBe(403);
      expect((await call('GET', `/v1/users/${u.id}`, await mint(['users:r']))).status).toBe(200);
      expect((await call('PATCH', `/v1/users/${u.id}`, await mint(['users:u']), { displayName: 'u' })).status).toBe(
        200,
      );
      expect((await call('POST', '/v1/users', await mint(['users:c']), {})).status).toBe(201);
      expect((await call('DELETE', `/v1/users/${u.id}`, await mint(['users:d']))).status).toBe(204);
    });
  });
});

describe('entities', () => {
  it('POST creates an entity: 201 {id, namespace, key, payload, version}', async () => {
    const key = uniq('acme');
    const e = await ok(await call('POST', '/v1/entities', root, { namespace: 'org', key }));
    expect(Object.keys(e).sort()).toEqual(ENTITY_KEYS);
    expect(e).toMatchObject({ namespace: 'org', key, payload: {}, version: 1 });
    expect((await call('GET', `/v1/entities/${e.id}`, root)).body).toEqual(e);
    const c = await ok(
      await call('POST', '/v1/entities', root, { namespace: 'client', key: uniq('c'), payload: { tier: 'gold' } }),
    );
    expect(c.payload).toEqual({ tier: 'gold' });
  });

  it('the namespace must be org, client or registered (400 otherwise, nothing created)', async () => {
    const name = uniq('region');
    const r = await call('POST', '/v1/entities', root, { namespace: name, key: 'eu' });
    expect(r.status, r.text).toBe(400);
    expect((await call('GET', `/v1/entities?namespace=${name}`, root)).body.data).toEqual([]);
    await ok(await call('POST', '/v1/namespaces', root, { name }));
    expect((await call('POST', '/v1/entities', root, { namespace: name, key: 'eu' })).status).toBe(201);
  });

  it.each([
    ['no namespace', { key: 'k' }],
    ['no key', { namespace: 'org' }],
    ['a namespace with a space', { namespace: 'o rg', key: 'k' }],
    ['a key with whitespace', { namespace: 'org', key: 'a b' }],
    ['an empty key', { namespace: 'org', key: '' }],
    ['a key over 256 characters', { namespace: 'org', key: 'k'.repeat(257) }],
    ['a payload that is not an object', { namespace: 'org', key: 'k', payload: 3 }],
    ['a reserved payload key', { namespace: 'org', key: 'k', payload: { scopes: [] } }],
    ['an unknown field', { namespace: 'org', key: 'k', name: 'x' }],
  ])('%s is a 400', async (_, body) => {
    const r = await call('POST', '/v1/entities', root, body);
    expect(r.status, r.text).toBe(400);
    expect(r.body.errorCode).toBe('VALIDATION_ERROR');
  });

  it(
    'a key is unique per namespace in a context: 409 and nothing created; other namespaces, contexts and ' +
      'tenants are free',
    async () => {
      const key = uniq('uniq');
      const first = await ok(await call('POST', '/v1/entities', root, { namespace: 'org', key }));
      const dup = await call('POST', '/v1/entities', root, { namespace: 'org', key, payload: { x: 1 } });
      expect(dup.status).toBe(409);
      expect(dup.body.errorCode).toBe('CONFLICT');
      expect((await call('GET', `/v1/entities?namespace=org&key=${key}`, root)).body.data).toEqual([first]);
      expect((await call('POST', '/v1/entities', root, { namespace: 'client', key })).status).toBe(201);
      const ctx = await newContext();
      expect((await call('POST', '/v1/entities', root, { namespace: 'org', key }, ctx)).status).toBe(201);
      expect((await call('POST', '/v1/entities', other.tenants.live.rootKey, { namespace: 'org', key })).status).toBe(
        201,
      );
    },
  );

  it('concurrent creates of one key: exactly one wins', async () => {
    const key = uniq('race');
    const rs = await Promise.all(
      Array.from({ length: 4 }, () => call('POST', '/v1/entities', root, { namespace: 'org', key })),
    );
    expect(rs.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
  });

  it('PUT replaces the payload; version counts; namespace, key, schemaId are fixed (400, no change)', async () => {
    const e = await ok(
      await call('POST', '/v1/entities', root, { namespace: 'org', key: uniq('put'), payload: { a: 1 } }),
    );
    const r = await call('PUT', `/v1/entities/${e.id}`, root, { payload: { b: 2 } });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ ...e, payload: { b: 2 }, version: 2 });
    expect(
      (await call('PUT', `/v1/entities/${e.id}`, root, { namespace: 'org', key: e.key, payload: { c: 3 } })).body
        .version,
    ).toBe(3);
    const before = (await call('GET', `/v1/entities/${e.id}`, root)).body;
    for (const body of [
      { namespace: 'client', payload: {} },
      { key: 'other', payload: {} },
      { schemaId: randomUUID(), payload: {} },
    ]) {
      const bad = await call('PUT', `/v1/entities/${e.id}`, root, body);
      expect(bad.status, bad.text).toBe(400);
    }
    expect((await call('GET', `/v1/entities/${e.id}`, root)).body).toEqual(before);
    const empty = await call('PUT', `/v1/entities/${e.id}`, root, {});
    expect(empty.body).toMatchObject({ payload: {}, version: 4 });
  });

  it('PATCH merges the payload; expectedVersion guards it', async () => {
    const e = await ok(
      await call('POST', '/v1/entities', root, { namespace: 'org', key: uniq('patch'), payload: { a: 1, b: 2 } }),
    );
    const r = await call('PATCH', `/v1/entities/${e.id}`, root, { payload: { a: null, c: 3 }, expectedVersion: 1 });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ ...e, payload: { b: 2, c: 3 }, version: 2 });
  });

  it.each([
    ['namespace', { namespace: 'client' }],
    ['key', { key: 'k2' }],
    ['schemaId', { schemaId: randomUUID() }],
    ['id', { id: randomUUID() }],
    ['a top-level null', { payload: null }],
    ['an unknown key', { colour: 'red' }],
    ['a payload that is not an object', { payload: [1] }],
  ])('PATCH with %s is a 400 that changes nothing', async (_, body) => {
    const e = await ok(
      await call('POST', '/v1/entities', root, { namespace: 'org', key: uniq('immut'), payload: { a: 1 } }),
    );
    const r = await call('PATCH', `/v1/entities/${e.id}`, root, body);
    expect(r.status, r.text).toBe(400);
    expect((await call('GET', `/v1/entities/${e.id}`, root)).body).toEqual(e);
  });

  it('a stale expectedVersion is a 409 VERSION_CONFLICT on PUT, PATCH and DELETE, changing nothing', async () => {
    const e = await ok(
      await call('POST', '/v1/entities', root, { namespace: 'org', key: uniq('ev'), payload: { a: 1 } }),
    );
    for (const [method, path, body] of [
      ['PUT', `/v1/entities/${e.id}`, { payload: {}, expectedVersion: 2 }],
      ['PATCH', `/v1/entities/${e.id}`, { payload: { a: 2 }, expectedVersion: 0 }],
      ['DELETE', `/v1/entities/${e.id}?expectedVersion=5`, undefined],
    ] as const) {
      const r = await call(method, path, root, body);
      expect(r.status, `${method} ${r.text}`).toBe(409);
      expect(r.body.errorCode).toBe('VERSION_CONFLICT');
    }
    expect((await call('GET', `/v1/entities/${e.id}`, root)).body).toEqual(e);
    expect((await call('DELETE', `/v1/entities/${e.id}?expectedVersion=1`, root)).status).toBe(204);
  });

  it('DELETE removes an entity and frees its key', async () => {
    const key = uniq('del');
    const e = await ok(await call('POST', '/v1/entities', root, { namespace: 'org', key }));
    expect((await call('DELETE', `/v1/entities/${e.id}`, root)).status).toBe(204);
    expect((await call('GET', `/v1/entities/${e.id}`, root)).status).toBe(404);
    expect((await call('DELETE', `/v1/entities/${e.id}`, root)).status).toBe(404);
    const again = await ok(await call('POST', '/v1/entities', root, { namespace: 'org', key }));
    expect(again.id).not.toBe(e.id);
  });

  it('an unknown id, another context and another tenant read the same 404', async () => {
    const ctx = await newContext();
    const inCtx = await ok(await call('POST', '/v1/entities', root, { namespace: 'org', key: 'x' }, ctx));
    const inOther = await ok(
      await call('POST', '/v1/entities', other.tenants.live.rootKey, { namespace: 'org', key: uniq('x') }),
    );
    const a = await call('GET', `/v1/entities/${randomUUID()}`, root);
    const b = await call('GET', `/v1/entities/${inCtx.id}`, root);
    const c = await call('GET', `/v1/entities/${inOther.id}`, root);
    for (const r of [a, b, c]) expect(r.status).toBe(404);
    expect(withoutRequestId(b)).toBe(withoutRequestId(a));
    expect(withoutRequestId(c)).toBe(withoutRequestId(a));
    expect((await call('PATCH', `/v1/entities/${inOther.id}`, root, { payload: {} })).status).toBe(404);
    expect((await call('DELETE', `/v1/entities/${inCtx.id}`, root)).status).toBe(404);
  });

  it('lists oldest first with namespace and key filters and a cursor', async () => {
    const ctx = await newContext();
    const made = [];
    for (let i = 0; i < 4; i++)
      made.push(
        await ok(await call('POST', '/v1/entities', root, { namespace: i % 2 ? 'client' : 'org', key: `k${i}` }, ctx)),
      );
    expect((await call('GET', '/v1/entities', root, undefined, ctx)).body.data.map((e: any) => e.id)).toEqual(
      made.map((e) => e.id),
    );
    expect(
      (await call('GET', '/v1/entities?namespace=client', root, undefined, ctx)).body.data.map((e: any) => e.key),
    ).toEqual(['k1', 'k3']);
    expect(
      (await call('GET', '/v1/entities?namespace=org&key=k2', root, undefined, ctx)).body.data.map((e: any) => e.id),
    ).toEqual([made[2].id]);
    const p1 = await call('GET', '/v1/entities?limit=3', root, undefined, ctx);
    const p2 = await call(
      'GET',
      `/v1/entities?limit=3&startFrom=${encodeURIComponent(p1.body.nextCursor)}`,
      root,
      undefined,
      ctx,
    );
    expect([...p1.body.data, ...p2.body.data].map((e: any) => e.id)).toEqual(made.map((e) => e.id));
    expect(p2.body.nextCursor).toBeNull();
    expect(
      (
        await call(
          'GET',
          `/v1/entities?limit=3&namespace=org&startFrom=${encodeURIComponent(p1.body.nextCursor)}`,
          root,
          undefined,
          ctx,
        )
      ).status,
    ).toBe(400);
  });

  it(
    'an entity schema is written by an ordinary scoped credential in its own context; the payload is ' + 'validated',
    async () => {
      const ctx = await newContext();
      const t = await mint(['schemas:*', 'entities:*'], { contextId: ctx });
      const s = await schema(
        {
          typeName: uniq('company'),
          allowedSurfaces: ['entity'],
          fields: [{ fieldId: 'vat', fieldType: 'string', required: true, validation: { minLength: 4 } }],
        },
        t,
      );
      const e = await ok(
        await call('POST', '/v1/entities', t, {
          namespace: 'org',
          key: 'acme',
          schemaId: s,
          payload: { vat: 'DE1234' },
        }),
      );
      expect(e).toMatchObject({ schemaId: s, payload: { vat: 'DE1234' } });
      expect(Object.keys(e).sort()).toEqual([...ENTITY_KEYS, 'schemaId'].sort());
      expect(
        (await call('POST', '/v1/entities', t, { namespace: 'org', key: 'b', schemaId: s, payload: {} })).status,
      ).toBe(400);
      expect(
        (await call('POST', '/v1/entities', t, { namespace: 'org', key: 'c', schemaId: s, payload: { vat: 'x' } }))
          .status,
      ).toBe(400);
      expect((await call('PATCH', `/v1/entities/${e.id}`, t, { payload: { vat: null } })).status).toBe(400);
      expect((await call('PUT', `/v1/entities/${e.id}`, t, { payload: { vat: 'FR99999' } })).body).toMatchObject({
        payload: { vat: 'FR99999' },
        version: 2,
      });
      // a schema of the default context is not one of this context
      const elsewhere = await schema({ typeName: uniq('company'), allowedSurfaces: ['entity'] });
      expect((await call('POST', '/v1/entities', t, { namespace: 'org', key: 'd', schemaId: elsewhere })).status).toBe(
        400,
      );
    },
  );

  it('a schema without the entity surface is a 400', async () => {
    const s = await schema({ typeName: uniq('rec_only'), allowedSurfaces: ['record'] });
    expect((await call('POST', '/v1/entities', root, { namespace: 'org', key: uniq('k'), schemaId: s })).status).toBe(
      400,
    );
  });

  describe.each(CREDENTIALS)('%s', (_, mint) => {
    it('a token limited to scopes sees and creates only the entities its scopes name', async () => {
      const ctx = await newContext();
      const inScope = await ok(await call('POST', '/v1/entities', root, { namespace: 'org', key: 'acme' }, ctx));
      const outOfScope = await ok(await call('POST', '/v1/entities', root, { namespace: 'org', key: 'globex' }, ctx));
      const t = await mint(['entities:*'], { contextId: ctx, dataScope: { scopes: ['org:acme', 'client:9'] } });
      expect((await call('GET', `/v1/entities/${inScope.id}`, t)).status).toBe(200);
      expect((await call('GET', `/v1/entities/${outOfScope.id}`, t)).status).toBe(404);
      expect((await call('PATCH', `/v1/entities/${outOfScope.id}`, t, { payload: { x: 1 } })).status).toBe(404);
      expect((await call('GET', '/v1/entities', t)).body.data.map((e: any) => e.id)).toEqual([inScope.id]);
      expect((await call('POST', '/v1/entities', t, { namespace: 'client', key: '9' })).status).toBe(201);
      expect((await call('POST', '/v1/entities', t, { namespace: 'client', key: '10' })).status).toBe(403);
      // a bound user does not hide entities (they belong to no user)
      const u = await mint(['entities:r'], { contextId: ctx, userId: 'someone' });
      expect((await call('GET', `/v1/entities/${outOfScope.id}`, u)).status).toBe(200);
    });

    it('each operation needs its permission', async () => {
      const e = await ok(await call('POST', '/v1/entities', root, { namespace: 'org', key: uniq('perm') }));
      const none = await mint(['users:*']);
      expect((await call('POST', '/v1/entities', none, { namespace: 'org', key: uniq('p') })).status).toBe(403);
      expect((await call('GET', `/v1/entities/${e.id}`, none)).status).toBe(403);
      expect((await call('GET', '/v1/entities', none)).status).toBe(403);
      expect((await call('PUT', `/v1/entities/${e.id}`, none, {})).status).toBe(403);
      expect((await call('PATCH', `/v1/entities/${e.id}`, none, {})).status).toBe(403);
      expect((await call('DELETE', `/v1/entities/${e.id}`, none)).status).toBe(403);
      expect((await call('GET', `/v1/entities/${e.id}`, await mint(['entities:r']))).status).toBe(200);
      expect(
        (await call('PATCH', `/v1/entities/${e.id}`, await mint(['entities:u']), { payload: { a: 1 } })).status,
      ).toBe(200);
      expect(
        (await call('POST', '/v1/entities', await mint(['entities:c']), { namespace: 'org', key: uniq('p') })).status,
      ).toBe(201);
      expect((await call('DELETE', `/v1/entities/${e.id}`, await mint(['entities:d']))).status).toBe(204);
    });
  });
});

describe('context teardown', () => {
  it('deleting a context removes its users and entities from the read models; namespaces stay', async () => {
    const ctx = await newContext();
    const name = uniq('keep');
    await ok(await call('POST', '/v1/namespaces', root, { name }, ctx));
    await ok(await call('POST', '/v1/users', root, {}, ctx));
    await ok(await call('POST', '/v1/entities', root, { namespace: name, key: 'k' }, ctx));
    const count = async (table: string) =>
      Number(
        (await svc.service.sql.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE context_id = $1`, [ctx]))
          .rows[0].n,
      );
    expect([await count('rm_users'), await count('rm_entities')]).toEqual([1, 1]);
    expect((await api.del(`/v1/contexts/${ctx}`, root)).status).toBe(204);
    expect([await count('rm_users'), await count('rm_entities')]).toEqual([0, 0]);
    expect((await call('GET', `/v1/namespaces/${name}`, root)).status).toBe(200);
    // with its entities gone, the namespace can be deleted
    expect((await call('DELETE', `/v1/namespaces/${name}`, root)).status).toBe(204);
  });
});
