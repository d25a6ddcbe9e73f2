/**
 * Sign-in with the app's own identity provider: an operator registers issuers per tenant
 * (PUT/GET /operator/tenants/{tenantId}/jwt-issuers), and a bearer JWT signed by a registered issuer for its
 * audience is then a scoped credential of that tenant. Against a local issuer (tests/src/support/oidc-issuer.ts)
 * serving discovery and a JWKS over http on loopback, keys and tokens made with jose.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../support/oidc-issuer';
import {
  OPERATOR_TOKEN,
  startService,
  THROUGH_ROUTER,
  type Answer,
  type Api,
  type Bootstrap,
  type TestService,
} from '../support/service';

/**
 * Keys are fetched again on an unknown kid at most every 300 ms, and at the latest after 1.5 s (defaults: 60 s and 10
 * min).
 */
const REFETCH_MS = 300;
const MAX_AGE_MS = 1500;

let svc: TestService;
let api: Api;
let A: Bootstrap;
let B: Bootstrap;
let idp: LocalIssuer;
let rsa: string;
let ec: string;
let ed: string;
const AUD = 'https://api.example.test';

const issuersPath = (tenantId: string) => `/operator/tenants/${tenantId}/jwt-issuers`;
const put = (tenantId: string, body: unknown) =>
  api.call('PUT', issuersPath(tenantId), { token: OPERATOR_TOKEN, body });
const withoutRequestId = (r: Answer) =>
  r.body?.requestId ? r.text.replace(JSON.stringify(r.body.requestId), '"<requestId>"') : r.text;
const now = () => Math.floor(Date.now() / 1000);
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

let badKey401: string;
const logLines: string[] = [];
async function expectUniform401(token: string, why: string) {
  const r = await api.get('/v1/ping', token);
  expect(r.status, `${why}: ${r.text}`).toBe(401);
  expect(withoutRequestId(r), why).toBe(badKey401);
}

beforeAll(async () => {
  svc = await startService({
    env: { JWT_KEYS_REFETCH_MS: String(REFETCH_MS), JWT_KEYS_MAX_AGE_MS: String(MAX_AGE_MS) },
    log: (line) => void logLines.push(line),
  });
  api = svc.api;
  A = svc.bootstrap;
  B = await api.newAccount();
  idp = await LocalIssuer.start();
  rsa = await idp.addKey('RS256');
  ec = await idp.addKey('ES256');
  ed = await idp.addKey('EdDSA');
  // Discovery (no jwksUrl): the service finds the key set through the issuer's well-known document.
  const r = await put(A.tenants.live.tenantId, { issuers: [{ issuer: idp.url, audience: AUD }] });
  expect(r.status, r.text).toBe(200);
  badKey401 = withoutRequestId(await api.get('/v1/ping', 'sk_live_' + 'x'.repeat(40)));
}, 60_000);

afterAll(async () => {
  await idp?.close();
  await svc?.stop();
});

describe('registration', () => {
  it('PUT stores the list with the claim defaults; GET returns what PUT stored', async () => {
    const other = await LocalIssuer.start();
    try {
      const tenant = B.tenants.test.tenantId;
      const body = {
        issuers: [
          { issuer: other.url, audience: 'one' },
          {
            issuer: 'urn:example:idp',
            audience: 'two',
            jwksUrl: other.jwksUrl,
            claims: { userId: 'email', permissions: 'scope' },
            defaultPermissions: ['records:r'],
          },
        ],
      };
      const r = await put(tenant, body);
      expect(r.status, r.text).toBe(200);
      const expected = {
        issuers: [
          {
            issuer: other.url,
            audience: 'one',
            claims: { userId: 'sub', contextId: 'svc_context', scopes: 'svc_scopes', permissions: 'svc_permissions' },
          },
          {
            issuer: 'urn:example:idp',
            audience: 'two',
            jwksUrl: other.jwksUrl,
            claims: { userId: 'email', contextId: 'svc_context', scopes: 'svc_scopes', permissions: 'scope' },
            defaultPermissions: ['records:r'],
          },
        ],
      };
      expect(r.body).toEqual(expected);
      const g = await api.get(issuersPath(tenant), OPERATOR_TOKEN);
      expect(g.status, g.text).toBe(200);
      expect(g.body).toEqual(expected);
      // Registering fetches nothing: keys are fetched when a token arrives.
      expect(other.requests).toEqual([]);
      // An empty list removes them all.
      expect((await put(tenant, { issuers: [] })).body).toEqual({ issuers: [] });
      expect((await api.get(issuersPath(tenant), OPERATOR_TOKEN)).body).toEqual({ issuers: [] });
    } finally {
      await other.close();
    }
  });

  it.each([
    ['no issuers field', {}],
    ['an unknown field', { issuers: [], extra: 1 }],
    ['no audience', { issuers: [{ issuer: 'https://idp.example' }] }],
    ['an empty issuer', { issuers: [{ issuer: '', audience: 'a' }] }],
    ['plain http to another host', { issuers: [{ issuer: 'http://idp.example', audience: 'a' }] }],
    [
      'a jwksUrl over plain http to another host',
      { issuers: [{ issuer: 'https://idp.example', audience: 'a', jwksUrl: 'http://idp.example/jwks' }] },
    ],
    [
      'an ftp jwksUrl',
      { issuers: [{ issuer: 'https://idp.example', audience: 'a', jwksUrl: 'ftp://idp.example/jwks' }] },
    ],
    ['credentials in the URL', { issuers: [{ issuer: 'https://user:pw@idp.example', audience: 'a' }] }],
    ['an issuer that is no URL, without jwksUrl', { issuers: [{ issuer: 'urn:example:idp', audience: 'a' }] }],
    [
      'an unknown claim mapping',
      { issuers: [{ issuer: 'https://idp.example', audience: 'a', claims: { email: 'email' } }] },
    ],
    [
      'a malformed default permission',
      { issuers: [{ issuer: 'https://idp.example', audience: 'a', defaultPermissions: ['read everything'] }] },
    ],
    [
      'the same issuer and audience twice',
      {
        issuers: [
          { issuer: 'https://idp.example', audience: 'a' },
          { issuer: 'https://idp.example', audience: 'a' },
        ],
      },
    ],
    [
      'eleven issuers',
      { issuers: Array.from({ length: 11 }, (_, n) => ({ issuer: 'https://idp.example', audience: `a${n}` })) },
    ],
  ])('%s is a 400 that stores nothing', async (_, body) => {
    const before = await api.get(issuersPath(A.tenants.live.tenantId), OPERATOR_TOKEN);
    const r = await put(A.tenants.live.tenantId, body);
    expect(r.status, r.text).toBe(400);
    expect(r.body.errorCode).toBe('VALIDATION_ERROR');
    expect((await api.get(issuersPath(A.tenants.live.tenantId), OPERATOR_TOKEN)).body).toEqual(before.body);
  });

  it('two tenants registering the same pair at the same time: exactly one gets it', async () => {
    const [x, y] = [B.tenants.live.tenantId, A.tenants.test.tenantId];
    const pair = { issuer: idp.url, audience: `race-${randomUUID().slice(0, 8)}` };
    const answers = await Promise.all([put(x, { issuers: [pair] }), put(y, { issuers: [pair] })]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    const holders = [];
    for (const t of [x, y])
      if (
        (await api.get(issuersPath(t), OPERATOR_TOKEN)).body.issuers.some(
          (i: { audience: string }) => i.audience === pair.audience,
        )
      )
        holders.push(t);
    expect(holders).toHaveLength(1);
    for (const t of [x, y]) expect((await put(t, { issuers: [] })).status).toBe(200);
  });

  it('an unknown tenant is a 404; without the operator token, 401', async () => {
    const unknown = randomUUID();
    expect((await put(unknown, { issuers: [] })).status).toBe(404);
    expect((await api.get(issuersPath(unknown), OPERATOR_TOKEN)).status).toBe(404);
    expect(
      (
        await api.call('PUT', issuersPath(A.tenants.live.tenantId), {
          token: A.tenants.live.rootKey,
          body: { issuers: [] },
        })
      ).status,
    ).toBe(401);
    expect((await api.get(issuersPath(A.tenants.live.tenantId), A.tenants.live.rootKey)).status).toBe(401);
  });

  it(
    'an (issuer, audience) pair belongs to one tenant: registering it under another is a 409 that stores ' + 'nothing',
    async () => {
      const before = await api.get(issuersPath(B.tenants.live.tenantId), OPERATOR_TOKEN);
      const r = await put(B.tenants.live.tenantId, { issuers: [{ issuer: idp.url, audience: AUD }] });
      expect(r.status, r.text).toBe(409);
      expect(r.body.errorCode).toBe('CONFLICT');
      expect((await api.get(issuersPath(B.tenants.live.tenantId), OPERATOR_TOKEN)).body).toEqual(before.body);
      // The same issuer for another audience is another pair.
      const other = await put(B.tenants.live.tenantId, { issuers: [{ issuer: idp.url, audience: 'b-app' }] });
      expect(other.status, other.text).toBe(200);
      // Once the holder lets the pair go, another tenant may take it (and the first cannot take it back).
      const test = A.tenants.test.tenantId;
      expect((await put(test, { issuers: [{ issuer: idp.url, audience: 'moving' }] })).status).toBe(200);
      expect((await put(B.tenants.live.tenantId, { issuers: [{ issuer: idp.url, audience: 'moving' }] })).status).toBe(
        409,
      );
      expect((await put(test, { issuers: [] })).status).toBe(200);
      expect((await put(B.tenants.live.tenantId, { issuers: [{ issuer: idp.url, audience: 'moving' }] })).status).toBe(
        200,
      );
      expect((await put(test, { issuers: [{ issuer: idp.url, audience: 'moving' }] })).status).toBe(409);
      expect((await put(B.tenants.live.tenantId, { issuers: [] })).status).toBe(200);
    },
  );
});

describe('tokens of a registered issuer', () => {
  it.each([['RS256'], ['ES256'], ['EdDSA']])(
    'a %s token is a credential of the tenant, in its default context',
    async (alg) => {
      const kid = { RS256: rsa, ES256: ec, EdDSA: ed }[alg]!;
      const token = await idp.sign(kid, { aud: AUD, sub: `user-${alg}`, svc_permissions: ['records:*', 'schemas:*'] });
      const r = await api.get('/v1/ping', token);
      expect(r.status, r.text).toBe(200);
      expect(r.body).toEqual({
        status: 'ok',
        tenantId: A.tenants.live.tenantId,
        contextId: A.tenants.live.contextId,
        livemode: true,
      });
    },
  );

  it('its writes carry its user; it reads only its own records, like a minted token bound to that user', async () => {
    const root = A.tenants.live.rootKey;
    const typeName = `jwt_${randomUUID().slice(0, 8)}`;
    expect(
      (
        await api.post('/v1/schemas', root, {
          typeName,
          displayName: 'jwt',
          allowedSurfaces: ['record'],
          fields: [{ fieldId: 'n', fieldType: 'number' }],
        })
      ).status,
    ).toBe(201);
    const alice = await idp.sign(rsa, { aud: AUD, sub: 'alice', svc_permissions: 'records:* schemas:r' });
    const bob = await idp.sign(ec, { aud: AUD, sub: 'bob', svc_permissions: ['records:*'] });
    const mine = await api.post('/v1/records', alice, { typeName, payload: { n: 1 } });
    expect(mine.status, mine.text).toBe(201);
    expect(mine.body.userId).toBe('alice');
    const theirs = await api.post('/v1/records', bob, { typeName, payload: { n: 2 } });
    expect(theirs.body.userId).toBe('bob');
    // Writing for another user is refused, as for a token bound to a user.
    const minted = (await api.post('/v1/tokens', root, { scope: { allowedActions: ['records:*'] }, userId: 'alice' }))
      .body.token;
    const forBob = { typeName, payload: { n: 3 }, userId: 'bob' };
    const [jwtAnswer, mintedAnswer] = [
      await api.post('/v1/records', alice, forBob),
      await api.post('/v1/records', minted, forBob),
    ];
    expect(jwtAnswer.status).toBe(mintedAnswer.status);
    expect(jwtAnswer.status).toBeGreaterThanOrEqual(400);
    const list = await api.get(`/v1/records?typeName=${typeName}`, alice);
    expect(list.status, list.text).toBe(200);
    expect(list.body.data.map((x: any) => x.id)).toEqual([mine.body.id]);
    expect((await api.get(`/v1/records/${theirs.body.id}`, alice)).status).toBe(404);
    expect((await api.get(`/v1/records/${theirs.body.id}`, minted)).status).toBe(404);
    // A missing permission is the uniform 403.
    expect(
      (
        await api.post('/v1/schemas', bob, {
          typeName: `${typeName}_x`,
          displayName: 'x',
          allowedSurfaces: ['record'],
          fields: [],
        })
      ).status,
    ).toBe(403);
  });

  it('a token whose audiences name registrations of two tenants belongs to neither: the uniform 401', async () => {
    const second = `aud-${randomUUID()}`;
    const other = B.tenants.live.tenantId;
    expect((await put(other, { issuers: [{ issuer: idp.url, audience: second }] })).status).toBe(200);
    try {
      // Each audience alone reaches its own tenant...
      const mine = await api.get('/v1/ping', await idp.sign(rsa, { aud: AUD, sub: 'u' }));
      expect(mine.body.tenantId).toBe(A.tenants.live.tenantId);
      const theirs = await api.get('/v1/ping', await idp.sign(rsa, { aud: second, sub: 'u' }));
      expect(theirs.body.tenantId).toBe(other);
      // ...both together, in either order, reach neither.
      for (const aud of [
        [AUD, second],
        [second, AUD],
      ])
        await expectUniform401(await idp.sign(rsa, { aud, sub: 'u' }), `aud ${aud.join(', ')}`);
    } finally {
      expect((await put(other, { issuers: [] })).status).toBe(200);
    }
  });

  it('without a permissions claim it has the registration’s defaultPermissions, else none', async () => {
    const token = await idp.sign(rsa, { aud: AUD, sub: 'nobody' });
    expect((await api.get('/v1/ping', token)).status).toBe(200);
    expect((await api.get('/v1/records', token)).status).toBe(403);
  });

  it('a token expired 30 s ago or valid from 30 s on is accepted (60 s of skew); 120 s is a uniform 401', async () => {
    const base = { aud: AUD, sub: 'skew', svc_permissions: ['records:r'] };
    expect(
      (await api.get('/v1/ping', await idp.sign(rsa, { ...base, iat: now() - 600, exp: now() - 30 }))).status,
    ).toBe(200);
    expect((await api.get('/v1/ping', await idp.sign(rsa, { ...base, nbf: now() + 30 }))).status).toBe(200);
    await expectUniform401(await idp.sign(rsa, { ...base, iat: now() - 600, exp: now() - 120 }), 'expired 120 s ago');
    await expectUniform401(await idp.sign(rsa, { ...base, nbf: now() + 120 }), 'not valid for 120 s');
    await expectUniform401(await idp.sign(rsa, { ...base, exp: undefined }), 'no exp');
  });

  it(
    'wrong audience, wrong issuer, a bad signature, alg none and an HMAC token keyed with the public key: ' +
      'each the uniform 401',
    async () => {
      const claims = { aud: AUD, sub: 'mallory', svc_permissions: ['*'] };
      await expectUniform401(await idp.sign(rsa, { ...claims, aud: 'https://other.example' }), 'wrong audience');
      await expectUniform401(await idp.sign(rsa, { ...claims, iss: `${idp.url}/other` }), 'wrong issuer');
      const good = await idp.sign(rsa, claims);
      const [h, , s] = good.split('.');
      await expectUniform401(
        `${h}.${b64({ ...claims, iss: idp.url, exp: now() + 600, sub: 'root' })}.${s}`,
        'payload changed after signing',
      );
      await expectUniform401(
        `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ ...claims, iss: idp.url, exp: now() + 600 })}.`,
        'alg none',
      );
      for (const secret of [idp.publicPem(rsa), JSON.stringify(await fetch(idp.jwksUrl).then((r) => r.json()))]) {
        const head = b64({ alg: 'HS256', typ: 'JWT', kid: rsa });
        const body = b64({ ...claims, iss: idp.url, exp: now() + 600 });
        const mac = createHmac('sha256', secret).update(`${head}.${body}`).digest('base64url');
        await expectUniform401(`${head}.${body}.${mac}`, 'HS256 keyed with the public key');
      }
      await expectUniform401('eyJhbGciOiJSUzI1NiJ9.bm90IGpzb24.c2ln', 'a payload that is not JSON');
      // Signed with a key of the attacker's, named by the issuer's kid and carried in the header (jwk) and by URL
      // (jku): neither is used.
      const attacker = await generateKeyPair('ES256');
      const forged = await new SignJWT({ ...claims, iss: idp.url })
        .setProtectedHeader({
          alg: 'ES256',
          kid: ec,
          jwk: await exportJWK(attacker.publicKey),
          jku: `${idp.url}/attacker-jwks`,
        })
        .setExpirationTime('10m')
        .sign(attacker.privateKey);
      await expectUniform401(forged, 'a key of the token’s own choosing');
      expect(idp.requests).not.toContain('/attacker-jwks');
    },
  );

  it('an unregistered issuer is a uniform 401 and nothing is fetched from it', async () => {
    const stranger = await LocalIssuer.start();
    try {
      const kid = await stranger.addKey('RS256');
      await expectUniform401(
        await stranger.sign(kid, { aud: AUD, sub: 'x', svc_permissions: ['*'] }),
        'unregistered issuer',
      );
      expect(stranger.requests).toEqual([]);
    } finally {
      await stranger.close();
    }
  });

  it(
    'keys that cannot be fetched: the uniform 401 without asking again before the refetch interval, one log ' +
      'line; then they are fetched again',
    async () => {
      const down = await LocalIssuer.start();
      try {
        const kid = await down.addKey('ES256');
        down.failing = true;
        const tenant = B.tenants.test.tenantId;
        expect((await put(tenant, { issuers: [{ issuer: down.url, audience: 'x' }] })).status).toBe(200);
        const token = await down.sign(kid, { aud: 'x', sub: 'u', svc_permissions: ['records:r'] });
        const started = Date.now();
        await expectUniform401(token, 'discovery unreachable');
        await expectUniform401(token, 'discovery unreachable, again');
        // One attempt per interval begun, in each process that answers.
        const intervals = Math.ceil((Date.now() - started) / REFETCH_MS) * (THROUGH_ROUTER ? 2 : 1);
        expect(down.requests.length).toBeGreaterThanOrEqual(1);
        expect(down.requests.length).toBeLessThanOrEqual(intervals);
        if (!THROUGH_ROUTER)
          expect(logLines.filter((l) => l.startsWith(`jwt: keys of issuer ${down.url} unusable`)).length).toBe(
            down.requests.length,
          );
        expect(logLines.join('\n')).not.toContain(token);
        down.failing = false;
        await new Promise((ok) => setTimeout(ok, REFETCH_MS + 50));
        expect((await api.get('/v1/ping', token)).status).toBe(200);
        expect((await put(tenant, { issuers: [] })).status).toBe(200);
      } finally {
        await down.close();
      }
    },
  );

  it('key rotation: a new kid is fetched; the old one works until it leaves the key set', async () => {
    const claims = { aud: AUD, sub: 'rotation', svc_permissions: ['records:r'] };
    const oldToken = await idp.sign(rsa, claims);
    expect((await api.get('/v1/ping', oldToken)).status).toBe(200);
    // Past the refetch interval, so the unknown kid may fetch at once.
    await new Promise((ok) => setTimeout(ok, REFETCH_MS + 50));
    const rotated = await idp.addKey('RS256', 'rotated');
    const fetchesBefore = idp.requests.filter((p) => p === '/jwks').length;
    expect((await api.get('/v1/ping', await idp.sign(rotated, claims))).status).toBe(200);
    expect(idp.requests.filter((p) => p === '/jwks').length).toBe(fetchesBefore + 1);
    expect((await api.get('/v1/ping', oldToken)).status).toBe(200);
    idp.unpublish(rsa);
    // Within its maximum age the cached key set still holds the old key; once that age has passed, the next token
    // fetches the set again (in every process that answers), and the old key is gone from it.
    await new Promise((ok) => setTimeout(ok, MAX_AGE_MS + 200));
    for (let i = 0; i < 3; i++) await expectUniform401(oldToken, 'signed with the retired key');
    await expectUniform401(await idp.sign(rsa, claims), 'newly signed with the retired key');
    expect((await api.get('/v1/ping', await idp.sign(rotated, claims))).status).toBe(200);
  });

  it('unknown kids fetch the key set at most once per refetch interval', async () => {
    await new Promise((ok) => setTimeout(ok, REFETCH_MS + 50));
    const before = idp.requests.filter((p) => p === '/jwks').length;
    const payload = b64({ iss: idp.url, aud: AUD, exp: now() + 600 });
    const forged = `${b64({ alg: 'RS256', kid: 'nope' })}.${payload}.${'A'.repeat(342)}`;
    const started = Date.now();
    for (let i = 0; i < 20; i++) expect((await api.get('/v1/ping', forged)).status).toBe(401);
    // One fetch at most per interval begun (a slow machine may see the interval pass during the loop), in each
    // process that answers (through the router: the two query replicas, each with its own keys).
    const intervals = Math.ceil((Date.now() - started) / REFETCH_MS);
    expect(idp.requests.filter((p) => p === '/jwks').length - before).toBeLessThanOrEqual(
      intervals * (THROUGH_ROUTER ? 2 : 1),
    );
    expect(intervals).toBeLessThan(20);
  });

  it(
    'the context claim chooses a context of the tenant; another tenant’s, an unknown or a deleted one ' +
      'reaches nothing (uniform 401)',
    async () => {
      const root = A.tenants.live.rootKey;
      const ctx = await api.post('/v1/contexts', root, { name: `jwt-${randomUUID().slice(0, 8)}` });
      expect(ctx.status, ctx.text).toBe(201);
      const claims = { aud: AUD, sub: 'ctx-user', svc_permissions: ['records:*', 'schemas:*'] };
      const inCtx = await idp.sign(ed, { ...claims, svc_context: ctx.body.id });
      const ping = await api.get('/v1/ping', inCtx);
      expect(ping.body.contextId).toBe(ctx.body.id);
      // It cannot choose another context with the header: it is confined like a minted token.
      expect((await api.get('/v1/records', inCtx, { 'x-context-id': A.tenants.live.contextId })).status).toBe(404);
      for (const [why, contextId] of [
        ['another tenant’s default context', B.tenants.live.contextId],
        ['the same account’s test tenant', A.tenants.test.contextId],
        ['an unknown context', randomUUID()],
        ['a context id of the wrong type', 42],
      ] as const) {
        await expectUniform401(await idp.sign(ed, { ...claims, svc_context: contextId }), why);
      }
      expect((await api.del(`/v1/contexts/${ctx.body.id}`, root)).status).toBe(204);
      await expectUniform401(inCtx, 'a deleted context');
    },
  );

  it('data scopes from the claims filter reads and writes as a minted token’s do', async () => {
    const root = A.tenants.live.rootKey;
    const typeName = `scoped_${randomUUID().slice(0, 8)}`;
    expect(
      (
        await api.post('/v1/schemas', root, {
          typeName,
          displayName: 's',
          allowedSurfaces: ['record'],
          fields: [{ fieldId: 'n', fieldType: 'number' }],
        })
      ).status,
    ).toBe(201);
    const a = await api.post('/v1/records', root, { typeName, payload: { n: 1 }, scopes: ['org:a'] });
    const b = await api.post('/v1/records', root, { typeName, payload: { n: 2 }, scopes: ['org:b'] });
    expect([a.status, b.status]).toEqual([201, 201]);
    const jwt = await idp.sign(ed, { aud: AUD, svc_scopes: ['org:a'], svc_permissions: ['records:*'] });
    const minted = (
      await api.post('/v1/tokens', root, { scope: { allowedActions: ['records:*'], dataScope: { scopes: ['org:a'] } } })
    ).body.token;
    const pairs = [
      ['jwt', jwt],
      ['minted', minted],
    ];
    for (const [who, token] of pairs) {
      const list = await api.get(`/v1/records?typeName=${typeName}`, token);
      expect(
        list.body.data.map((x: any) => x.id),
        who,
      ).toEqual([a.body.id]);
      expect((await api.get(`/v1/records/${b.body.id}`, token)).status, who).toBe(404);
    }
    for (const [who, token] of pairs) {
      const created = await api.post('/v1/records', token, { typeName, payload: { n: 3 } });
      expect(created.status, who).toBe(201);
      expect(created.body.scopes, who).toEqual(['org:a']);
      expect(
        (await api.post('/v1/records', token, { typeName, payload: { n: 4 }, scopes: ['org:b'] })).status,
        who,
      ).toBe(403);
    }
  });

  it('it mints narrower tokens as a minted token does: never more reach, never a longer life', async () => {
    const exp = now() + 300;
    const jwt = await idp.sign(ed, { aud: AUD, sub: 'minter', exp, svc_permissions: ['records:r', 'records:c'] });
    const child = await api.post('/v1/tokens', jwt, {
      scope: { allowedActions: ['records:r'] },
      expiresInSeconds: 3600,
    });
    expect(child.status, child.text).toBe(201);
    expect(Date.parse(child.body.expiresAt)).toBeLessThanOrEqual(exp * 1000);
    expect((await api.get('/v1/ping', child.body.token)).body.contextId).toBe(A.tenants.live.contextId);
    expect((await api.post('/v1/tokens', jwt, { scope: { allowedActions: ['records:d'] } })).status).toBe(403);
    expect(
      (await api.post('/v1/tokens', jwt, { scope: { allowedActions: ['records:r'] }, userId: 'someone-else' })).status,
    ).toBe(403);
    // It may revoke what it minted; another user's JWT of the same provider may not.
    const other = await idp.sign(ed, { aud: AUD, sub: 'other', svc_permissions: ['records:r'] });
    expect((await api.del(`/v1/tokens/${child.body.id}`, other)).status).toBe(404);
    expect((await api.del(`/v1/tokens/${child.body.id}`, jwt)).status).toBe(204);
    expect((await api.get('/v1/ping', child.body.token)).status).toBe(401);
  });

  it(
    'a torn-down tenant: its tokens stop working, its registrations are gone (404) and its pairs free for ' +
      'another tenant',
    async () => {
      const doomed = await api.newAccount();
      const tenant = doomed.tenants.test.tenantId;
      expect((await put(tenant, { issuers: [{ issuer: idp.url, audience: 'doomed' }] })).status).toBe(200);
      const token = await idp.sign(ed, { aud: 'doomed', sub: 'u', svc_permissions: ['records:r'] });
      expect((await api.get('/v1/ping', token)).body.tenantId).toBe(tenant);
      expect((await api.del(`/developer/tenants/${tenant}`, doomed.developerToken)).status).toBe(204);
      await expectUniform401(token, 'tenant torn down');
      expect((await api.get(issuersPath(tenant), OPERATOR_TOKEN)).status).toBe(404);
      expect((await put(tenant, { issuers: [] })).status).toBe(404);
      expect(
        (await put(doomed.tenants.live.tenantId, { issuers: [{ issuer: idp.url, audience: 'doomed' }] })).status,
      ).toBe(200);
      expect((await api.get('/v1/ping', token)).body.tenantId).toBe(doomed.tenants.live.tenantId);
    },
  );

  it('a registration removed or changed holds on the next request', async () => {
    const tenant = A.tenants.live.tenantId;
    const token = await idp.sign(ed, { aud: AUD, sub: 'gone', svc_permissions: ['records:r'] });
    expect((await api.get('/v1/ping', token)).status).toBe(200);
    expect((await put(tenant, { issuers: [] })).status).toBe(200);
    await expectUniform401(token, 'issuer removed');
    // Registered again with the user read from another claim.
    expect(
      (
        await put(tenant, {
          issuers: [{ issuer: idp.url, audience: AUD, jwksUrl: idp.jwksUrl, claims: { userId: 'email' } }],
        })
      ).status,
    ).toBe(200);
    const byEmail = await idp.sign(ed, {
      aud: AUD,
      sub: 'gone',
      email: 'someone@example.test',
      svc_permissions: ['records:*'],
    });
    const typeName = `email_${randomUUID().slice(0, 8)}`;
    expect(
      (
        await api.post('/v1/schemas', A.tenants.live.rootKey, {
          typeName,
          displayName: 'e',
          allowedSurfaces: ['record'],
          fields: [],
        })
      ).status,
    ).toBe(201);
    const r = await api.post('/v1/records', byEmail, { typeName, payload: {} });
    expect(r.status, r.text).toBe(201);
    expect(r.body.userId).toBe('someone@example.test');
    expect((await put(tenant, { issuers: [{ issuer: idp.url, audience: AUD }] })).status).toBe(200);
  });
});
