import { Agent, fetch, type RequestInit, type Response } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeCatalogue } from '@svc/deploy';
import { serverUrl } from '../support/engines';
import { OPERATOR_TOKEN, type Api } from '../support/service';
import { NGINX } from '../support/router';
import { brokers, SKIP_REASON } from './kafka-support';
import { Topology } from './topology';

/**
 * The shipped router (deploy/k8s/router.nginx.conf in nginx, only its upstream addresses changed) in front of
 * the split deployment: every route of every role is reachable through it, everything it answers itself is the
 * service's JSON error body, and the roles behind it count the per-address ceiling per client, not per router.
 */
const skip = !brokers
  ? SKIP_REASON
  : !serverUrl('postgres')
    ? 'DATABASE_URL not set (the split roles share a PostgreSQL)'
    : !NGINX
      ? 'nginx is not installed'
      : undefined;
const CEILING = 40;
/** The one origin the roles' CORS_ORIGINS lists. */
const APP = 'http://app.example.test:5173';

describe.skipIf(!!skip)(`the shipped router in front of the split roles${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let t: Topology;
  let api: Api;
  let root: string;

  beforeAll(async () => {
    t = await Topology.start({
      kafkaBrokers: brokers!,
      env: { EDGE_RATE_LIMIT_PER_MINUTE: String(CEILING), CORS_ORIGINS: APP },
    });
    api = t.api;
    root = t.bootstrap.tenants.test.rootKey;
  }, 300_000);

  afterAll(async () => {
    await t?.stop();
  }, 60_000);

  /** A request to the router from the loopback address `from` (127.0.0.0/8: each a different client address). */
  const from = (address: string) => new Agent({ localAddress: address });
  const send = (path: string, init: RequestInit = {}) => fetch(`${t.router.url}${path}`, init);
  const expectServiceError = async (r: Response, status: number, errorCode: string) => {
    const text = await r.text();
    expect(r.status, text).toBe(status);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    const body = JSON.parse(text);
    expect(body).toMatchObject({ errorCode, message: expect.any(String), requestId: expect.any(String) });
    expect(r.headers.get('x-request-id'), `${[...r.headers].join('; ')} ${text}`).toBe(body.requestId);
    return body;
  };

  it(
    'reaches every route of every role: each answers as a process serving it does (401 without a ' +
      'credential), never 404',
    async () => {
      const wrong: string[] = [];
      // One client address per route: the roles' per-address ceiling of this suite is small.
      let n = 0;
      for (const r of routeCatalogue()) {
        const client = from(`127.0.${10 + Math.floor(n / 200)}.${(n++ % 200) + 1}`);
        if (r.spec.auth === 'none') continue;
        const path = r.url.replace(/:([A-Za-z]+)/g, (_m, name: string) =>
          name === 'domain' ? 'example.com' : `00000000-0000-4000-8000-00000000000${name.length % 10}`,
        );
        const res = await send(path, {
          method: r.method,
          headers: r.method === 'GET' || r.method === 'DELETE' ? {} : { 'content-type': 'application/json' },
          body: r.method === 'GET' || r.method === 'DELETE' ? undefined : '{}',
          dispatcher: client,
        });
        const text = await res.text();
        // Storage targets check their signature instead of a credential: 403.
        const expected = r.url.startsWith('/storage/') ? [400, 403] : [401];
        if (!expected.includes(res.status))
          wrong.push(`${r.method} ${r.url} (${r.role}) -> ${res.status} ${text.slice(0, 120)}`);
      }
      expect(wrong).toEqual([]);
      // And with credentials, the routes that once went to the wrong role answer.
      const rag = await api.post('/v1/rag', root, { query: 'anything at all?' });
      expect(rag.status, rag.text).toBe(200);
      const q = await api.get('/operator/projections/quarantine', OPERATOR_TOKEN);
      expect(q.status, q.text).toBe(200);
      const description = await api.get('/openapi.json');
      for (const p of ['/v1/records', '/v1/rag', '/v1/search', '/operator/projections/quarantine'])
        expect(Object.keys(description.body.paths)).toContain(p);
    },
    180_000,
  );

  it("answers its own refusals in the service's JSON error body", async () => {
    const auth = { authorization: `Bearer ${root}` };
    await expectServiceError(await send('/v1/records/%zz', { headers: auth }), 400, 'BAD_HTTP');
    await expectServiceError(
      await send(`/v1/records?x=${'a'.repeat(40 * 1024)}`, { headers: auth }),
      431,
      'HEADERS_TOO_LARGE',
    );
    // 16 KB: the router passes it; the service answers its own 431, as it does alone.
    await expectServiceError(
      await send(`/v1/records?x=${'a'.repeat(16 * 1024)}`, { headers: auth }),
      431,
      'HEADERS_TOO_LARGE',
    );
    const big = JSON.stringify({ typeName: 'X', payload: { text: 'b'.repeat(8 * 1024 * 1024) } });
    await expectServiceError(
      await send('/v1/records', {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: big,
      }),
      413,
      'PAYLOAD_TOO_LARGE',
    );
    await expectServiceError(await send('/metrics'), 404, 'NOT_FOUND');
    // A client's valid request id is carried through; an invalid one is replaced. (A request line nginx cannot parse
    // is refused before its headers are read: that answer has the router's own id.)
    const sized = { method: 'POST', headers: { ...auth, 'content-type': 'application/json' } };
    const mine = await expectServiceError(
      await send('/v1/records', {
        ...sized,
        headers: { ...sized.headers, 'x-request-id': 'client-id.1:a' },
        body: big,
      }),
      413,
      'PAYLOAD_TOO_LARGE',
    );
    expect(mine.requestId).toBe('client-id.1:a');
    const forged = await expectServiceError(
      await send('/v1/records', { ...sized, headers: { ...sized.headers, 'x-request-id': 'a"b' }, body: big }),
      413,
      'PAYLOAD_TOO_LARGE',
    );
    expect(forged.requestId).not.toContain('"');
  });

  it(
    "CORS through the router: preflights are answered, every role names the listed origin, the router's own " +
      'refusals carry none',
    async () => {
      const client = from('127.0.0.20');
      const pre = (path: string, method: string, origin = APP) =>
        send(path, {
          method: 'OPTIONS',
          headers: {
            origin,
            'access-control-request-method': method,
            'access-control-request-headers': 'authorization,content-type,x-request-id',
          },
          dispatcher: client,
        });
      // A preflight names no route; whatever the path's role, it is answered.
      for (const [path, method] of [
        ['/v1/records', 'POST'],
        ['/v1/search', 'POST'],
        ['/v1/rag', 'POST'],
        ['/v1/records/abc', 'GET'],
        ['/operator/projections/quarantine/retry', 'POST'],
      ]) {
        const r = await pre(path, method);
        expect(r.status, `${method} ${path}`).toBe(204);
        expect(r.headers.get('access-control-allow-origin')).toBe(APP);
        expect(r.headers.get('access-control-allow-headers')).toContain('x-request-id');
        expect(r.headers.get('access-control-allow-methods')).toContain(method);
      }
      expect(
        (await pre('/v1/records', 'POST', 'http://elsewhere.example.test')).headers.get('access-control-allow-origin'),
      ).toBeNull();

      const cors = { origin: APP, authorization: `Bearer ${root}`, 'content-type': 'application/json' };
      const answers: Array<[string, Response]> = [
        ['command', await send('/v1/records', { method: 'POST', headers: cors, body: '{}', dispatcher: client })],
        ['query', await send('/v1/records?limit=1', { headers: cors, dispatcher: client })],
        [
          'query SSE',
          await send('/v1/rag', {
            method: 'POST',
            headers: cors,
            body: JSON.stringify({ query: 'anything at all?' }),
            dispatcher: client,
          }),
        ],
        [
          'projector',
          await send('/operator/projections/quarantine', {
            headers: { ...cors, authorization: `Bearer ${OPERATOR_TOKEN}` },
            dispatcher: client,
          }),
        ],
      ];
      for (const [role, r] of answers) {
        await r.arrayBuffer();
        expect(r.headers.get('access-control-allow-origin'), role).toBe(APP);
        expect(r.headers.get('access-control-expose-headers'), role).toContain('x-request-id');
        expect(r.headers.get('vary'), role).toMatch(/origin/i);
      }
      expect(answers.map(([, r]) => r.status)).toEqual([400, 200, 200, 200]);
      // The router's own refusals cannot know the roles' CORS_ORIGINS: they carry no CORS header.
      const own = await send('/metrics', { headers: cors, dispatcher: client });
      await expectServiceError(own, 404, 'NOT_FOUND');
      expect(own.headers.get('access-control-allow-origin')).toBeNull();
    },
  );

  it("a client's valid X-Request-Id reaches the role: the role answers under it", async () => {
    const client = from('127.0.0.21');
    for (const [path, init] of [
      ['/v1/records', { method: 'POST', body: '{}' }],
      ['/v1/records/abc', {}],
    ] as const) {
      const r = await send(path, {
        ...init,
        headers: { 'content-type': 'application/json', 'x-request-id': 'through.router:1' },
        dispatcher: client,
      });
      const body = await expectServiceError(r, 401, 'UNAUTHORIZED');
      expect(body.requestId).toBe('through.router:1');
    }
    // An invalid one is replaced by the router's own id, which the role then uses.
    const r = await send('/v1/records', { headers: { 'x-request-id': 'not valid!' }, dispatcher: client });
    const body = await expectServiceError(r, 401, 'UNAUTHORIZED');
    expect(body.requestId).toMatch(/^[0-9a-f]{32}$/);
  });

  it('two clients from two addresses have two ceilings (the roles trust the router as one hop)', async () => {
    const a = from('127.0.0.2');
    const b = from('127.0.0.3');
    // POST /v1/records goes to the one command process; unauthenticated requests count against the address ceiling.
    const post = (agent: Agent) =>
      send('/v1/records', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
        dispatcher: agent,
      });
    const statuses: number[] = [];
    for (let i = 0; i < CEILING + 1; i++) statuses.push((await post(a)).status);
    expect(
      statuses.slice(0, CEILING).filter((s) => s !== 401),
      statuses.join(','),
    ).toEqual([]);
    expect(statuses[CEILING]).toBe(429);
    // Another address is not limited by the first one's requests (before TRUST_PROXY_HOPS both were the router).
    expect((await post(b)).status).toBe(401);
    // A forged X-Forwarded-For from the first address does not escape its ceiling.
    const forged = await send('/v1/records', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.7' },
      body: '{}',
      dispatcher: a,
    });
    expect(forged.status).toBe(429);
  });

  it('a role with no process answering is 503 UNAVAILABLE with Retry-After, in the service body', async () => {
    await t.kill('command', 'SIGKILL');
    try {
      const r = await send('/v1/records', {
        method: 'POST',
        headers: { authorization: `Bearer ${root}`, 'content-type': 'application/json' },
        body: '{}',
      });
      await expectServiceError(r, 503, 'UNAVAILABLE');
      expect(r.headers.get('retry-after')).toBe('1');
    } finally {
      await t.startRole('command');
    }
    const back = await api.get('/v1/ping', root);
    expect(back.status).toBe(200);
  }, 120_000);
});
