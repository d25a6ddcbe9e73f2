import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type NewEvent, type StoredEvent, streams } from '@svc/domain';
import {
  eventually,
  OPERATOR_TOKEN,
  ROOT,
  startService,
  type Api,
  type Bootstrap,
  type TestService,
} from '../support/service';
import { tempDir } from '../support/engines';

/**
 * The audit export (decisions §1, §4 and §10; docs/api.md "Export"): GET
 * /v1/export streams the caller tenant's stored events as NDJSON in commit
 * order, sensitive values masked, filtered by time and entity kind, resumable
 * with startFrom; `npm run export` writes the same lines to a file. Black-box
 * over HTTP on the embedded engines; the large export seeds its events straight
 * into the event store (20,000 writes through the API would take minutes).
 */
const LINE_KEYS = ['actor', 'contextId', 'data', 'position', 'recordedAt', 'streamId', 'tenantId', 'type', 'version'];
const PIN = `PIN-${randomUUID().slice(0, 8)}`;
const PIN2 = `PIN-${randomUUID().slice(0, 8)}`;

const data = tempDir('svc-export-');
let svc: TestService;
let api: Api;
let acct: Bootstrap;
let other: Bootstrap;
let root: string;
const ids: Record<string, string> = {};
/** The whole export of the main tenant, as captured by the first test. */
let all: any[] = [];
/**
 * The tenant's log keeps growing on its own (metering appends usage events for the reads these tests make):
 * later exports are compared with `all` up to its last position.
 */
const cut = (lines: any[]) => lines.filter((l) => l.position <= all[all.length - 1].position);

const enterprise = () =>
  api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 });

async function ok(p: Promise<{ status: number; text: string; body: any }>, status = 200) {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

/** GET /v1/export, parsed: every line JSON, the text ending in a newline. */
async function exportLines(query = '', token = root) {
  const r = await api.get(`/v1/export${query}`, token);
  expect(r.status, r.text).toBe(200);
  expect(r.headers.get('content-type')).toBe('application/x-ndjson');
  if (!r.text) return [];
  expect(r.text.endsWith('\n')).toBe(true);
  return r.text
    .slice(0, -1)
    .split('\n')
    .map((l) => JSON.parse(l));
}

/** The tenant's events as the store holds them (the ground truth), up to `until`. */
async function stored(tenantId: string, until = Number.MAX_SAFE_INTEGER): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  for (let after = 0; ;) {
    const page = await svc.service.store.readAll(after, 1000);
    if (!page.length) return out;
    for (const e of page) if (e.metadata.tenantId === tenantId && e.position <= until) out.push(e);
    after = page[page.length - 1].position;
  }
}

beforeAll(async () => {
  svc = await startService({ dataDir: data.dir });
  api = svc.api;
  acct = await enterprise();
  other = await enterprise();
  root = acct.tenants.live.rootKey;
  // A schema with a sensitive field that is also a unique lookup (reserved by its blind index), records written,
  // patched and deleted, a folder, a store-only document, a user: every kind of stream, no search work.
  const typeName = `Contact_${randomUUID().slice(0, 8)}`;
  ids.schema = (
    await ok(
      api.post('/v1/schemas', root, {
        typeName,
        displayName: 'Contacts',
        allowedSurfaces: ['record'],
        indexMode: 'NONE',
        fields: [
          { fieldId: 'name', fieldType: 'string' },
          { fieldId: 'pin', fieldType: 'string', sensitive: true },
        ],
        lookupFields: [{ fieldName: 'pin', unique: true }],
      }),
      201,
    )
  ).id;
  ids.r1 = (
    await ok(api.post('/v1/records', root, { typeName, externalId: 'ext-1', payload: { name: 'Ada', pin: PIN } }), 201)
  ).id;
  await ok(api.patch(`/v1/records/${ids.r1}`, root, { payload: { pin: PIN2 } }));
  ids.r2 = (await ok(api.post('/v1/records', root, { typeName, payload: { name: 'Brief' } }), 201)).id;
  await ok(api.del(`/v1/records/${ids.r2}`, root), 204);
  ids.folder = (await ok(api.post('/v1/folders', root, { name: 'Exports' }), 201)).id;
  ids.doc = (
    await ok(
      api.post('/v1/documents', root, {
        title: 'Memo',
        text: 'A short memo.',
        indexMode: 'NONE',
        payload: { note: 'n' },
      }),
      201,
    )
  ).id;
  await eventually(async () => (await api.get(`/v1/documents/${ids.doc}`, root)).body?.status === 'STORED', 20_000);
  ids.user = (await ok(api.post('/v1/users', root, { displayName: 'Ada' }), 201)).id;
  // The same account's test tenant and another account write too: none of it may appear.
  await ok(api.post('/v1/folders', acct.tenants.test.rootKey, { name: 'Test tenant folder' }), 201);
  await ok(api.post('/v1/folders', other.tenants.live.rootKey, { name: 'Other account folder' }), 201);
}, 180_000);

let closed = false;
afterAll(async () => {
  if (!closed) await svc?.stop();
  data.remove();
});

describe('GET /v1/export', () => {
  it('one stored event of the tenant a line, in commit order, exactly the documented shape', async () => {
    all = await exportLines();
    const truth = await stored(acct.tenants.live.tenantId, all[all.length - 1].position);
    expect(all.map((l) => l.position)).toEqual(truth.map((e) => e.position));
    for (let i = 1; i < all.length; i++) expect(all[i].position).toBeGreaterThan(all[i - 1].position);
    for (const [i, l] of all.entries()) {
      const e = truth[i];
      expect(Object.keys(l).sort()).toEqual(LINE_KEYS);
      expect(l).toMatchObject({
        streamId: e.streamId,
        type: e.type,
        version: e.revision + 1,
        recordedAt: e.metadata.occurredAt,
        tenantId: acct.tenants.live.tenantId,
        contextId: e.metadata.contextId,
      });
      expect(l.actor).toEqual({ keyId: e.metadata.actorKeyId, userId: e.metadata.userId });
      expect(new Date(l.recordedAt).toISOString()).toBe(l.recordedAt);
    }
    const types = new Set(all.map((l) => l.type));
    for (const t of [
      'ContextCreated',
      'CredentialIssued',
      'SchemaCreated',
      'RecordCreated',
      'RecordUpdated',
      'RecordDeleted',
      'ReservationClaimed',
      'FolderCreated',
      'DocumentCreated',
      'DocumentIndexSkipped',
      'UserCreated',
    ])
      expect(types, t).toContain(t);
    // version: the entity stream's version after the event; actor: the root key's credential.
    const rootKeyId = all.find((l) => l.type === 'CredentialIssued' && l.data.kind === 'root').data.credentialId;
    const r1 = all.filter((l) => l.streamId === streams.record(ids.r1));
    expect(r1.map((l) => [l.type, l.version])).toEqual([
      ['RecordCreated', 1],
      ['RecordUpdated', 2],
    ]);
    expect(r1.every((l) => l.actor.keyId === rootKeyId && l.contextId === acct.tenants.live.contextId)).toBe(true);
    expect(all.filter((l) => l.streamId === streams.record(ids.r2)).map((l) => [l.type, l.version])).toEqual([
      ['RecordCreated', 1],
      ['RecordDeleted', 2],
    ]);
    // The document worker's own events carry no credential.
    expect(all.find((l) => l.type === 'DocumentIndexSkipped').actor).toEqual({ keyId: null, userId: null });
  });

  it('sensitive values are masked: never clear text, never ciphertext, nor the values derived from them', async () => {
    const text = JSON.stringify(all);
    expect(text).not.toContain(PIN);
    expect(text).not.toContain(PIN2);
    expect(text).not.toContain('$sealed');
    const [created, updated] = all.filter((l) => l.streamId === streams.record(ids.r1));
    expect(created.data.payload).toEqual({ name: 'Ada', pin: '********' });
    expect(updated.data.payload).toEqual({ name: 'Ada', pin: '********' });
    expect(created.data.blindIndex).toEqual({ pin: '********' });
    // The unique sensitive value is reserved under its blind index: masked too.
    const reserved = all.filter((l) => l.type === 'ReservationClaimed' && /record-unique/.test(l.data.key));
    expect(reserved.length).toBeGreaterThanOrEqual(2);
    for (const l of reserved) expect(l.data.key).toMatch(/\/blind:\*{8}$/);
    // Credential secrets are stored as hashes: not exported either.
    for (const l of all.filter((x) => x.type === 'CredentialIssued')) expect(l.data.secretHash).toBe('********');
    expect(text).not.toMatch(/[0-9a-f]{64}/);
    // What is not sensitive stays as written.
    expect(all.find((l) => l.type === 'DocumentCreated').data).toMatchObject({ title: 'Memo', payload: { note: 'n' } });
  });

  it('streams= narrows to entity kinds; an unknown kind is a 400', async () => {
    const records = cut(await exportLines('?streams=record'));
    expect(records.length).toBeGreaterThan(0);
    expect(records).toEqual(all.filter((l) => l.streamId.startsWith('record-')));
    const two = cut(await exportLines('?streams=folder,schema'));
    expect(two).toEqual(all.filter((l) => /^(folder|schema)-/.test(l.streamId)));
    expect(new Set(two.map((l) => l.streamId.split('-')[0]))).toEqual(new Set(['folder', 'schema']));
    expect((await exportLines('?streams=user,document')).every((l) => /^(user|document)-/.test(l.streamId))).toBe(true);
    for (const bad of ['bogus', 'record,bogus', '', 'records', 'record,,folder']) {
      const r = await api.get(`/v1/export?streams=${encodeURIComponent(bad)}`, root);
      expect(r.status, bad).toBe(400);
      expect(r.body.errorCode).toBe('VALIDATION_ERROR');
    }
  });

  it('from / to select by recordedAt ([from, to)); invalid or inverted times are a 400', async () => {
    const mid = all[Math.floor(all.length / 2)].recordedAt;
    const after = cut(await exportLines(`?from=${encodeURIComponent(mid)}`));
    expect(after).toEqual(all.filter((l) => l.recordedAt >= mid));
    const before = cut(await exportLines(`?to=${encodeURIComponent(mid)}`));
    expect(before).toEqual(all.filter((l) => l.recordedAt < mid));
    expect(after.length + before.length).toBe(all.length);
    // A zone offset and a bare date are ISO-8601 too.
    const plusTwo = new Date(Date.parse(mid) + 2 * 3600_000).toISOString().replace('Z', '+02:00');
    expect(cut(await exportLines(`?from=${encodeURIComponent(plusTwo)}`))).toEqual(after);
    expect(await exportLines('?from=2000-01-01&to=2000-01-02')).toEqual([]);
    expect(cut(await exportLines('?from=2000-01-01')).length).toBe(all.length);
    for (const q of [
      'from=yesterday',
      'to=2026-13-01',
      'from=2026-02-30',
      'from=2026-01-01T10:00',
      'to=12345',
      `from=${encodeURIComponent(mid)}&to=2000-01-01`,
    ]) {
      const r = await api.get(`/v1/export?${q}`, root);
      expect(r.status, q).toBe(400);
      expect(r.body.errorCode).toBe('VALIDATION_ERROR');
    }
  });

  it('startFrom=<position> resumes after that line; a malformed one is a 400', async () => {
    const k = Math.floor(all.length / 3);
    expect(cut(await exportLines(`?startFrom=${all[k].position}`))).toEqual(all.slice(k + 1));
    expect(
      (await exportLines(`?startFrom=${all[all.length - 1].position}`)).every(
        (l) => l.position > all[all.length - 1].position,
      ),
    ).toBe(true);
    expect(cut(await exportLines('?startFrom=0'))).toEqual(all);
    // Filters and startFrom combine.
    const recs = all.filter((l) => l.streamId.startsWith('record-'));
    expect(cut(await exportLines(`?streams=record&startFrom=${recs[0].position}`))).toEqual(recs.slice(1));
    for (const bad of ['abc', '-1', '1.5', 'eyJwIjoxfQ'])
      expect((await api.get(`/v1/export?startFrom=${bad}`, root)).status, bad).toBe(400);
  });

  it('every kind the 400 lists selects its own streams: identity providers, scripts and triggers too', async () => {
    const own = await enterprise();
    const key = own.tenants.live.rootKey;
    await ok(api.post('/v1/scripts', key, { name: 'exported', source: 'export default () => 1;' }), 201);
    // A trigger rule that fires once: its rule, its schema's bindings and its firing are streams of their own.
    const typeName = `Fired_${randomUUID().slice(0, 8)}`;
    const schemaId = (
      await ok(
        api.post('/v1/schemas', key, {
          typeName,
          displayName: 'Fired',
          allowedSurfaces: ['record'],
          capabilities: { triggersEnabled: true },
          fields: [{ fieldId: 'n', fieldType: 'number', inline: true }],
        }),
        201,
      )
    ).id;
    await ok(
      api.post('/v1/triggers', key, {
        name: 'fires',
        schemaId,
        events: ['CREATE'],
        scriptRef: { name: 'exported', version: 1 },
        fields: ['n'],
        grant: { allowedActions: ['records:r'] },
      }),
      201,
    );
    await ok(api.post('/v1/records', key, { typeName, payload: { n: 1 } }), 201);
    await eventually(async () => expect((await exportLines('?streams=triggerFiring', key)).length).toBeGreaterThan(0));
    const issuers = await api.call('PUT', `/operator/tenants/${own.tenants.live.tenantId}/jwt-issuers`, {
      token: OPERATOR_TOKEN,
      body: { issuers: [{ issuer: 'https://idp.example.com', audience: `aud-${randomUUID()}` }] },
    });
    expect(issuers.status, issuers.text).toBe(200);
    // A stream name is its kind's prefix and a UUID or a 40-digit hash.
    const prefix = (l: { streamId: string }) =>
      l.streamId.replace(/-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$|-[0-9a-f]{40}$/, '');
    const kinds = async (q: string) => new Set((await exportLines(`?streams=${q}`, key)).map(prefix));
    expect(await kinds('jwtIssuers')).toEqual(new Set(['jwt-issuers']));
    expect(await kinds('script')).toEqual(new Set(['script']));
    expect(await kinds('scriptNames')).toEqual(new Set(['script-names']));
    expect(await kinds('trigger')).toEqual(new Set(['trigger']));
    expect(await kinds('triggerBindings')).toEqual(new Set(['trigger-bindings']));
    expect(await kinds('triggerFiring')).toEqual(new Set(['trigger-firing']));
    // Every line of the whole export falls under exactly one kind.
    const whole = await exportLines('', key);
    let counted = 0;
    const listed = (await api.get('/v1/export?streams=bogus', key)).body.message as string;
    for (const kind of listed.replace(/^.*kinds: /, '').split(', '))
      counted += (await exportLines(`?streams=${kind}`, key)).filter((l) => l.position <= whole.at(-1).position).length;
    expect(counted).toBe(whole.length);
  });

  it('a parameter the export does not take (limit, a typo) is a 400 before any line, not ignored', async () => {
    for (const q of ['limit=5', 'foo=1', 'startfrom=3', `streams=record&strems=folder`]) {
      const r = await api.get(`/v1/export?${q}`, root);
      expect(r.status, q).toBe(400);
      expect(r.body.errorCode).toBe('VALIDATION_ERROR');
    }
  });

  it(
    'root key or logs:r; anything else is the uniform 403; a context-confined credential exports its ' + 'context only',
    async () => {
      const mint = async (body: Record<string, unknown>) =>
        (await ok(api.post('/v1/tokens', root, body), 201)).token as string;
      const reader = await mint({ scope: { allowedActions: ['records:r', 'documents:r', 'billing:r'] } });
      const denied = await api.get('/v1/export', reader);
      expect(denied.status).toBe(403);
      expect(denied.body.errorCode).toBe('FORBIDDEN');
      expect(denied.text).not.toContain('logs');
      // A token with logs:r is confined to the context it was minted against.
      const logs = await mint({ scope: { allowedActions: ['logs:r'] } });
      const mine = await exportLines('', logs);
      expect(mine.length).toBeGreaterThan(0);
      expect(cut(mine)).toEqual(all.filter((l) => l.contextId === acct.tenants.live.contextId));
      expect(mine.every((l) => l.contextId === acct.tenants.live.contextId)).toBe(true);
      // A credential narrowed to a user or to scopes cannot be given the whole log.
      const alice = await mint({ scope: { allowedActions: ['logs:r'] }, userId: 'alice' });
      expect((await api.get('/v1/export', alice)).status).toBe(403);
      const teamA = await mint({ scope: { allowedActions: ['logs:r'], dataScope: { scopes: ['team:a'] } } });
      expect((await api.get('/v1/export', teamA)).status).toBe(403);
      expect((await api.get('/v1/export')).status).toBe(401);
      expect((await api.get('/v1/export', acct.developerToken)).status).toBe(403);
    },
  );

  it('tenant isolation: the other tenant of the account and another account see only their own events', async () => {
    const test = await exportLines('', acct.tenants.test.rootKey);
    const foreign = await exportLines('', other.tenants.live.rootKey);
    for (const [lines, tenantId] of [
      [test, acct.tenants.test.tenantId],
      [foreign, other.tenants.live.tenantId],
    ] as const) {
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.every((l) => l.tenantId === tenantId)).toBe(true);
      expect(lines.some((l) => l.type === 'FolderCreated')).toBe(true);
    }
    const mine = new Set(all.map((l) => l.position));
    expect([...test, ...foreign].some((l) => mine.has(l.position))).toBe(false);
    expect(JSON.stringify(all)).not.toMatch(/Test tenant folder|Other account folder/);
  });
});

describe('a large export streams with back-pressure, in bounded memory', () => {
  const N = 20_000;
  const PAD = 'x'.repeat(2000);
  let big: Bootstrap;

  it(
    `${N} events: the log is read only as fast as the client reads, memory stays flat, every line arrives ` +
      `in order`,
    async () => {
      big = await enterprise();
      const tenantId = big.tenants.live.tenantId;
      const contextId = big.tenants.live.contextId;
      // Seeded straight into the log: valid catalogue events (uniqueness bookkeeping) that every projection passes
      // over.
      const ev = (i: number): NewEvent => ({
        id: randomUUID(),
        type: 'ReservationClaimed',
        data: { key: `${tenantId}/${contextId}/bulk/${i}/${PAD}`, ownerId: `owner-${i}` },
        metadata: {
          tenantId,
          contextId,
          accountId: big.accountId,
          actorKeyId: null,
          userId: null,
          requestId: null,
          occurredAt: new Date().toISOString(),
          schemaVersion: 1,
        },
      });
      for (let i = 0; i < N; i += 500)
        await svc.service.store.appendMulti(
          Array.from({ length: 500 }, (_, j) => ({
            streamId: streams.reservation('bulk', tenantId, String(i + j)),
            events: [ev(i + j)],
            expectedRevision: 'no_stream' as const,
          })),
        );

      // The service's own log subscribers read the seeded events too (through the shared log tail, which keeps recent
      // pages in memory): let them finish first, so the memory measured below is the export's.
      await eventually(async () => {
        const r = await svc.api.get('/readyz');
        return r.status === 200 && (r.body.projections as Array<{ lag: number }>).every((x) => x.lag === 0);
      }, 60_000);
      // Pages of the log read by the export, counted at the store.
      const store = svc.service.store;
      const readTenant = store.readTenant!.bind(store);
      let pages = 0;
      store.readTenant = async (...a) => {
        pages += 1;
        return readTenant(...a);
      };
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      // Reachable memory: heap plus external, after full collections. V8 releases the backing stores of dead
      // ArrayBuffers (Buffers: the database's protocol messages, socket chunks) after a collection, on a background
      // thread, and only then lowers `external`; under CPU load that lags, and a reading straight after one gc()
      // counted 40-50 MB of buffers already dead (CI: 47.8 MB; the embedded database's WASM memory, counted in
      // `external` too, stayed at 128 MB throughout). A collection starts by finishing the previous
      // release, so each reading is taken after a pause and a second collection; the smallest of three is kept
      // (dead memory can only add to a reading; the export holds still while the client is paused).
      const used = async () => {
        let least = Infinity;
        for (let i = 0; i < 3; i++) {
          gc();
          await new Promise((r) => setTimeout(r, 50));
          gc();
          const m = process.memoryUsage();
          least = Math.min(least, m.heapUsed + m.external);
        }
        return least;
      };
      try {
        const base = await used();
        const res = await svc.api.fetch('GET', '/v1/export', { token: big.tenants.live.rootKey });
        expect(res.status).toBe(200);
        const reader = res.body!.getReader();
        const decoder = new TextDecoder();
        let rest = '';
        let lines = 0;
        let bytes = 0;
        let last = 0;
        const take = (chunk: Uint8Array) => {
          bytes += chunk.length;
          rest += decoder.decode(chunk, { stream: true });
          const parts = rest.split('\n');
          rest = parts.pop()!;
          for (const p of parts) {
            const l = JSON.parse(p);
            expect(l.position).toBeGreaterThan(last);
            last = l.position;
            lines += 1;
          }
        };
        const first = await reader.read();
        take(first.value!);
        // The client stops reading: the export must stop reading the log too, not buffer the rest in memory.
        await new Promise((r) => setTimeout(r, 1500));
        const pagesWhilePaused = pages;
        const grown = (await used()) - base;
        await new Promise((r) => setTimeout(r, 500));
        expect(pages).toBe(pagesWhilePaused);
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          take(value);
        }
        const totalPages = pages;
        expect(rest).toBe('');
        expect(lines).toBeGreaterThanOrEqual(N); // plus the account's own few events
        expect(bytes).toBeGreaterThan(N * PAD.length);
        // Paused, the export had read a small part of the log, and held far less than the export in memory.
        expect(pagesWhilePaused).toBeLessThan(totalPages / 2);
        expect(grown).toBeLessThan(bytes / 4);
      } finally {
        store.readTenant = readTenant;
      }
    },
  );

  it('a client that goes away stops the export', async () => {
    const store = svc.service.store;
    const readTenant = store.readTenant!.bind(store);
    let pages = 0;
    store.readTenant = async (...a) => {
      pages += 1;
      return readTenant(...a);
    };
    try {
      const ac = new AbortController();
      const res = await svc.api.fetch('GET', '/v1/export', { token: big.tenants.live.rootKey, signal: ac.signal });
      const reader = res.body!.getReader();
      await reader.read();
      ac.abort();
      await new Promise((r) => setTimeout(r, 500));
      const after = pages;
      await new Promise((r) => setTimeout(r, 500));
      expect(pages).toBe(after);
      expect(after).toBeLessThan(20);
      // The service carries on.
      expect((await api.get('/v1/export?streams=schema', root)).status).toBe(200);
    } finally {
      store.readTenant = readTenant;
    }
  });
});

describe('npm run export (the CLI, a child process)', () => {
  const ENGINE_VARS = [
    'DATABASE_URL',
    'EVENTSTORE_URL',
    'KAFKA_BROKERS',
    'ELASTICSEARCH_URL',
    'LANCEDB_URI',
    'REDIS_URL',
    'OBJECT_STORE_URL',
  ];
  const cli = (args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'deploy/src/export.ts'), ...args], {
      cwd: ROOT,
      env: { ...process.env, ...Object.fromEntries(ENGINE_VARS.map((v) => [v, ''])), DATA_DIR: data.dir },
      encoding: 'utf8',
      timeout: 120_000,
    });

  it(
    'writes the lines GET /v1/export serves, with a progress line on stderr; filters as the API; refuses ' +
      'bad arguments',
    async () => {
      const http = (await api.get('/v1/export', root)).text;
      const httpRecords = (await api.get('/v1/export?streams=record', root)).text;
      // PGlite is one process: the service stops first (its data directory stays).
      await svc.service.close();
      closed = true;
      const out = join(data.dir, 'export.ndjson');
      const r = cli(['--tenant', acct.tenants.live.tenantId, '--out', out]);
      expect(r.status, r.stderr).toBe(0);
      // The CLI's head is later (metering wrote on): the HTTP export is its beginning.
      const lines = readFileSync(out, 'utf8');
      expect(lines.startsWith(http)).toBe(true);
      expect(
        lines
          .slice(http.length)
          .split('\n')
          .filter(Boolean)
          .every((l) => JSON.parse(l).streamId.startsWith('usage-')),
      ).toBe(true);
      expect(statSync(out).mode & 0o777).toBe(0o600);
      expect(r.stderr).toMatch(/100%/);
      expect(r.stderr).toMatch(new RegExp(`exported ${lines.split('\n').length - 1} line\\(s\\)`));
      const recs = cli(['--tenant', acct.tenants.live.tenantId, '--out', '-', '--streams', 'record']);
      expect(recs.status, recs.stderr).toBe(0);
      expect(recs.stdout).toBe(httpRecords); // no reads are metered in between: no new record events
      rmSync(out);
      expect(cli(['--tenant', acct.tenants.live.tenantId, '--out', out, '--streams', 'bogus']).status).toBe(2);
      expect(cli(['--tenant', acct.tenants.live.tenantId, '--out', out, '--from', 'yesterday']).status).toBe(2);
      expect(cli(['--out', out]).status).toBe(2);
      const unknown = cli(['--tenant', randomUUID(), '--out', out]);
      expect(unknown.status).toBe(1);
      expect(unknown.stderr).toMatch(/unknown tenant/);
      expect(() => statSync(out)).toThrow();
    },
  );
});
