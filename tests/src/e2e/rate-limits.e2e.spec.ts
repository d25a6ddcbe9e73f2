/**
 * Rate limits, Service-Version and the erasure stub, end to end (spec "Rate
 * limits", "Versioning", "Erasure (reserved)"; decisions §2 and §10).
 *
 * The service's clock is injected (real time plus an offset): each test moves
 * it to the start of a fresh minute, so a window never ends mid-test and the
 * reset at the top of the minute is reached without waiting. The counted
 * request used to fill a window is a write with an empty body (400 after the
 * gate): cheap, and counted like any write.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WireVersionTable } from '@svc/contracts';
import { loadConfig } from '@svc/deploy';
import { PLAN_RATE_LIMITS, rateLimitOf, secondsToWindowEnd } from '@svc/command-api';
import { freePort, OPERATOR_TOKEN, startService, type Api, type Bootstrap, type TestService } from '../support/service';

const DAY = 86_400_000;
const IP_CEILING = 200;

/** A clock the tests move forward: real time plus `offset`. */
function testClock() {
  let offset = 0;
  const now = () => new Date(Date.now() + offset);
  return {
    now,
    /** Moves to `second` seconds past the start of the next minute. */
    nextMinute(second = 0.5) {
      const t = now().getTime();
      offset += (Math.floor(t / 60_000) + 1) * 60_000 + second * 1000 - t;
    },
  };
}

/** Real-time-relative dates, so the table means the same whenever the suite runs. */
const at = (ms: number) => new Date(Date.now() + ms).toISOString();
const TABLE: WireVersionTable = {
  versions: [
    { version: '2024-01-01', deprecatedAt: at(-400 * DAY), sunsetAt: at(-30 * DAY) }, // expired
    // deprecated (test-only: a successor below), still served
    { version: '2026-08-01', deprecatedAt: at(-30 * DAY), sunsetAt: at(335 * DAY) },
    { version: '2099-01-01', deprecatedAt: null, sunsetAt: null }, // test-only successor
  ],
  floor: '2099-01-01',
};

/** One counted request: a write refused by validation after the gate. */
const counted = (api: Api, token: string, headers?: Record<string, string>) =>
  api.call('POST', '/v1/records', { token, body: {}, headers });
const limitHeaders = (r: { headers: Headers }) => ({
  limit: r.headers.get('x-ratelimit-limit'),
  remaining: r.headers.get('x-ratelimit-remaining'),
});

/** Spends `n` counted requests and checks the headers count down. */
async function spend(api: Api, token: string, n: number, limit: number, usedBefore = 0) {
  for (let i = 1; i <= n; i++) {
    const r = await counted(api, token);
    expect(r.status, r.text).toBe(400);
    expect(limitHeaders(r)).toEqual({ limit: String(limit), remaining: String(limit - usedBefore - i) });
  }
}

const expectRateLimited = (r: { status: number; body: any; headers: Headers; text: string }, limit: number) => {
  expect(r.status, r.text).toBe(429);
  expect(Object.keys(r.body).sort()).toEqual(['errorCode', 'message', 'requestId']);
  expect(r.body.errorCode).toBe('RATE_LIMITED');
  expect(r.body.requestId).toBe(r.headers.get('x-request-id'));
  expect(limitHeaders(r)).toEqual({ limit: String(limit), remaining: '0' });
  const retryAfter = Number(r.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
  return retryAfter;
};

describe('plan table (spec: Free 60, Starter 300, Pro 600, Scale 1,200, Enterprise 1,200 or negotiated)', () => {
  it('maps plans, unknown or unset plans to Free, and honours rateLimitPerMinute only on enterprise', () => {
    expect(PLAN_RATE_LIMITS).toEqual({ free: 60, starter: 300, pro: 600, scale: 1200, enterprise: 1200 });
    expect(rateLimitOf(null)).toBe(60);
    expect(rateLimitOf({})).toBe(60);
    expect(rateLimitOf({ plan: 'platinum' })).toBe(60);
    expect(rateLimitOf({ plan: 'toString' })).toBe(60);
    expect(rateLimitOf({ plan: 'scale' })).toBe(1200);
    expect(rateLimitOf({ plan: 'enterprise', rateLimitPerMinute: null })).toBe(1200);
    expect(rateLimitOf({ plan: 'enterprise', rateLimitPerMinute: 5000 })).toBe(5000);
    expect(rateLimitOf({ plan: 'starter', rateLimitPerMinute: 5000 })).toBe(300);
  });

  it('EDGE_RATE_LIMIT_PER_MINUTE: 20,000 by default, 0 disables, nonsense refused', () => {
    expect(loadConfig({}).edgeRateLimitPerMinute).toBe(20_000);
    expect(loadConfig({ EDGE_RATE_LIMIT_PER_MINUTE: '0' }).edgeRateLimitPerMinute).toBe(0);
    expect(loadConfig({ EDGE_RATE_LIMIT_PER_MINUTE: '500' }).edgeRateLimitPerMinute).toBe(500);
    expect(() => loadConfig({ EDGE_RATE_LIMIT_PER_MINUTE: '-1' })).toThrow(/EDGE_RATE_LIMIT_PER_MINUTE/);
    expect(() => loadConfig({ EDGE_RATE_LIMIT_PER_MINUTE: 'lots' })).toThrow(/EDGE_RATE_LIMIT_PER_MINUTE/);
  });
});

describe('per-account burst limit (in process)', () => {
  const clock = testClock();
  let svc: TestService;
  let api: Api;
  const account = (body: Record<string, unknown> = {}) => api.newAccount(body);

  beforeAll(async () => {
    // A low per-IP ceiling (every test here runs in a fresh minute and stays far below it).
    svc = await startService({
      env: { EDGE_RATE_LIMIT_PER_MINUTE: String(IP_CEILING) },
      hooks: { now: clock.now, wireVersions: TABLE },
    });
    api = svc.api;
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('a Free account gets 429 on its 61st counted request: body, Retry-After, X-RateLimit-* ', async () => {
    clock.nextMinute(30);
    const root = (await account()).tenants.live.rootKey; // no plan: Free
    await spend(api, root, 60, 60);
    const before = clock.now();
    const r = await counted(api, root);
    const after = clock.now();
    const retryAfter = expectRateLimited(r, 60);
    // Seconds to the top of the minute, as seen when the request was counted.
    expect(retryAfter).toBeGreaterThanOrEqual(secondsToWindowEnd(after));
    expect(retryAfter).toBeLessThanOrEqual(secondsToWindowEnd(before));
    // Still refused, nothing stored; a search is refused too.
    expectRateLimited(await api.post('/v1/search', root, { query: 'x', mode: 'TEXT' }), 60);
    expectRateLimited(await api.post('/v1/schemas', root, { typeName: 'late', fields: [] }), 60);
    expect((await api.get('/v1/schemas', root)).body.data).toEqual([]);
  });

  it(
    'sends X-RateLimit-Limit and -Remaining on every counted response (success, 4xx, search) and none on ' + 'reads',
    async () => {
      clock.nextMinute();
      const root = (await account({ plan: 'pro' })).tenants.live.rootKey;
      const s = await api.post('/v1/schemas', root, {
        typeName: 'note',
        displayName: 'Note',
        allowedSurfaces: ['record'],
        fields: [{ fieldId: 'title', fieldType: 'string' }],
      });
      expect(s.status, s.text).toBe(201);
      expect(limitHeaders(s)).toEqual({ limit: '600', remaining: '599' });
      const rec = await api.post('/v1/records', root, { typeName: 'note', payload: { title: 'a' } });
      expect(rec.status, rec.text).toBe(201);
      expect(limitHeaders(rec)).toEqual({ limit: '600', remaining: '598' });
      const missing = await api.del(`/v1/records/${randomUUID()}`, root);
      expect(missing.status).toBe(404);
      expect(limitHeaders(missing)).toEqual({ limit: '600', remaining: '597' });
      const search = await api.post('/v1/search', root, { query: 'a', mode: 'TEXT' });
      expect(search.status, search.text).toBe(200);
      expect(limitHeaders(search)).toEqual({ limit: '600', remaining: '596' });
      const badSearch = await api.post('/v1/search', root, { query: '' });
      expect(badSearch.status).toBe(400);
      expect(limitHeaders(badSearch)).toEqual({ limit: '600', remaining: '595' });
      // Reads: GET, POST lookup (even a refused one) and batch-get carry no headers and spend nothing.
      const reads = [
        await api.get('/v1/schemas', root),
        await api.get(`/v1/records/${rec.body.id}`, root),
        await api.post('/v1/records/lookup', root, {}),
        await api.post('/v1/records/batch-get', root, { ids: [rec.body.id] }),
      ];
      for (const r of reads) expect(limitHeaders(r), r.text).toEqual({ limit: null, remaining: null });
      expect(limitHeaders(await counted(api, root))).toEqual({ limit: '600', remaining: '594' });
    },
  );

  it('GET reads, POST lookups and batch-get still answer once the window is spent', async () => {
    clock.nextMinute();
    const acct = await account({ plan: 'enterprise', rateLimitPerMinute: 3 });
    const root = acct.tenants.live.rootKey;
    const s = await api.post('/v1/schemas', root, {
      typeName: 'item',
      displayName: 'Item',
      allowedSurfaces: ['record'],
      fields: [{ fieldId: 'n', fieldType: 'number' }],
    });
    const rec = await api.post('/v1/records', root, { typeName: 'item', payload: { n: 1 } });
    expect([s.status, rec.status]).toEqual([201, 201]);
    await spend(api, root, 1, 3, 2);
    expectRateLimited(await counted(api, root), 3);
    for (let i = 0; i < 5; i++) {
      expect((await api.get(`/v1/records/${rec.body.id}`, root)).status).toBe(200);
      expect((await api.get('/v1/records?type=item', root)).status).toBe(200);
      expect((await api.post('/v1/records/batch-get', root, { ids: [rec.body.id] })).status).toBe(200);
    }
    expect((await api.post('/v1/records/lookup', root, {})).status).toBe(400); // a read: validated, not rate limited
  });

  it('is shared by every key and token of the account, and separate between accounts', async () => {
    clock.nextMinute();
    const a = await account({ plan: 'enterprise', rateLimitPerMinute: 8 });
    const b = await account({ plan: 'enterprise', rateLimitPerMinute: 8 });
    const liveRoot = a.tenants.live.rootKey;
    const testRoot = a.tenants.test.rootKey;
    // a write: 1
    const minted = await api.post('/v1/tokens', liveRoot, { scope: { allowedActions: ['records:c', 'records:r'] } });
    expect(minted.status, minted.text).toBe(201);
    expect(limitHeaders(minted)).toEqual({ limit: '8', remaining: '7' });
    const scoped = await api.post('/developer/keys', a.developerToken, {
      tenantId: a.tenants.live.tenantId,
      allowedActions: ['records:c'],
    }); // developer portal: not counted
    expect(scoped.status, scoped.text).toBe(201);
    expect(limitHeaders(scoped)).toEqual({ limit: null, remaining: null });
    const credentials = [liveRoot, testRoot, minted.body.token as string, scoped.body.key as string];
    let used = 1;
    for (let i = 0; i < 7; i++) {
      const r = await counted(api, credentials[i % credentials.length]);
      used += 1;
      expect(limitHeaders(r), `request ${i} with credential ${i % credentials.length}`).toEqual({
        limit: '8',
        remaining: String(8 - used),
      });
    }
    for (const c of credentials) expectRateLimited(await counted(api, c), 8);
    // Account B has its own window.
    expect(limitHeaders(await counted(api, b.tenants.live.rootKey))).toEqual({ limit: '8', remaining: '7' });
    expect(limitHeaders(await counted(api, b.tenants.test.rootKey))).toEqual({ limit: '8', remaining: '6' });
  });

  it('resets at the top of the minute (fixed window, not rolling)', async () => {
    clock.nextMinute(45);
    const root = (await account({ plan: 'enterprise', rateLimitPerMinute: 5 })).tenants.live.rootKey;
    await spend(api, root, 5, 5);
    const before = clock.now();
    const retryAfter = expectRateLimited(await counted(api, root), 5);
    expect(retryAfter).toBeGreaterThanOrEqual(secondsToWindowEnd(clock.now()));
    expect(retryAfter).toBeLessThanOrEqual(secondsToWindowEnd(before));
    expect(retryAfter).toBeLessThanOrEqual(15);
    clock.nextMinute(0);
    await spend(api, root, 5, 5);
    expectRateLimited(await counted(api, root), 5);
  });

  it('a plan change (PATCH /operator/accounts/{id}) takes effect on the next request', async () => {
    clock.nextMinute();
    const acct = await account();
    const root = acct.tenants.live.rootKey;
    await spend(api, root, 60, 60);
    expectRateLimited(await counted(api, root), 60);
    const up = await api.patch(`/operator/accounts/${acct.accountId}`, OPERATOR_TOKEN, { plan: 'starter' });
    expect(up.status, up.text).toBe(200);
    // The refused request was counted too (61 so far).
    expect(limitHeaders(await counted(api, root))).toEqual({ limit: '300', remaining: String(300 - 62) });
    const down = await api.patch(`/operator/accounts/${acct.accountId}`, OPERATOR_TOKEN, { plan: 'free' });
    expect(down.status, down.text).toBe(200);
    expectRateLimited(await counted(api, root), 60);
  });

  it('enterprise: 1,200 by default, else the negotiated rateLimitPerMinute, which a PATCH changes', async () => {
    clock.nextMinute();
    const plain = await account({ plan: 'enterprise' });
    expect(limitHeaders(await counted(api, plain.tenants.live.rootKey))).toEqual({ limit: '1200', remaining: '1199' });
    // DEFAULT_PLAN=enterprise
    expect(limitHeaders(await counted(api, svc.bootstrap.tenants.live.rootKey)).limit).toBe('1200');
    const scale = await account({ plan: 'scale', rateLimitPerMinute: 5 }); // negotiated limit ignored off enterprise
    expect(limitHeaders(await counted(api, scale.tenants.live.rootKey)).limit).toBe('1200');
    const negotiated = await account({ plan: 'enterprise', rateLimitPerMinute: 4 });
    const root = negotiated.tenants.live.rootKey;
    await spend(api, root, 4, 4);
    expectRateLimited(await counted(api, root), 4);
    const raised = await api.patch(`/operator/accounts/${negotiated.accountId}`, OPERATOR_TOKEN, {
      rateLimitPerMinute: 10,
    });
    expect(raised.status, raised.text).toBe(200);
    expect(limitHeaders(await counted(api, root))).toEqual({ limit: '10', remaining: '4' });
  });

  describe('Service-Version (injected table: 2024-01-01 expired, 2026-08-01 deprecated, 2099-01-01 current)', () => {
    let boot: Bootstrap;
    beforeAll(() => {
      boot = svc.bootstrap;
    });
    const deprecation = TABLE.versions[1];

    it('a deprecated version is served with Deprecation (RFC 9745) and Sunset (RFC 8594)', async () => {
      const r = await api.get('/v1/schemas', boot.tenants.live.rootKey, { 'service-version': '2026-08-01' });
      expect(r.status, r.text).toBe(200);
      expect(r.headers.get('service-version')).toBe('2026-08-01');
      expect(r.headers.get('deprecation')).toBe(`@${Math.floor(Date.parse(deprecation.deprecatedAt!) / 1000)}`);
      expect(r.headers.get('sunset')).toBe(new Date(deprecation.sunsetAt!).toUTCString());
    });

    it(
      'without the header, the credential pin (stamped at mint: 2026-08-01) decides, deprecation headers ' + 'included',
      async () => {
        const r = await api.get('/v1/schemas', boot.tenants.live.rootKey);
        expect(r.status).toBe(200);
        expect(r.headers.get('service-version')).toBe('2026-08-01');
        expect(r.headers.get('deprecation')).toMatch(/^@\d+$/);
        expect(r.headers.get('sunset')).toMatch(/GMT$/);
      },
    );

    it('a current version has no deprecation headers; without a credential the platform floor is served', async () => {
      const r = await api.get('/v1/schemas', boot.tenants.live.rootKey, { 'service-version': '2099-01-01' });
      expect(r.status).toBe(200);
      expect(r.headers.get('service-version')).toBe('2099-01-01');
      expect(r.headers.get('deprecation')).toBeNull();
      expect(r.headers.get('sunset')).toBeNull();
      const anon = await api.get('/v1/schemas');
      expect(anon.status).toBe(401);
      expect(anon.headers.get('service-version')).toBe('2099-01-01');
      expect(anon.headers.get('deprecation')).toBeNull();
    });

    it('an expired or unpublished version is 400 UNSUPPORTED_WIRE_VERSION naming the supported ones', async () => {
      for (const v of ['2024-01-01', '2025-13-45']) {
        const r = await api.get('/v1/schemas', boot.tenants.live.rootKey, { 'service-version': v });
        expect(r.status, v).toBe(400);
        expect(r.body.errorCode).toBe('UNSUPPORTED_WIRE_VERSION');
        expect(r.body.message).toMatch(/Supported versions: 2026-08-01, 2099-01-01$/);
      }
    });
  });

  it(
    'edge per-IP ceiling: every request of one address counts; over it 429 RATE_LIMITED without a ' +
      'requestId, until the minute ends',
    async () => {
      clock.nextMinute();
      const root = svc.bootstrap.tenants.live.rootKey;
      const statuses = new Map<number, number>();
      const paths = ['/healthz', '/v1/schemas', '/v1/nothing-here'];
      for (let i = 0; i < IP_CEILING; i++) {
        // The flood includes an unknown route on purpose (not described): that one is not checked.
        const r = await (paths[i % 3] === '/v1/nothing-here' ? api.unchecked : api).get(paths[i % 3], root);
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      }
      expect([...statuses.keys()].sort()).toEqual([200, 404]);
      for (const r of [
        await api.get('/healthz'),
        await api.get('/v1/schemas', root),
        await counted(api, root),
        await api.post('/operator/accounts', OPERATOR_TOKEN, {}),
      ]) {
        expect(r.status, r.text).toBe(429);
        expect(r.body).toEqual({ message: expect.any(String), errorCode: 'RATE_LIMITED' }); // no requestId
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(r.headers.get('x-ratelimit-limit')).toBeNull(); // the account limit is not involved
        expect(r.headers.get('x-ratelimit-remaining')).toBeNull();
      }
      clock.nextMinute();
      expect((await api.get('/healthz')).status).toBe(200);
    },
  );

  describe('erasure stub (reserved)', () => {
    it('answers 501 with exactly {error: "not_implemented"} to the root key', async () => {
      const root = svc.bootstrap.tenants.live.rootKey;
      for (const r of [
        await api.post('/v1/erasure-requests', root, { subject: 'x' }),
        await api.post('/v1/erasure-requests', root),
        await api.get(`/v1/erasure-requests/${randomUUID()}`, root),
      ]) {
        expect(r.status, r.text).toBe(501);
        expect(JSON.parse(r.text)).toStrictEqual({ error: 'not_implemented' });
      }
    });

    it('scoped keys (ssk_) and minted tokens (st_) get 403 before the stub runs; no credential is 401', async () => {
      const acct = await account({ plan: 'enterprise' });
      const token = await api.post('/v1/tokens', acct.tenants.live.rootKey, { scope: { allowedActions: ['*'] } });
      const key = await api.post('/developer/keys', acct.developerToken, {
        tenantId: acct.tenants.live.tenantId,
        allowedActions: ['*'],
        crossContext: true,
      });
      expect([token.status, key.status]).toEqual([201, 201]);
      expect(token.body.token).toMatch(/^st_/);
      expect(key.body.key).toMatch(/^ssk_/);
      for (const c of [token.body.token, key.body.key]) {
        for (const r of [
          await api.post('/v1/erasure-requests', c, {}),
          await api.get(`/v1/erasure-requests/${randomUUID()}`, c),
        ]) {
          expect(r.status, r.text).toBe(403);
          expect(r.body.errorCode).toBe('FORBIDDEN');
        }
      }
      expect((await api.post('/v1/erasure-requests', undefined, {})).status).toBe(401);
    });

    it(
      'the caller is judged before the body: a malformed, mistyped or oversize body gets 401 without a ' +
        'credential and 403 with a scoped one',
      async () => {
        const acct = await account({ plan: 'enterprise' });
        const root = acct.tenants.live.rootKey;
        const token = (await api.post('/v1/tokens', root, { scope: { allowedActions: ['records:r'] } })).body
          .token as string;
        const bodies = [
          { raw: '{bad', headers: { 'content-type': 'application/json' } },
          { raw: 'subject=x', headers: { 'content-type': 'text/plain' } },
          {
            raw: JSON.stringify({ subject: 'x'.repeat(12 * 1024 * 1024) }),
            headers: { 'content-type': 'application/json' },
          },
        ];
        for (const b of bodies) {
          const none = await api.call('POST', '/v1/erasure-requests', { ...b, unchecked: true });
          expect(none.status, none.text).toBe(401);
          const scoped = await api.call('POST', '/v1/erasure-requests', { ...b, token, unchecked: true });
          expect(scoped.status, scoped.text).toBe(403);
          expect(scoped.body.errorCode).toBe('FORBIDDEN');
          // A write route: no credential is 401, a credential without records:c is 403, whatever the body.
          expect((await api.call('POST', '/v1/records', { ...b, unchecked: true })).status).toBe(401);
          expect((await api.call('POST', '/v1/records', { ...b, token, unchecked: true })).status).toBe(403);
        }
        // The root key's malformed body is still the body's refusal.
        expect(
          (await api.call('POST', '/v1/records', { ...bodies[0], token: root, unchecked: true })).body.errorCode,
        ).toBe('VALIDATION_ERROR');
        expect(
          (await api.call('POST', '/v1/records', { ...bodies[1], token: root, unchecked: true })).body.errorCode,
        ).toBe('UNSUPPORTED_MEDIA_TYPE');
      },
    );
  });
});

describe('counter store unavailable: fail open', () => {
  let svc: TestService;
  const lines: string[] = [];
  beforeAll(async () => {
    const closed = await freePort(); // nothing listens there
    svc = await startService({ env: { REDIS_URL: `redis://127.0.0.1:${closed}` }, log: (m) => lines.push(m) });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('allows requests beyond the limit and logs that the counters are unavailable', async () => {
    const root = (await svc.api.newAccount()).tenants.live.rootKey; // Free: 60
    for (let i = 0; i < 65; i++) {
      const r = await counted(svc.api, root);
      expect(r.status, r.text).toBe(400);
    }
    expect(lines.some((l) => /did not answer at start/.test(l))).toBe(true);
    expect(lines.some((l) => /rate-limit counters unavailable, allowing requests/.test(l))).toBe(true);
  });
});

describe.runIf(process.env.REDIS_URL)('per-account burst limit on Redis (REDIS_URL)', () => {
  const clock = testClock();
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ env: { REDIS_URL: process.env.REDIS_URL! }, hooks: { now: clock.now } });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('counts in Redis: 429 over the limit, headers on counted responses, reset at the top of the minute', async () => {
    clock.nextMinute();
    const acct = await svc.api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 6 });
    const { live, test } = acct.tenants;
    for (let i = 0; i < 6; i++) {
      const r = await counted(svc.api, i % 2 ? live.rootKey : test.rootKey);
      expect(limitHeaders(r)).toEqual({ limit: '6', remaining: String(5 - i) });
    }
    expectRateLimited(await counted(svc.api, live.rootKey), 6);
    expect((await svc.api.get('/v1/schemas', live.rootKey)).status).toBe(200);
    clock.nextMinute();
    expect(limitHeaders(await counted(svc.api, live.rootKey))).toEqual({ limit: '6', remaining: '5' });
  });
});

/** A redis-server binary this test can start and stop itself (the machine's shared Redis is left alone). */
const REDIS_SERVER = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();

describe.runIf(REDIS_SERVER)('a real Redis stopped and started again under a serving service (fail open)', () => {
  const clock = testClock();
  const lines: string[] = [];
  let svc: TestService;
  let port: number;
  let redis: ChildProcess | undefined;

  /** Starts redis-server on `port` (no persistence: a restart comes back empty) and waits until it answers. */
  async function startRedis() {
    redis = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    for (let i = 0; i < 100; i++) {
      if (spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout.trim() === 'PONG') return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`redis-server did not answer on ${port}`);
  }
  async function stopRedis() {
    const r = redis;
    redis = undefined;
    if (!r || r.exitCode !== null) return;
    const gone = new Promise((res) => r.once('exit', res));
    r.kill('SIGKILL');
    await gone;
  }

  beforeAll(async () => {
    port = await freePort();
    await startRedis();
    svc = await startService({
      env: { REDIS_URL: `redis://127.0.0.1:${port}` },
      hooks: { now: clock.now },
      log: (m) => lines.push(m),
    });
  });
  afterAll(async () => {
    await svc?.stop();
    await stopRedis();
  });

  it(
    'counts in Redis; with Redis stopped every request is allowed and the outage logged once; restarted, ' +
      'counting resumes',
    async () => {
      clock.nextMinute();
      const root = (await svc.api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 5 })).tenants.live.rootKey;
      await spend(svc.api, root, 5, 5);
      expectRateLimited(await counted(svc.api, root), 5);
      // The count lives in Redis, not in the process.
      expect(
        spawnSync('redis-cli', ['-p', String(port), '--scan', '--pattern', 'svc:window:burst:*'], { encoding: 'utf8' })
          .stdout,
      ).toMatch(/burst/);

      await stopRedis();
      for (let i = 0; i < 20; i++) {
        const r = await counted(svc.api, root);
        expect(r.status, r.text).toBe(400); // validation after the gate: the gate let it through
        expect(limitHeaders(r)).toEqual({ limit: '5', remaining: '5' });
      }
      expect((await svc.api.get('/v1/schemas', root)).status).toBe(200);
      expect(lines.filter((l) => /rate-limit counters unavailable, allowing requests/.test(l))).toHaveLength(1);

      await startRedis(); // empty: the window starts again from zero
      let back = false;
      for (let i = 0; i < 100 && !back; i++) {
        await new Promise((r) => setTimeout(r, 100));
        back = limitHeaders(await counted(svc.api, root)).remaining !== '5';
      }
      expect(back).toBe(true);
      clock.nextMinute();
      await spend(svc.api, root, 5, 5);
      expectRateLimited(await counted(svc.api, root), 5);
    },
  );
});
