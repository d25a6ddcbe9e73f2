import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildService, loadConfig, type Service } from '@svc/deploy';
import { freshPostgresSchema, serverUrl, tempDir } from '../support/engines';
import { Api, OPERATOR_TOKEN, startService, type Bootstrap, type TestService } from '../support/service';

/**
 * Hardening, credential findings (docs/identity.md "Credentials"):
 * 1. a minted token's reach is the intersection of its parent's reach and what
 *    it asks for; asking for anything the parent cannot reach is refused (403;
 *    a context outside the parent's reach is the usual identical 404), and an
 *    empty `scopes` list never widens;
 * 2. minted tokens and scoped keys can be revoked and root keys rotated,
 *    effective at the next request, in this process and in another process on
 *    the same database; children die with their parents.
 * Black-box over HTTP, real embedded engines (PostgreSQL for the two-process part).
 */
let svc: TestService;
let api: Api;
let acct: Bootstrap;
let root: string;
let typeName: string;

type Res = Awaited<ReturnType<Api['call']>>;
type Reach = { user: string | null; scopes: string[] | null };
type Owned = { id: string; userId: string | null; scopes: string[] };

const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;
const withoutRequestId = (r: Res) => r.text.replace(JSON.stringify(r.body?.requestId), '"<requestId>"');
const enterprise = (a: Api) =>
  a.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 });

/** Records of every ownership shape the table below needs. */
const OWNERSHIP: Array<{ userId?: string; scopes?: string[] }> = [
  { userId: 'alice', scopes: ['org:a'] },
  { userId: 'alice', scopes: ['org:b'] },
  { userId: 'alice' },
  { userId: 'mallory', scopes: ['org:a'] },
  { userId: 'mallory', scopes: ['org:b'] },
  { userId: 'mallory', scopes: ['org:a', 'org:b'] },
  { userId: 'mallory' },
  { scopes: ['org:a'] },
  { scopes: ['org:b'] },
  {},
];
const records: Owned[] = [];

/** What a credential of this reach sees: its user's records, and of those the ones sharing one of its scopes. */
const visible = (reach: Reach) =>
  records
    .filter(
      (r) =>
        (reach.user === null || r.userId === reach.user) &&
        (reach.scopes === null || r.scopes.some((s) => reach.scopes!.includes(s))),
    )
    .map((r) => r.id)
    .sort();

async function listIds(token: string, ctx?: string): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  do {
    const r = await api.get(
      `/v1/records?type=${typeName}&limit=100${after ? `&startFrom=${encodeURIComponent(after)}` : ''}`,
      token,
      ctx ? { 'x-context-id': ctx } : undefined,
    );
    expect(r.status, r.text).toBe(200);
    ids.push(...r.body.data.map((x: { id: string }) => x.id));
    after = r.body.nextCursor;
  } while (after);
  return ids.sort();
}

async function mint(
  by: string,
  body: Record<string, unknown>,
): Promise<{ id: string; token: string; contextId: string; expiresAt: string }> {
  const r = await api.post('/v1/tokens', by, body);
  expect(r.status, r.text).toBe(201);
  return r.body;
}

async function scopedKey(developerToken: string, body: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const r = await api.post('/developer/keys', developerToken, body);
  expect(r.status, r.text).toBe(201);
  return r.body;
}

beforeAll(async () => {
  svc = await startService();
  api = svc.api;
  acct = await enterprise(api);
  root = acct.tenants.live.rootKey;
  typeName = uniq('Owned');
  const s = await api.post('/v1/schemas', root, {
    typeName,
    displayName: 'credential hardening',
    allowedSurfaces: ['record'],
  });
  expect(s.status, s.text).toBe(201);
  for (const o of OWNERSHIP) {
    const r = await api.post('/v1/records', root, { typeName, payload: {}, ...o });
    expect(r.status, r.text).toBe(201);
    records.push({ id: r.body.id, userId: r.body.userId, scopes: r.body.scopes });
  }
});

afterAll(async () => {
  await svc?.stop();
});

// ---------------------------------------------------------------------------
describe('minting narrows: a child reaches the intersection of its parent and its request', () => {
  const PERMS = ['records:r', 'records:c'];

  /** Parents: how each is made, and the reach it has. */
  const PARENTS: Array<{ name: string; reach: Reach; make: () => Promise<string> }> = [
    { name: 'root key', reach: { user: null, scopes: null }, make: async () => root },
    {
      name: 'unlimited token',
      reach: { user: null, scopes: null },
      make: async () => (await mint(root, { scope: { allowedActions: PERMS } })).token,
    },
    {
      name: 'token bound by userId mallory',
      reach: { user: 'mallory', scopes: null },
      make: async () => (await mint(root, { scope: { allowedActions: PERMS }, userId: 'mallory' })).token,
    },
    {
      name: 'token with dataScope.userId mallory',
      reach: { user: 'mallory', scopes: null },
      make: async () =>
        (await mint(root, { scope: { allowedActions: PERMS, dataScope: { userId: 'mallory' } } })).token,
    },
    {
      name: 'token limited to [org:a]',
      reach: { user: null, scopes: ['org:a'] },
      make: async () =>
        (await mint(root, { scope: { allowedActions: PERMS, dataScope: { scopes: ['org:a'] } } })).token,
    },
    {
      name: 'token limited to [org:a, org:b]',
      reach: { user: null, scopes: ['org:a', 'org:b'] },
      make: async () =>
        (await mint(root, { scope: { allowedActions: PERMS, dataScope: { scopes: ['org:a', 'org:b'] } } })).token,
    },
    {
      name: 'token bound to mallory and limited to [org:a]',
      reach: { user: 'mallory', scopes: ['org:a'] },
      make: async () =>
        (await mint(root, { scope: { allowedActions: PERMS, dataScope: { scopes: ['org:a'] } }, userId: 'mallory' }))
          .token,
    },
    {
      name: 'ssk_ key bound by userId mallory',
      reach: { user: 'mallory', scopes: null },
      make: async () =>
        (
          await scopedKey(acct.developerToken, {
            tenantId: acct.tenants.live.tenantId,
            allowedActions: PERMS,
            userId: 'mallory',
          })
        ).key,
    },
    {
      name: 'ssk_ key limited to [org:a]',
      reach: { user: null, scopes: ['org:a'] },
      make: async () =>
        (
          await scopedKey(acct.developerToken, {
            tenantId: acct.tenants.live.tenantId,
            allowedActions: PERMS,
            dataScope: { scopes: ['org:a'] },
          })
        ).key,
    },
  ];

  /** Child requests: the body's userId and scope.dataScope. */
  const CHILDREN: Array<{ name: string; userId?: string; dataScope?: { userId?: string; scopes?: string[] } }> = [
    { name: 'asks nothing' },
    { name: 'dataScope {}', dataScope: {} },
    { name: 'dataScope.userId alice', dataScope: { userId: 'alice' } },
    { name: 'dataScope.userId mallory', dataScope: { userId: 'mallory' } },
    { name: 'userId alice', userId: 'alice' },
    { name: 'userId mallory', userId: 'mallory' },
    { name: 'scopes []', dataScope: { scopes: [] } },
    { name: 'scopes [org:a]', dataScope: { scopes: ['org:a'] } },
    { name: 'scopes [org:b]', dataScope: { scopes: ['org:b'] } },
    { name: 'scopes [org:a, org:b]', dataScope: { scopes: ['org:a', 'org:b'] } },
    { name: 'userId mallory and scopes []', dataScope: { userId: 'mallory', scopes: [] } },
    { name: 'userId alice and scopes [org:a]', userId: 'alice', dataScope: { scopes: ['org:a'] } },
  ];

  /** The rule: anything outside the parent's reach is refused (403); else the child is the intersection. */
  function expected(parent: Reach, child: (typeof CHILDREN)[number]): Reach | 403 {
    const user = child.userId ?? child.dataScope?.userId;
    const scopes = child.dataScope?.scopes;
    if (parent.user !== null && user !== undefined && user !== parent.user) return 403;
    if (
      parent.scopes !== null &&
      scopes !== undefined &&
      (scopes.length === 0 || !scopes.every((s) => parent.scopes!.includes(s)))
    )
      return 403;
    return { user: user ?? parent.user, scopes: scopes?.length ? scopes : parent.scopes };
  }

  it(
    'every combination of parent reach and child request (userId, scopes): 403 outside the parent, else ' +
      'exactly the intersection',
    async () => {
      const failures: string[] = [];
      for (const parent of PARENTS) {
        const token = await parent.make();
        const own = await listIds(token);
        expect(own, `${parent.name} sees its own reach`).toEqual(visible(parent.reach));
        for (const child of CHILDREN) {
          const body = {
            scope: { allowedActions: ['records:r'], ...(child.dataScope ? { dataScope: child.dataScope } : {}) },
            ...(child.userId ? { userId: child.userId } : {}),
          };
          const r = await api.post('/v1/tokens', token, body);
          const want = expected(parent.reach, child);
          const label = `${parent.name} → child ${child.name}`;
          if (want === 403) {
            if (r.status !== 403) failures.push(`${label}: expected 403, got ${r.status} ${r.text}`);
            continue;
          }
          if (r.status !== 201) {
            failures.push(`${label}: expected 201, got ${r.status} ${r.text}`);
            continue;
          }
          const seen = await listIds(r.body.token);
          if (JSON.stringify(seen) !== JSON.stringify(visible(want)))
            failures.push(`${label}: sees ${seen.length} records, expected ${visible(want).length}`);
          if (!seen.every((id) => own.includes(id))) failures.push(`${label}: sees records its parent cannot`);
        }
      }
      expect(failures).toEqual([]);
    },
  );

  it(
    'the reported attacks: a mallory-bound token cannot mint an alice child, an [org:a] token cannot mint ' +
      'an unlimited child',
    async () => {
      const mallory = await mint(root, { scope: { allowedActions: ['records:r'] }, userId: 'mallory' });
      const aliceRecord = records.find((r) => r.userId === 'alice')!.id;
      const toAlice = await api.post('/v1/tokens', mallory.token, {
        scope: { allowedActions: ['records:r'], dataScope: { userId: 'alice' } },
      });
      expect(toAlice.status, toAlice.text).toBe(403);
      expect((await api.get(`/v1/records/${aliceRecord}`, mallory.token)).status).toBe(404);

      const orgA = await mint(root, { scope: { allowedActions: ['records:r'], dataScope: { scopes: ['org:a'] } } });
      const orgBOnly = records.find((r) => r.scopes.length === 1 && r.scopes[0] === 'org:b')!.id;
      const unlimited = await api.post('/v1/tokens', orgA.token, {
        scope: { allowedActions: ['records:r'], dataScope: { scopes: [] } },
      });
      expect(unlimited.status, unlimited.text).toBe(403);
      expect((await api.get(`/v1/records/${orgBOnly}`, orgA.token)).status).toBe(404);
    },
  );

  it('a narrowed child cannot widen again in the next generation', async () => {
    const parent = await mint(root, {
      scope: { allowedActions: ['records:r', 'records:c'], dataScope: { scopes: ['org:a'] } },
      userId: 'mallory',
    });
    const child = await mint(parent.token, { scope: { allowedActions: ['records:r', 'records:c'] } });
    for (const body of [
      { scope: { allowedActions: ['records:r'], dataScope: { scopes: [] } } },
      { scope: { allowedActions: ['records:r'], dataScope: { scopes: ['org:b'] } } },
      { scope: { allowedActions: ['records:r'], dataScope: { userId: 'alice' } } },
      { scope: { allowedActions: ['records:r'] }, userId: 'alice' },
      { scope: { allowedActions: ['records:d'] } },
    ]) {
      const r = await api.post('/v1/tokens', child.token, body);
      expect(r.status, `${JSON.stringify(body)}: ${r.text}`).toBe(403);
    }
    const grandchild = await mint(child.token, { scope: { allowedActions: ['records:r'] } });
    expect(await listIds(grandchild.token)).toEqual(visible({ user: 'mallory', scopes: ['org:a'] }));
  });

  it('userId and scope.dataScope.userId naming two different users is a 400', async () => {
    const r = await api.post('/v1/tokens', root, {
      scope: { allowedActions: ['records:r'], dataScope: { userId: 'alice' } },
      userId: 'mallory',
    });
    expect(r.status, r.text).toBe(400);
  });

  it.each([
    [['records:r', 'records:c'], ['records:r'], 201],
    [['records:r', 'records:c'], ['records:c', 'records:r'], 201],
    [['records:r', 'records:c'], ['records:d'], 403],
    [['records:r', 'records:c'], ['records:*'], 403],
    [['records:r', 'records:c'], ['*'], 403],
    [['records:r', 'records:c'], ['records:r', 'logs:r'], 403],
    [['records:*'], ['records:d'], 201],
    [['records:*'], ['schemas:r'], 403],
    [['scripts:x'], ['scripts:x:report'], 201],
    [['scripts:x:report'], ['scripts:x'], 403],
    [['scripts:x:report'], ['scripts:x:other'], 403],
  ] as const)('permissions: parent %j minting %j → %i', async (parent, child, status) => {
    const p = await mint(root, { scope: { allowedActions: [...parent] } });
    const r = await api.post('/v1/tokens', p.token, { scope: { allowedActions: [...child] } });
    expect(r.status, r.text).toBe(status);
  });

  it(
    'contexts: a confined parent mints only for its own context (another one is the identical 404); a ' +
      'cross-context parent for any of its tenant',
    async () => {
      const ctx2 = (await api.post('/v1/contexts', root, { name: uniq('ctx2') })).body.id as string;
      const confined = await mint(root, { scope: { allowedActions: ['records:r'] } });
      const confinedKey = await scopedKey(acct.developerToken, {
        tenantId: acct.tenants.live.tenantId,
        allowedActions: ['records:r'],
      });
      const crossKey = await scopedKey(acct.developerToken, {
        tenantId: acct.tenants.live.tenantId,
        allowedActions: ['records:r'],
        crossContext: true,
      });
      const body = (contextId: string) => ({ scope: { allowedActions: ['records:r'] }, contextId });

      for (const parent of [confined.token, confinedKey.key]) {
        const rnd = await api.post('/v1/tokens', parent, body(randomUUID()));
        expect(rnd.status).toBe(404);
        for (const other of [ctx2, acct.tenants.test.contextId]) {
          const r = await api.post('/v1/tokens', parent, body(other));
          expect(r.status, r.text).toBe(404);
          expect(withoutRequestId(r)).toBe(withoutRequestId(rnd));
        }
        expect((await api.post('/v1/tokens', parent, body(acct.tenants.live.contextId))).status).toBe(201);
      }
      for (const parent of [root, crossKey.key]) {
        const child = await mint(parent, body(ctx2));
        expect(child.contextId).toBe(ctx2);
        const list = await api.get('/v1/contexts', child.token);
        expect(list.body.data.map((c: { id: string }) => c.id)).toEqual([ctx2]);
        // The child is confined: it cannot select its parent's other contexts.
        expect(
          (await api.get('/v1/contexts', child.token, { 'x-context-id': acct.tenants.live.contextId })).status,
        ).toBe(404);
        expect((await api.post('/v1/tokens', parent, body(acct.tenants.test.contextId))).status).toBe(404);
      }
    },
  );

  it('a child never outlives its parent: its expiry is capped at the parent’s', async () => {
    const parent = await mint(root, { scope: { allowedActions: ['records:r'] }, expiresInSeconds: 120 });
    const child = await mint(parent.token, { scope: { allowedActions: ['records:r'] }, expiresInSeconds: 3600 });
    expect(Date.parse(child.expiresAt)).toBeLessThanOrEqual(Date.parse(parent.expiresAt));
  });
});

// ---------------------------------------------------------------------------
describe('revoking minted tokens: DELETE /v1/tokens/{id}', () => {
  const works = async (token: string) => (await api.get('/v1/contexts', token)).status;

  it('the root key revokes a token: 204, and the token answers 401 on the very next request; again → 404', async () => {
    const t = await mint(root, { scope: { allowedActions: ['records:r'] } });
    expect(await works(t.token)).toBe(200); // warm the credential cache
    const d = await api.del(`/v1/tokens/${t.id}`, root);
    expect(d.status, d.text).toBe(204);
    expect(d.text).toBe('');
    expect(await works(t.token)).toBe(401);
    expect((await api.get(`/v1/records/${records[0].id}`, t.token)).status).toBe(401);
    expect((await api.del(`/v1/tokens/${t.id}`, root)).status).toBe(404);
  });

  it(
    'a token revokes itself and its own children; a sibling, another tenant and a random id get the ' + 'identical 404',
    async () => {
      const parent = await mint(root, { scope: { allowedActions: ['records:r'] } });
      const child = await mint(parent.token, { scope: { allowedActions: ['records:r'] } });
      const sibling = await mint(root, { scope: { allowedActions: ['records:r'] } });
      const other = await enterprise(api);
      const rnd = await api.del(`/v1/tokens/${randomUUID()}`, root);
      expect(rnd.status).toBe(404);
      for (const by of [sibling.token, other.tenants.live.rootKey, acct.tenants.test.rootKey]) {
        const r = await api.del(`/v1/tokens/${child.id}`, by);
        expect(r.status, r.text).toBe(404);
        expect(withoutRequestId(r)).toBe(withoutRequestId(rnd));
      }
      expect(await works(child.token)).toBe(200);
      // A child may not revoke its parent.
      expect((await api.del(`/v1/tokens/${parent.id}`, child.token)).status).toBe(404);
      expect((await api.del(`/v1/tokens/${child.id}`, parent.token)).status).toBe(204);
      expect(await works(child.token)).toBe(401);
      expect(await works(parent.token)).toBe(200);
      expect((await api.del(`/v1/tokens/${parent.id}`, parent.token)).status).toBe(204);
      expect(await works(parent.token)).toBe(401);
    },
  );

  it('a root key or scoped key id is not a token: DELETE /v1/tokens/{id} → 404', async () => {
    const k = await scopedKey(acct.developerToken, {
      tenantId: acct.tenants.live.tenantId,
      allowedActions: ['records:r'],
    });
    expect((await api.del(`/v1/tokens/${k.id}`, root)).status).toBe(404);
    expect(await works(k.key)).toBe(200);
  });

  it('children never outlive their parent: revoking a token revokes every token minted from it', async () => {
    const p = await mint(root, { scope: { allowedActions: ['records:r'] } });
    const c = await mint(p.token, { scope: { allowedActions: ['records:r'] } });
    const g = await mint(c.token, { scope: { allowedActions: ['records:r'] } });
    for (const t of [p, c, g]) expect(await works(t.token)).toBe(200);
    expect((await api.del(`/v1/tokens/${p.id}`, root)).status).toBe(204);
    for (const t of [p, c, g]) expect(await works(t.token)).toBe(401);
    // The grandchild is already dead: revoking it again is a 404.
    expect((await api.del(`/v1/tokens/${g.id}`, root)).status).toBe(404);
  });

  it('the developer token cannot use the data-plane revoke (403)', async () => {
    const t = await mint(root, { scope: { allowedActions: ['records:r'] } });
    expect((await api.del(`/v1/tokens/${t.id}`, acct.developerToken)).status).toBe(403);
    expect(await works(t.token)).toBe(200);
  });
});

describe('revoking scoped keys: DELETE /developer/keys/{id}', () => {
  const works = async (token: string) => (await api.get('/v1/contexts', token)).status;

  it('204, the key and every token minted from it answer 401 at once; again → 404', async () => {
    const k = await scopedKey(acct.developerToken, {
      tenantId: acct.tenants.live.tenantId,
      allowedActions: ['records:r'],
    });
    const t = await mint(k.key, { scope: { allowedActions: ['records:r'] } });
    expect(await works(k.key)).toBe(200);
    expect(await works(t.token)).toBe(200);
    const d = await api.del(`/developer/keys/${k.id}`, acct.developerToken);
    expect(d.status, d.text).toBe(204);
    expect(await works(k.key)).toBe(401);
    expect(await works(t.token)).toBe(401);
    expect((await api.del(`/developer/keys/${k.id}`, acct.developerToken)).status).toBe(404);
  });

  it('another account’s developer token, a random id, a token’s id → the identical 404; a root key → 403', async () => {
    const k = await scopedKey(acct.developerToken, {
      tenantId: acct.tenants.live.tenantId,
      allowedActions: ['records:r'],
    });
    const t = await mint(root, { scope: { allowedActions: ['records:r'] } });
    const other = await enterprise(api);
    const rnd = await api.del(`/developer/keys/${randomUUID()}`, acct.developerToken);
    expect(rnd.status).toBe(404);
    const foreign = await api.del(`/developer/keys/${k.id}`, other.developerToken);
    expect(foreign.status).toBe(404);
    expect(withoutRequestId(foreign)).toBe(withoutRequestId(rnd));
    const notAKey = await api.del(`/developer/keys/${t.id}`, acct.developerToken);
    expect(withoutRequestId(notAKey)).toBe(withoutRequestId(rnd));
    expect((await api.del(`/developer/keys/${k.id}`, root)).status).toBe(403);
    expect(await works(k.key)).toBe(200);
    expect(await works(t.token)).toBe(200);
  });
});

describe('rotating a root key: POST /developer/tenants/{tenantId}/root-key/rotate', () => {
  const works = async (token: string) => (await api.get('/v1/contexts', token)).status;

  it(
    '200 with the new key once; the old key answers 401 at once, the new one works, tokens it minted die, ' +
      'the other environment and ssk_ keys live on',
    async () => {
      const a = await enterprise(api);
      const old = a.tenants.live.rootKey;
      const minted = await mint(old, { scope: { allowedActions: ['records:r'] } });
      const key = await scopedKey(a.developerToken, {
        tenantId: a.tenants.live.tenantId,
        allowedActions: ['records:r'],
      });
      for (const t of [old, minted.token, key.key, a.tenants.test.rootKey]) expect(await works(t)).toBe(200);

      const r = await api.post(`/developer/tenants/${a.tenants.live.tenantId}/root-key/rotate`, a.developerToken);
      expect(r.status, r.text).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(['environment', 'id', 'rootKey', 'tenantId']);
      expect(r.body).toMatchObject({ tenantId: a.tenants.live.tenantId, environment: 'live' });
      expect(r.body.rootKey.startsWith('sk_live_')).toBe(true);

      expect(await works(old)).toBe(401);
      expect(await works(minted.token)).toBe(401);
      expect(await works(r.body.rootKey)).toBe(200);
      expect(await works(key.key)).toBe(200);
      expect(await works(a.tenants.test.rootKey)).toBe(200);
      // The new key is a full root key: cross-context, mints, reads the tenant's data.
      expect((await api.post('/v1/contexts', r.body.rootKey, { name: 'after-rotation' })).status).toBe(201);
      expect((await api.post('/v1/tokens', r.body.rootKey, { scope: { allowedActions: ['records:r'] } })).status).toBe(
        201,
      );

      const t = await api.post(`/developer/tenants/${a.tenants.test.tenantId}/root-key/rotate`, a.developerToken);
      expect(t.status, t.text).toBe(200);
      expect(t.body.rootKey.startsWith('sk_test_')).toBe(true);
      expect(await works(a.tenants.test.rootKey)).toBe(401);
      expect(await works(t.body.rootKey)).toBe(200);
    },
  );

  it(
    'another account’s tenant and a random tenant → the identical 403 (tenant not owned); a root key → 403; ' +
      'nothing changes',
    async () => {
      const a = await enterprise(api);
      const b = await enterprise(api);
      const rnd = await api.post(`/developer/tenants/${randomUUID()}/root-key/rotate`, a.developerToken);
      expect(rnd.status).toBe(403);
      expect(rnd.body.errorCode).toBe('FORBIDDEN');
      const foreign = await api.post(`/developer/tenants/${b.tenants.live.tenantId}/root-key/rotate`, a.developerToken);
      expect(withoutRequestId(foreign)).toBe(withoutRequestId(rnd));
      expect(
        (await api.post(`/developer/tenants/${a.tenants.live.tenantId}/root-key/rotate`, a.tenants.live.rootKey))
          .status,
      ).toBe(403);
      expect(await works(b.tenants.live.rootKey)).toBe(200);
      expect(await works(a.tenants.live.rootKey)).toBe(200);
    },
  );

  it('concurrent rotations leave exactly one working root key', async () => {
    const a = await enterprise(api);
    const rs = await Promise.all(
      [1, 2, 3].map(() => api.post(`/developer/tenants/${a.tenants.live.tenantId}/root-key/rotate`, a.developerToken)),
    );
    for (const r of rs) expect([200, 409], r.text).toContain(r.status);
    const keys = rs.filter((r) => r.status === 200).map((r) => r.body.rootKey as string);
    expect(keys.length).toBeGreaterThan(0);
    const statuses = await Promise.all([a.tenants.live.rootKey, ...keys].map(works));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
  });

  it('the developer token keeps working after a rotation (it creates keys that work)', async () => {
    const a = await enterprise(api);
    const r = await api.post(`/developer/tenants/${a.tenants.live.tenantId}/root-key/rotate`, a.developerToken);
    expect(r.status).toBe(200);
    const k = await scopedKey(a.developerToken, { tenantId: a.tenants.live.tenantId, allowedActions: ['records:r'] });
    expect(await works(k.key)).toBe(200);
  });
});

// ---------------------------------------------------------------------------
/**
 * Two processes on one PostgreSQL database: A runs every role (its projector
 * applies the revocation), B only the command API with its own credential
 * cache. A revocation answered by A is refused by B at B's next request.
 */
describe.skipIf(!serverUrl('postgres'))('revocation in another process on the same database (PostgreSQL)', () => {
  let a: TestService;
  let b: { service: Service; api: Api; dir: { remove: () => void } };

  beforeAll(async () => {
    a = await startService({ engine: 'postgres' });
    const dir = tempDir('svc-e2e-cmd-');
    const env = {
      DATA_DIR: dir.dir,
      PORT: '0',
      OPERATOR_TOKEN,
      LOG_LEVEL: 'silent',
      SERVICE_ROLE: 'command',
      DATABASE_URL: a.service.config.databaseUrl!,
      SERVICE_SECRET: readFileSync(join(a.dataDir, 'service-secret.key'), 'utf8').trim(),
    };
    const service = await buildService(loadConfig(env as NodeJS.ProcessEnv), () => {});
    await service.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = service.app.server.address();
    b = { service, api: new Api(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`), dir };
  });

  afterAll(async () => {
    await b?.service.close();
    b?.dir.remove();
    await a?.stop();
  });

  /** B's probe: minting needs nothing but a live credential. */
  const onB = async (token: string) =>
    (await b.api.post('/v1/tokens', token, { scope: { allowedActions: ['records:r'] } })).status;
  const onA = async (token: string) => (await a.api.get('/v1/contexts', token)).status;

  it('a token revoked through A answers 401 on B at once (B had it cached)', async () => {
    const rootA = a.bootstrap.tenants.live.rootKey;
    const t = await mint2(a.api, rootA);
    expect(await onB(t.token)).toBe(201);
    expect(await onB(t.token)).toBe(201);
    expect((await a.api.del(`/v1/tokens/${t.id}`, rootA)).status).toBe(204);
    expect(await onB(t.token)).toBe(401);
  });

  it('a token revoked through B answers 401 on A at once', async () => {
    const rootA = a.bootstrap.tenants.live.rootKey;
    const t = await mint2(a.api, rootA);
    expect(await onA(t.token)).toBe(200);
    expect((await b.api.del(`/v1/tokens/${t.id}`, rootA)).status).toBe(204);
    expect(await onA(t.token)).toBe(401);
    expect(await onB(t.token)).toBe(401);
  });

  it('a root key rotated through A stops working on B at once', async () => {
    const acctB = await a.api.newAccount();
    const old = acctB.tenants.live.rootKey;
    expect(await onB(old)).toBe(201);
    const r = await a.api.post(
      `/developer/tenants/${acctB.tenants.live.tenantId}/root-key/rotate`,
      acctB.developerToken,
    );
    expect(r.status, r.text).toBe(200);
    expect(await onB(old)).toBe(401);
    expect(await onB(r.body.rootKey)).toBe(201);
  });

  async function mint2(on: Api, by: string) {
    const r = await on.post('/v1/tokens', by, { scope: { allowedActions: ['records:r'] } });
    expect(r.status, r.text).toBe(201);
    return r.body as { id: string; token: string };
  }
});
