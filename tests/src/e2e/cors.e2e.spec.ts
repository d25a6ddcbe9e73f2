/**
 * CORS (CORS_ORIGINS; docs/api.md "CORS"): a page on a listed origin may call the API with a bearer token. Preflights
 * answer 204 with the methods and request headers the API takes; every answer to a listed origin (successes, each
 * kind of refusal, the SSE streams) names that origin and exposes the headers a page needs to read; an origin not
 * listed gets no allow-origin at all; unset, the service sends no CORS header and OPTIONS stays a 404.
 * The browser's side of it (a real Chromium on another origin) is tests/src/browser/cors.browser.spec.ts.
 */
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inProcessOnly, startService, type TestService } from '../support/service';

const APP = 'http://app.example.test:5173';
const OTHER_APP = 'https://admin.example.test';
const STRANGER = 'http://evil.example.test';
const EXPOSED = ['x-request-id', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'retry-after', 'deprecation', 'sunset'];
const REQUEST_HEADERS = [
  'authorization',
  'content-type',
  'idempotency-key',
  'service-version',
  'x-context-id',
  'x-request-id',
  'last-event-id',
];

const list = (v: string | null) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
const corsOf = (h: Headers) => [...h.keys()].filter((k) => k.startsWith('access-control-'));

/** A preflight as Chromium sends it before a JSON POST with a bearer token. */
const preflight = (
  base: string,
  path: string,
  origin: string,
  method = 'POST',
  headers = 'authorization,content-type',
) =>
  fetch(`${base}${path}`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });

/**
 * An actual answer to a listed origin: that origin (never `*` with a list), the exposed headers, Vary: Origin, no
 * credentials.
 */
function expectAllowed(r: Response, origin: string) {
  expect(r.headers.get('access-control-allow-origin'), `${r.status} ${r.url}`).toBe(origin);
  expect(list(r.headers.get('access-control-expose-headers'))).toEqual(EXPOSED);
  expect(list(r.headers.get('vary'))).toContain('origin');
  expect(r.headers.get('access-control-allow-credentials')).toBeNull();
  expect(r.headers.get('x-request-id')).toBeTruthy();
}

describe('CORS_ORIGINS naming two origins', () => {
  let svc: TestService;
  let root: string;
  const send = (path: string, init: RequestInit & { origin?: string } = {}) =>
    fetch(`${svc.url}${path}`, {
      ...init,
      headers: { origin: init.origin ?? APP, ...((init.headers as Record<string, string>) ?? {}) },
    });
  const authed = (extra: Record<string, string> = {}) => ({
    authorization: `Bearer ${root}`,
    'content-type': 'application/json',
    ...extra,
  });

  beforeAll(async () => {
    svc = await startService({ env: { CORS_ORIGINS: `${APP}, ${OTHER_APP}` } });
    root = svc.bootstrap.tenants.test.rootKey;
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it(
    'a preflight from a listed origin is 204 with the methods, the request headers the API takes and a max ' + 'age',
    async () => {
      // The embedded storage endpoint's presigned uploads too (a page may PUT a file to its upload URL).
      for (const [path, method] of [
        ['/v1/records', 'POST'],
        ['/v1/records/abc', 'PATCH'],
        ['/v1/rag', 'POST'],
        ['/v1/search', 'POST'],
        ['/v1/records/abc', 'DELETE'],
        ['/storage/uploads/abc?sig=x', 'PUT'],
      ]) {
        const r = await preflight(svc.url, path, OTHER_APP, method, REQUEST_HEADERS.join(','));
        expect(r.status, path).toBe(204);
        expect(await r.text()).toBe('');
        expect(r.headers.get('access-control-allow-origin')).toBe(OTHER_APP);
        expect(list(r.headers.get('access-control-allow-methods'))).toEqual([
          'get',
          'head',
          'post',
          'put',
          'patch',
          'delete',
        ]);
        expect(list(r.headers.get('access-control-allow-headers'))).toEqual(REQUEST_HEADERS);
        expect(Number(r.headers.get('access-control-max-age'))).toBeGreaterThan(0);
        expect(list(r.headers.get('vary'))).toContain('origin');
        expect(r.headers.get('access-control-allow-credentials')).toBeNull();
      }
    },
  );

  it(
    'an origin not listed (nor one differing only by port or scheme) gets no allow-origin: the browser ' + 'refuses',
    async () => {
      for (const origin of [STRANGER, 'http://app.example.test:5174', 'https://app.example.test:5173', 'null']) {
        const pre = await preflight(svc.url, '/v1/records', origin);
        expect(pre.headers.get('access-control-allow-origin'), origin).toBeNull();
        expect(pre.headers.get('access-control-allow-methods')).toBeNull();
        const r = await send('/v1/ping', { origin, headers: authed() });
        expect(r.status).toBe(200);
        expect(corsOf(r.headers), origin).toEqual([]);
        expect(list(r.headers.get('vary'))).toContain('origin');
      }
      // No Origin at all (a server, curl): answered as before, with Vary so a cache never hands it to a page.
      const plain = await fetch(`${svc.url}/v1/ping`, { headers: authed() });
      expect(corsOf(plain.headers)).toEqual([]);
      expect(list(plain.headers.get('vary'))).toContain('origin');
    },
  );

  it(
    'every kind of answer to a listed origin carries it: success, 201, 400, 401, 404, an unknown route, the ' +
      'burst-limit headers',
    async () => {
      const ok = await send('/v1/ping', { headers: authed() });
      expect(ok.status).toBe(200);
      expectAllowed(ok, APP);
      const created = await send('/v1/schemas', {
        method: 'POST',
        headers: authed(),
        body: JSON.stringify({
          typeName: 'corsnote',
          displayName: 'Note',
          allowedSurfaces: ['record'],
          fields: [{ fieldId: 'title', fieldType: 'string', searchable: true }],
        }),
      });
      expect(created.status, await created.clone().text()).toBe(201);
      expectAllowed(created, APP);
      // A counted write refused by validation: the burst limit's headers are there for the page to read.
      const invalid = await send('/v1/records', { method: 'POST', headers: authed(), body: '{}' });
      expect(invalid.status).toBe(400);
      expectAllowed(invalid, APP);
      expect(invalid.headers.get('x-ratelimit-limit')).toMatch(/^\d+$/);
      expect(((await invalid.json()) as { requestId: string }).requestId).toBe(invalid.headers.get('x-request-id'));
      const anonymous = await send('/v1/records', { headers: { 'content-type': 'application/json' } });
      expect(anonymous.status).toBe(401);
      expectAllowed(anonymous, APP);
      const missing = await send('/v1/records/00000000-0000-4000-8000-000000000000', { headers: authed() });
      expect(missing.status).toBe(404);
      expectAllowed(missing, APP);
      const nowhere = await send('/v1/no-such-thing', { headers: authed() });
      expect(nowhere.status).toBe(404);
      expectAllowed(nowhere, APP);
      // A bad Service-Version is refused in the first hook, after the CORS headers are set.
      const version = await send('/v1/records', { headers: authed({ 'service-version': '1999-01-01' }) });
      expect(version.status).toBe(400);
      expectAllowed(version, APP);
    },
  );

  it("the console, its files and the API page's renderer say Vary: Origin beside Vary: Accept-Encoding", async () => {
    const page = await send('/console', {});
    expect(page.status).toBe(200);
    const html = await page.text();
    const files = [...html.matchAll(/(?:src|href)="\/?(console\/[^"]+)"/g)].map((m) => `/${m[1]}`);
    expect(files.length, html.slice(0, 400)).toBeGreaterThanOrEqual(2);
    for (const path of ['/console', ...files, '/docs/api-reference.js']) {
      const r = await send(path, { headers: { 'accept-encoding': 'gzip' } });
      expect(r.status, path).toBe(200);
      expectAllowed(r, APP);
      expect(list(r.headers.get('vary')), path).toEqual(expect.arrayContaining(['origin', 'accept-encoding']));
    }
  });

  it.skipIf(!!inProcessOnly)(
    'a body over the limit (413) from a listed origin carries it (the router answers its own 413, docs/deployment.md)',
    async () => {
      const big = JSON.stringify({ typeName: 'corsnote', payload: { title: 'b'.repeat(8 * 1024 * 1024) } });
      const r = await send('/v1/records', { method: 'POST', headers: authed(), body: big });
      expect(r.status).toBe(413);
      expectAllowed(r, APP);
    },
  );

  it('a RAG answer streamed over SSE to a listed origin carries it', async () => {
    const r = await send('/v1/rag', {
      method: 'POST',
      headers: authed(),
      body: JSON.stringify({ query: 'anything at all?' }),
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expectAllowed(r, APP);
    expect(await r.text()).toMatch(/event: done/);
  });

  it('the change stream (GET /v1/changes, SSE, resumed with Last-Event-ID) to a listed origin carries it', async () => {
    // A connection of its own, destroyed after the head: the stream never ends by itself.
    const agent = new Agent();
    try {
      const r = await undiciFetch(`${svc.url}/v1/changes`, {
        dispatcher: agent,
        headers: { origin: APP, ...authed({ 'last-event-id': '0' }) },
      });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expectAllowed(r as unknown as Response, APP);
    } finally {
      await agent.destroy();
    }
  });

  it('OPTIONS without Access-Control-Request-Method is no preflight: the unknown route it always was', async () => {
    const r = await send('/v1/records', { method: 'OPTIONS' });
    expect(r.status).toBe(404);
    expectAllowed(r, APP);
  });
});

describe('CORS_ORIGINS=*', () => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startService({ env: { CORS_ORIGINS: '*', EDGE_RATE_LIMIT_PER_MINUTE: '8' } });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('any origin is answered `*` (no Vary: every origin gets the same answer), still without credentials', async () => {
    const pre = await preflight(svc.url, '/v1/search', STRANGER);
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    expect(list(pre.headers.get('access-control-allow-headers'))).toEqual(REQUEST_HEADERS);
    const r = await fetch(`${svc.url}/healthz`, { headers: { origin: STRANGER } });
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(list(r.headers.get('access-control-expose-headers'))).toEqual(EXPOSED);
    expect(list(r.headers.get('vary'))).not.toContain('origin');
    expect(r.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it.skipIf(!!inProcessOnly)(
    "the edge flood ceiling's 429 carries it and exposes Retry-After; preflights are not counted",
    async () => {
      // In-process only: through the router every role process keeps a ceiling of its own.
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 12; i++) {
        // Preflights between the requests do not spend the ceiling.
        expect((await preflight(svc.url, '/healthz', STRANGER, 'GET')).status).toBe(204);
        last = await fetch(`${svc.url}/healthz`, { headers: { origin: STRANGER } });
        statuses.push(last.status);
        if (last.status === 429) break;
      }
      // 8 per minute: a 429 within 12 GETs even if a new minute began mid-loop, and no preflight before it was refused.
      expect(statuses.at(-1), statuses.join(',')).toBe(429);
      expect(last!.headers.get('access-control-allow-origin')).toBe('*');
      expect(list(last!.headers.get('access-control-expose-headers'))).toContain('retry-after');
      expect(Number(last!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    },
  );
});

describe('CORS_ORIGINS unset', () => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startService();
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('sends no CORS header at all, and a preflight is the 404 of an unknown route', async () => {
    const pre = await preflight(svc.url, '/v1/records', APP);
    expect(pre.status).toBe(404);
    expect(corsOf(pre.headers)).toEqual([]);
    const r = await fetch(`${svc.url}/healthz`, { headers: { origin: APP } });
    expect(r.status).toBe(200);
    expect(corsOf(r.headers)).toEqual([]);
    expect(r.headers.get('vary')).toBeNull();
  });
});
