import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '@svc/domain';
import { usageProjection } from '@svc/projectors';
import { serverUrl, tempDir } from '../support/engines';
import {
  OPERATOR_TOKEN,
  ROOT,
  startService,
  type Api,
  type Bootstrap,
  type TestService,
  eventually,
} from '../support/service';

/**
 * Metering and the usage report (spec "Usage report", "Usage", Errors 402,
 * "Pre-flight order", credit metering notes; decisions §2 and §5; docs/api.md
 * "Usage"). A mixed workload on one account (records with equality and range
 * lookups, text, semantic and hybrid searches, text and file ingests, in the
 * live and test tenants and two contexts), then the exact milli-credit figures,
 * their reconciliation, the context-confined view, billing:r, the 402 ceiling on
 * the free plan and on a small enterprise creditLimit (nothing written), and the
 * same report after `npm run rebuild`. Reads are priced with a small included
 * allowance here (PRICES_JSON), so their overage shows.
 */
const PRICES = { reads: { includedCalls: 5, callsPerCredit: 1000, includedBytes: 2000, bytesPerCredit: 1000 } };
const ENV = { PRICES_JSON: JSON.stringify(PRICES), USAGE_READS_FLUSH_MS: '50' };

const data = tempDir('svc-usage-');
let svc: TestService;
let api: Api;
let acct: Bootstrap;
let live: string;
let test: string;
let ctx2: string;
const h2 = () => ({ 'x-context-id': ctx2 });

/** Reads of the metered account: each successful one counts a call and its bytes. */
const reads = { calls: 0, bytes: 0 };
async function read(path: string, token: string, headers?: Record<string, string>) {
  const r = await api.get(path, token, headers);
  if (r.status < 400) {
    reads.calls += 1;
    reads.bytes += Number(r.headers.get('content-length'));
  }
  return r;
}

async function ok<T = any>(p: Promise<{ status: number; text: string; body: any }>, status: number): Promise<T> {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

const usage = async (token: string, query = '') => ok(api.get(`/v1/usage${query}`, token), 200);

/** What the workload must have charged, per scope, in milli-credits and counts. */
const expected = {
  live: { recordWrites: 0, documentWrites: 0, indexes: 0, textIngest: 0, fileIngest: 0, search: 0 },
  liveCtx2: { recordWrites: 0, documentWrites: 0, indexes: 0, textIngest: 0, fileIngest: 0, search: 0 },
  test: { recordWrites: 0, documentWrites: 0, indexes: 0, textIngest: 0, fileIngest: 0, search: 0 },
};
const sumOf = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);

let before: Record<string, unknown>;
let confinedToken: string;

beforeAll(async () => {
  svc = await startService({ dataDir: data.dir, env: ENV });
  api = svc.api;
  acct = await api.newAccount({ plan: 'pro', rateLimitPerMinute: 1_000_000 });
  live = acct.tenants.live.rootKey;
  test = acct.tenants.test.rootKey;
  ctx2 = (await ok(api.post('/v1/contexts', live, { name: 'second' }), 201)).id;

  // --- records, live default context -------------------------------------------------------------
  await ok(
    api.post('/v1/schemas', live, {
      typeName: 'item',
      displayName: 'Item',
      allowedSurfaces: ['record'],
      indexMode: 'NONE',
      fields: [
        { fieldId: 'code', fieldType: 'string' },
        { fieldId: 'price', fieldType: 'number' },
        { fieldId: 'tag', fieldType: 'string' },
        { fieldId: 'pin', fieldType: 'string', sensitive: true },
      ],
      lookupFields: [{ fieldName: 'code', unique: true }, { fieldName: 'price', rangeEnabled: true }, 'tag', 'pin'],
    }),
    201,
  );
  // code (equality 1) + price (range 3) + tag (1) + pin (sensitive, blind-indexed: 1) = 6 index credits, + 1 write.
  const r1 = await ok(
    api.post('/v1/records', live, {
      typeName: 'item',
      externalId: 'ext-1',
      payload: { code: 'A1', price: 10, tag: 'x', pin: '1234' },
    }),
    201,
  );
  expected.live.recordWrites += 1000;
  expected.live.indexes += 6000;
  // Only code has a value: 1 index credit (userId and scopes are counted in indexCount, not charged).
  const r2 = await ok(
    api.post('/v1/records', live, {
      typeName: 'item',
      payload: { code: 'A2' },
      userId: randomUUID(),
      scopes: ['org:acme'],
    }),
    201,
  );
  expected.live.recordWrites += 1000;
  expected.live.indexes += 1000;
  // A patch is a write: the record as written now indexes code and price (1 + 3).
  await ok(api.patch(`/v1/records/${r2.id}`, live, { payload: { price: 5 } }), 200);
  expected.live.recordWrites += 1000;
  expected.live.indexes += 4000;
  // Not charged: an idempotent re-create (nothing written), a refused write, a delete.
  await ok(
    api.post('/v1/records', live, {
      typeName: 'item',
      externalId: 'ext-1',
      payload: { code: 'A1', price: 10, tag: 'x', pin: '1234' },
    }),
    200,
  );
  await ok(api.post('/v1/records', live, { typeName: 'item', payload: { price: 'not a number' } }), 400);
  await ok(api.post('/v1/records', live, { typeName: 'item', payload: { code: 'A1' } }), 409);
  await ok(api.del(`/v1/records/${r2.id}`, live), 204);
  // A batch of two creates: (1 + code 1 + tag 1) and (1 + code 1).
  const batch = await ok(
    api.post('/v1/records/batch', live, {
      records: [
        { typeName: 'item', payload: { code: 'B1', tag: 'y' } },
        { typeName: 'item', payload: { code: 'B2' } },
      ],
    }),
    200,
  );
  expect(batch.results.map((x: { status: string }) => x.status)).toEqual(['created', 'created']);
  expected.live.recordWrites += 2000;
  expected.live.indexes += 3000;
  expect((await read(`/v1/records/${r1.id}`, live)).status).toBe(200);
  expect((await read('/v1/records?type=item', live)).status).toBe(200);
  expect((await read('/v1/records/lookup?type=item&field=price&from=0&to=100', live)).status).toBe(200);

  // --- documents, live default context -----------------------------------------------------------
  const d1 = await ok(api.post('/v1/documents', live, { title: 'hello', text: 'hello world', indexMode: 'NONE' }), 201);
  expected.live.documentWrites += 1000;
  expected.live.textIngest += 1000; // 11 bytes: one started 10 KB
  await ok(api.post('/v1/documents', live, { title: 'long', text: 'a'.repeat(25_000), indexMode: 'NONE' }), 201);
  expected.live.documentWrites += 1000;
  expected.live.textIngest += 3000; // 25,000 bytes: three started 10 KB (10,240 bytes)
  await ok(api.patch(`/v1/documents/${d1.id}`, live, { title: 'hello again' }), 200);
  expected.live.documentWrites += 1000;
  await ok(api.patch(`/v1/documents/${d1.id}`, live, { text: 'fresh text' }), 200);
  expected.live.documentWrites += 1000;
  expected.live.textIngest += 1000;
  const up = await ok(
    api.post('/v1/documents/upload', live, {
      title: 'file',
      fileName: 'f.txt',
      fileType: 'text/plain',
      indexMode: 'NONE',
    }),
    201,
  );
  expected.live.documentWrites += 1000;
  const put = await fetch(up.uploadUrl, {
    method: 'PUT',
    headers: { 'content-type': 'text/plain', [up.requiredHeaderName]: up.requiredHeaderValue },
    body: 'f'.repeat(150_000),
  });
  expect(put.status).toBe(200);
  expected.live.fileIngest += 4000; // 150,000 bytes: two started 100 KB (102,400 bytes), 2 credits each
  expect((await read(`/v1/documents/${d1.id}`, live)).status).toBe(200);
  expect((await read(`/v1/documents/${d1.id}/text`, live)).status).toBe(200);

  // --- searches, live default context: TEXT x2, SEMANTIC, HYBRID (the default mode) ------------------
  for (const body of [
    { query: 'hello', mode: 'TEXT' },
    { query: 'world', mode: 'TEXT' },
    { query: 'greeting', mode: 'SEMANTIC' },
    { query: 'hello' },
  ])
    await ok(api.post('/v1/search', live, body), 200);
  expected.live.search += 1000 + 1000 + 1000 + 2000;
  await ok(api.post('/v1/search', live, { query: 'hello', limit: 101 }), 400); // refused: not charged

  // --- the second context of the live tenant -----------------------------------------------------
  await ok(
    api.call('POST', '/v1/schemas', {
      token: live,
      headers: h2(),
      body: { typeName: 'note', displayName: 'Note', allowedSurfaces: ['record'], indexMode: 'NONE' },
    }),
    201,
  );
  await ok(
    api.call('POST', '/v1/records', {
      token: live,
      headers: h2(),
      body: { typeName: 'note', payload: { any: 'thing' } },
    }),
    201,
  );
  expected.liveCtx2.recordWrites += 1000;
  await ok(api.call('POST', '/v1/search', { token: live, headers: h2(), body: { query: 'thing', mode: 'TEXT' } }), 200);
  expected.liveCtx2.search += 1000;
  expect((await read('/v1/records', live, h2())).status).toBe(200);

  // --- the test tenant ---------------------------------------------------------------------------
  await ok(
    api.post('/v1/schemas', test, {
      typeName: 'item',
      displayName: 'Item',
      allowedSurfaces: ['record', 'document'],
      indexMode: 'NONE',
      fields: [{ fieldId: 'code', fieldType: 'string' }],
      lookupFields: ['code'],
    }),
    201,
  );
  await ok(api.post('/v1/records', test, { typeName: 'item', payload: { code: 'T1' } }), 201);
  expected.test.recordWrites += 1000;
  expected.test.indexes += 1000;
  const schemaId = (await read('/v1/schemas', test)).body.data[0].id;
  // The audit export is a read answered as a stream (no Content-Length): its bytes are what it sent.
  const exported = await fetch(`${svc.url}/v1/export`, { headers: { authorization: `Bearer ${test}` } });
  expect(exported.status).toBe(200);
  expect(exported.headers.get('content-length')).toBeNull();
  const exportedBytes = Buffer.byteLength(await exported.text());
  expect(exportedBytes).toBeGreaterThan(1000);
  reads.calls += 1;
  reads.bytes += exportedBytes;
  await ok(
    api.post('/v1/documents', test, {
      title: 'bound',
      text: 'x'.repeat(10_240),
      schemaId,
      payload: { code: 'D1' },
      indexMode: 'NONE',
    }),
    201,
  );
  expected.test.documentWrites += 1000;
  expected.test.indexes += 1000; // the bound schema's lookup field `code`
  expected.test.textIngest += 1000; // exactly 10 KB: one unit
  await ok(api.post('/v1/search', test, { query: 'bound', mode: 'HYBRID' }), 200);
  expected.test.search += 2000;

  const tok = await ok(
    api.post('/v1/tokens', live, { scope: { allowedActions: ['billing:r', 'records:r'] }, contextId: ctx2 }),
    201,
  );
  confinedToken = tok.token;
}, 240_000);

afterAll(async () => {
  await svc?.service.close().catch(() => {});
  data.remove();
});

/** The account's read counters, once the batched read counts have reached the log (the report itself is not a read). */
async function settledReport(token: string) {
  await svc.service.meter.flush();
  let last = '';
  return eventually(
    async () => {
      const r = await usage(token);
      const now = JSON.stringify(r);
      const stable = now === last;
      last = now;
      return stable ? r : null;
    },
    10_000,
    100,
  );
}

describe('usage report', () => {
  it('charges each category exactly, in milli-credits, and counts the operations', async () => {
    const r = await settledReport(live);
    expect(r.period).toBe(new Date().toISOString().slice(0, 7));
    expect(r.plan).toBe('pro');
    expect(r.credits.limit).toBe(250_000);
    const b = r.credits.breakdown;
    const cat = (k: keyof typeof expected.live) => expected.live[k] + expected.liveCtx2[k] + expected.test[k];
    for (const k of Object.keys(expected.live) as Array<keyof typeof expected.live>)
      expect(b[`${k}Milli`], k).toBe(cat(k));
    expect(b.scriptExecutionMilli).toBe(0);
    expect(r.records.writes.count).toBe(7);
    // indexCount: logical index credits, automatic lookups counted: r1 6 + schema + externalId = 8; r2 1 + schema +
    // userId + scopes = 4; its patch 4 + 3 = 7; B1 2 + 1 = 3; B2 1 + 1 = 2; ctx2 note 0 + 1 = 1; test T1 1 + 1 = 2.
    expect(r.records.writes.indexCount).toBe(8 + 4 + 7 + 3 + 2 + 1 + 2);
    expect(r.documents.writes).toEqual({ count: 6, indexCount: 2 });
    expect(r.documents.ingest.text).toEqual({ count: 4, bytes: 11 + 25_000 + 10 + 10_240 });
    expect(r.documents.ingest.file).toEqual({ count: 1, bytes: 150_000 });
    expect(r.search.queries).toEqual({ text: { count: 3 }, semantic: { count: 1 }, hybrid: { count: 2 } });
    expect(r.inference.endpoints).toEqual({ chat: { calls: 0 }, rag: { calls: 0 }, ask: { calls: 0 } });
    expect(r.inference.balanceCents).toBe(0);
    expect(r.execution).toEqual({
      executions: 0,
      totalMillis: 0,
      includedMillis: 0,
      billableMillis: 0,
      credits: 0,
      creditsMilli: 0,
    });
    expect(r.identity).toEqual({ users: { count: 0 }, entities: { count: 0 } });
  });

  it('prices reads beyond the included calls and bytes (1 credit per 1,000 calls, per 1,000 bytes here)', async () => {
    const r = await settledReport(live);
    expect(r.reads.calls.used).toBe(reads.calls);
    expect(r.reads.calls.included).toBe(5);
    expect(r.reads.dataOut.bytes).toBe(reads.bytes);
    expect(r.reads.dataOut.includedBytes).toBe(2000);
    expect(r.reads.calls.overageCreditsMilli).toBe((reads.calls - 5) * 1);
    expect(r.reads.dataOut.overageCreditsMilli).toBe(r.reads.dataOut.bytes - 2000);
    expect(r.credits.breakdown.readsMilli).toBe(r.reads.calls.overageCreditsMilli);
    expect(r.credits.breakdown.dataOutMilli).toBe(r.reads.dataOut.overageCreditsMilli);
    expect(r.reads.calls.overageCredits).toBe(Math.floor(r.reads.calls.overageCreditsMilli / 1000));
  });

  it('reconciles: tenants and contexts add up to the account exactly; credits.used rounds down', async () => {
    const r = await settledReport(live);
    const writes = sumOf(expected.live) + sumOf(expected.liveCtx2) + sumOf(expected.test);
    expect(r.credits.usedMilli).toBe(writes + r.reads.calls.overageCreditsMilli + r.reads.dataOut.overageCreditsMilli);
    expect(r.credits.used).toBe(Math.floor(r.credits.usedMilli / 1000));
    expect(r.credits.remaining).toBe(Math.floor((250_000_000 - r.credits.usedMilli) / 1000));
    expect(r.tenants.live.credits.usedMilli + r.tenants.test.credits.usedMilli).toBe(r.credits.usedMilli);
    expect(r.tenants.live.tenantId).toBe(acct.tenants.live.tenantId);
    expect(r.tenants.test.tenantId).toBe(acct.tenants.test.tenantId);
    // Read overage goes to the context whose reads crossed the included amount; everything else is where it was done.
    const withoutReads = (t: any) =>
      t.credits.usedMilli - t.credits.breakdown.readsMilli - t.credits.breakdown.dataOutMilli;
    expect(withoutReads(r.tenants.test)).toBe(sumOf(expected.test));
    expect(withoutReads(r.tenants.live)).toBe(sumOf(expected.live) + sumOf(expected.liveCtx2));
    expect(r.tenants.test.search.queries.hybrid.count).toBe(1);
    for (const env of ['live', 'test'])
      expect(Object.keys(r.tenants[env].inference.endpoints).sort()).toEqual(['ask', 'chat', 'rag']);
    // One entry per context with activity: the live default, the second, the test default.
    expect(r.contexts.map((c: any) => c.contextId).sort()).toEqual(
      [acct.tenants.live.contextId, ctx2, acct.tenants.test.contextId].sort(),
    );
    expect(r.contexts.reduce((n: number, c: any) => n + c.credits.usedMilli, 0)).toBe(r.credits.usedMilli);
    const second = r.contexts.find((c: any) => c.contextId === ctx2);
    expect(second.credits.breakdown.recordWritesMilli).toBe(1000);
    expect(second.credits.breakdown.searchMilli).toBe(1000);
    // The test tenant's own root key sees the same account report.
    const fromTest = await usage(test);
    expect(fromTest.credits.usedMilli).toBe(r.credits.usedMilli);
    // contextId narrows the contexts list only (display filter).
    const filtered = await usage(live, `?contextId=${ctx2}`);
    expect(filtered.contexts.map((c: any) => c.contextId)).toEqual([ctx2]);
    expect(filtered.credits.usedMilli).toBe(r.credits.usedMilli);
  });

  it(
    'a context-confined credential sees its context only: the other environment null, reads 0, the whole ' +
      'plan as limit',
    async () => {
      const all = await settledReport(live);
      const second = all.contexts.find((c: any) => c.contextId === ctx2);
      const r = await usage(confinedToken);
      expect(r.tenants.test).toBeNull();
      expect(r.tenants.live.credits.usedMilli).toBe(second.credits.usedMilli);
      expect(r.credits.usedMilli).toBe(second.credits.usedMilli);
      expect(r.credits.limit).toBe(250_000);
      expect(r.reads.calls.used).toBe(0);
      expect(r.reads.dataOut.bytes).toBe(0);
      expect(r.records.writes.count).toBe(1);
      expect(r.search.queries.text.count).toBe(1);
      expect(r.contexts.map((c: any) => c.contextId)).toEqual([ctx2]);
    },
  );

  it('needs billing:r on scoped credentials (uniform 403); selects the period; refuses a bad one', async () => {
    const tok = (await ok(api.post('/v1/tokens', live, { scope: { allowedActions: ['records:r'] } }), 201)).token;
    const r = await api.get('/v1/usage', tok);
    expect(r.status).toBe(403);
    expect(r.body.errorCode).toBe('FORBIDDEN');
    expect(r.text).not.toMatch(/billing/);
    const old = await usage(live, '?year=2001&month=2');
    expect(old.period).toBe('2001-02');
    expect(old.credits.usedMilli).toBe(0);
    expect(old.tenants.live.credits.usedMilli).toBe(0);
    expect(old.contexts).toEqual([]);
    expect((await api.get('/v1/usage?month=13', live)).status).toBe(400);
    expect((await api.get('/v1/usage?year=abc', live)).status).toBe(400);
  });

  it('replaying the usage events again counts nothing twice', async () => {
    const r0 = await settledReport(live);
    const projection = usageProjection();
    const events: StoredEvent[] = [];
    for (let after = 0; ;) {
      const page = await svc.service.store.readAll(after, 1000);
      if (!page.length) break;
      events.push(...page);
      after = page[page.length - 1].position;
    }
    await svc.service.sql.tx((q) => projection.applyMany!(q, events));
    // Served charges (UsageMetered events) and the charges writes carry in their metadata, applied once more each.
    const charged = events.filter(
      (x) => x.type === 'UsageMetered' || x.metadata.chargeCode || x.metadata.charge?.length,
    );
    expect(charged.some((x) => x.type === 'RecordCreated')).toBe(true);
    for (const e of [
      ...charged.filter((x) => x.type === 'UsageMetered').slice(0, 5),
      ...charged.filter((x) => x.type !== 'UsageMetered').slice(0, 5),
    ])
      await svc.service.sql.tx((q) => projection.apply(q, e));
    expect(await usage(live)).toEqual(r0);
  });
});

describe('credit ceiling (402)', () => {
  const refusedLeftNothing = async (requestId: string) => {
    for (let after = 0; ;) {
      const page = await svc.service.store.readAll(after, 1000);
      if (!page.length) return;
      for (const e of page) expect(e.metadata.requestId, `${e.type} ${e.streamId}`).not.toBe(requestId);
      after = page[page.length - 1].position;
    }
  };

  it(
    'free plan (1,000 credits): writes and searches are refused once the month reached it; reads, deletes ' +
      'and schemas still work',
    async () => {
      const free = await api.newAccount({ rateLimitPerMinute: 1_000_000 });
      const key = free.tenants.live.rootKey;
      // Two 5,200,000-byte text ingests: 1 + 508 started 10 KB each = 1,018 credits.
      const big = 'z'.repeat(5_200_000);
      const d1 = await ok(api.post('/v1/documents', key, { title: 'big 1', text: big, indexMode: 'NONE' }), 201);
      const u1 = await usage(key);
      expect(u1.plan).toBe('free');
      expect(u1.credits.usedMilli).toBe(509_000);
      expect(u1.credits.limit).toBe(1000);
      await ok(api.post('/v1/documents', key, { title: 'big 2', text: big, indexMode: 'NONE' }), 201);
      await ok(
        api.post('/v1/schemas', key, {
          typeName: 'n',
          displayName: 'N',
          allowedSurfaces: ['record'],
          indexMode: 'NONE',
        }),
        201,
      );
      const refused = await api.post('/v1/records', key, { typeName: 'n', payload: {} });
      expect(refused.status).toBe(402);
      expect(refused.body.errorCode).toBe('PAYMENT_REQUIRED');
      expect(refused.body.requestId).toBeTruthy();
      await refusedLeftNothing(refused.body.requestId);
      expect((await api.post('/v1/search', key, { query: 'z', mode: 'TEXT' })).status).toBe(402);
      expect((await api.post('/v1/documents', key, { title: 'more', text: 'x', indexMode: 'NONE' })).status).toBe(402);
      expect((await api.patch(`/v1/documents/${d1.id}`, key, { title: 'renamed' })).status).toBe(402);
      // The gate runs before validation: an invalid body at the ceiling is a 402 too.
      expect((await api.post('/v1/records', key, { nonsense: true })).status).toBe(402);
      expect((await api.get('/v1/records?type=n', key)).body.data).toEqual([]);
      expect((await api.get(`/v1/documents/${d1.id}`, key)).status).toBe(200);
      await ok(api.del(`/v1/documents/${d1.id}`, key), 204);
      const after = await usage(key);
      expect(after.credits.breakdown.textIngestMilli + after.credits.breakdown.documentWritesMilli).toBe(1_018_000);
      expect(after.credits.remaining).toBe(0);
      // An upgrade takes effect on the next request.
      await ok(
        api.call('PATCH', `/operator/accounts/${free.accountId}`, { token: OPERATOR_TOKEN, body: { plan: 'starter' } }),
        200,
      );
      await ok(api.post('/v1/records', key, { typeName: 'n', payload: {} }), 201);
    },
    60_000,
  );

  it(
    'enterprise with a small creditLimit: the write that reaches it passes, the next is 402 with nothing ' + 'written',
    async () => {
      const ent = await api.newAccount({ plan: 'enterprise', creditLimit: 3, rateLimitPerMinute: 1_000_000 });
      const key = ent.tenants.live.rootKey;
      await ok(
        api.post('/v1/schemas', key, {
          typeName: 'n',
          displayName: 'N',
          allowedSurfaces: ['record'],
          indexMode: 'NONE',
        }),
        201,
      );
      for (let i = 0; i < 3; i++) await ok(api.post('/v1/records', key, { typeName: 'n', payload: { i } }), 201);
      const r = await api.post('/v1/records', key, { typeName: 'n', payload: { i: 3 } });
      expect(r.status).toBe(402);
      expect(r.body.errorCode).toBe('PAYMENT_REQUIRED');
      await refusedLeftNothing(r.body.requestId);
      const batch = await api.post('/v1/records/batch', key, { records: [{ typeName: 'n', payload: {} }] });
      expect(batch.status).toBe(402);
      expect((await api.post('/v1/search', key, { query: 'x', mode: 'TEXT' })).status).toBe(402);
      expect((await api.get('/v1/records?type=n', key)).body.data).toHaveLength(3);
      const u = await usage(key);
      expect(u.credits).toMatchObject({ used: 3, usedMilli: 3000, limit: 3, remaining: 0 });
      // Without a creditLimit an enterprise account has no ceiling (and no limit in the report).
      await ok(
        api.call('PATCH', `/operator/accounts/${ent.accountId}`, {
          token: OPERATOR_TOKEN,
          body: { creditLimit: null },
        }),
        200,
      );
      await ok(api.post('/v1/records', key, { typeName: 'n', payload: { i: 4 } }), 201);
      expect((await usage(key)).credits.limit).toBeUndefined();
    },
  );
});

/** Runs `deploy/src/rebuild.ts <target>` (what `npm run rebuild` runs) on the data directory. */
function rebuild(target: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    let out = '';
    const child = spawn(process.execPath, ['--import', 'tsx', 'deploy/src/rebuild.ts', target], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: '',
        EVENTSTORE_URL: '',
        KAFKA_BROKERS: '',
        ELASTICSEARCH_URL: '',
        LANCEDB_URI: '',
        OBJECT_STORE_URL: '',
        EMBEDDINGS_URL: '',
        DATA_DIR: data.dir,
        OPERATOR_TOKEN,
        ...ENV,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const t = setTimeout(() => (child.kill('SIGKILL'), reject(new Error(`rebuild did not finish: ${out}`))), 120_000);
    child.once('exit', (code) => (clearTimeout(t), resolve({ code, out })));
  });
}

describe('rebuild', () => {
  it('npm run rebuild (all) gives the same reports', async () => {
    const reports = async () => ({
      live: await settledReport(live),
      test: await usage(test),
      confined: await usage(confinedToken),
      ctx2: await usage(live, `?contextId=${ctx2}`),
    });
    before = await reports();
    expect((before.live as any).credits.usedMilli).toBeGreaterThan(0);
    await svc.service.close();
    const r = await rebuild('all');
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/rebuilt read-models/);
    svc = await startService({ dataDir: data.dir, env: ENV });
    api = svc.api;
    expect(await reports()).toEqual(before);
  }, 180_000);
});

/** The same metering on a PostgreSQL server (DATABASE_URL): the usage projection's statements, the gate, the report. */
function postgresSuite() {
  let pgSvc: TestService;
  afterAll(async () => {
    await pgSvc?.stop();
  });

  it('meters, reports, reconciles, replays idempotently and refuses at the ceiling', async () => {
    pgSvc = await startService({ engine: 'postgres', env: ENV });
    const a = pgSvc.api;
    const account = await a.newAccount({ plan: 'enterprise', creditLimit: 12, rateLimitPerMinute: 1_000_000 });
    const key = account.tenants.live.rootKey;
    const testKey = account.tenants.test.rootKey;
    await ok(
      a.post('/v1/schemas', key, {
        typeName: 'item',
        displayName: 'Item',
        allowedSurfaces: ['record'],
        indexMode: 'NONE',
        fields: [{ fieldId: 'price', fieldType: 'number' }],
        lookupFields: [{ fieldName: 'price', rangeEnabled: true }],
      }),
      201,
    );
    await ok(a.post('/v1/records', key, { typeName: 'item', payload: { price: 1 } }), 201); // 1 + 3
    await ok(a.post('/v1/search', key, { query: 'x' }), 200); // HYBRID 2
    await ok(a.post('/v1/documents', testKey, { title: 't', text: 'hello', indexMode: 'NONE' }), 201); // 1 + 1
    expect((await a.get('/v1/records', key)).status).toBe(200);
    await pgSvc.service.meter.flush();
    const r = await eventually(async () => {
      const u = await ok(a.get('/v1/usage', key), 200);
      return u.reads.calls.used === 1 ? u : null;
    });
    expect(r.credits.breakdown).toMatchObject({
      recordWritesMilli: 1000,
      indexesMilli: 3000,
      searchMilli: 2000,
      documentWritesMilli: 1000,
      textIngestMilli: 1000,
      readsMilli: 0,
    });
    expect(r.tenants.live.credits.usedMilli + r.tenants.test.credits.usedMilli).toBe(r.credits.usedMilli);
    expect(r.credits.usedMilli).toBe(8000 + r.credits.breakdown.dataOutMilli);
    const events: StoredEvent[] = [];
    for (let after = 0; ;) {
      const page = await pgSvc.service.store.readAll(after, 1000);
      if (!page.length) break;
      events.push(...page);
      after = page[page.length - 1].position;
    }
    await pgSvc.service.sql.tx((q) => usageProjection().applyMany!(q, events));
    expect(await ok(a.get('/v1/usage', key), 200)).toEqual(r);
    // 8 used of 12 (plus any data out over 2,000 bytes): one more write of 4 credits reaches it; the next is 402.
    await ok(a.post('/v1/records', key, { typeName: 'item', payload: { price: 2 } }), 201);
    const refused = await a.post('/v1/records', key, { typeName: 'item', payload: {} });
    expect(refused.status).toBe(402);
    expect(refused.body.errorCode).toBe('PAYMENT_REQUIRED');
  }, 60_000);
}

if (serverUrl('postgres')) describe('usage on PostgreSQL (DATABASE_URL)', postgresSuite);
else
  describe.skip('usage on PostgreSQL: skipped because DATABASE_URL is not set', () =>
    it('needs a PostgreSQL server', () => {}));
