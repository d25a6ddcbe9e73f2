/**
 * The client address behind reverse proxies (TRUST_PROXY_HOPS; docs/limits.md, docs/operations.md): the edge
 * per-IP flood ceiling (EDGE_RATE_LIMIT_PER_MINUTE) counts the address the trusted proxies saw, never a value
 * the client wrote itself.
 *
 * The first suites talk to the service directly from loopback and write X-Forwarded-For as a proxy in front of
 * it would have passed it on (`<what the client sent>, <the address the proxy saw>`). The last one runs the
 * shipped router (deploy/k8s/router.nginx.conf, a real nginx, when one is installed) in front of the service,
 * with its two clients connecting from two loopback addresses (127.0.0.2 and 127.0.0.3).
 *
 * The service's clock is injected (real time plus an offset): each test moves it to the start of a fresh minute,
 * so the ceiling's window never ends mid-test.
 */
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { descriptionOf, forgetDescription } from '../support/described';
import { NGINX, Router } from '../support/router';
import { checkedClient, startService, type TestService } from '../support/service';

const CEILING = 5;

/** A clock the tests move forward: real time plus `offset`. */
function testClock() {
  let offset = 0;
  const now = () => new Date(Date.now() + offset);
  return {
    now,
    /** Moves to half a second past the start of the next minute. */
    nextMinute() {
      const t = now().getTime();
      offset += (Math.floor(t / 60_000) + 1) * 60_000 + 500 - t;
    },
  };
}

/** The edge ceiling's refusal: 429 RATE_LIMITED without requestId, with Retry-After. */
function expectCeiling(r: { status: number; body: any; headers: Headers; text: string }) {
  expect(r.status, r.text).toBe(429);
  expect(r.body).toEqual({ message: expect.any(String), errorCode: 'RATE_LIMITED' });
  expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

/** A GET /healthz through `svc`, with X-Forwarded-For as a proxy would pass it on (none: no header at all). */
const from = (svc: TestService, xff?: string) =>
  svc.api.get('/healthz', undefined, xff === undefined ? undefined : { 'x-forwarded-for': xff });

describe('TRUST_PROXY_HOPS=1: the client is the address the one trusted proxy appended', () => {
  const clock = testClock();
  let svc: TestService;

  beforeAll(async () => {
    svc = await startService({
      env: { EDGE_RATE_LIMIT_PER_MINUTE: String(CEILING), TRUST_PROXY_HOPS: '1' },
      hooks: { now: clock.now },
    });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it(
    'two clients (two forwarded addresses) have two ceilings: one spending its ceiling does not refuse the ' + 'other',
    async () => {
      clock.nextMinute();
      for (let i = 0; i < CEILING; i++) expect((await from(svc, '203.0.113.1')).status).toBe(200);
      expectCeiling(await from(svc, '203.0.113.1'));
      // The other client is not refused, and has its whole ceiling.
      for (let i = 0; i < CEILING; i++) expect((await from(svc, '203.0.113.2')).status).toBe(200);
      expectCeiling(await from(svc, '203.0.113.2'));
      expectCeiling(await from(svc, '203.0.113.1'));
      // A request without the header is the TCP peer's (the proxy's own, loopback here): a third ceiling.
      expect((await from(svc)).status).toBe(200);
    },
  );

  it(
    'a left-most entry the client wrote is not believed: the client is counted as the entry the proxy ' + 'appended',
    async () => {
      clock.nextMinute();
      // The client at 198.51.100.7 sends a different forged X-Forwarded-For each time; the proxy appends its real
      // address.
      for (let i = 0; i < CEILING; i++) expect((await from(svc, `10.0.0.${i}, 198.51.100.7`)).status).toBe(200);
      expectCeiling(await from(svc, '10.9.9.9, 198.51.100.7'));
      expectCeiling(await from(svc, '198.51.100.7'));
      expectCeiling(await from(svc, '203.0.113.50, 192.0.2.1, 198.51.100.7'));
      // Neither can a client spend someone else's ceiling by naming it: 203.0.113.9 forging 198.51.100.7 counts as
      // itself.
      expect((await from(svc, '198.51.100.7, 203.0.113.9')).status).toBe(200);
      // Nor escape through a malformed entry: what the proxy appended decides.
      expectCeiling(await from(svc, 'not-an-address, 198.51.100.7'));
    },
  );
});

describe('TRUST_PROXY_HOPS unset: X-Forwarded-For is ignored, the TCP peer is the client', () => {
  const clock = testClock();
  let svc: TestService;

  beforeAll(async () => {
    svc = await startService({ env: { EDGE_RATE_LIMIT_PER_MINUTE: String(CEILING) }, hooks: { now: clock.now } });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('requests naming different forwarded addresses share the one ceiling of their socket address', async () => {
    clock.nextMinute();
    const forged = ['203.0.113.1', '203.0.113.2', '10.0.0.1, 203.0.113.3', '198.51.100.7', '192.0.2.1'];
    expect(forged).toHaveLength(CEILING);
    for (const xff of forged) expect((await from(svc, xff)).status).toBe(200);
    expectCeiling(await from(svc, '203.0.113.4'));
    expectCeiling(await from(svc, '10.0.0.2, 203.0.113.5'));
    expectCeiling(await from(svc));
  });
});

describe.runIf(NGINX)(
  'behind the shipped router (deploy/k8s/router.nginx.conf, one hop) with TRUST_PROXY_HOPS=1',
  () => {
    const clock = testClock();
    let svc: TestService;
    let router: Router | undefined;
    let routerUrl = '';
    const agents: Agent[] = [];

    /** A client of the router connecting from `localAddress`, its answers checked against the description. */
    function clientAt(localAddress: string) {
      const dispatcher = new Agent({ localAddress });
      agents.push(dispatcher);
      const viaAddress = (input: Request | string | URL, init?: RequestInit) => {
        const req = input instanceof Request ? input : new Request(input, init);
        return undiciFetch(req.url, { method: req.method, headers: [...req.headers], dispatcher });
      };
      const client = checkedClient(routerUrl, { fetch: viaAddress as unknown as typeof fetch });
      return async (xff?: string) => {
        const { response, error } = await client.GET('/healthz', {
          headers: xff === undefined ? {} : { 'x-forwarded-for': xff },
        });
        return {
          status: response.status,
          body: response.ok ? undefined : error,
          headers: response.headers,
          text: JSON.stringify(error ?? ''),
        };
      };
    }

    beforeAll(async () => {
      svc = await startService({
        env: { EDGE_RATE_LIMIT_PER_MINUTE: String(CEILING), TRUST_PROXY_HOPS: '1' },
        hooks: { now: clock.now },
      });
      // The shipped configuration with every role's upstream pointed at this one process of role all.
      const at = [`127.0.0.1:${new URL(svc.url).port}`];
      router = await Router.start({ command: at, query: at, projector: at });
      routerUrl = router.url;
      await descriptionOf(routerUrl);
    });
    afterAll(async () => {
      await Promise.all(agents.map((a) => a.close()));
      await router?.stop();
      if (routerUrl) forgetDescription(routerUrl);
      await svc?.stop();
    });

    it(
      'two clients from two addresses have two ceilings; a forged X-Forwarded-For neither escapes nor ' + 'spends one',
      async () => {
        clock.nextMinute();
        const a = clientAt('127.0.0.2');
        const b = clientAt('127.0.0.3');
        // Client A forges a different left-most address on every request: the router appends 127.0.0.2 each time.
        for (let i = 0; i < CEILING; i++) expect((await a(`10.0.0.${i}`)).status).toBe(200);
        expectCeiling(await a('10.9.9.9'));
        expectCeiling(await a());
        // Client B has its own whole ceiling, even when it names A's address.
        expect((await b('127.0.0.2')).status).toBe(200);
        for (let i = 1; i < CEILING; i++) expect((await b()).status).toBe(200);
        expectCeiling(await b());
      },
    );
  },
);
