import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sql, streams } from '@svc/domain';
import { eventually, ROOT, startService, type Api, type Bootstrap, type TestService } from '../support/service';
import { tempDir } from '../support/engines';

/**
 * Teardown (spec "Teardown"; decisions §1 and §9; docs/api.md "Teardown"):
 * DELETE /v1/contexts/{id} and DELETE /developer/tenants/{tenantId} remove the
 * context's / tenant's data from every read model, both search indexes and the
 * blob store; the log keeps the teardown events, so a rebuild converges to the
 * same state; the tenant's credentials stop working, the other tenant of the
 * account is untouched. What no credential can reach any more is checked in
 * the service's own tables and indexes.
 */
const WORD = `quokka${randomUUID().slice(0, 6)}`;
const MEANING = 'aardvark migration across the savanna at dawn';
const data = tempDir('svc-teardown-');
let svc: TestService;
let api: Api;
let acct: Bootstrap;
let stranger: Bootstrap;
let L: string; // the live tenant: torn down
let T: string; // the test tenant: untouched
let rootL: string;
let rootT: string;
let ctxL: string;
let ctx2: string;
const ids: Record<string, string> = {};
const creds: Record<string, string> = {};
let downloadUrl: string;
let stopped = false;

const enterprise = () =>
  api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 });
const inCtx = (ctx: string) => ({ 'x-context-id': ctx });

async function ok(p: Promise<{ status: number; text: string; body: any }>, status = 200) {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

/** Creates a searchable record and waits until it is INDEXED. */
async function record(token: string, typeName: string, body: string, headers: Record<string, string> = {}) {
  const r = await ok(
    api.call('POST', '/v1/records', {
      token,
      headers,
      body: { typeName, payload: { title: 'Field notes', body, secret: 'hush-hush' } },
    }),
    201,
  );
  await eventually(
    async () => (await api.call('GET', `/v1/records/${r.id}`, { token, headers })).body?.indexStatus === 'INDEXED',
    60_000,
    50,
  );
  return r.id as string;
}

async function documentOf(token: string, text: string, headers: Record<string, string> = {}) {
  const d = await ok(
    api.call('POST', '/v1/documents', { token, headers, body: { title: 'Memo', text, indexMode: 'HYBRID' } }),
    201,
  );
  await eventually(
    async () => (await api.call('GET', `/v1/documents/${d.id}`, { token, headers })).body?.status === 'INDEXED',
    60_000,
    50,
  );
  return d.id as string;
}

async function schema(token: string, headers: Record<string, string> = {}) {
  const typeName = `Note_${randomUUID().slice(0, 8)}`;
  await ok(
    api.call('POST', '/v1/schemas', {
      token,
      headers,
      body: {
        typeName,
        displayName: 'Notes',
        allowedSurfaces: ['record'],
        fields: [
          { fieldId: 'title', fieldType: 'string', searchable: true },
          { fieldId: 'body', fieldType: 'string', searchable: true },
          { fieldId: 'secret', fieldType: 'string', sensitive: true },
        ],
        lookupFields: ['title'],
      },
    }),
    201,
  );
  return typeName;
}

const searchIds = async (token: string, query: string, mode: 'TEXT' | 'SEMANTIC') => {
  const r = await ok(api.post('/v1/search', token, { query, mode, limit: 50 }));
  return r.results.map((x: { documentId: string }) => x.documentId) as string[];
};

/** Rows of a tenant (and context) left in each table that holds tenant data, by table (absent tables count nothing). */
async function leftovers(
  service: { sql: Sql; searchSql: Sql },
  tenantId: string,
  contextId?: string,
): Promise<Record<string, number>> {
  const tables = [
    'rm_records',
    'rm_record_lookups',
    'rm_documents',
    'rm_document_lookups',
    'rm_folders',
    'rm_schemas',
    'rm_users',
    'rm_entities',
    'rm_versions',
    'rm_tombstones',
    'si_items',
    'si_vector_jobs',
    'ti_passages',
    'ti_terms',
    'ti_stats',
    ...(contextId ? [] : ['rm_namespaces']),
  ];
  const out: Record<string, number> = {};
  // The search side's tables live in their own embedded database in the default, beside the read models on a server.
  for (const sql of new Set([service.sql, service.searchSql])) {
    const { rows } = await sql.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND ` +
        `table_name = ANY($1::text[])`,
      [tables],
    );
    for (const { table_name: t } of rows) {
      const { rows: n } = await sql.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${t} WHERE tenant_id = $1 ${contextId ? 'AND context_id = $2' : ''}`,
        contextId ? [tenantId, contextId] : [tenantId],
      );
      out[t] = (out[t] ?? 0) + n[0].n;
    }
  }
  return out;
}
const nothingLeft = (counts: Record<string, number>) => Object.values(counts).every((n) => n === 0);

/** The search engines, asked directly for a torn-down context (no credential can ask any more). */
async function indexed(s: TestService, tenantId: string, contextId: string) {
  const { text, vectors, embedder } = s.service.search!;
  const keyword = await text.search({
    filter: { tenantId, contextId, clauses: [] },
    query: `${WORD} ${MEANING}`,
    textMode: 'OR',
    slop: 0,
    limit: 50,
  });
  const [vector] = await embedder.embed([MEANING], { purpose: 'query' });
  const semantic = await vectors.search({ tenantId, contextId, vector, limit: 50, exact: true });
  return keyword.hits.length + semantic.length;
}

beforeAll(async () => {
  svc = await startService({ dataDir: data.dir });
  api = svc.api;
  acct = await enterprise();
  stranger = await enterprise();
  [L, T] = [acct.tenants.live.tenantId, acct.tenants.test.tenantId];
  [rootL, rootT, ctxL] = [acct.tenants.live.rootKey, acct.tenants.test.rootKey, acct.tenants.live.contextId];

  // The live tenant: every kind of data in its default context, and a second context.
  const typeL = await schema(rootL);
  ids.r1 = await record(rootL, typeL, `${WORD} ${MEANING}`);
  ids.folder = (await ok(api.post('/v1/folders', rootL, { name: 'Doomed folder' }), 201)).id;
  ids.d1 = await documentOf(rootL, `Inline memo. ${WORD} ${MEANING}.`);
  const up = await ok(
    api.post('/v1/documents/upload', rootL, {
      title: 'Upload',
      fileName: 'notes.txt',
      fileType: 'text/plain',
      indexMode: 'HYBRID',
    }),
    201,
  );
  const put = await fetch(up.uploadUrl, {
    method: 'PUT',
    headers: { 'content-type': 'text/plain', [up.requiredHeaderName]: up.requiredHeaderValue },
    body: `Uploaded file. ${WORD} ${MEANING}.`,
  });
  expect(put.status).toBe(200);
  ids.d2 = up.id;
  await eventually(
    async () => (await api.get(`/v1/documents/${ids.d2}`, rootL)).body?.status === 'INDEXED',
    60_000,
    50,
  );
  downloadUrl = (await ok(api.get(`/v1/documents/${ids.d2}/download-url`, rootL))).downloadUrl;
  ids.user = (await ok(api.post('/v1/users', rootL, { displayName: 'Doomed user' }), 201)).id;
  await ok(api.post('/v1/namespaces', rootL, { name: 'team' }), 201);
  ids.entity = (await ok(api.post('/v1/entities', rootL, { namespace: 'team', key: 'blue' }), 201)).id;
  creds.scoped = (
    await ok(api.post('/developer/keys', acct.developerToken, { tenantId: L, allowedActions: ['records:r'] }), 201)
  ).key;
  creds.token = (
    await ok(api.post('/v1/tokens', rootL, { scope: { allowedActions: ['records:r', 'search:r'] } }), 201)
  ).token;
  ctx2 = (await ok(api.post('/v1/contexts', rootL, { name: 'second' }), 201)).id;
  const type2 = await schema(rootL, inCtx(ctx2));
  ids.r2 = await record(rootL, type2, `${WORD} ${MEANING}`, inCtx(ctx2));
  ids.d3 = await documentOf(rootL, `Second context memo. ${WORD} ${MEANING}.`, inCtx(ctx2));
  creds.ctx2 = (
    await ok(api.post('/v1/tokens', rootL, { scope: { allowedActions: ['records:r'] }, contextId: ctx2 }), 201)
  ).token;

  // The test tenant of the same account holds the same words.
  const typeT = await schema(rootT);
  ids.rT = await record(rootT, typeT, `${WORD} ${MEANING}`);
  ids.dT = await documentOf(rootT, `Test tenant memo. ${WORD} ${MEANING}.`);

  // Everything is where it should be before any teardown.
  expect((await searchIds(rootL, WORD, 'TEXT')).sort()).toEqual([ids.r1, ids.d1, ids.d2].sort());
  expect(await searchIds(rootL, MEANING, 'SEMANTIC')).toEqual(expect.arrayContaining([ids.r1, ids.d1, ids.d2]));
  expect(
    (await api.call('POST', '/v1/search', { token: rootL, headers: inCtx(ctx2), body: { query: WORD, mode: 'TEXT' } }))
      .body.results.length,
  ).toBe(2);
  expect(existsSync(join(data.dir, 'blobs', L, ctxL))).toBe(true);
  expect(existsSync(join(data.dir, 'blobs', L, ctx2))).toBe(true);
  expect((await fetch(downloadUrl)).status).toBe(200);
  // ... and the checks used after teardown would see it: every table and both indexes hold the tenant's data now.
  const pre = await leftovers(svc.service, L);
  for (const t of [
    'rm_records',
    'rm_record_lookups',
    'rm_documents',
    'rm_folders',
    'rm_schemas',
    'rm_users',
    'rm_entities',
    'rm_namespaces',
    'rm_versions',
    'si_items',
    'ti_passages',
  ])
    expect(pre[t], t).toBeGreaterThan(0);
  expect(await indexed(svc, L, ctxL)).toBeGreaterThan(0);
  expect(await indexed(svc, L, ctx2)).toBeGreaterThan(0);
}, 240_000);

afterAll(async () => {
  if (!stopped) await svc?.stop();
  data.remove();
});

describe('DELETE /v1/contexts/{id}', () => {
  it(
    'removes the context from every read model, both search indexes and the blob store; the rest of the ' +
      'tenant stays',
    async () => {
      expect((await api.get(`/v1/records/${ids.r2}`, rootL, inCtx(ctx2))).status).toBe(200);
      expect((await api.del(`/v1/contexts/${ctx2}`, rootL)).status).toBe(204);
      // Read-your-writes: at once, nothing of it is readable, listable or searchable, and its credential is dead.
      expect((await api.get(`/v1/records/${ids.r2}`, rootL, inCtx(ctx2))).status).toBe(404);
      expect((await api.get('/v1/records', rootL, inCtx(ctx2))).status).toBe(404);
      expect(
        (
          await api.call('POST', '/v1/search', {
            token: rootL,
            headers: inCtx(ctx2),
            body: { query: WORD, mode: 'TEXT' },
          })
        ).status,
      ).toBe(404);
      expect((await api.get('/v1/records', creds.ctx2)).status).toBe(401);
      const rm = await leftovers(svc.service, L, ctx2);
      for (const t of Object.keys(rm).filter((t) => t.startsWith('rm_'))) expect(rm[t], t).toBe(0);
      // The search projector and the document worker follow within seconds.
      await eventually(async () => nothingLeft(await leftovers(svc.service, L, ctx2)), 20_000);
      await eventually(async () => (await indexed(svc, L, ctx2)) === 0, 20_000);
      await eventually(async () => !existsSync(join(data.dir, 'blobs', L, ctx2)), 20_000);
      // The default context is untouched.
      expect((await api.get(`/v1/records/${ids.r1}`, rootL)).status).toBe(200);
      expect((await searchIds(rootL, WORD, 'TEXT')).sort()).toEqual([ids.r1, ids.d1, ids.d2].sort());
      expect(existsSync(join(data.dir, 'blobs', L, ctxL))).toBe(true);
    },
  );
});

describe('DELETE /developer/tenants/{tenantId}', () => {
  it(
    "takes the owning account's developer token: data-plane keys 403, another account's or an unknown " +
      'tenant 403, no token 401',
    async () => {
      const del = (token?: string, tenantId = L) => api.del(`/developer/tenants/${tenantId}`, token);
      for (const key of [rootL, rootT, creds.scoped, creds.token]) {
        const r = await del(key);
        expect(r.status).toBe(403);
        expect(r.body.errorCode).toBe('FORBIDDEN');
      }
      const foreign = await del(stranger.developerToken);
      const unknown = await del(acct.developerToken, randomUUID());
      // Spec "Errors": 403 for a tenant not owned (as webhook registration answers).
      expect(foreign.status).toBe(403);
      expect(unknown.status).toBe(403);
      expect(foreign.body.errorCode).toBe('FORBIDDEN');
      expect(foreign.body.message).toBe(unknown.body.message);
      expect((await del(undefined)).status).toBe(401);
      // Nothing happened.
      expect((await api.get(`/v1/records/${ids.r1}`, rootL)).status).toBe(200);
    },
  );

  it(
    'tears the tenant down: its credentials 401, nothing of it left in read models, search indexes or ' +
      'blobs; the test tenant untouched',
    async () => {
      expect((await api.del(`/developer/tenants/${L}`, acct.developerToken)).status).toBe(204);
      expect((await api.del(`/developer/tenants/${L}`, acct.developerToken)).status).toBe(404);
      for (const key of [rootL, creds.scoped, creds.token])
        expect((await api.get('/v1/records', key)).status).toBe(401);
      // Presigned URLs issued before die with it.
      expect((await fetch(downloadUrl)).status).toBe(404);
      // The developer cannot bring it back through a new key.
      expect((await api.post(`/developer/tenants/${L}/root-key/rotate`, acct.developerToken)).status).toBe(404);
      expect(
        (await api.post('/developer/keys', acct.developerToken, { tenantId: L, allowedActions: ['records:r'] })).status,
      ).toBe(404);
      // The read models at once (the 204 waited for them); the search indexes and blobs within seconds.
      const rm = await leftovers(svc.service, L);
      for (const t of Object.keys(rm).filter((t) => t.startsWith('rm_'))) expect(rm[t], t).toBe(0);
      const { rows: live } = await svc.service.sql.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM rm_credentials WHERE tenant_id = $1 AND NOT revoked',
        [L],
      );
      expect(live[0].n).toBe(0);
      const { rows: ctxs } = await svc.service.sql.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM rm_contexts WHERE tenant_id = $1 AND deleted_at IS NULL',
        [L],
      );
      expect(ctxs[0].n).toBe(0);
      await eventually(async () => nothingLeft(await leftovers(svc.service, L)), 20_000);
      await eventually(async () => (await indexed(svc, L, ctxL)) === 0, 20_000);
      await eventually(async () => !existsSync(join(data.dir, 'blobs', L)), 20_000);
      // The log keeps what happened: one TenantTornDown naming the contexts it closed (each with its ContextDeleted).
      const torn = await svc.service.store.readStream(streams.tenant(L));
      expect(torn.map((e) => e.type)).toEqual(['TenantTornDown']);
      expect(torn[0].data).toEqual({ tenantId: L, accountId: acct.accountId, environment: 'live', contextIds: [ctxL] });
      const closed = await svc.service.store.readStream(streams.context(ctxL));
      expect(closed.map((e) => e.type)).toEqual(['ContextCreated', 'ContextDeleted']);
    },
  );

  it(
    'the other tenant of the account keeps everything: readable, searchable by TEXT and SEMANTIC, its files ' +
      'and keys',
    async () => {
      expect((await api.get(`/v1/records/${ids.rT}`, rootT)).status).toBe(200);
      expect((await api.get(`/v1/documents/${ids.dT}/text`, rootT)).status).toBe(200);
      expect((await searchIds(rootT, WORD, 'TEXT')).sort()).toEqual([ids.rT, ids.dT].sort());
      expect(await searchIds(rootT, MEANING, 'SEMANTIC')).toEqual(expect.arrayContaining([ids.rT, ids.dT]));
      expect(existsSync(join(data.dir, 'blobs', T))).toBe(true);
      expect(nothingLeft(await leftovers(svc.service, T))).toBe(false);
      expect(
        (await api.post('/developer/keys', acct.developerToken, { tenantId: T, allowedActions: ['records:r'] })).status,
      ).toBe(201);
      expect(
        (
          await api.post('/v1/records', rootT, {
            typeName: (await api.get(`/v1/records/${ids.rT}`, rootT)).body.typeName,
            payload: { title: 'after' },
          })
        ).status,
      ).toBe(201);
    },
  );

  it('`npm run rebuild -- all` replays the log to the same state: the torn-down tenant stays gone', async () => {
    await svc.service.close();
    stopped = true;
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'deploy/src/rebuild.ts'), 'all'], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...Object.fromEntries(
          [
            'DATABASE_URL',
            'EVENTSTORE_URL',
            'KAFKA_BROKERS',
            'ELASTICSEARCH_URL',
            'LANCEDB_URI',
            'REDIS_URL',
            'OBJECT_STORE_URL',
            'EMBEDDINGS_URL',
          ].map((v) => [v, '']),
        ),
        DATA_DIR: data.dir,
      },
      encoding: 'utf8',
      timeout: 180_000,
    });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/rebuilt read-models/);
    expect(r.stdout).toMatch(/rebuilt search-index/);
    svc = await startService({ dataDir: data.dir });
    stopped = false;
    api = svc.api;
    expect(await leftovers(svc.service, L)).toEqual(
      Object.fromEntries(Object.keys(await leftovers(svc.service, L)).map((t) => [t, 0])),
    );
    expect(await indexed(svc, L, ctxL)).toBe(0);
    expect(await indexed(svc, L, ctx2)).toBe(0);
    expect(existsSync(join(data.dir, 'blobs', L))).toBe(false);
    for (const key of [rootL, creds.scoped, creds.token, creds.ctx2])
      expect((await api.get('/v1/records', key)).status).toBe(401);
    expect((await api.get(`/v1/records/${ids.rT}`, rootT)).status).toBe(200);
    expect((await searchIds(rootT, WORD, 'TEXT')).sort()).toEqual([ids.rT, ids.dT].sort());
    expect(await searchIds(rootT, MEANING, 'SEMANTIC')).toEqual(expect.arrayContaining([ids.rT, ids.dT]));
  });
});
