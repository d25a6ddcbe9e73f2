/**
 * X-Request-Id (docs/api.md "Request ids"): a client's value of 1-128 characters of [A-Za-z0-9._:-] becomes the
 * request's id: echoed in the header of every answer (successes, refusals of each kind, SSE streams), the error
 * body's `requestId`, and the `requestId` of every log line of that request. Any other value is ignored, never refused:
 * the service generates an id as it does when there is none.
 */
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, inProcessOnly, spawnService, startService, type TestService } from '../support/service';
import { tempDir } from '../support/engines';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A generated id: the service's UUID, or through the shipped router (E2E_TARGET=router) the router's 32 hex digits. */
const GENERATED = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/;
const VALID = ['a', 'req-1', 'A.b_c:d-9', `trace:${'x'.repeat(122)}`, '0123456789abcdef0123456789abcdef'];
// 129 characters; a space; a slash; a quote; non-ASCII; empty; two values (Node joins repeated headers with ", ").
const INVALID = ['y'.repeat(129), 'has space', 'a/b', 'a"b', 'café', '', 'one, two'];

describe('X-Request-Id', () => {
  let svc: TestService;
  let root: string;
  const send = (path: string, id: string | undefined, init: RequestInit = {}) =>
    fetch(`${svc.url}${path}`, {
      ...init,
      headers: {
        ...(id === undefined ? {} : { 'x-request-id': id }),
        ...((init.headers as Record<string, string>) ?? {}),
      },
    });
  const auth = () => ({ authorization: `Bearer ${root}`, 'content-type': 'application/json' });

  beforeAll(async () => {
    svc = await startService();
    root = svc.bootstrap.tenants.test.rootKey;
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('a valid id is echoed on a success and is the requestId of every kind of refusal', async () => {
    for (const id of VALID) {
      const ok = await send('/v1/ping', id, { headers: auth() });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-request-id')).toBe(id);
    }
    const refusals: Array<[string, RequestInit, number]> = [
      ['/v1/records', { method: 'POST', headers: auth(), body: '{}' }, 400], // validation
      ['/v1/records', { method: 'POST', headers: auth(), body: '{"a":' }, 400], // the JSON parser
      ['/v1/records', { headers: { 'content-type': 'application/json' } }, 401],
      ['/v1/records', { headers: { authorization: 'Bearer sk_live_not-a-real-key' } }, 401],
      ['/v1/records/00000000-0000-4000-8000-000000000000', { headers: auth() }, 404],
      ['/v1/no-such-route', { headers: auth() }, 404],
      ['/v1/records', { method: 'POST', headers: { ...auth(), 'content-type': 'text/plain' }, body: 'x' }, 415],
    ];
    for (const [path, init, status] of refusals) {
      const id = `case-${randomUUID()}`;
      const r = await send(path, id, init);
      const text = await r.text();
      expect(r.status, `${path} ${text}`).toBe(status);
      expect(r.headers.get('x-request-id')).toBe(id);
      expect(JSON.parse(text).requestId, text).toBe(id);
    }
  });

  it('an SSE stream (POST /v1/rag) echoes it', async () => {
    const id = 'rag-stream.1';
    const r = await send('/v1/rag', id, {
      method: 'POST',
      headers: auth(),
      body: JSON.stringify({ query: 'anything at all?' }),
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(r.headers.get('x-request-id')).toBe(id);
    expect(await r.text()).toMatch(/event: done/);
  });

  it('an invalid value is ignored, not refused: the request is served under a new id', async () => {
    const seen = new Set<string>();
    for (const id of INVALID) {
      const ok = await send('/v1/ping', id, { headers: auth() });
      expect(ok.status, JSON.stringify(id)).toBe(200);
      const got = ok.headers.get('x-request-id')!;
      expect(got, JSON.stringify(id)).toMatch(GENERATED);
      seen.add(got);
      const refused = await send('/v1/records', id, { method: 'POST', headers: auth(), body: '{}' });
      const body = (await refused.json()) as { requestId: string };
      expect(refused.status).toBe(400);
      expect(body.requestId).toMatch(GENERATED);
      expect(refused.headers.get('x-request-id')).toBe(body.requestId);
    }
    // None: a new one each time.
    for (let i = 0; i < 3; i++)
      seen.add((await send('/v1/ping', undefined, { headers: auth() })).headers.get('x-request-id')!);
    expect(seen.size).toBe(INVALID.length + 3);
  });

  it.skipIf(!!inProcessOnly)(
    "a request Node's parser refuses is answered with a generated id, in the header and the body",
    async () => {
      const url = new URL(svc.url);
      const answer = await new Promise<string>((resolve, reject) => {
        const s = connect(Number(url.port), url.hostname, () =>
          s.end('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: mine\r\nBad Header\r\n\r\n'),
        );
        let out = '';
        s.on('data', (d) => (out += d));
        s.on('end', () => resolve(out));
        s.on('error', reject);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 400/);
      const header = /\r\nx-request-id: ([^\r]+)\r\n/i.exec(answer)?.[1];
      expect(header).toMatch(UUID);
      expect(JSON.parse(answer.split('\r\n\r\n')[1])).toMatchObject({ errorCode: 'BAD_HTTP', requestId: header });
    },
  );
});

describe('X-Request-Id in the request log (on by default) and on the flood ceiling', () => {
  let child: ChildProcess | undefined;
  let base: string;
  let output: () => string;
  const dir = tempDir('svc-reqid-');
  const CEILING = 30;

  beforeAll(async () => {
    const port = await freePort();
    const s = await spawnService(dir.dir, port, { EDGE_RATE_LIMIT_PER_MINUTE: String(CEILING) });
    child = s.child;
    base = s.api.baseUrl;
    output = s.output;
  }, 120_000);
  afterAll(async () => {
    child?.kill('SIGTERM');
    await new Promise((r) => (child && child.exitCode === null ? child.once('exit', r) : r(undefined)));
    dir.remove();
  });

  /** The JSON log lines the service has written so far. */
  const logLines = () =>
    output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map(
        (l) => JSON.parse(l) as { requestId?: string; msg?: string; path?: string; route?: string; status?: number },
      );

  it(
    "every log line of the request carries its id: the client's valid one, else the generated one it was " +
      'answered with',
    async () => {
      const marker = `/v1/records/${randomUUID()}`;
      const mine = 'trace:4bf92f3577b34da6.00f067aa';
      const r = await fetch(`${base}${marker}`, { headers: { 'x-request-id': mine } });
      expect(r.status).toBe(401);
      const invalid = await fetch(`${base}${marker}?second=1`, { headers: { 'x-request-id': 'not valid' } });
      const generated = invalid.headers.get('x-request-id')!;
      expect(generated).toMatch(UUID);
      await new Promise((res) => setTimeout(res, 300));
      const lines = logLines();
      // Every line of each id: the request's one line (route, path without the query string, status).
      const ofMine = lines.filter((l) => l.requestId === mine);
      expect(ofMine.map((l) => l.msg)).toEqual(['request']);
      expect(ofMine[0]).toMatchObject({ path: marker, route: '/v1/records/:id', status: 401 });
      const ofGenerated = lines.filter((l) => l.requestId === generated);
      expect(ofGenerated.map((l) => l.msg)).toEqual(['request']);
      expect(ofGenerated[0]).toMatchObject({ path: marker, status: 401 });
      // No line about either request without its id.
      expect(
        lines.filter((l) => l.path?.startsWith(marker)).every((l) => l.requestId === mine || l.requestId === generated),
      ).toBe(true);
    },
  );

  it("the edge flood ceiling's 429 (no requestId in its body) still echoes the id in the header", async () => {
    let last: Response | undefined;
    for (let i = 0; i < 2 * CEILING + 5; i++) {
      last = await fetch(`${base}/healthz`, { headers: { 'x-request-id': `flood-${i}` } });
      if (last.status === 429) break;
      await last.arrayBuffer();
    }
    expect(last!.status).toBe(429);
    expect(last!.headers.get('x-request-id')).toMatch(/^flood-\d+$/);
    expect(await last!.json()).toEqual({ message: expect.any(String), errorCode: 'RATE_LIMITED' });
  });
});
