import { connect } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  OPERATOR_TOKEN,
  startService,
  THROUGH_ROUTER,
  type Api,
  type Bootstrap,
  type TestService,
} from '../support/service';

/**
 * Hardening acceptance: every route of /openapi.json is sent malformed JSON,
 * deep nesting, NUL and lone surrogates, huge numbers, huge strings, wide
 * objects and prototype keys, in the body, the path and the query. No answer is
 * a 500 or comes late, every error has the catalogue's body, no refused request
 * leaves an event in the log, and a bystander tenant's writes and searches keep
 * their latency meanwhile. Bounded: about 2,000 requests.
 */
let svc: TestService;
let api: Api;
let attacker: Bootstrap;
let bystander: Bootstrap;
const ids: Record<string, string> = {};

const enterprise = () =>
  api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 });
const REQUEST_TIMEOUT_MS = 15_000;

beforeAll(async () => {
  svc = await startService();
  api = svc.api;
  attacker = await enterprise();
  bystander = await enterprise();
  const root = attacker.tenants.live.rootKey;
  const s = await api.post('/v1/schemas', root, {
    typeName: 'FuzzTarget',
    displayName: 'Fuzz',
    allowedSurfaces: ['record', 'document'],
    fields: [
      { fieldId: 'name', fieldType: 'string', searchable: true, validation: { pattern: '^[a-z]+$' } },
      { fieldId: 'n', fieldType: 'number' },
    ],
    lookupFields: ['name', { fieldName: 'n', rangeEnabled: true }],
  });
  expect(s.status, s.text).toBe(201);
  ids.schema = s.body.id;
  const r = await api.post('/v1/records', root, { typeName: 'FuzzTarget', payload: { name: 'abc', n: 1 } });
  expect(r.status, r.text).toBe(201);
  ids.record = r.body.id;
  const d = await api.post('/v1/documents', root, { title: 'fuzz', text: 'fuzz text', indexMode: 'TEXT' });
  expect(d.status, d.text).toBe(201);
  ids.document = d.body.id;
  const f = await api.post('/v1/folders', root, { name: 'fuzz' });
  expect(f.status, f.text).toBe(201);
  ids.folder = f.body.id;
});

afterAll(async () => {
  await svc?.stop();
});

/** Raw bodies: each is sent as application/json to every route that takes one. */
const deepArray = '['.repeat(10_000) + ']'.repeat(10_000);
const deepObject = '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000);
const wide = JSON.stringify({ payload: Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`k${i}`, i])) });
const everywhere = (v: string) =>
  `{"typeName":${v},"displayName":${v},"title":${v},"name":${v},"text":${v},"query":${v},` +
  `"payload":{"name":${v},"x":${v}},"scope":{"allowedActions":[${v}]},` +
  `"records":[{"typeName":${v},"payload":{"k":${v}}}]}`;
const BODIES: Array<[string, string]> = [
  ['malformed', '{"a":'],
  ['trailing comma', '{"a":1,}'],
  ['null', 'null'],
  ['array', '[]'],
  ['string', '"x"'],
  ['deep array', deepArray],
  ['deep object', deepObject],
  ['NUL', everywhere('"a\\u0000b"')],
  ['lone surrogate', everywhere('"a\\ud800b"')],
  ['lone low surrogate key', '{"\\udc00":1,"payload":{"\\ud800x":1},"typeName":"FuzzTarget"}'],
  ['huge number', everywhere('1e400')],
  ['many digits', everywhere('123456789012345678901234567890123456789012')],
  ['tiny number', everywhere('1e-400')],
  ['9 MB string', JSON.stringify({ typeName: 'FuzzTarget', payload: { name: 'a'.repeat(9 * 1024 * 1024) } })],
  [
    '3 MB payload',
    JSON.stringify({ typeName: 'FuzzTarget', title: 't', text: 'x', payload: { name: 'b'.repeat(3 * 1024 * 1024) } }),
  ],
  ['200,000 keys', wide],
  ['__proto__', '{"__proto__":{"admin":true},"typeName":"FuzzTarget","payload":{"__proto__":{"x":1}}}'],
  [
    'constructor.prototype',
    '{"constructor":{"prototype":{"admin":true}},"payload":{"constructor":{"prototype":{"x":1}}}}',
  ],
];
/** Hostile path segments, already URL-encoded. */
const SEGMENTS = [
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%F0%9F',
  'x'.repeat(4_000),
  '__proto__',
  '..%2F..%2Fetc%2Fpasswd',
  '%E2%80%AE',
];
/** Hostile query strings. */
const QUERIES = [
  'limit=1e400&startFrom=%00',
  'type=%ED%A0%80&field=%00&value=%00',
  'type=FuzzTarget&field=n&from=a&to=%00',
  'limit=-1&__proto__=1&constructor=1',
  `value=${'v'.repeat(6_000)}`,
];

type Sent = { label: string; status: number; requestId: string | null; ms: number };

async function send(
  method: string,
  path: string,
  token: string | undefined,
  raw?: string,
  contentType = 'application/json',
): Promise<Sent & { body: any }> {
  const t0 = Date.now();
  // Hostile paths and bodies on purpose: sent by the client, but not checked against the description.
  const res = await api.unchecked.call(method, path, {
    token,
    raw,
    headers: raw !== undefined ? { 'content-type': contentType } : {},
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = res.text;
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  // A fuzzed body may still be a valid root-key rotation: keep using the key now in force.
  const rotated =
    typeof body === 'object' && body
      ? Object.values(body).find((v) => typeof v === 'string' && v.startsWith('sk_live_'))
      : undefined;
  if (res.status >= 200 && res.status < 300 && typeof rotated === 'string') attacker.tenants.live.rootKey = rotated;
  return {
    label: `${method} ${path.slice(0, 120)}`,
    status: res.status,
    requestId: res.headers.get('x-request-id'),
    ms: Date.now() - t0,
    body,
  };
}

function fill(path: string, param: (name: string) => string) {
  return path.replace(/\{([A-Za-z]+)\}/g, (_, name: string) => param(name));
}

/** A real id for each path parameter, so the hostile part is the only wrong thing. */
function realParam(path: string, name: string): string {
  if (name === 'tenantId') return attacker.tenants.live.tenantId;
  if (path.startsWith('/v1/records')) return ids.record;
  if (path.startsWith('/v1/documents')) return ids.document;
  if (path.startsWith('/v1/folders')) return ids.folder;
  if (path.startsWith('/v1/schemas')) return ids.schema;
  if (path.startsWith('/operator/accounts')) return attacker.accountId;
  return randomUUID();
}

function tokenFor(path: string): string {
  if (path.startsWith('/operator/')) return OPERATOR_TOKEN;
  if (path.startsWith('/developer/')) return attacker.developerToken;
  return attacker.tenants.live.rootKey;
}

describe('fuzz every route', () => {
  it(
    'no 500, no hang, catalogue error bodies, nothing written by a refused request; the bystander keeps its ' +
      'latency',
    async () => {
      const spec = (await api.get('/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
      // Deletes last, so the fixtures stay for the other routes; the tenant teardown (its real tenant id tears the
      // attacker's tenant down) last of all.
      const rank = (r: { path: string; method: string }) =>
        r.method !== 'DELETE' ? 0 : r.path === '/developer/tenants/{tenantId}' ? 2 : 1;
      const routes = Object.entries(spec.paths)
        .flatMap(([path, methods]) => Object.keys(methods).map((m) => ({ path, method: m.toUpperCase() })))
        .sort((a, b) => rank(a) - rank(b));
      expect(routes.length).toBeGreaterThan(40);

      // The bystander: a searchable schema, then writes and searches, quiet and under fuzz.
      const bRoot = bystander.tenants.live.rootKey;
      const bs = await api.post('/v1/schemas', bRoot, {
        typeName: 'Calm',
        displayName: 'Calm',
        allowedSurfaces: ['record'],
        fields: [{ fieldId: 'body', fieldType: 'string', searchable: true }],
      });
      expect(bs.status).toBe(201);
      const bystanderRound = async () => {
        const t0 = Date.now();
        const w = await api.post('/v1/records', bRoot, {
          typeName: 'Calm',
          payload: { body: `steady ordinary words ${randomUUID()}` },
          indexMode: 'TEXT',
        });
        const s = await api.post('/v1/search', bRoot, { query: 'steady ordinary', mode: 'TEXT' });
        expect(w.status).toBe(201);
        expect(s.status).toBe(200);
        return Date.now() - t0;
      };
      const quiet: number[] = [];
      for (let i = 0; i < 30; i++) quiet.push(await bystanderRound());

      let fuzzing = true;
      const loud: number[] = [];
      const bystanderLoop = (async () => {
        while (fuzzing) loud.push(await bystanderRound());
      })();

      const sent: Sent[] = [];
      const failures: string[] = [];
      const check = (r: Sent & { body: any }, what: string) => {
        sent.push(r);
        if (process.env.FUZZ_TRACE && r.ms > 100) console.log(`slow ${r.ms} ms ${what} ${r.label} ${r.status}`);
        if (r.status >= 500 && r.status !== 501)
          failures.push(`${what}: ${r.label} answered ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
        // The erasure stub's 501 body is fixed by the spec: exactly {error: "not_implemented"}.
        const erasureStub =
          r.status === 501 &&
          r.label.includes(' /v1/erasure-requests') &&
          JSON.stringify(r.body) === '{"error":"not_implemented"}';
        if (r.status >= 400 && !erasureStub && (typeof r.body !== 'object' || !r.body?.errorCode || !r.body?.requestId))
          failures.push(
            `${what}: ${r.label} answered ${r.status} without the error body: ` +
              `${String(JSON.stringify(r.body)).slice(0, 200)}`,
          );
      };
      try {
        for (const { path, method } of routes) {
          const token = tokenFor(path);
          const real = fill(path, (n) => realParam(path, n));
          const takesBody = method !== 'GET' && method !== 'DELETE';
          if (takesBody) for (const [what, raw] of BODIES) check(await send(method, real, token, raw), `body ${what}`);
          if (takesBody) check(await send(method, real, token, '{}', 'text/plain'), 'content type');
          if (path.includes('{'))
            for (const seg of SEGMENTS)
              check(
                await send(
                  method,
                  fill(path, () => seg),
                  token,
                  takesBody ? '{}' : undefined,
                ),
                `path ${seg.slice(0, 12)}`,
              );
          for (const q of QUERIES)
            check(await send(method, `${real}?${q}`, token, takesBody ? '{}' : undefined), `query ${q.slice(0, 20)}`);
        }
      } finally {
        fuzzing = false;
        await bystanderLoop;
      }
      expect(failures).toEqual([]);
      expect(sent.length).toBeGreaterThan(1_000);
      const slowest = Math.max(...sent.map((s) => s.ms));
      expect(slowest).toBeLessThan(REQUEST_TIMEOUT_MS);

      // Nothing refused left a trace: no event in the log carries a refused request's id.
      const refused = new Set(sent.filter((s) => s.status >= 400 && s.requestId).map((s) => s.requestId));
      const traced: string[] = [];
      // The log is read in process; through the router (E2E_TARGET=router) the fixtures' check below still runs.
      for (let after = 0; !THROUGH_ROUTER;) {
        const batch = await svc.service.store.readAll(after, 1_000);
        if (!batch.length) break;
        for (const e of batch) if (refused.has(e.metadata.requestId)) traced.push(`${e.type} ${e.streamId}`);
        after = batch[batch.length - 1].position;
      }
      expect(traced).toEqual([]);
      // The fixtures are intact (the attacker's own record unchanged by everything refused).
      const rec = await api.get(`/v1/records/${ids.record}`, attacker.tenants.live.rootKey);
      if (rec.status === 200) expect(rec.body.payload).toMatchObject({ name: 'abc', n: 1 });

      // The bystander was served throughout, at its normal pace.
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      expect(loud.length).toBeGreaterThan(10);
      console.log(
        `fuzz: ${sent.length} requests, slowest ${slowest} ms; bystander write+search median quiet ` +
          `${median(quiet)} ms, under fuzz ${median(loud)} ms (${loud.length} rounds), worst ` +
          `${Math.max(...loud)} ms`,
      );
      expect(median(loud)).toBeLessThan(Math.max(4 * median(quiet), 250));
      expect(Math.max(...loud)).toBeLessThan(5_000);
    },
    600_000,
  );
});

describe('below HTTP', () => {
  const raw = (bytes: string) =>
    new Promise<string>((resolve, reject) => {
      const url = new URL(api.baseUrl);
      const s = connect(Number(url.port), url.hostname, () => s.end(bytes));
      let out = '';
      s.on('data', (d) => (out += d));
      s.on('end', () => resolve(out));
      s.on('error', reject);
    });
  it('a request Node cannot parse, or with oversized headers, gets the catalogue error body', async () => {
    const garbage = await raw('GARBAGE / HTTP/1.1\r\n\r\n');
    expect(garbage).toMatch(/^HTTP\/1\.1 400/);
    expect(JSON.parse(garbage.split('\r\n\r\n')[1])).toMatchObject({
      errorCode: 'BAD_HTTP',
      requestId: expect.any(String),
    });
    const huge = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100_000)}\r\n\r\n`);
    expect(huge).toMatch(/^HTTP\/1\.1 431/);
    expect(JSON.parse(huge.split('\r\n\r\n')[1])).toMatchObject({ errorCode: 'HEADERS_TOO_LARGE' });
    // The service is still up.
    expect((await api.get('/healthz')).status).toBe(200);
  });
});
