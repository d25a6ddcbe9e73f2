/**
 * Activity log (spec "Activity log entry", "Activity log", "Errors", "Size and
 * count limits"; decisions §10; docs/api.md "Activity log"). Black-box over
 * HTTP: every /v1 request of a tenant is recorded (successes and failures,
 * every field, never a body or the query string), GET /v1/admin/logs filters
 * and caps them, and no entry crosses a tenant (account, live/test) or, for a
 * context-confined credential, a context.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startService, type Api, type Bootstrap, type TestService } from '../support/service';

type Res = Awaited<ReturnType<Api['call']>>;
type Entry = {
  timestamp: string;
  method: string;
  resource: string;
  status: number;
  keyId?: string;
  durationMs?: number;
  path?: string;
  requestId?: string;
  errorCode?: string | null;
};
type Log = { entries: Entry[]; truncated: boolean; queryDurationMs: number; tenantId: string };

const ENTRY_KEYS = [
  'durationMs',
  'errorCode',
  'keyId',
  'method',
  'path',
  'requestId',
  'resource',
  'status',
  'timestamp',
];
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;
const rid = (r: Res) => r.headers.get('x-request-id')!;

const enterprise = (api: Api) =>
  api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 });

async function logs(api: Api, token: string, qs = '', headers?: Record<string, string>): Promise<Log> {
  const r = await api.get(`/v1/admin/logs${qs}`, token, headers);
  expect(r.status, r.text).toBe(200);
  return r.body;
}

/** Polls the log until every request id is there (entries appear after a lag of seconds). */
async function waitFor(api: Api, token: string, ids: string[], qs = '?limit=500'): Promise<Map<string, Entry>> {
  return eventually<Map<string, Entry> | undefined>(
    async () => {
      const l = await logs(api, token, qs);
      const byId = new Map(l.entries.map((e) => [e.requestId!, e]));
      return ids.every((id) => byId.has(id)) ? byId : undefined;
    },
    10_000,
    100,
  ) as Promise<Map<string, Entry>>;
}

describe('activity log on one service', () => {
  let svc: TestService;
  let api: Api;
  let A: Bootstrap;
  let B: Bootstrap;
  let rootA: string;
  let typeName: string;
  let writer: { id: string; token: string }; // records:c r d, schemas:r, no logs:r
  let reader: { id: string; token: string }; // records:r only
  let logReader: { id: string; token: string }; // logs:r, default context

  async function mint(by: string, allowedActions: string[], extra: Record<string, unknown> = {}) {
    const r = await api.post('/v1/tokens', by, { scope: { allowedActions }, ...extra });
    expect(r.status, r.text).toBe(201);
    return { id: r.body.id as string, token: r.body.token as string };
  }

  beforeAll(async () => {
    svc = await startService();
    api = svc.api;
    [A, B] = await Promise.all([enterprise(api), enterprise(api)]);
    rootA = A.tenants.live.rootKey;
    typeName = uniq('Log');
    const s = await api.post('/v1/schemas', rootA, {
      typeName,
      displayName: 'activity log',
      allowedSurfaces: ['record'],
    });
    expect(s.status, s.text).toBe(201);
    writer = await mint(rootA, ['schemas:r', 'records:c', 'records:r', 'records:d']);
    reader = await mint(rootA, ['records:r']);
    logReader = await mint(rootA, ['logs:r']);
  });

  afterAll(async () => {
    await svc?.stop();
  });

  describe('recording', () => {
    let marker: string;
    let created: Res, got: Res, invalid: Res, missing: Res, forbidden: Res, badJson: Res, deleted: Res;
    let byId: Map<string, Entry>;
    let before: number, after: number;

    beforeAll(async () => {
      marker = `MARKER-${randomUUID()}`;
      before = Date.now();
      created = await api.post('/v1/records', writer.token, { typeName, payload: { note: marker } });
      expect(created.status, created.text).toBe(201);
      got = await api.get(`/v1/records/${created.body.id}?probe=${marker}`, writer.token);
      invalid = await api.post('/v1/records', writer.token, {
        typeName,
        payload: { note: marker },
        scopes: 'not-an-array',
      });
      missing = await api.get(`/v1/records/${randomUUID()}`, writer.token);
      forbidden = await api.post('/v1/records', reader.token, { typeName, payload: { note: marker } });
      badJson = await api.call('POST', '/v1/records', {
        token: writer.token,
        raw: `{"typeName": "${typeName}", "payload": {"note": "${marker}"`,
      });
      deleted = await api.del(`/v1/records/${created.body.id}`, writer.token);
      after = Date.now();
      expect([invalid.status, missing.status, forbidden.status, badJson.status, deleted.status]).toEqual([
        400, 404, 403, 400, 204,
      ]);
      byId = await waitFor(api, rootA, [created, got, invalid, missing, forbidden, badJson, deleted].map(rid));
    });

    it(
      'records a success with every field: timestamp, method, resource, status, keyId, durationMs, path, ' +
        'requestId; no errorCode',
      () => {
        const e = byId.get(rid(created))!;
        expect(Object.keys(e).sort()).toEqual(ENTRY_KEYS);
        expect(e.timestamp).toMatch(ISO_MS);
        const t = Date.parse(e.timestamp);
        expect(t).toBeGreaterThanOrEqual(before - 1);
        expect(t).toBeLessThanOrEqual(after);
        expect(e).toMatchObject({
          method: 'POST',
          resource: 'records',
          status: 201,
          keyId: writer.id,
          path: '/v1/records',
          requestId: rid(created),
          errorCode: null,
        });
        expect(typeof e.durationMs).toBe('number');
        expect(e.durationMs).toBeGreaterThanOrEqual(0);
        expect(byId.get(rid(deleted))).toMatchObject({
          method: 'DELETE',
          resource: 'records',
          status: 204,
          keyId: writer.id,
          path: `/v1/records/${created.body.id}`,
          errorCode: null,
        });
      },
    );

    it('records the path without the query string', () => {
      expect(byId.get(rid(got))).toMatchObject({
        method: 'GET',
        status: got.status,
        path: `/v1/records/${created.body.id}`,
      });
    });

    it('records failures with their errorCode and the requestId of the error body', () => {
      for (const [r, status] of [
        [invalid, 400],
        [missing, 404],
        [forbidden, 403],
        [badJson, 400],
      ] as const) {
        const e = byId.get(rid(r))!;
        expect(r.body.requestId).toBe(rid(r));
        expect(e).toMatchObject({
          method: r === missing ? 'GET' : 'POST',
          resource: 'records',
          status,
          requestId: r.body.requestId,
          errorCode: r.body.errorCode,
        });
        expect(Object.keys(e).sort()).toEqual(ENTRY_KEYS);
      }
      expect(byId.get(rid(invalid))!.errorCode).toBe('VALIDATION_ERROR');
      expect(byId.get(rid(missing))!.errorCode).toBe('NOT_FOUND');
      expect(byId.get(rid(forbidden))).toMatchObject({ errorCode: 'FORBIDDEN', keyId: reader.id });
      // Refused while parsing the body, before authentication ran: still the caller's entry.
      expect(byId.get(rid(badJson))).toMatchObject({ errorCode: 'VALIDATION_ERROR', keyId: writer.id });
    });

    it('never records a body, a query string or a secret', async () => {
      const all = JSON.stringify(await logs(api, rootA, '?limit=500'));
      expect(all).not.toContain(marker);
      expect(all).not.toContain('probe');
      for (const secret of [writer.token, reader.token, rootA]) expect(all).not.toContain(secret);
    });

    it('does not record requests that fail authentication (no tenant)', async () => {
      const path = `/v1/records/${randomUUID()}`;
      const r1 = await api.get(path, 'sk_live_not-a-key');
      const r2 = await api.get(path);
      const r3 = await api.get(path, A.developerToken);
      expect([r1.status, r2.status, r3.status]).toEqual([401, 401, 403]);
      const ok = await api.get(`/v1/records/${randomUUID()}`, writer.token);
      await waitFor(api, rootA, [rid(ok)]);
      const all = await logs(api, rootA, '?limit=500');
      expect(all.entries.some((e) => e.path === path)).toBe(false);
    });

    it('maps the first path segment to the allow-listed resource names', async () => {
      const doc = randomUUID();
      const calls: Array<[Res, string]> = [
        [await api.post('/v1/tokens', rootA, { scope: { allowedActions: ['records:r'] } }), 'auth'],
        [await api.post(`/v1/documents/${doc}/ask`, rootA, { question: 'q' }), 'ask'],
        [await api.get(`/v1/documents/${doc}`, rootA), 'documents'],
        [await api.get('/v1/schemas', rootA), 'schemas'],
        [await api.get('/v1/folders', rootA), 'folders'],
        [await api.post('/v1/search', rootA, { query: 'x' }), 'search'],
        [await api.get('/v1/namespaces', rootA), 'namespaces'],
        [await api.get('/v1/users', rootA), 'users'],
        [await api.get('/v1/entities', rootA), 'entities'],
        [await api.get('/v1/usage', rootA), 'usage'],
        [await api.get('/v1/models', rootA), 'models'],
        [await api.post('/v1/rag', rootA, { query: 'q' }), 'rag'],
        [await api.post('/v1/chat', rootA, { messages: [] }), 'chat'],
        [await api.get('/v1/export', rootA), 'export'],
        [await api.get(`/v1/erasure-requests/${doc}`, rootA), 'erasure-requests'],
        [await api.get('/v1/ping', rootA), 'ping'],
        // An unrouted path on purpose (the mapping of what is not an operation): the description check is off.
        [await api.get('/v1/contexts', rootA), 'contexts'],
        [await api.unchecked.get(`/v1/${uniq('nothing')}`, rootA), 'other'],
      ];
      const got = await waitFor(
        api,
        rootA,
        calls.map(([r]) => rid(r)),
      );
      for (const [r, resource] of calls) expect(got.get(rid(r))!.resource, got.get(rid(r))!.path).toBe(resource);
      const ask = await logs(api, rootA, '?resource=ask');
      expect(ask.entries.map((e) => e.requestId)).toContain(rid(calls[1][0]));
      expect(ask.entries.every((e) => e.resource === 'ask')).toBe(true);
      const auth = await logs(api, rootA, '?resource=auth');
      expect(auth.entries.map((e) => e.requestId)).toContain(rid(calls[0][0]));
    });

    it('records the log reads themselves (resource admin), and a 403 for lacking logs:r', async () => {
      const denied = await api.get('/v1/admin/logs', reader.token);
      expect(denied.status).toBe(403);
      const got = await waitFor(api, rootA, [rid(denied)]);
      expect(got.get(rid(denied))).toMatchObject({
        method: 'GET',
        resource: 'admin',
        path: '/v1/admin/logs',
        status: 403,
        errorCode: 'FORBIDDEN',
        keyId: reader.id,
      });
    });
  });

  describe('GET /v1/admin/logs', () => {
    let ok: Res, fail: Res, del: Res;
    beforeAll(async () => {
      ok = await api.get(`/v1/records?type=${typeName}`, writer.token);
      fail = await api.get(`/v1/records/${randomUUID()}`, writer.token);
      del = await api.del(`/v1/records/${randomUUID()}`, writer.token);
      expect([ok.status, fail.status, del.status]).toEqual([200, 404, 404]);
      await waitFor(api, rootA, [ok, fail, del].map(rid));
    });

    it(
      'answers {entries, truncated, queryDurationMs, tenantId}; startTime defaults to 24 hours ago, limit ' + 'to 200',
      async () => {
        const l = await logs(api, rootA);
        expect(Object.keys(l).sort()).toEqual(['entries', 'queryDurationMs', 'tenantId', 'truncated']);
        expect(l.tenantId).toBe(A.tenants.live.tenantId);
        expect(typeof l.queryDurationMs).toBe('number');
        expect(typeof l.truncated).toBe('boolean');
        expect(l.entries.length).toBeLessThanOrEqual(200);
        expect(l.entries.map((e) => e.requestId)).toContain(rid(ok));
        const old = await logs(
          api,
          rootA,
          `?endTime=${encodeURIComponent(new Date(Date.now() - 25 * 3600_000).toISOString())}` +
            '&startTime=2020-01-01T00:00:00Z',
        );
        expect(old.entries).toEqual([]);
        // endTime alone: the 24 hours before it.
        const endOnly = await logs(
          api,
          rootA,
          `?endTime=${encodeURIComponent(new Date(Date.now() + 1000).toISOString())}&limit=500`,
        );
        expect(endOnly.entries.map((e) => e.requestId)).toContain(rid(ok));
        const dayBefore = await logs(
          api,
          rootA,
          `?endTime=${encodeURIComponent(new Date(Date.now() - 48 * 3600_000).toISOString())}`,
        );
        expect(dayBefore.entries).toEqual([]);
      },
    );

    it('errorsOnly=true keeps status >= 400 only', async () => {
      const l = await logs(api, rootA, '?errorsOnly=true&limit=500');
      expect(l.entries.length).toBeGreaterThan(0);
      expect(l.entries.every((e) => e.status >= 400)).toBe(true);
      const ids = l.entries.map((e) => e.requestId);
      expect(ids).toContain(rid(fail));
      expect(ids).not.toContain(rid(ok));
      const all = await logs(api, rootA, '?errorsOnly=false&limit=500');
      expect(all.entries.map((e) => e.requestId)).toEqual(expect.arrayContaining([rid(ok), rid(fail)]));
    });

    it('resource filters by the allow-listed name; legacy clients and orgs match nothing', async () => {
      const l = await logs(api, rootA, '?resource=records&limit=500');
      expect(l.entries.every((e) => e.resource === 'records')).toBe(true);
      expect(l.entries.map((e) => e.requestId)).toContain(rid(ok));
      for (const legacy of ['clients', 'orgs']) {
        await api.unchecked.get(`/v1/${legacy}`, rootA); // a retired path on purpose: not described
        const x = await logs(api, rootA, `?resource=${legacy}`);
        expect(x.entries).toEqual([]);
        expect(x.truncated).toBe(false);
      }
    });

    it('method filters (case-insensitive)', async () => {
      const l = await logs(api, rootA, '?method=DELETE&limit=500');
      expect(l.entries.length).toBeGreaterThan(0);
      expect(l.entries.every((e) => e.method === 'DELETE')).toBe(true);
      expect(l.entries.map((e) => e.requestId)).toContain(rid(del));
      const lower = await logs(api, rootA, '?method=delete&limit=500');
      expect(lower.entries.map((e) => e.requestId)).toEqual(l.entries.map((e) => e.requestId));
    });

    it('keyId filters by credential id', async () => {
      const l = await logs(api, rootA, `?keyId=${writer.id}&limit=500`);
      expect(l.entries.every((e) => e.keyId === writer.id)).toBe(true);
      expect(l.entries.map((e) => e.requestId)).toEqual(expect.arrayContaining([rid(ok), rid(fail), rid(del)]));
      expect((await logs(api, rootA, `?keyId=${randomUUID()}`)).entries).toEqual([]);
    });

    it('startTime / endTime select a window (both ends inclusive)', async () => {
      const e = (await waitFor(api, rootA, [rid(fail)])).get(rid(fail))!;
      const at = encodeURIComponent(e.timestamp);
      const l = await logs(api, rootA, `?startTime=${at}&endTime=${at}&limit=500`);
      expect(l.entries.map((x) => x.requestId)).toContain(rid(fail));
      expect(l.entries.every((x) => x.timestamp === e.timestamp)).toBe(true);
      const future = await logs(
        api,
        rootA,
        `?startTime=${encodeURIComponent(new Date(Date.now() + 3600_000).toISOString())}`,
      );
      expect(future).toMatchObject({ entries: [], truncated: false });
      // Offsets and date-only forms are ISO-8601 too.
      const day = new Date().toISOString().slice(0, 10);
      expect((await logs(api, rootA, `?startTime=${day}&limit=500`)).entries.map((x) => x.requestId)).toContain(
        rid(fail),
      );
      expect(
        (await api.get(`/v1/admin/logs?startTime=${encodeURIComponent(`${day}T00:00:00+02:00`)}`, rootA)).status,
      ).toBe(200);
    });

    it('every bad filter value is a 400 VALIDATION_ERROR', async () => {
      const now = Date.now();
      const iso = (ms: number) => encodeURIComponent(new Date(ms).toISOString());
      const bad = [
        `?startTime=${iso(now)}&endTime=${iso(now - 1000)}`, // inverted window
        '?startTime=yesterday',
        '?startTime=2026-02-31T00:00:00Z',
        '?startTime=2026-01-01T10:00:00', // no zone
        '?endTime=',
        '?limit=0',
        '?limit=501',
        '?limit=1.5',
        '?limit=abc',
        '?limit=-1',
        '?errorsOnly=yes',
        '?errorsOnly=1',
        '?resource=bogus',
        '?resource=admin',
        '?resource=RECORDS',
        '?resource=',
        '?method=FETCH',
        '?method=CONNECT',
        '?method=',
        '?keyId=bad%20key',
        '?keyId=a.b',
        `?keyId=${'k'.repeat(129)}`,
        '?keyId=',
        '?method=GET&method=POST',
        '?unknownFilter=1',
      ];
      for (const qs of bad) {
        const r = await api.get(`/v1/admin/logs${qs}`, rootA);
        expect({ qs, status: r.status, code: r.body?.errorCode }).toEqual({
          qs,
          status: 400,
          code: 'VALIDATION_ERROR',
        });
        expect(r.body.requestId).toBe(rid(r));
      }
      expect((await api.get('/v1/admin/logs?limit=500', rootA)).status).toBe(200);
      expect((await api.get('/v1/admin/logs?limit=1', rootA)).status).toBe(200);
    });

    it('newest first; limit caps and truncated tells the window held more', async () => {
      const seq = await mint(rootA, ['records:r']);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push(rid(await api.get(`/v1/records?type=${typeName}&limit=1`, seq.token)));
      await waitFor(api, rootA, ids, `?keyId=${seq.id}`);
      const five = await logs(api, rootA, `?keyId=${seq.id}&limit=5`);
      expect(five.entries.map((e) => e.requestId)).toEqual([...ids].reverse());
      expect(five.truncated).toBe(false);
      const ts = five.entries.map((e) => Date.parse(e.timestamp));
      expect([...ts].sort((a, b) => b - a)).toEqual(ts);
      const three = await logs(api, rootA, `?keyId=${seq.id}&limit=3`);
      expect(three.entries.map((e) => e.requestId)).toEqual([...ids].reverse().slice(0, 3));
      expect(three.truncated).toBe(true);
      const all = await logs(api, rootA, '?limit=500');
      const allTs = all.entries.map((e) => Date.parse(e.timestamp));
      expect([...allTs].sort((a, b) => b - a)).toEqual(allTs);
    });

    it('needs logs:r: scoped keys and tokens without it get the uniform 403; the root key passes', async () => {
      const noLogs = await api.post('/developer/keys', A.developerToken, {
        tenantId: A.tenants.live.tenantId,
        allowedActions: ['records:r'],
      });
      const withLogs = await api.post('/developer/keys', A.developerToken, {
        tenantId: A.tenants.live.tenantId,
        allowedActions: ['logs:r'],
      });
      expect([noLogs.status, withLogs.status]).toEqual([201, 201]);
      for (const token of [noLogs.body.key, reader.token, writer.token]) {
        const r = await api.get('/v1/admin/logs', token);
        expect(r.status).toBe(403);
        expect(r.body.errorCode).toBe('FORBIDDEN');
        expect(r.text).not.toMatch(/logs/i);
      }
      expect((await logs(api, withLogs.body.key)).tenantId).toBe(A.tenants.live.tenantId);
      expect((await logs(api, logReader.token)).tenantId).toBe(A.tenants.live.tenantId);
      expect((await api.get('/v1/admin/logs')).status).toBe(401);
      expect((await api.get('/v1/admin/logs', A.developerToken)).status).toBe(403);
    });
  });

  describe('isolation', () => {
    it("another account's entries never appear, and the other way round", async () => {
      const rootB = B.tenants.live.rootKey;
      const b1 = await api.get(`/v1/records/${randomUUID()}`, rootB);
      const b2 = await api.post('/v1/schemas', rootB, {
        typeName: uniq('B'),
        displayName: 'b',
        allowedSurfaces: ['record'],
      });
      const a1 = await api.get(`/v1/records/${randomUUID()}`, rootA);
      const inB = await waitFor(api, rootB, [rid(b1), rid(b2)]);
      await waitFor(api, rootA, [rid(a1)]);
      const logA = await logs(api, rootA, '?limit=500');
      const logB = await logs(api, rootB, '?limit=500');
      expect(logB.tenantId).toBe(B.tenants.live.tenantId);
      expect(logA.entries.map((e) => e.requestId)).not.toEqual(expect.arrayContaining([rid(b1)]));
      expect(logA.entries.map((e) => e.requestId)).not.toContain(rid(b2));
      expect(logB.entries.map((e) => e.requestId)).not.toContain(rid(a1));
      expect(logB.entries.some((e) => e.keyId === writer.id)).toBe(false);
      // Filtering by another account's key id finds nothing.
      const bKey = inB.get(rid(b1))!.keyId!;
      expect((await logs(api, rootA, `?keyId=${bKey}`)).entries).toEqual([]);
      expect((await logs(api, rootB, `?keyId=${writer.id}`)).entries).toEqual([]);
    });

    it('live and test tenants keep separate logs', async () => {
      const rootTest = A.tenants.test.rootKey;
      const t1 = await api.get(`/v1/records/${randomUUID()}`, rootTest);
      const l1 = await api.get(`/v1/records/${randomUUID()}`, rootA);
      await waitFor(api, rootTest, [rid(t1)]);
      await waitFor(api, rootA, [rid(l1)]);
      const test = await logs(api, rootTest, '?limit=500');
      const live = await logs(api, rootA, '?limit=500');
      expect(test.tenantId).toBe(A.tenants.test.tenantId);
      expect(test.entries.map((e) => e.requestId)).not.toContain(rid(l1));
      expect(live.entries.map((e) => e.requestId)).not.toContain(rid(t1));
    });

    it('a context-confined credential reads only the entries of its context; root reads the whole tenant', async () => {
      const c = await api.post('/v1/contexts', rootA, { name: uniq('ctx') });
      expect(c.status, c.text).toBe(201);
      const ctx2 = c.body.id as string;
      const inCtx2 = await mint(rootA, ['logs:r', 'records:r'], { contextId: ctx2 });
      const r2 = await api.get(`/v1/records/${randomUUID()}`, inCtx2.token);
      const viaHeader = await api.get(`/v1/records/${randomUUID()}`, rootA, { 'x-context-id': ctx2 });
      const r1 = await api.get(`/v1/records/${randomUUID()}`, writer.token);
      await waitFor(api, rootA, [rid(r2), rid(viaHeader), rid(r1)]);
      const own = await logs(api, inCtx2.token, '?limit=500');
      expect(own.entries.map((e) => e.requestId)).toEqual(expect.arrayContaining([rid(r2), rid(viaHeader)]));
      expect(own.entries.map((e) => e.requestId)).not.toContain(rid(r1));
      const dflt = await logs(api, logReader.token, '?limit=500');
      expect(dflt.entries.map((e) => e.requestId)).toContain(rid(r1));
      expect(dflt.entries.map((e) => e.requestId)).not.toContain(rid(r2));
      expect(dflt.entries.map((e) => e.requestId)).not.toContain(rid(viaHeader));
    });
  });
});
