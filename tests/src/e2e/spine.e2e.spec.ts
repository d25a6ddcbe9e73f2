import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectAnswer, unwrap, type Body } from '@svc/client';
import { OPERATOR_TOKEN, startService, type Api, type Bootstrap, type TestService } from '../support/service';
import { expectStatus } from '../support/typed';

let svc: TestService;
let api: Api;
let boot: Bootstrap;
let root: string; // bootstrap account, live root key

beforeAll(async () => {
  svc = await startService();
  api = svc.api;
  boot = svc.bootstrap;
  root = boot.tenants.live.rootKey;
});

afterAll(async () => {
  await svc?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Mints a token with `root`-like credential `by`; asserts 201. */
async function mint(by: string, allowedActions: string[], extra: Record<string, unknown> = {}) {
  const r = await api.post('/v1/tokens', by, { scope: { allowedActions }, ...extra });
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; token: string; contextId: string; expiresAt: string };
}

async function createContext(by: string, name: string) {
  const r = await api.post('/v1/contexts', by, { name });
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; tenantId: string; name: string; isDefault: boolean; createdAt: string };
}

/** The error body with its requestId taken out, as text, for byte comparisons. */
const withoutRequestId = (r: { text: string; body: any }) =>
  r.text.replace(JSON.stringify(r.body.requestId), '"<requestId>"');

describe('system endpoints', () => {
  it('GET /healthz answers 200 without credentials', async () => {
    const r = await api.get('/healthz');
    expect(r.status).toBe(200);
  });

  it('GET /readyz answers 200 without credentials', async () => {
    const r = await api.get('/readyz');
    expect(r.status).toBe(200);
  });

  it('GET /openapi.json describes an OpenAPI 3.1.0 API including tokens and operator accounts', async () => {
    const r = await api.get('/openapi.json');
    expect(r.status).toBe(200);
    expect(r.body.openapi).toBe('3.1.0');
    expect(Object.keys(r.body.paths)).toEqual(
      expect.arrayContaining(['/v1/tokens', '/operator/accounts', '/v1/contexts']),
    );
  });
});

describe('request ids and the error body', () => {
  it('every response carries an x-request-id header, unique per request', async () => {
    const responses = await Promise.all([
      api.get('/healthz'),
      api.get('/openapi.json'),
      api.get('/v1/contexts', root),
      api.get('/v1/contexts'),
      api.unchecked.get('/no/such/route'), // an unknown route on purpose: not described
      api.post('/v1/tokens', root, { scope: { allowedActions: ['records:r'] } }),
    ]);
    const ids = responses.map((r) => r.headers.get('x-request-id'));
    for (const id of ids) expect(id).toBeTruthy();
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('an error body has exactly message, errorCode and requestId, and requestId equals the header', async () => {
    const r = await api.get('/v1/contexts');
    expect(r.status).toBe(401);
    expect(Object.keys(r.body).sort()).toEqual(['errorCode', 'message', 'requestId']);
    expect(typeof r.body.message).toBe('string');
    expect(r.body.errorCode).toMatch(/^[A-Z_]+$/);
    expect(r.body.requestId).toBe(r.headers.get('x-request-id'));
  });

  it('a 404 for an unknown route has the same error body shape', async () => {
    const r = await api.unchecked.get('/v1/no-such-thing', root); // an unknown route on purpose: not described
    expect(r.status).toBe(404);
    expect(Object.keys(r.body).sort()).toEqual(['errorCode', 'message', 'requestId']);
    expect(r.body.requestId).toBe(r.headers.get('x-request-id'));
  });
});

describe('bootstrap', () => {
  it('creates an account with sk_live_ / sk_test_ root keys and a dt_ developer token', () => {
    expect(boot.accountId).toBeTruthy();
    expect(boot.tenants.live.rootKey.startsWith('sk_live_')).toBe(true);
    expect(boot.tenants.test.rootKey.startsWith('sk_test_')).toBe(true);
    expect(boot.developerToken.startsWith('dt_')).toBe(true);
    expect(boot.tenants.live.tenantId).not.toBe(boot.tenants.test.tenantId);
  });

  it('writes bootstrap.json with mode 0600', () => {
    expect(statSync(join(svc.dataDir, 'bootstrap.json')).mode & 0o777).toBe(0o600);
  });

  it('the bootstrap root keys work on the data plane', async () => {
    expect((await api.get('/v1/contexts', boot.tenants.live.rootKey)).status).toBe(200);
    expect((await api.get('/v1/contexts', boot.tenants.test.rootKey)).status).toBe(200);
  });

  it(
    'the bootstrap account can use inference: RAG streams an answer (opening balance), not 402 ' +
      'INSUFFICIENT_BALANCE',
    async () => {
      const answer = await collectAnswer(
        svc.client(boot.tenants.live.rootKey).rag({ query: 'What does an empty tenant know?' }),
      );
      expect(answer.events[0].event).toBe('search_results');
      expect(answer.done.model).toBe('builtin-extractive');
      // The opening balance is DEFAULT_INFERENCE_BALANCE_CENTS (default 1,000 cents), shown by the operator API.
      const account = await api.get(`/operator/accounts/${boot.accountId}`, OPERATOR_TOKEN);
      expect(account.status).toBe(200);
      expect(account.body.inferenceBalanceCents).toBe(1000);
    },
  );
});

describe('Service-Version', () => {
  it('without the header, the response names the current version 2026-08-01', async () => {
    const r = await api.get('/v1/contexts', root);
    expect(r.status).toBe(200);
    expect(r.headers.get('service-version')).toBe('2026-08-01');
  });

  it('2026-08-01 is accepted and echoed', async () => {
    const r = await api.get('/v1/contexts', root, { 'service-version': '2026-08-01' });
    expect(r.status).toBe(200);
    expect(r.headers.get('service-version')).toBe('2026-08-01');
  });

  it('an unpublished version is a 400 UNSUPPORTED_WIRE_VERSION naming the supported version', async () => {
    const r = await api.get('/v1/contexts', root, { 'service-version': '2025-01-01' });
    expect(r.status).toBe(400);
    expect(r.body.errorCode).toBe('UNSUPPORTED_WIRE_VERSION');
    expect(r.body.message).toContain('2026-08-01');
    expect(r.body.requestId).toBe(r.headers.get('x-request-id'));
  });
});

describe('JSON number rules on request bodies', () => {
  it.each([
    ['1e400 (infinite)', '{"scope":{"allowedActions":["records:r"]},"expiresInSeconds":1e400}'],
    [
      '41 significant digits',
      '{"scope":{"allowedActions":["records:r"]},"expiresInSeconds":12345678901234567890123456789012345678901}',
    ],
    [
      'a number outside int64 in a nested array',
      '{"scope":{"allowedActions":["records:r"],"dataScope":{"scopes":[9223372036854775808]}}}',
    ],
    ['a magnitude below 1e-130', '{"scope":{"allowedActions":["records:r"]},"expiresInSeconds":1e-131}'],
  ])('POST /v1/tokens with %s is a 400', async (_, raw) => {
    const r = await api.call('POST', '/v1/tokens', { token: root, raw });
    expect(r.status).toBe(400);
    expect(r.body.requestId).toBe(r.headers.get('x-request-id'));
  });

  it('the same literals inside strings are not numbers and are not rejected by the number rules', async () => {
    const r = await api.call('POST', '/v1/tokens', {
      token: root,
      raw: '{"scope":{"allowedActions":["records:r"]},"userId":"1e400"}',
    });
    expect(r.status).toBe(201);
  });
});

describe('authentication', () => {
  it('no Authorization header → 401', async () => {
    expect((await api.get('/v1/contexts')).status).toBe(401);
  });

  it('an unknown key → 401', async () => {
    expect((await api.get('/v1/contexts', 'sk_live_' + 'x'.repeat(40))).status).toBe(401);
    expect((await api.get('/v1/contexts', 'garbage')).status).toBe(401);
  });

  it('a non-Bearer Authorization header → 401', async () => {
    const r = await api.get('/v1/contexts', undefined, { authorization: `Basic ${root}` });
    expect(r.status).toBe(401);
  });

  it('the Bearer scheme name is case-insensitive (RFC 7235): bearer and BEARER work like Bearer', async () => {
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
      const r = await api.get('/v1/contexts', undefined, { authorization: `${scheme} ${root}` });
      expect(r.status, `${scheme}: ${r.text}`).toBe(200);
    }
    // the scheme alone, or glued to the token, is still no credential
    expect((await api.get('/v1/contexts', undefined, { authorization: 'bearer' })).status).toBe(401);
    expect((await api.get('/v1/contexts', undefined, { authorization: `bearer${root}` })).status).toBe(401);
  });

  it('a developer token on the data plane (/v1/contexts) → 403', async () => {
    const r = await api.get('/v1/contexts', boot.developerToken);
    expect(r.status).toBe(403);
  });

  it('a root key on the developer portal (/developer/keys) → 403', async () => {
    const r = await api.post('/developer/keys', root, {
      tenantId: boot.tenants.live.tenantId,
      allowedActions: ['records:r'],
    });
    expect(r.status).toBe(403);
  });
});

describe('operator API', () => {
  it('without the operator token → 401', async () => {
    expect((await api.post('/operator/accounts', undefined, { plan: 'pro' })).status).toBe(401);
    expect((await api.post('/operator/accounts', 'wrong-operator-token', { plan: 'pro' })).status).toBe(401);
    expect((await api.post('/operator/accounts', root, { plan: 'pro' })).status).toBe(401);
    expect((await api.get(`/operator/accounts/${boot.accountId}`, 'wrong-operator-token')).status).toBe(401);
  });

  it('POST /operator/accounts creates an account with the decisions §2 shape', async () => {
    const r = await api.post('/operator/accounts', OPERATOR_TOKEN, { plan: 'pro', name: 'Acme' });
    expect(r.status, r.text).toBe(201);
    const b = r.body;
    expect(Object.keys(b).sort()).toEqual(['accountId', 'developerToken', 'plan', 'tenants']);
    expect(b.plan).toBe('pro');
    expect(b.developerToken.startsWith('dt_')).toBe(true);
    expect(Object.keys(b.tenants).sort()).toEqual(['live', 'test']);
    for (const env of ['live', 'test'] as const) {
      expect(Object.keys(b.tenants[env]).sort()).toEqual(['contextId', 'rootKey', 'tenantId']);
      expect(b.tenants[env].rootKey.startsWith(env === 'live' ? 'sk_live_' : 'sk_test_')).toBe(true);
    }
    // the new root key works at once
    expect((await api.get('/v1/contexts', b.tenants.live.rootKey)).status).toBe(200);
  });

  it('PATCH changes the plan and tops up the balance; GET reflects both', async () => {
    const acct = await api.newAccount({ plan: 'starter', inferenceBalanceCents: 1000 });
    const p1 = await api.patch(`/operator/accounts/${acct.accountId}`, OPERATOR_TOKEN, {
      plan: 'scale',
      inferenceBalanceCents: 500,
    });
    expect(p1.status, p1.text).toBe(200);
    const p2 = await api.patch(`/operator/accounts/${acct.accountId}`, OPERATOR_TOKEN, { inferenceBalanceCents: 250 });
    expect(p2.status, p2.text).toBe(200);
    const g = await api.get(`/operator/accounts/${acct.accountId}`, OPERATOR_TOKEN);
    expect(g.status).toBe(200);
    expect(g.body.plan).toBe('scale');
    expect(g.body.inferenceBalanceCents).toBe(1750);
  });

  it(
    'entitlements: allowGlobalRegion is optional on POST and PATCH; a PATCH merges into the stored ' + 'entitlements',
    async () => {
      const operator = svc.client(OPERATOR_TOKEN);
      const created = await expectStatus(
        operator.POST('/operator/accounts', { body: { plan: 'pro', entitlements: {} } }),
        201,
      );
      const read = async () =>
        (await api.get(`/operator/accounts/${created.accountId}`, OPERATOR_TOKEN)).body.entitlements;
      expect(await read()).toEqual({ allowGlobalRegion: false });
      const patch = (body: Body<'patchOperatorAccount'>) =>
        expectStatus(
          operator.PATCH('/operator/accounts/{id}', { params: { path: { id: created.accountId } }, body }),
          200,
        );
      await patch({ entitlements: { allowGlobalRegion: true } });
      expect(await read()).toEqual({ allowGlobalRegion: true });
      // An empty entitlements object changes nothing (it does not reset allowGlobalRegion).
      await patch({ entitlements: {}, plan: 'scale' });
      expect(await read()).toEqual({ allowGlobalRegion: true });
      await patch({ entitlements: { allowGlobalRegion: false } });
      expect(await read()).toEqual({ allowGlobalRegion: false });
    },
  );

  it(
    'creditLimit counts on every plan: it replaces the plan allowance in the usage report; null returns to ' +
      'the plan allowance',
    async () => {
      const acct = await api.newAccount({ plan: 'free', creditLimit: 5 });
      const limit = async () => (await unwrap(svc.client(acct.tenants.live.rootKey).GET('/v1/usage'))).credits.limit;
      expect(await limit()).toBe(5);
      const operator = svc.client(OPERATOR_TOKEN);
      const patch = (body: Body<'patchOperatorAccount'>) =>
        expectStatus(
          operator.PATCH('/operator/accounts/{id}', { params: { path: { id: acct.accountId } }, body }),
          200,
        );
      await patch({ plan: 'pro', creditLimit: 2_000_000 });
      expect(await limit()).toBe(2_000_000);
      await patch({ creditLimit: null });
      expect(await limit()).toBe(250_000);
    },
  );

  it('PATCH of an unknown account → 404', async () => {
    const r = await api.patch(`/operator/accounts/${randomUUID()}`, OPERATOR_TOKEN, { plan: 'pro' });
    expect(r.status).toBe(404);
  });

  it('GET of an unknown account → 404', async () => {
    const r = await api.get(`/operator/accounts/${randomUUID()}`, OPERATOR_TOKEN);
    expect(r.status).toBe(404);
  });
});

describe('scoped tokens', () => {
  it('POST /v1/tokens with a root key → 201 {id, token st_, contextId, expiresAt}', async () => {
    const r = await api.post('/v1/tokens', root, { scope: { allowedActions: ['records:r'] } });
    expect(r.status, r.text).toBe(201);
    expect(Object.keys(r.body).sort()).toEqual(['contextId', 'expiresAt', 'id', 'token']);
    expect(r.body.token.startsWith('st_')).toBe(true);
    expect(r.body.contextId).toBe(boot.tenants.live.contextId);
    expect(Number.isNaN(Date.parse(r.body.expiresAt))).toBe(false);
    expect(Date.parse(r.body.expiresAt)).toBeGreaterThan(Date.now());
  });

  it('a token cannot mint a token with a permission it lacks (403 that does not name the permission)', async () => {
    const reader = await mint(root, ['records:r']);
    const r = await api.post('/v1/tokens', reader.token, { scope: { allowedActions: ['records:c'] } });
    expect(r.status).toBe(403);
    expect(r.body.message).not.toContain('records');
    expect(r.text).not.toContain('records');
  });

  it('a token can mint a token with a subset of its permissions', async () => {
    const reader = await mint(root, ['records:r', 'logs:r']);
    const r = await api.post('/v1/tokens', reader.token, { scope: { allowedActions: ['records:r'] } });
    expect(r.status, r.text).toBe(201);
  });

  it('a minted token lists /v1/contexts and sees only its own context', async () => {
    await createContext(root, `other-${randomUUID()}`);
    const t = await mint(root, ['records:r']);
    const r = await api.get('/v1/contexts', t.token);
    expect(r.status).toBe(200);
    expect(r.body.data.map((c: { id: string }) => c.id)).toEqual([t.contextId]);
    expect(r.body.nextCursor).toBeNull();
  });

  it('a token cannot mint a child token that outlives it (refused, or capped at its own expiry)', async () => {
    const parent = await mint(root, ['records:r'], { expiresInSeconds: 60 });
    const r = await api.post('/v1/tokens', parent.token, {
      scope: { allowedActions: ['records:r'] },
      expiresInSeconds: 365 * 24 * 3600,
    });
    if (r.status === 201) expect(Date.parse(r.body.expiresAt)).toBeLessThanOrEqual(Date.parse(parent.expiresAt));
    else expect([400, 403]).toContain(r.status);
  });

  it("minting for another tenant's context → 404", async () => {
    const other = await api.newAccount();
    const r = await api.post('/v1/tokens', root, {
      scope: { allowedActions: ['records:r'] },
      contextId: other.tenants.live.contextId,
    });
    expect(r.status).toBe(404);
  });

  it('a token with expiresInSeconds 1 stops working (401) after ~1.5 s', async () => {
    const t = await mint(root, ['records:r'], { expiresInSeconds: 1 });
    expect((await api.get('/v1/contexts', t.token)).status).toBe(200);
    await sleep(1500);
    expect((await api.get('/v1/contexts', t.token)).status).toBe(401);
  });
});

describe('app contexts', () => {
  it('root creates a context (201) and the list shows the default and the new one', async () => {
    const acct = await api.newAccount();
    const k = acct.tenants.live.rootKey;
    const c = await createContext(k, 'second');
    expect(c).toMatchObject({ name: 'second', isDefault: false, tenantId: acct.tenants.live.tenantId });
    const r = await api.get('/v1/contexts', k);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['data', 'nextCursor']);
    expect(r.body.nextCursor).toBeNull();
    const ids = r.body.data.map((x: { id: string }) => x.id).sort();
    expect(ids).toEqual([acct.tenants.live.contextId, c.id].sort());
    expect(r.body.data.find((x: { id: string }) => x.id === acct.tenants.live.contextId).isDefault).toBe(true);
  });

  it('POST /v1/contexts without a name creates a named context; create and list answer contextId (= id)', async () => {
    const acct = await api.newAccount();
    const client = svc.client(acct.tenants.live.rootKey);
    const c = await expectStatus(client.POST('/v1/contexts', { body: {} }), 201);
    expect(c.contextId).toBe(c.id);
    expect(c.name.length).toBeGreaterThan(0);
    expect(c).toMatchObject({ isDefault: false, tenantId: acct.tenants.live.tenantId });
    const named = await expectStatus(client.POST('/v1/contexts', { body: { name: 'named' } }), 201);
    expect(named).toMatchObject({ id: named.contextId, name: 'named' });
    const list = await unwrap(client.GET('/v1/contexts'));
    for (const x of list.data) expect(x.contextId).toBe(x.id);
    expect(list.data.map((x) => x.contextId).sort()).toEqual(
      [acct.tenants.live.contextId, c.contextId, named.contextId].sort(),
    );
    // The new context is usable by that id (x-context-id).
    expect((await api.get('/v1/contexts', acct.tenants.live.rootKey, { 'x-context-id': c.contextId })).status).toBe(
      200,
    );
  });

  it('a token minted for context A cannot select context B with x-context-id (404)', async () => {
    const b = await createContext(root, `b-${randomUUID()}`);
    const t = await mint(root, ['*']);
    expect(t.contextId).toBe(boot.tenants.live.contextId);
    const r = await api.get('/v1/contexts', t.token, { 'x-context-id': b.id });
    expect(r.status).toBe(404);
  });

  it('root may select another context of its tenant with x-context-id (200)', async () => {
    const b = await createContext(root, `b-${randomUUID()}`);
    const r = await api.get('/v1/contexts', root, { 'x-context-id': b.id });
    expect(r.status).toBe(200);
  });

  it('root selecting an unknown context with x-context-id → 404', async () => {
    const r = await api.get('/v1/contexts', root, { 'x-context-id': randomUUID() });
    expect(r.status).toBe(404);
  });

  it('a token can be minted for a chosen context and is confined to it', async () => {
    const b = await createContext(root, `b-${randomUUID()}`);
    const t = await mint(root, ['records:r'], { contextId: b.id });
    expect(t.contextId).toBe(b.id);
    const r = await api.get('/v1/contexts', t.token);
    expect(r.body.data.map((c: { id: string }) => c.id)).toEqual([b.id]);
  });

  it('a context-confined credential cannot create contexts, even with the wildcard permission (403)', async () => {
    const t = await mint(root, ['*']);
    const r = await api.post('/v1/contexts', t.token, { name: 'nope' });
    expect(r.status).toBe(403);
  });

  it('a context-confined ssk_ key cannot create contexts (403)', async () => {
    const k = await api.post('/developer/keys', boot.developerToken, {
      tenantId: boot.tenants.live.tenantId,
      allowedActions: ['*'],
    });
    expect(k.status, k.text).toBe(201);
    const r = await api.post('/v1/contexts', k.body.key, { name: 'nope' });
    expect(r.status).toBe(403);
  });

  it("root cannot select a context of its other environment's tenant with x-context-id (404)", async () => {
    const r = await api.get('/v1/contexts', root, { 'x-context-id': boot.tenants.test.contextId });
    expect(r.status).toBe(404);
  });

  it('the default context cannot be deleted (400)', async () => {
    const r = await api.del(`/v1/contexts/${boot.tenants.live.contextId}`, root);
    expect(r.status).toBe(400);
  });

  it('deleting a context → 204, it leaves the list, and a token minted for it then gets 401', async () => {
    const c = await createContext(root, `doomed-${randomUUID()}`);
    const t = await mint(root, ['records:r'], { contextId: c.id });
    expect((await api.get('/v1/contexts', t.token)).status).toBe(200); // warm any credential cache
    const d = await api.del(`/v1/contexts/${c.id}`, root);
    expect(d.status).toBe(204);
    expect(d.text).toBe('');
    expect((await api.get('/v1/contexts', t.token)).status).toBe(401);
    expect((await api.get('/v1/contexts', root, { 'x-context-id': c.id })).status).toBe(404);
  });

  it('deleting an already deleted context → 404', async () => {
    const c = await createContext(root, `twice-${randomUUID()}`);
    expect((await api.del(`/v1/contexts/${c.id}`, root)).status).toBe(204);
    expect((await api.del(`/v1/contexts/${c.id}`, root)).status).toBe(404);
  });

  it('a scoped token cannot delete a context (403)', async () => {
    const c = await createContext(root, `kept-${randomUUID()}`);
    const t = await mint(root, ['*'], { contextId: c.id });
    expect((await api.del(`/v1/contexts/${c.id}`, t.token)).status).toBe(403);
  });

  it("another account deleting this account's context gets a 404 byte-identical to a missing id", async () => {
    const c = await createContext(root, `mine-${randomUUID()}`);
    const other = await api.newAccount();
    const k = other.tenants.live.rootKey;
    const foreign = await api.del(`/v1/contexts/${c.id}`, k);
    const missing = await api.del(`/v1/contexts/${randomUUID()}`, k);
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(withoutRequestId(foreign)).toBe(withoutRequestId(missing));
    expect(foreign.headers.get('content-type')).toBe(missing.headers.get('content-type'));
    // and the context is still there for its owner
    expect((await api.get('/v1/contexts', root, { 'x-context-id': c.id })).status).toBe(200);
  });

  it("another account deleting this account's default context gets 404, not the 400 that would reveal it", async () => {
    const other = await api.newAccount();
    const r = await api.del(`/v1/contexts/${boot.tenants.live.contextId}`, other.tenants.live.rootKey);
    expect(r.status).toBe(404);
  });

  it("the other environment's root key cannot delete a live context (404)", async () => {
    const c = await createContext(root, `live-only-${randomUUID()}`);
    expect((await api.del(`/v1/contexts/${c.id}`, boot.tenants.test.rootKey)).status).toBe(404);
  });
});

describe('pagination of /v1/contexts', () => {
  let key: string;
  let expected: string[];

  beforeAll(async () => {
    const acct = await api.newAccount();
    key = acct.tenants.live.rootKey;
    expected = [acct.tenants.live.contextId];
    for (let i = 0; i < 5; i++) expected.push((await createContext(key, `page-${i}`)).id);
  });

  it('limit=2 pages, following nextCursor until null, return all 6 contexts exactly once', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = `/v1/contexts?limit=2${cursor ? `&startFrom=${encodeURIComponent(cursor)}` : ''}`;
      const r = await api.get(q, key);
      expect(r.status, r.text).toBe(200);
      expect(r.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...r.body.data.map((c: { id: string }) => c.id));
      cursor = r.body.nextCursor;
      expect(++pages).toBeLessThan(20);
    } while (cursor !== null);
    expect(seen.length).toBe(6);
    expect(new Set(seen).size).toBe(6);
    expect([...seen].sort()).toEqual([...expected].sort());
  });

  it('without limit, the default page holds all 6', async () => {
    const r = await api.get('/v1/contexts', key);
    expect(r.body.data).toHaveLength(6);
    expect(r.body.nextCursor).toBeNull();
  });

  it.each(['101', '0', '-1', '2.5', 'abc'])('limit=%s → 400', async (limit) => {
    const r = await api.get(`/v1/contexts?limit=${limit}`, key);
    expect(r.status).toBe(400);
  });

  it('limit=100 is accepted', async () => {
    expect((await api.get('/v1/contexts?limit=100', key)).status).toBe(200);
  });

  it('a startFrom altered by one character → 400', async () => {
    const first = await api.get('/v1/contexts?limit=2', key);
    const cursor: string = first.body.nextCursor;
    expect(cursor).toEqual(expect.any(String));
    const i = Math.floor(cursor.length / 2);
    const altered = cursor.slice(0, i) + (cursor[i] === 'A' ? 'B' : 'A') + cursor.slice(i + 1);
    const r = await api.get(`/v1/contexts?limit=2&startFrom=${encodeURIComponent(altered)}`, key);
    expect(r.status).toBe(400);
    expect(r.body.errorCode).toBe('INVALID_CURSOR');
  });

  it('a caller-built startFrom → 400', async () => {
    const handBuilt = Buffer.from(JSON.stringify(['1970-01-01T00:00:00.000Z', ''])).toString('base64url');
    const r = await api.get(`/v1/contexts?limit=2&startFrom=${handBuilt}`, key);
    expect(r.status).toBe(400);
  });

  it('a caller-built startFrom from a context-confined credential → 400 too', async () => {
    const t = await mint(key, ['records:r']);
    const r = await api.get('/v1/contexts?startFrom=not-a-real-cursor', t.token);
    expect(r.status).toBe(400);
  });

  it('a cursor reused with a different limit → 400', async () => {
    const first = await api.get('/v1/contexts?limit=2', key);
    const r = await api.get(`/v1/contexts?limit=3&startFrom=${encodeURIComponent(first.body.nextCursor)}`, key);
    expect(r.status).toBe(400);
    expect(r.body.errorCode).toBe('INVALID_CURSOR');
  });

  it("a cursor from another tenant's list → 400", async () => {
    const first = await api.get('/v1/contexts?limit=2', key);
    const r = await api.get(`/v1/contexts?limit=2&startFrom=${encodeURIComponent(first.body.nextCursor)}`, root);
    expect(r.status).toBe(400);
  });
});

describe('developer keys', () => {
  it('a developer token creates an ssk_ key for its own tenant (201) that works on the data plane', async () => {
    const r = await api.post('/developer/keys', boot.developerToken, {
      tenantId: boot.tenants.live.tenantId,
      allowedActions: ['records:r'],
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body.key.startsWith('ssk_')).toBe(true);
    expect(r.body.tenantId).toBe(boot.tenants.live.tenantId);
    expect(r.body.contextId).toBe(boot.tenants.live.contextId);
    const l = await api.get('/v1/contexts', r.body.key);
    expect(l.status).toBe(200);
    expect(l.body.data.map((c: { id: string }) => c.id)).toEqual([boot.tenants.live.contextId]);
  });

  it('a developer token creates a key for its test tenant too', async () => {
    const r = await api.post('/developer/keys', boot.developerToken, {
      tenantId: boot.tenants.test.tenantId,
      allowedActions: ['records:r'],
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body.key.startsWith('ssk_')).toBe(true);
  });

  it("a developer token cannot create a key for another account's tenant (403)", async () => {
    const other = await api.newAccount();
    const r = await api.post('/developer/keys', boot.developerToken, {
      tenantId: other.tenants.live.tenantId,
      allowedActions: ['records:r'],
    });
    expect(r.status).toBe(403);
  });

  it('an unknown developer token → 401', async () => {
    const r = await api.post('/developer/keys', 'dt_' + 'x'.repeat(40), {
      tenantId: boot.tenants.live.tenantId,
      allowedActions: ['records:r'],
    });
    expect(r.status).toBe(401);
  });
});
