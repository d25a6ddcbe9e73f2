import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { activityResource, parseIsoInstant, type Principal } from '@svc/contracts';
import type { Sql } from '@svc/domain';
import { ActivityLogStore, type ActivityRow } from '@svc/query-api';
import { openPglite } from '../engines/sql';
import { loadConfig } from '../config';
import { ActivityRecorder } from './recorder';

const principal = (over: Partial<Principal> = {}): Principal => ({
  credentialId: 'key-1',
  kind: 'root',
  accountId: 'acc',
  tenantId: 'tenant-1',
  environment: 'live',
  contextId: 'ctx-1',
  crossContext: true,
  allowedActions: ['*'],
  dataScope: null,
  userId: null,
  wireVersionPin: null,
  ...over,
});

function call(
  rec: ActivityRecorder,
  o: {
    url?: string;
    method?: string;
    status?: number;
    p?: Principal;
    errorCode?: string;
    auth?: string;
    ms?: number;
  } = {},
) {
  const id = randomUUID();
  const req = {
    url: o.url ?? '/v1/records',
    method: o.method ?? 'POST',
    id,
    headers: o.auth ? { authorization: o.auth } : {},
    principal: o.p,
    errorCode: o.errorCode,
  } as unknown as FastifyRequest;
  rec.onResponse(req, { statusCode: o.status ?? 201 } as FastifyReply, o.ms ?? 1.234);
  return id;
}

describe('activityResource', () => {
  it('maps the first segment after /v1 to the spec names', () => {
    const cases: Array<[string, string, string]> = [
      ['POST', '/v1/records', 'records'],
      ['GET', '/v1/records/abc/versions', 'records'],
      ['POST', '/v1/documents/abc/ask', 'ask'],
      ['GET', '/v1/documents/abc/ask', 'documents'],
      ['POST', '/v1/documents//ask', 'documents'],
      ['POST', '/v1/documents/abc/ask/x', 'documents'],
      ['POST', '/v1/tokens', 'auth'],
      ['DELETE', '/v1/tokens/t1', 'auth'],
      ['POST', '/v1/erasure-requests', 'erasure-requests'],
      ['GET', '/v1/admin/logs', 'admin'],
      ['GET', '/v1/contexts', 'contexts'],
      ['GET', '/v1/trigger-failures', 'trigger-failures'],
      ['GET', '/v1/clients', 'other'],
      ['GET', '/v1/orgs', 'other'],
      ['GET', '/v1/constructor', 'other'],
      ['GET', '/v1/__proto__', 'other'],
      ['GET', '/v1', 'other'],
      ['GET', '/v1/', 'other'],
    ];
    for (const [m, p, r] of cases) expect(activityResource(m, p), `${m} ${p}`).toBe(r);
  });
});

describe('parseIsoInstant', () => {
  it('reads ISO-8601 instants with a zone, and dates', () => {
    expect(parseIsoInstant('2026-05-01T12:00:00Z')).toBe(Date.UTC(2026, 4, 1, 12));
    expect(parseIsoInstant('2026-05-01T12:00:00.123456Z')).toBe(Date.UTC(2026, 4, 1, 12, 0, 0, 123));
    expect(parseIsoInstant('2026-05-01T12:00Z')).toBe(Date.UTC(2026, 4, 1, 12));
    expect(parseIsoInstant('2026-05-01T14:00:00+02:00')).toBe(Date.UTC(2026, 4, 1, 12));
    expect(parseIsoInstant('2026-05-01T10:30:00-0130')).toBe(Date.UTC(2026, 4, 1, 12));
    expect(parseIsoInstant('2026-05-01')).toBe(Date.UTC(2026, 4, 1));
    expect(parseIsoInstant('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
  });
  it('refuses anything else', () => {
    for (const s of [
      '',
      'yesterday',
      '2026-02-31T00:00:00Z',
      '2025-02-29',
      '2026-13-01',
      '2026-05-01T24:00:00Z',
      '2026-05-01T12:00:00',
      '2026-05-01T12:60:00Z',
      '1714564800000',
      '2026-05-01T12:00:00+25:00',
      ' 2026-05-01',
    ])
      expect(parseIsoInstant(s), s).toBeNull();
  });
});

describe('ActivityRecorder', () => {
  let sql: Sql;
  let store: ActivityLogStore;
  const rec: ActivityRecorder[] = [];
  const recorder = (o: Partial<ConstructorParameters<typeof ActivityRecorder>[0]> = {}) => {
    const r = new ActivityRecorder({ store, flushEveryMs: 600_000, ...o });
    rec.push(r);
    return r;
  };
  const all = async (tenantId = 'tenant-1') => (await store.query({ tenantId, fromMs: 0, limit: 500 })).entries;

  // One in-memory database for the suite (creating one takes seconds): emptied before each test.
  beforeAll(async () => {
    sql = await openPglite(undefined);
    store = new ActivityLogStore(sql);
    await store.init();
  });
  afterAll(async () => {
    await sql?.close();
  });
  beforeEach(async () => {
    await sql.query('DELETE FROM al_entries');
  });
  afterEach(async () => {
    for (const r of rec.splice(0)) await r.close();
  });

  it('writes nothing on the request path; flush (and close) write the waiting entries', async () => {
    const r = recorder().start();
    const id = call(r, { p: principal(), url: '/v1/records?secret=1' });
    expect(await all()).toEqual([]);
    await r.close();
    const [e] = await all();
    expect(e).toMatchObject({
      method: 'POST',
      resource: 'records',
      status: 201,
      keyId: 'key-1',
      path: '/v1/records',
      requestId: id,
      errorCode: null,
      durationMs: 1.23,
    });
  });

  it('flushes at once when a batch is full', async () => {
    const r = recorder({ batchSize: 3 }).start();
    for (let i = 0; i < 3; i++) call(r, { p: principal() });
    await new Promise((res) => setTimeout(res, 200));
    await r.flush();
    expect((await all()).length).toBe(3);
    expect(r.stats).toMatchObject({ recorded: 3, written: 3 });
  });

  it('records errorCode only on failures, and skips what has no tenant', async () => {
    const r = recorder();
    const failed = call(r, {
      p: principal(),
      status: 404,
      errorCode: 'NOT_FOUND',
      method: 'GET',
      url: '/v1/records/x',
    });
    call(r, { p: principal(), status: 200, errorCode: 'NOT_FOUND' });
    call(r, { p: principal({ kind: 'developer', tenantId: null }), status: 403 });
    call(r, { url: '/developer/keys', p: principal() });
    call(r, { url: '/healthz', p: principal() });
    call(r, { url: '/v1x', p: principal() });
    call(r, { status: 401, auth: 'Bearer nope' });
    await r.flush();
    const es = await all();
    expect(es.length).toBe(2);
    expect(es.find((e) => e.requestId === failed)).toMatchObject({ status: 404, errorCode: 'NOT_FOUND' });
    expect(es.find((e) => e.requestId !== failed)!.errorCode).toBeNull();
  });

  it('finds the tenant of a request refused before authentication from its credential, after responding', async () => {
    const seen: string[] = [];
    const resolve = async (t: string) => (
      seen.push(t),
      t === 'good'
        ? principal({ credentialId: 'key-2', contextId: 'ctx-2' })
        : t === 'dev'
          ? principal({ kind: 'developer', tenantId: null })
          : null
    );
    const r = recorder({ resolve });
    const bad = call(r, { status: 400, errorCode: 'VALIDATION_ERROR', auth: 'Bearer good' });
    call(r, { status: 400, auth: 'Bearer unknown' });
    call(r, { status: 403, auth: 'Bearer dev' });
    call(r, { status: 401, auth: 'Bearer good' }); // authentication refused it: nothing to look up
    call(r, { status: 429, auth: 'Bearer good', errorCode: 'RATE_LIMITED' }); // edge flood limit before authentication
    call(r, { status: 400 }); // no credential
    await r.close();
    expect(seen).toEqual(['good', 'unknown', 'dev']);
    const es = await all();
    expect(es).toHaveLength(1);
    expect(es[0]).toMatchObject({ requestId: bad, keyId: 'key-2', errorCode: 'VALIDATION_ERROR' });
    expect(
      (await store.query({ tenantId: 'tenant-1', contextId: 'ctx-2', fromMs: 0, limit: 10 })).entries,
    ).toHaveLength(1);
  });

  it('keeps entries while the database fails (bounded), and writes them when it answers again', async () => {
    let fail = true;
    const logs: string[] = [];
    const flaky = Object.assign(Object.create(store), {
      insert: (rows: ActivityRow[]) => (fail ? Promise.reject(new Error('down')) : store.insert(rows)),
    });
    const r = recorder({ store: flaky, maxBuffered: 3, log: (m) => logs.push(m) });
    const ids = [1, 2, 3, 4].map(() => call(r, { p: principal() }));
    await r.flush();
    await r.flush();
    expect(r.stats).toMatchObject({ recorded: 4, written: 0, dropped: 1, failedFlushes: 2 });
    expect(logs.filter((m) => m.includes('flush failed'))).toHaveLength(1);
    fail = false;
    await r.flush();
    expect((await all()).map((e) => e.requestId).sort()).toEqual(ids.slice(1).sort());
    expect(logs.some((m) => m.includes('writing again'))).toBe(true);
  });

  it('orders one client’s consecutive requests newest first, below the millisecond', async () => {
    const r = recorder();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push(call(r, { p: principal(), ms: 0.01 }));
      const t = performance.now();
      while (performance.now() - t < 0.05);
    }
    await r.flush();
    expect((await all()).map((e) => e.requestId)).toEqual(ids.reverse());
  });

  it('prunes entries past the retention period', async () => {
    const day = 86_400_000;
    const now = Date.now();
    const row = (atMs: number, requestId: string): ActivityRow => ({
      tenantId: 'tenant-1',
      contextId: null,
      atUs: atMs * 1000,
      method: 'GET',
      resource: 'records',
      status: 200,
      keyId: 'k',
      durationMs: 1,
      path: '/v1/records',
      requestId,
      errorCode: null,
    });
    await store.insert([row(now - 31 * day, 'old'), row(now - 29 * day, 'recent'), row(now, 'new')]);
    const r = recorder({ retentionDays: 30 });
    expect(await r.prune(now)).toBe(1);
    expect((await all()).map((e) => e.requestId)).toEqual(['new', 'recent']);
    expect(await recorder({ retentionDays: 0 }).prune(now + 400 * day)).toBe(0);
  });

  it('deletes a tenant’s entries (teardown) and no other’s', async () => {
    const r = recorder();
    call(r, { p: principal() });
    call(r, { p: principal({ tenantId: 'tenant-2' }) });
    await r.flush();
    await store.deleteTenant('tenant-1');
    expect(await all()).toEqual([]);
    expect(await all('tenant-2')).toHaveLength(1);
  });
});

describe('configuration', () => {
  it('ACTIVITY_LOG=0 turns recording off; flush period and retention have defaults', () => {
    expect(loadConfig({}).activityLog).toEqual({ enabled: true, flushMs: 250, retentionDays: 30 });
    expect(
      loadConfig({ ACTIVITY_LOG: '0', ACTIVITY_LOG_FLUSH_MS: '1000', ACTIVITY_LOG_RETENTION_DAYS: '7' }).activityLog,
    ).toEqual({ enabled: false, flushMs: 1000, retentionDays: 7 });
  });
});
