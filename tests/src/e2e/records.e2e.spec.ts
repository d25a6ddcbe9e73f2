import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Api, type Bootstrap, type TestService } from '../support/service';
import { expectStatus, unwrap, type Body } from '../support/typed';

/**
 * Records (spec "Record", "Records (operations by name)", "Lookups", "Errors",
 * "Limits" incl. the batch-write collision budget, "General conventions";
 * decisions §1 paths and §4 version row / tombstone; docs/api.md). Black-box
 * over HTTP, one service for the file. Every rejected write is shown to change
 * nothing: the record (and its version) and its /versions history are the same
 * after the rejected request.
 */
let svc: TestService;
let api: Api;
let acct: Bootstrap;
let root: string; // live root key of a dedicated enterprise account
let u1: string; // token with dataScope userId u1
let u2: string; // token with dataScope userId u2

type Res = Awaited<ReturnType<Api['call']>>;
const ALL = ['schemas:c', 'schemas:r', 'schemas:u', 'schemas:d', 'records:c', 'records:r', 'records:u', 'records:d'];
const RECORD_KEYS = [
  'createdAt',
  'createdBy',
  'externalId',
  'folderId',
  'id',
  'indexMode',
  'indexStatus',
  'payload',
  'payloadBytes',
  'payloadExternalized',
  'schemaId',
  'schemaVersion',
  'scopes',
  'status',
  'typeName',
  'updatedAt',
  'userId',
  'version',
];
const VERSION_KEYS = [
  'actor',
  'entityId',
  'entityKind',
  'eventType',
  'id',
  'recordedAt',
  'requestId',
  'state',
  'version',
];
const MASK = '********';

const enterprise = () =>
  api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 });

beforeAll(async () => {
  svc = await startService();
  api = svc.api;
  acct = await enterprise();
  root = acct.tenants.live.rootKey;
  u1 = await mint(root, ALL, { userId: 'u1' });
  u2 = await mint(root, ALL, { userId: 'u2' });
});

afterAll(async () => {
  await svc?.stop();
});

async function mint(
  by: string,
  allowedActions: string[],
  dataScope?: Body<'mintToken'>['scope']['dataScope'],
): Promise<string> {
  const r = await expectStatus(
    svc.client(by).POST('/v1/tokens', { body: { scope: { allowedActions, ...(dataScope ? { dataScope } : {}) } } }),
    201,
  );
  return r.token;
}

const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const q = (v: string | number) => encodeURIComponent(String(v));

// The typed client (@svc/client): the answers are the generated types, so a renamed field fails the typecheck.
async function createSchema(over: Partial<Body<'createSchema'>> = {}, token = root) {
  return expectStatus(
    svc.client(token).POST('/v1/schemas', {
      body: { typeName: uniq('R'), displayName: 'Records test', allowedSurfaces: ['record'], ...over },
    }),
    201,
  );
}

/** `body` may carry what the create ignores (`expectedVersion`). */
async function createRecord(body: Body<'createRecord'> & Record<string, unknown>, token = root) {
  return expectStatus(svc.client(token).POST('/v1/records', { body }), 201);
}

const readRecord = (id: string, token = root) =>
  unwrap(svc.client(token).GET('/v1/records/{id}', { params: { path: { id } } }));

function expect400(r: Res) {
  expect(r.status, r.text).toBe(400);
  expect(r.body.requestId).toBe(r.headers.get('x-request-id'));
  expect(typeof r.body.message).toBe('string');
}

const getRecord = (id: string, token = root) => api.get(`/v1/records/${id}`, token);

async function versions(id: string, token = root) {
  return (
    await unwrap(
      svc.client(token).GET('/v1/records/{id}/versions', { params: { path: { id }, query: { limit: 100 } } }),
    )
  ).data;
}

/** A record as read (indexStatus left out: it may advance on its own) plus its history. */
async function snapshot(id: string, token = root) {
  const { indexStatus: _, ...record } = await readRecord(id, token);
  return { record, history: await versions(id, token) };
}

async function expectUnchanged(id: string, before: Awaited<ReturnType<typeof snapshot>>, token = root) {
  expect(await snapshot(id, token)).toEqual(before);
}

async function createFolder(name = uniq('f')) {
  return (await expectStatus(svc.client(root).POST('/v1/folders', { body: { name } }), 201)).id;
}

// ---------------------------------------------------------------------------
describe('createRecord', () => {
  let schema: { id: string; typeName: string; schemaVersion: number };
  let other: { id: string; typeName: string };

  beforeAll(async () => {
    schema = await createSchema({
      fields: [
        { fieldId: 'name', fieldType: 'string', required: true },
        { fieldId: 'n', fieldType: 'number' },
      ],
    });
    other = await createSchema();
  });

  it('by typeName → 201 with the RecordResponse shape; status defaults to ACTIVE; version 1', async () => {
    const r = await createRecord({ typeName: schema.typeName, payload: { name: 'a', n: 1 } });
    expect(Object.keys(r).sort()).toEqual(RECORD_KEYS);
    expect(r).toMatchObject({
      typeName: schema.typeName,
      schemaId: schema.id,
      schemaVersion: 1,
      payload: { name: 'a', n: 1 },
      status: 'ACTIVE',
      folderId: null,
      userId: null,
      scopes: [],
      externalId: null,
      payloadExternalized: false,
      version: 1,
    });
    expect(r.createdAt).toBe(r.updatedAt);
    expect(Number.isNaN(Date.parse(r.createdAt))).toBe(false);
    expect(await readRecord(r.id)).toEqual(r);
  });

  it('by schemaId alone → 201 (typeName filled in)', async () => {
    const r = await createRecord({ schemaId: schema.id, payload: { name: 'b' } });
    expect(r.typeName).toBe(schema.typeName);
    expect(r.schemaId).toBe(schema.id);
  });

  it('by typeName and schemaId agreeing → 201', async () => {
    const r = await createRecord({ typeName: schema.typeName, schemaId: schema.id, payload: { name: 'c' } });
    expect(r.schemaId).toBe(schema.id);
  });

  it('typeName and schemaId disagreeing → 400; neither → 400; nothing is stored', async () => {
    expect400(
      await api.post('/v1/records', root, { typeName: other.typeName, schemaId: schema.id, payload: { name: 'd' } }),
    );
    expect400(
      await api.post('/v1/records', root, { typeName: schema.typeName, schemaId: other.id, payload: { name: 'd' } }),
    );
    expect400(await api.post('/v1/records', root, { payload: { name: 'd' } }));
    const l = await api.get(`/v1/records?type=${other.typeName}`, root);
    expect(l.body.data).toEqual([]);
    const l2 = await api.get(`/v1/records?type=${schema.typeName}&limit=100`, root);
    expect(l2.body.data.filter((x: any) => x.payload.name === 'd')).toEqual([]);
  });

  it('an inactive schema → 400 (by typeName and by schemaId)', async () => {
    const s = await createSchema();
    const p = await api.put(`/v1/schemas/${s.id}`, root, { active: false });
    expect(p.status, p.text).toBe(200);
    expect400(await api.post('/v1/records', root, { typeName: s.typeName, payload: {} }));
    expect400(await api.post('/v1/records', root, { schemaId: s.id, payload: {} }));
  });

  it('status, scopes, userId, indexMode given on create are kept', async () => {
    const r = await createRecord({
      typeName: schema.typeName,
      payload: { name: 'e' },
      status: 'DRAFT',
      scopes: ['org:acme', 'client:c1'],
      userId: 'someone',
      indexMode: 'TEXT',
    });
    expect(r).toMatchObject({
      status: 'DRAFT',
      scopes: ['org:acme', 'client:c1'],
      userId: 'someone',
      indexMode: 'TEXT',
    });
  });

  it('3 scopes → 400; a malformed scope → 400', async () => {
    expect400(
      await api.post('/v1/records', root, {
        typeName: schema.typeName,
        payload: { name: 'f' },
        scopes: ['org:a', 'org:b', 'org:c'],
      }),
    );
    expect400(
      await api.post('/v1/records', root, {
        typeName: schema.typeName,
        payload: { name: 'f' },
        scopes: ['no-namespace'],
      }),
    );
  });

  it('externalId of 256 characters is accepted; 257 → 400', async () => {
    const ok = await createRecord({
      typeName: schema.typeName,
      payload: { name: 'g' },
      externalId: 'e'.repeat(255) + '1',
    });
    expect(ok.externalId).toHaveLength(256);
    expect400(
      await api.post('/v1/records', root, {
        typeName: schema.typeName,
        payload: { name: 'g' },
        externalId: 'e'.repeat(257),
      }),
    );
  });

  it('re-creating with the same externalId → 200 with the same id, the existing record unchanged', async () => {
    const ext = uniq('ext');
    const first = await createRecord({ typeName: schema.typeName, payload: { name: 'first' }, externalId: ext });
    const before = await snapshot(first.id);
    const again = await expectStatus(
      svc
        .client(root)
        .POST('/v1/records', { body: { typeName: schema.typeName, payload: { name: 'second' }, externalId: ext } }),
      200,
    );
    expect(again.id).toBe(first.id);
    expect(again.payload).toEqual({ name: 'first' });
    await expectUnchanged(first.id, before);
    const l = await api.get(`/v1/records?type=${schema.typeName}&limit=100`, root);
    expect(l.body.data.filter((x: any) => x.externalId === ext)).toHaveLength(1);
  });

  it('an externalId held by a record the caller cannot read → 409 CONFLICT; the holder is unchanged', async () => {
    const ext = uniq('held');
    const holder = await createRecord({ typeName: schema.typeName, payload: { name: 'u1' }, externalId: ext }, u1);
    const before = await snapshot(holder.id);
    const r = await api.post('/v1/records', u2, {
      typeName: schema.typeName,
      payload: { name: 'u2' },
      externalId: ext,
    });
    expect(r.status, r.text).toBe(409);
    expect(r.body.errorCode).toBe('CONFLICT');
    expect(r.text).not.toContain(holder.id);
    await expectUnchanged(holder.id, before);
  });

  it('expectedVersion is ignored on create', async () => {
    const r = await createRecord({ typeName: schema.typeName, payload: { name: 'ev' }, expectedVersion: 42 });
    expect(r.version).toBe(1);
  });

  it('records of a schema made inactive can still be updated (only creation is rejected)', async () => {
    const s = await createSchema({ fields: [{ fieldId: 'a', fieldType: 'string' }] });
    const r = await createRecord({ typeName: s.typeName, payload: { a: 'x' } });
    expect((await api.put(`/v1/schemas/${s.id}`, root, { active: false })).status).toBe(200);
    expect((await api.put(`/v1/records/${r.id}`, root, { payload: { a: 'y' } })).status).toBe(200);
    expect((await api.patch(`/v1/records/${r.id}`, root, { payload: { a: 'z' } })).status).toBe(200);
    expect400(await api.post('/v1/records', root, { typeName: s.typeName, payload: { a: 'new' } }));
  });

  it('the same externalId under another typeName is another record (unique within typeName)', async () => {
    const ext = uniq('ext');
    const a = await createRecord({ typeName: schema.typeName, payload: { name: 'x' }, externalId: ext });
    const b = await createRecord({ typeName: other.typeName, payload: {}, externalId: ext });
    expect(b.id).not.toBe(a.id);
  });

  it('GET of an unknown id → 404', async () => {
    expect((await getRecord(randomUUID())).status).toBe(404);
  });

  it('a record of another user is not visible to a u2 token (404); its owner sees it', async () => {
    const s = await createSchema();
    const r = await createRecord({ typeName: s.typeName, payload: {} }, u1);
    expect(r.userId).toBe('u1');
    expect((await getRecord(r.id, u1)).status).toBe(200);
    expect((await getRecord(r.id, u2)).status).toBe(404);
  });
});

// ---------------------------------------------------------------------------
describe('updateRecord (PUT) and patchRecord (PATCH)', () => {
  let s: { id: string; typeName: string };
  const fields: Body<'createSchema'>['fields'] = [
    { fieldId: 'name', fieldType: 'string', required: true },
    { fieldId: 'n', fieldType: 'number', validation: { max: 100 } },
    { fieldId: 'meta', fieldType: 'object' },
    { fieldId: 'tags', fieldType: 'array' },
  ];

  beforeAll(async () => {
    s = await createSchema({ fields });
  });

  const fresh = (extra: Record<string, unknown> = {}) =>
    createRecord({
      typeName: s.typeName,
      payload: { name: 'orig', n: 1, meta: { a: 1, b: { c: 2, d: 3 } }, tags: ['x', 'y'] },
      externalId: uniq('x'),
      ...extra,
    });

  it('PUT replaces the payload in full; version +1', async () => {
    const r = await fresh();
    const p = await unwrap(
      svc.client(root).PUT('/v1/records/{id}', { params: { path: { id: r.id } }, body: { payload: { name: 'new' } } }),
    );
    expect(p.payload).toEqual({ name: 'new' });
    expect(p.version).toBe(2);
    expect(Date.parse(p.updatedAt)).toBeGreaterThanOrEqual(Date.parse(r.updatedAt));
    expect(p.createdAt).toBe(r.createdAt);
    const g = await readRecord(r.id);
    expect(g.payload).toEqual({ name: 'new' });
    expect(g.version).toBe(2);
  });

  it('PUT with an invalid value → 400, nothing changed', async () => {
    const r = await fresh();
    const before = await snapshot(r.id);
    expect400(await api.put(`/v1/records/${r.id}`, root, { payload: { name: 'x', n: 1000 } }));
    expect400(await api.put(`/v1/records/${r.id}`, root, { payload: { name: 5 } }));
    await expectUnchanged(r.id, before);
  });

  it('PUT ignores typeName and schemaId (immutable)', async () => {
    const r = await fresh();
    const other = await createSchema();
    const p = await api.put(`/v1/records/${r.id}`, root, {
      typeName: other.typeName,
      schemaId: other.id,
      payload: { name: 'kept type' },
    });
    expect(p.status, p.text).toBe(200);
    expect(p.body.typeName).toBe(s.typeName);
    expect(p.body.schemaId).toBe(s.id);
    expect((await getRecord(r.id)).body).toMatchObject({
      typeName: s.typeName,
      schemaId: s.id,
      payload: { name: 'kept type' },
    });
  });

  it('PUT changing externalId or indexMode → 400, nothing changed; repeating them unchanged is fine', async () => {
    const r = await fresh({ indexMode: 'TEXT' });
    const before = await snapshot(r.id);
    expect400(await api.put(`/v1/records/${r.id}`, root, { payload: { name: 'x' }, externalId: uniq('other') }));
    expect400(await api.put(`/v1/records/${r.id}`, root, { payload: { name: 'x' }, indexMode: 'NONE' }));
    await expectUnchanged(r.id, before);
    const ok = await api.put(`/v1/records/${r.id}`, root, {
      payload: { name: 'x' },
      externalId: r.externalId,
      indexMode: 'TEXT',
    });
    expect(ok.status, ok.text).toBe(200);
  });

  it(
    'PATCH is an RFC 7386 merge: null deletes a payload key, objects merge recursively, arrays and scalars ' +
      'replace',
    async () => {
      const r = await fresh();
      const p = await unwrap(
        svc.client(root).PATCH('/v1/records/{id}', {
          params: { path: { id: r.id } },
          body: { payload: { n: null, meta: { b: { c: 20, d: null, e: 5 }, z: 'new' }, tags: ['only'] } },
        }),
      );
      const want = { name: 'orig', meta: { a: 1, b: { c: 20, e: 5 }, z: 'new' }, tags: ['only'] };
      expect(p.payload).toEqual(want);
      expect(p.version).toBe(2);
      expect((await readRecord(r.id)).payload).toEqual(want);
    },
  );

  it(
    'required is enforced on create only: a PUT without it and a PATCH null deleting it → 200; a field the ' +
      'schema later requires is not demanded of a change',
    async () => {
      const put = await api.put(`/v1/records/${(await fresh()).id}`, root, { payload: { n: 2 } });
      expect(put.status, put.text).toBe(200);
      expect(put.body.payload).toEqual({ n: 2 });
      const r = await fresh();
      const patched = await api.patch(`/v1/records/${r.id}`, root, { payload: { name: null } });
      expect(patched.status, patched.text).toBe(200);
      expect((await readRecord(r.id)).payload).toEqual({ n: 1, meta: { a: 1, b: { c: 2, d: 3 } }, tags: ['x', 'y'] });
      // the other rules still apply to the keys present
      expect400(await api.patch(`/v1/records/${r.id}`, root, { payload: { name: 5 } }));
      // and create still demands it
      expect400(await api.post('/v1/records', root, { typeName: s.typeName, payload: { n: 1 } }));

      const t = await createSchema({ fields: [{ fieldId: 'a', fieldType: 'string' }] });
      const old = await createRecord({ typeName: t.typeName, payload: { a: 'x' } });
      expect(
        (
          await api.put(`/v1/schemas/${t.id}`, root, {
            fields: [
              { fieldId: 'a', fieldType: 'string' },
              { fieldId: 'b', fieldType: 'string', required: true, validation: { minLength: 2 } },
            ],
          })
        ).status,
      ).toBe(200);
      const later = await api.patch(`/v1/records/${old.id}`, root, { status: 'ARCHIVED' });
      expect(later.status, later.text).toBe(200);
      expect(later.body).toMatchObject({ status: 'ARCHIVED', schemaVersion: 2, payload: { a: 'x' } });
      expect400(await api.patch(`/v1/records/${old.id}`, root, { payload: { b: 'y' } }));
      expect400(await api.post('/v1/records', root, { typeName: t.typeName, payload: { a: 'x' } }));
    },
  );

  it('PATCH without payload leaves the payload; PATCH status changes only the status', async () => {
    const r = await fresh();
    const p = await api.patch(`/v1/records/${r.id}`, root, { status: 'ARCHIVED' });
    expect(p.status, p.text).toBe(200);
    expect(p.body.status).toBe('ARCHIVED');
    expect(p.body.payload).toEqual(r.payload);
  });

  it('PATCH producing an invalid payload → 400, nothing changed', async () => {
    const r = await fresh();
    const before = await snapshot(r.id);
    expect400(await api.patch(`/v1/records/${r.id}`, root, { payload: { n: 'not a number' } }));
    expect400(await api.patch(`/v1/records/${r.id}`, root, { payload: { n: 101 } }));
    await expectUnchanged(r.id, before);
  });

  it.each([
    ['typeName', (r: any) => r.typeName],
    ['schemaId', (r: any) => r.schemaId],
    ['externalId', (r: any) => r.externalId],
    ['indexMode', () => 'NONE'],
  ])('PATCH with %s present → 400 (even with the current value), nothing changed', async (key, value) => {
    const r = await fresh();
    const before = await snapshot(r.id);
    expect400(await api.patch(`/v1/records/${r.id}`, root, { [key]: value(r) }));
    expect400(await api.patch(`/v1/records/${r.id}`, root, { [key]: 'changed', payload: { name: 'x' } }));
    await expectUnchanged(r.id, before);
  });

  it.each(['payload', 'status', 'userId', 'scopes', 'folderId', 'expectedVersion'])(
    'PATCH with top-level %s: null → 400, nothing changed',
    async (key) => {
      const r = await fresh();
      const before = await snapshot(r.id);
      expect400(await api.patch(`/v1/records/${r.id}`, root, { [key]: null }));
      await expectUnchanged(r.id, before);
    },
  );

  it.each([
    ['scopes not an array', { scopes: 'org:a' }],
    ['a malformed scope entry', { scopes: ['no-namespace'] }],
    ['a non-string status', { status: 5 }],
    ['an empty status', { status: '' }],
    ['a non-string userId', { userId: 5 }],
    ['a non-string folderId', { folderId: 5 }],
    ['a non-numeric expectedVersion', { expectedVersion: 'x' }],
    ['a non-object payload', { payload: ['a'] }],
  ])('PATCH with %s → 400, nothing changed', async (_, body) => {
    const r = await fresh();
    const before = await snapshot(r.id);
    expect400(await api.patch(`/v1/records/${r.id}`, root, body));
    await expectUnchanged(r.id, before);
  });

  it('PATCH and PUT bodies obey the JSON number rules (1e-200 → 400), nothing changed', async () => {
    const r = await fresh();
    const before = await snapshot(r.id);
    expect400(
      await api.call('PATCH', `/v1/records/${r.id}`, { token: root, raw: '{"payload":{"meta":{"x":1e-200}}}' }),
    );
    expect400(
      await api.call('PUT', `/v1/records/${r.id}`, {
        token: root,
        raw: '{"payload":{"name":"a","n":1234567890123456789012345678901234567890}}',
      }),
    );
    await expectUnchanged(r.id, before);
  });

  it('folderId cannot be cleared: PATCH/PUT null → 400; PUT without folderId keeps it', async () => {
    const folder = await createFolder();
    const r = await fresh({ folderId: folder });
    expect(r.folderId).toBe(folder);
    const before = await snapshot(r.id);
    expect400(await api.patch(`/v1/records/${r.id}`, root, { folderId: null }));
    expect400(await api.put(`/v1/records/${r.id}`, root, { payload: { name: 'x' }, folderId: null }));
    expect400(await api.patch(`/v1/records/${r.id}`, root, { folderId: '' }));
    await expectUnchanged(r.id, before);
    const p = await api.put(`/v1/records/${r.id}`, root, { payload: { name: 'x' } });
    expect(p.status, p.text).toBe(200);
    expect(p.body.folderId).toBe(folder);
    // moving to another folder is allowed
    const f2 = await createFolder();
    const m = await api.patch(`/v1/records/${r.id}`, root, { folderId: f2 });
    expect(m.status, m.text).toBe(200);
    expect(m.body.folderId).toBe(f2);
  });

  it.each(['PUT', 'PATCH'])(
    '%s scopes: an explicit value replaces, omitted keeps, [] clears, 3 entries → 400',
    async (method) => {
      const r = await fresh({ scopes: ['org:a'] });
      const body = (extra: Record<string, unknown>) => (method === 'PUT' ? { payload: r.payload, ...extra } : extra);
      const send = (extra: Record<string, unknown>) =>
        api.call(method, `/v1/records/${r.id}`, { token: root, body: body(extra) });
      const replaced = await send({ scopes: ['org:b', 'client:c'] });
      expect(replaced.status, replaced.text).toBe(200);
      expect(replaced.body.scopes).toEqual(['org:b', 'client:c']);
      const kept = await send(method === 'PUT' ? {} : { status: 'KEPT' });
      expect(kept.status, kept.text).toBe(200);
      expect(kept.body.scopes).toEqual(['org:b', 'client:c']);
      const before = await snapshot(r.id);
      expect400(await send({ scopes: ['org:1', 'org:2', 'org:3'] }));
      await expectUnchanged(r.id, before);
      const cleared = await send({ scopes: [] });
      expect(cleared.status, cleared.text).toBe(200);
      expect(cleared.body.scopes).toEqual([]);
      expect((await getRecord(r.id)).body.scopes).toEqual([]);
    },
  );

  it.each(['PUT', 'PATCH'])(
    '%s with a stale expectedVersion → 409 VERSION_CONFLICT, nothing changed; the current one succeeds',
    async (method) => {
      const r = await fresh();
      const b = (v: number) => ({ payload: { name: 'changed' }, expectedVersion: v });
      const before = await snapshot(r.id);
      for (const v of [0, 2, 99]) {
        const c = await api.call(method, `/v1/records/${r.id}`, { token: root, body: b(v) });
        expect(c.status, c.text).toBe(409);
        expect(c.body.errorCode).toBe('VERSION_CONFLICT');
      }
      await expectUnchanged(r.id, before);
      const ok = await api.call(method, `/v1/records/${r.id}`, { token: root, body: b(1) });
      expect(ok.status, ok.text).toBe(200);
      expect(ok.body.version).toBe(2);
      const stale = await api.call(method, `/v1/records/${r.id}`, { token: root, body: b(1) });
      expect(stale.status).toBe(409);
    },
  );

  it('PUT / PATCH of an unknown or another user’s record → 404', async () => {
    expect((await api.put(`/v1/records/${randomUUID()}`, root, { payload: { name: 'x' } })).status).toBe(404);
    expect((await api.patch(`/v1/records/${randomUUID()}`, root, { status: 'X' })).status).toBe(404);
    const mine = await createRecord({ typeName: s.typeName, payload: { name: 'u1' } }, u1);
    const before = await snapshot(mine.id);
    expect((await api.put(`/v1/records/${mine.id}`, u2, { payload: { name: 'stolen' } })).status).toBe(404);
    expect((await api.patch(`/v1/records/${mine.id}`, u2, { status: 'STOLEN' })).status).toBe(404);
    expect((await api.del(`/v1/records/${mine.id}`, u2)).status).toBe(404);
    await expectUnchanged(mine.id, before);
  });
});

// ---------------------------------------------------------------------------
describe('deleteRecord and the tombstone', () => {
  let s: { id: string; typeName: string };
  beforeAll(async () => {
    s = await createSchema();
  });

  it('delete → 204 with no body; GET 404; the tombstone has the decisions §4 shape', async () => {
    const ext = uniq('ext');
    const r = await createRecord({ typeName: s.typeName, payload: { a: 1 }, externalId: ext });
    const client = svc.client(root);
    await unwrap(client.PATCH('/v1/records/{id}', { params: { path: { id: r.id } }, body: { payload: { a: 2 } } }));
    const d = await client.DELETE('/v1/records/{id}', { params: { path: { id: r.id } } });
    expect(d.response.status).toBe(204);
    expect(d.data).toBeUndefined();
    expect((await getRecord(r.id)).status).toBe(404);
    const t = await unwrap(client.GET('/v1/records/{id}/tombstone', { params: { path: { id: r.id } } }));
    expect(Object.keys(t).sort()).toEqual([
      'deletedAt',
      'deletedBy',
      'entityKind',
      'externalId',
      'id',
      'lastVersion',
      'typeName',
    ]);
    expect(t).toMatchObject({ id: r.id, entityKind: 'record', typeName: s.typeName, externalId: ext, lastVersion: 2 });
    expect(Number.isNaN(Date.parse(t.deletedAt))).toBe(false);
    expect(typeof t.deletedBy).toBe('string');
    // and the record is gone from lists
    const l = await api.get(`/v1/records?type=${s.typeName}&limit=100`, root);
    expect(l.body.data.map((x: any) => x.id)).not.toContain(r.id);
  });

  it('the tombstone of a record without externalId has no externalId key', async () => {
    const r = await createRecord({ typeName: s.typeName, payload: {} });
    expect((await api.del(`/v1/records/${r.id}`, root)).status).toBe(204);
    const t = await api.get(`/v1/records/${r.id}/tombstone`, root);
    expect(t.status).toBe(200);
    expect(Object.keys(t.body).sort()).toEqual([
      'deletedAt',
      'deletedBy',
      'entityKind',
      'id',
      'lastVersion',
      'typeName',
    ]);
    expect(t.body.lastVersion).toBe(1);
  });

  it('the tombstone of a live record → 404; of an unknown id → 404', async () => {
    const r = await createRecord({ typeName: s.typeName, payload: {} });
    expect((await api.get(`/v1/records/${r.id}/tombstone`, root)).status).toBe(404);
    expect((await api.get(`/v1/records/${randomUUID()}/tombstone`, root)).status).toBe(404);
  });

  it('delete again, PUT and PATCH after delete → 404', async () => {
    const r = await createRecord({ typeName: s.typeName, payload: {} });
    expect((await api.del(`/v1/records/${r.id}`, root)).status).toBe(204);
    expect((await api.del(`/v1/records/${r.id}`, root)).status).toBe(404);
    expect((await api.put(`/v1/records/${r.id}`, root, { payload: {} })).status).toBe(404);
    expect((await api.patch(`/v1/records/${r.id}`, root, { status: 'X' })).status).toBe(404);
  });

  it('DELETE ?expectedVersion= stale → 409 VERSION_CONFLICT, nothing changed; current → 204', async () => {
    const r = await createRecord({ typeName: s.typeName, payload: {} });
    const before = await snapshot(r.id);
    const c = await api.del(`/v1/records/${r.id}?expectedVersion=3`, root);
    expect(c.status, c.text).toBe(409);
    expect(c.body.errorCode).toBe('VERSION_CONFLICT');
    await expectUnchanged(r.id, before);
    expect((await api.get(`/v1/records/${r.id}/tombstone`, root)).status).toBe(404);
    expect((await api.del(`/v1/records/${r.id}?expectedVersion=1`, root)).status).toBe(204);
  });

  it('another user’s tombstone is not readable (404)', async () => {
    const r = await createRecord({ typeName: s.typeName, payload: {} }, u1);
    expect((await api.del(`/v1/records/${r.id}`, u1)).status).toBe(204);
    expect((await api.get(`/v1/records/${r.id}/tombstone`, u1)).status).toBe(200);
    expect((await api.get(`/v1/records/${r.id}/tombstone`, u2)).status).toBe(404);
  });
});

// ---------------------------------------------------------------------------
describe('history (getRecordVersions)', () => {
  it('create, 3 PUT/PATCH updates, a patch, a delete → 6 rows oldest first with the states as they were', async () => {
    const s = await createSchema({
      fields: [
        { fieldId: 'title', fieldType: 'string' },
        { fieldId: 'n', fieldType: 'number' },
      ],
    });
    const r = await createRecord({ typeName: s.typeName, payload: { title: 'v1', n: 1 } });
    expect((await api.put(`/v1/records/${r.id}`, root, { payload: { title: 'v2', n: 2 } })).status).toBe(200);
    expect((await api.patch(`/v1/records/${r.id}`, root, { payload: { n: 3 } })).status).toBe(200);
    expect((await api.put(`/v1/records/${r.id}`, root, { payload: { title: 'v4' }, scopes: ['org:h'] })).status).toBe(
      200,
    );
    // rejected writes leave no row
    expect((await api.patch(`/v1/records/${r.id}`, root, { payload: { n: 'bad' } })).status).toBe(400);
    expect((await api.patch(`/v1/records/${r.id}`, root, { status: 'X', expectedVersion: 1 })).status).toBe(409);
    expect((await api.patch(`/v1/records/${r.id}`, root, { status: 'ARCHIVED' })).status).toBe(200);
    expect((await api.del(`/v1/records/${r.id}`, root)).status).toBe(204);

    const rows = await versions(r.id);
    expect(rows).toHaveLength(6);
    expect(rows.map((x) => x.version)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const row of rows) {
      expect(Object.keys(row).sort()).toEqual(VERSION_KEYS);
      expect(row.entityId).toBe(r.id);
      expect(row.entityKind).toBe('record');
    }
    expect(new Set(rows.map((x) => x.id)).size).toBe(6);
    expect(rows.slice(0, 5).map((x) => x.state!.payload)).toEqual([
      { title: 'v1', n: 1 },
      { title: 'v2', n: 2 },
      { title: 'v2', n: 3 },
      { title: 'v4' },
      { title: 'v4' },
    ]);
    expect(rows.slice(0, 5).map((x) => x.state!.version)).toEqual([1, 2, 3, 4, 5]);
    expect(rows.slice(0, 5).map((x) => x.state!.status)).toEqual(['ACTIVE', 'ACTIVE', 'ACTIVE', 'ACTIVE', 'ARCHIVED']);
    expect(rows.slice(0, 5).map((x) => x.state!.scopes)).toEqual([[], [], [], ['org:h'], ['org:h']]);
    expect(rows[0].state!.id).toBe(r.id);
    expect(rows[5].eventType.endsWith('Deleted')).toBe(true);
    expect(rows[5].state).toBeNull();
    const times = rows.map((x) => Date.parse(x.recordedAt));
    for (let i = 1; i < times.length; i++) expect(times[i]).toBeGreaterThanOrEqual(times[i - 1]);

    // paging: startFrom is the last row id seen
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: Res = await api.get(
        `/v1/records/${r.id}/versions?limit=4${cursor ? `&startFrom=${q(cursor)}` : ''}`,
        root,
      );
      expect(res.status, res.text).toBe(200);
      seen.push(...res.body.data.map((x: any) => x.id));
      cursor = res.body.nextCursor;
      if (cursor !== null) expect(cursor).toBe(seen[seen.length - 1]);
      expect(++pages).toBeLessThan(10);
    } while (cursor !== null);
    expect(seen).toEqual(rows.map((x) => x.id));
    const after2 = await api.get(`/v1/records/${r.id}/versions?limit=100&startFrom=${rows[1].id}`, root);
    expect(after2.body.data.map((x: any) => x.version)).toEqual([3, 4, 5, 6]);
  });

  it('auditHistory false: a live record has an empty history (200); a delete still leaves a tombstone', async () => {
    const s = await createSchema({ capabilities: { auditHistory: false } });
    const r = await createRecord({ typeName: s.typeName, payload: { a: 1 } });
    expect((await api.patch(`/v1/records/${r.id}`, root, { payload: { a: 2 } })).status).toBe(200);
    const v = await api.get(`/v1/records/${r.id}/versions`, root);
    expect(v.status, v.text).toBe(200);
    expect(v.body).toEqual({ data: [], nextCursor: null });
    expect((await api.del(`/v1/records/${r.id}`, root)).status).toBe(204);
    const t = await api.get(`/v1/records/${r.id}/tombstone`, root);
    expect(t.status, t.text).toBe(200);
    expect(t.body).toMatchObject({ id: r.id, entityKind: 'record', lastVersion: 2 });
  });

  it('turning auditHistory off stops recording but deletes nothing; turning it on again resumes', async () => {
    const s = await createSchema();
    const r = await createRecord({ typeName: s.typeName, payload: { a: 1 } });
    expect((await api.patch(`/v1/records/${r.id}`, root, { payload: { a: 2 } })).status).toBe(200);
    const before = await versions(r.id);
    expect(before.map((x) => x.version)).toEqual([1, 2]);
    expect((await api.put(`/v1/schemas/${s.id}`, root, { capabilities: { auditHistory: false } })).status).toBe(200);
    expect((await api.patch(`/v1/records/${r.id}`, root, { payload: { a: 3 } })).status).toBe(200);
    expect(await versions(r.id)).toEqual(before);
    expect((await api.put(`/v1/schemas/${s.id}`, root, { capabilities: { auditHistory: true } })).status).toBe(200);
    expect((await api.patch(`/v1/records/${r.id}`, root, { payload: { a: 4 } })).status).toBe(200);
    const after = await versions(r.id);
    expect(after.slice(0, 2)).toEqual(before);
    expect(after).toHaveLength(3);
    expect(after[2].version).toBe(4);
    expect(after[2].state!.payload).toEqual({ a: 4 });
  });

  it('versions of an unknown record → 404; of another user’s record → 404', async () => {
    expect((await api.get(`/v1/records/${randomUUID()}/versions`, root)).status).toBe(404);
    const s = await createSchema();
    const r = await createRecord({ typeName: s.typeName, payload: {} }, u1);
    expect((await api.get(`/v1/records/${r.id}/versions`, u1)).status).toBe(200);
    expect((await api.get(`/v1/records/${r.id}/versions`, u2)).status).toBe(404);
  });
});

// ---------------------------------------------------------------------------
describe('sensitive fields', () => {
  const SECRET = 'SSN-987-65-4321-CLEAR';
  let s: { id: string; typeName: string };
  let rec: any;
  const leaks = (r: Res) => expect(r.text.includes(SECRET), `clear value leaked: ${r.text.slice(0, 300)}`).toBe(false);

  beforeAll(async () => {
    s = await createSchema({
      fields: [
        { fieldId: 'name', fieldType: 'string' },
        { fieldId: 'ssn', fieldType: 'string', sensitive: true },
      ],
      lookupFields: ['name', 'ssn'],
    });
    const r = await api.post('/v1/records', root, { typeName: s.typeName, payload: { name: 'alice', ssn: SECRET } });
    expect(r.status, r.text).toBe(201);
    leaks(r);
    rec = r.body;
    await createRecord({ typeName: s.typeName, payload: { name: 'bob', ssn: 'other-value' } });
  });

  it(`reads back masked ('${MASK}') on create, get, list and list with includePayload`, async () => {
    expect(rec.payload).toEqual({ name: 'alice', ssn: MASK });
    const g = await getRecord(rec.id);
    leaks(g);
    expect(g.body.payload.ssn).toBe(MASK);
    for (const path of [`/v1/records?type=${s.typeName}`, `/v1/records?type=${s.typeName}&includePayload=true`]) {
      const l = await api.get(path, root);
      expect(l.status).toBe(200);
      leaks(l);
      expect(l.body.data.find((x: any) => x.id === rec.id).payload.ssn).toBe(MASK);
    }
  });

  it('payloadBytes is the same in the answers of create, PATCH, PUT and GET of the same version', async () => {
    const c = await api.post('/v1/records', root, {
      typeName: s.typeName,
      payload: { name: 'carol', ssn: 'carol-ssn' },
    });
    expect(c.status, c.text).toBe(201);
    expect(c.body.payloadBytes).toBe((await getRecord(c.body.id)).body.payloadBytes);
    const p = await api.patch(`/v1/records/${c.body.id}`, root, { payload: { name: 'carol2' } });
    expect(p.status, p.text).toBe(200);
    expect(p.body.payloadBytes).toBe((await getRecord(c.body.id)).body.payloadBytes);
    const u = await api.put(`/v1/records/${c.body.id}`, root, { payload: { name: 'carol3', ssn: 'carol-ssn-2' } });
    expect(u.status, u.text).toBe(200);
    expect(u.body.payloadBytes).toBe((await getRecord(c.body.id)).body.payloadBytes);
  });

  it('GET lookup with value on the sensitive field → 400 directing to the body variant', async () => {
    const r = await api.get(`/v1/records/lookup?type=${s.typeName}&field=ssn&value=${q(SECRET)}`, root);
    expect400(r);
    leaks(r);
    expect(r.body.message).toMatch(/POST \/v1\/records\/lookup|body/i);
  });

  it('POST /v1/records/lookup finds it by clear value (blind index), masked; a wrong one finds nothing', async () => {
    const r = await api.post('/v1/records/lookup', root, { type: s.typeName, field: 'ssn', value: SECRET });
    expect(r.status, r.text).toBe(200);
    leaks(r);
    expect(r.body.data.map((x: any) => x.id)).toEqual([rec.id]);
    expect(r.body.data[0].payload.ssn).toBe(MASK);
    const miss = await api.post('/v1/records/lookup', root, { type: s.typeName, field: 'ssn', value: SECRET + 'x' });
    expect(miss.status).toBe(200);
    expect(miss.body.data).toEqual([]);
  });

  it('range and prefix on the sensitive field → 400 (GET and POST)', async () => {
    expect400(await api.get(`/v1/records/lookup?type=${s.typeName}&field=ssn&from=A&to=Z`, root));
    expect400(await api.get(`/v1/records/lookup?type=${s.typeName}&field=ssn&prefix=SSN`, root));
    expect400(await api.post('/v1/records/lookup', root, { type: s.typeName, field: 'ssn', from: 'A', to: 'Z' }));
    expect400(await api.post('/v1/records/lookup', root, { type: s.typeName, field: 'ssn', prefix: 'SSN' }));
  });

  it(
    'the clear value appears in no response: other lookups, versions, patch/put responses, batch-get, ' + 'tombstone',
    async () => {
      const byName = await api.get(
        `/v1/records/lookup?type=${s.typeName}&field=name&value=alice&includePayload=true`,
        root,
      );
      expect(byName.status).toBe(200);
      leaks(byName);
      expect(byName.body.data[0].payload.ssn).toBe(MASK);
      const p = await api.patch(`/v1/records/${rec.id}`, root, { payload: { name: 'alice2' } });
      expect(p.status, p.text).toBe(200);
      leaks(p);
      expect(p.body.payload).toEqual({ name: 'alice2', ssn: MASK });
      // the value survives a patch that does not touch it
      const still = await api.post('/v1/records/lookup', root, { type: s.typeName, field: 'ssn', value: SECRET });
      expect(still.body.data.map((x: any) => x.id)).toEqual([rec.id]);
      const bg = await api.post('/v1/records/batch-get', root, { ids: [rec.id] });
      expect(bg.status).toBe(200);
      leaks(bg);
      const v = await api.get(`/v1/records/${rec.id}/versions`, root);
      expect(v.status).toBe(200);
      leaks(v);
      for (const row of v.body.data) expect(row.state.payload.ssn).toBe(MASK);
      const put = await api.put(`/v1/records/${rec.id}`, root, { payload: { name: 'alice3', ssn: SECRET } });
      expect(put.status).toBe(200);
      leaks(put);
      expect((await api.del(`/v1/records/${rec.id}`, root)).status).toBe(204);
      const t = await api.get(`/v1/records/${rec.id}/tombstone`, root);
      leaks(t);
      const v2 = await api.get(`/v1/records/${rec.id}/versions`, root);
      leaks(v2);
      // deleted: the blind index no longer finds it
      const gone = await api.post('/v1/records/lookup', root, { type: s.typeName, field: 'ssn', value: SECRET });
      expect(gone.body.data).toEqual([]);
    },
  );
});

// ---------------------------------------------------------------------------
describe('lookups', () => {
  const lookup = (query: string, token = root) => api.get(`/v1/records/lookup?${query}`, token);
  const ids = (r: Res) => r.body.data.map((x: any) => x.id);

  describe('modes', () => {
    let t: string;
    const recs: Record<string, any> = {};

    beforeAll(async () => {
      const s = await createSchema({
        fields: [
          { fieldId: 'name', fieldType: 'string' },
          { fieldId: 'age', fieldType: 'number' },
          { fieldId: 'email', fieldType: 'string' },
          { fieldId: 'plain', fieldType: 'string' },
        ],
        lookupFields: ['name', { fieldName: 'age', rangeEnabled: true }, { fieldName: 'email', unique: true }],
      });
      t = s.typeName;
      for (const [k, name, age] of [
        ['alpha', 'alpha', 10],
        ['alpine', 'alpine', 20],
        ['beta', 'beta', 30],
        ['beta2', 'beta', 40],
        ['gamma', 'gamma', 25],
      ] as const)
        recs[k] = await createRecord({ typeName: t, payload: { name, age, email: `${k}@example.com`, plain: 'p' } });
    });

    it('exact: value matches all records with the value', async () => {
      const r = await lookup(`type=${t}&field=name&value=beta`);
      expect(r.status, r.text).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(['data', 'nextCursor']);
      expect(ids(r).sort()).toEqual([recs.beta.id, recs.beta2.id].sort());
      expect(r.body.nextCursor).toBeNull();
      for (const x of r.body.data) expect(Object.keys(x).sort()).toEqual(RECORD_KEYS);
    });

    it('exact with values=[one value] on a single field equals value', async () => {
      expect(ids(await lookup(`type=${t}&field=name&values=beta`))).toEqual([recs.beta.id, recs.beta2.id]);
      const p = await api.post('/v1/records/lookup', root, { type: t, field: 'name', values: ['beta'] });
      expect(ids(p)).toEqual([recs.beta.id, recs.beta2.id]);
    });

    it('exact on a number field (query text read as a number), and via POST', async () => {
      expect(ids(await lookup(`type=${t}&field=age&value=30`))).toEqual([recs.beta.id]);
      const p = await api.post('/v1/records/lookup', root, { type: t, field: 'age', value: 30 });
      expect(p.status, p.text).toBe(200);
      expect(ids(p)).toEqual([recs.beta.id]);
    });

    it('order desc reverses the order of an exact lookup', async () => {
      const asc = ids(await lookup(`type=${t}&field=name&value=beta`));
      const desc = ids(await lookup(`type=${t}&field=name&value=beta&order=desc`));
      expect(asc).toEqual([recs.beta.id, recs.beta2.id]);
      expect(desc).toEqual([recs.beta2.id, recs.beta.id]);
    });

    it('range: inclusive, ascending; order desc reverses', async () => {
      expect(ids(await lookup(`type=${t}&field=age&from=20&to=30`))).toEqual([
        recs.alpine.id,
        recs.gamma.id,
        recs.beta.id,
      ]);
      expect(ids(await lookup(`type=${t}&field=age&from=20&to=30&order=desc`))).toEqual([
        recs.beta.id,
        recs.gamma.id,
        recs.alpine.id,
      ]);
      expect(ids(await lookup(`type=${t}&field=age&from=40&to=40`))).toEqual([recs.beta2.id]);
      expect(ids(await lookup(`type=${t}&field=age&from=41&to=100`))).toEqual([]);
      const p = await api.post('/v1/records/lookup', root, { type: t, field: 'age', from: 10, to: 20 });
      expect(ids(p)).toEqual([recs.alpha.id, recs.alpine.id]);
    });

    it('range with one bound → 400', async () => {
      expect400(await lookup(`type=${t}&field=age&from=20`));
      expect400(await lookup(`type=${t}&field=age&to=20`));
      expect400(await api.post('/v1/records/lookup', root, { type: t, field: 'age', from: 20 }));
    });

    it('prefix on a string field: ascending matches', async () => {
      expect(ids(await lookup(`type=${t}&field=name&prefix=alp`))).toEqual([recs.alpha.id, recs.alpine.id]);
      expect(ids(await lookup(`type=${t}&field=name&prefix=alp&order=desc`))).toEqual([recs.alpine.id, recs.alpha.id]);
      expect(ids(await lookup(`type=${t}&field=name&prefix=zzz`))).toEqual([]);
    });

    it('prefix on a number field → 400', async () => {
      expect400(await lookup(`type=${t}&field=age&prefix=1`));
      expect400(await api.post('/v1/records/lookup', root, { type: t, field: 'age', prefix: '1' }));
    });

    it.each([
      ['no mode', 'field=name'],
      ['value + prefix', 'field=name&value=beta&prefix=b'],
      ['value + range', 'field=age&value=10&from=1&to=50'],
      ['range + prefix', 'field=name&from=a&to=z&prefix=a'],
      ['value + values', 'field=name&value=beta&values=beta'],
    ])('%s → 400', async (_, query) => {
      expect400(await lookup(`type=${t}&${query}`));
    });

    it('zero or several modes in the body variant → 400', async () => {
      expect400(await api.post('/v1/records/lookup', root, { type: t, field: 'name' }));
      expect400(await api.post('/v1/records/lookup', root, { type: t, field: 'name', value: 'a', prefix: 'a' }));
    });

    it('a field that is not a lookup field → 400', async () => {
      expect400(await lookup(`type=${t}&field=plain&value=p`));
    });

    it('a unique lookup returns at most one record; a second holder of the value → 409 CONFLICT', async () => {
      const r = await lookup(`type=${t}&field=email&value=${q('beta@example.com')}`);
      expect(ids(r)).toEqual([recs.beta.id]);
      const dup = await api.post('/v1/records', root, {
        typeName: t,
        payload: { name: 'dup', email: 'beta@example.com' },
      });
      expect(dup.status, dup.text).toBe(409);
      expect(dup.body.errorCode).toBe('CONFLICT');
      expect(ids(await lookup(`type=${t}&field=email&value=${q('beta@example.com')}`))).toEqual([recs.beta.id]);
      expect(ids(await lookup(`type=${t}&field=name&value=dup`))).toEqual([]);
    });

    it(
      'an update taking a unique value held by another record → 409, nothing changed; freed by delete, then ' +
        'takeable',
      async () => {
        const holder = await createRecord({ typeName: t, payload: { name: 'h', email: 'held@example.com' } });
        const taker = await createRecord({ typeName: t, payload: { name: 't', email: 'taker@example.com' } });
        const before = await snapshot(taker.id);
        const c1 = await api.patch(`/v1/records/${taker.id}`, root, { payload: { email: 'held@example.com' } });
        expect(c1.status, c1.text).toBe(409);
        const c2 = await api.put(`/v1/records/${taker.id}`, root, {
          payload: { name: 't', email: 'held@example.com' },
        });
        expect(c2.status, c2.text).toBe(409);
        await expectUnchanged(taker.id, before);
        expect((await api.del(`/v1/records/${holder.id}`, root)).status).toBe(204);
        const ok = await api.patch(`/v1/records/${taker.id}`, root, { payload: { email: 'held@example.com' } });
        expect(ok.status, ok.text).toBe(200);
        expect(ids(await lookup(`type=${t}&field=email&value=${q('held@example.com')}`))).toEqual([taker.id]);
        // the taker's old value is free again
        expect(
          (await api.post('/v1/records', root, { typeName: t, payload: { email: 'taker@example.com' } })).status,
        ).toBe(201);
      },
    );

    it('limit 101 → 400; limit 0 → 400; limit 100 → 200', async () => {
      expect400(await lookup(`type=${t}&field=name&value=beta&limit=101`));
      expect400(await lookup(`type=${t}&field=name&value=beta&limit=0`));
      expect400(await api.post('/v1/records/lookup', root, { type: t, field: 'name', value: 'beta', limit: 101 }));
      expect((await lookup(`type=${t}&field=name&value=beta&limit=100`)).status).toBe(200);
    });

    it('a sortBy query parameter is ignored silently', async () => {
      const r = await lookup(`type=${t}&field=name&value=beta&sortBy=age`);
      expect(r.status, r.text).toBe(200);
      expect(ids(r)).toEqual([recs.beta.id, recs.beta2.id]);
    });

    it('records are lookup-indexed by userId and scopes automatically', async () => {
      const a = await createRecord({ typeName: t, payload: { name: 'owned' }, scopes: ['org:lk-acme'] }, u1);
      expect(ids(await lookup(`type=${t}&field=userId&value=u1`))).toContain(a.id);
      expect(ids(await lookup(`type=${t}&field=scopes&value=${q('org:lk-acme')}`))).toEqual([a.id]);
      // a u2 token does not see it
      expect(ids(await lookup(`type=${t}&field=name&value=owned`, u2))).toEqual([]);
      expect(ids(await lookup(`type=${t}&field=name&value=owned`, u1))).toEqual([a.id]);
    });
  });

  describe('composite lookups', () => {
    let t: string;
    const recs: Record<string, any> = {};
    const F = q('country,city,zip');

    beforeAll(async () => {
      const s = await createSchema({
        fields: ['country', 'city', 'zip'].map((f) => ({ fieldId: f, fieldType: 'string' })),
        lookupFields: [{ fieldNames: ['country', 'city', 'zip'] }],
      });
      t = s.typeName;
      for (const [k, country, city, zip] of [
        ['nyc1a', 'US', 'NYC', '10001'],
        ['la', 'US', 'LA', '90001'],
        ['nyc2', 'US', 'NYC', '10002'],
        ['nyc1b', 'US', 'NYC', '10001'],
        ['paris', 'FR', 'Paris', '75001'],
      ] as const)
        recs[k] = await createRecord({ typeName: t, payload: { country, city, zip } });
    });

    it('GET with a leading run of repeated values= parameters', async () => {
      const one = await lookup(`type=${t}&field=${F}&values=US`);
      expect(one.status, one.text).toBe(200);
      expect(ids(one).sort()).toEqual([recs.nyc1a.id, recs.la.id, recs.nyc2.id, recs.nyc1b.id].sort());
      const two = await lookup(`type=${t}&field=${F}&values=US&values=NYC`);
      expect(two.status, two.text).toBe(200);
      expect(ids(two).sort()).toEqual([recs.nyc1a.id, recs.nyc2.id, recs.nyc1b.id].sort());
      const three = await lookup(`type=${t}&field=${F}&values=US&values=NYC&values=10001`);
      expect(ids(three)).toEqual([recs.nyc1a.id, recs.nyc1b.id]);
    });

    it('POST with values as an array', async () => {
      const r = await api.post('/v1/records/lookup', root, {
        type: t,
        field: 'country,city,zip',
        values: ['US', 'NYC'],
      });
      expect(r.status, r.text).toBe(200);
      expect(ids(r).sort()).toEqual([recs.nyc1a.id, recs.nyc2.id, recs.nyc1b.id].sort());
      const full = await api.post('/v1/records/lookup', root, {
        type: t,
        field: 'country,city,zip',
        values: ['FR', 'Paris', '75001'],
      });
      expect(ids(full)).toEqual([recs.paris.id]);
    });

    it('with fewer values, results group by the unspecified fields, order applies within each group', async () => {
      for (const order of ['asc', 'desc']) {
        const r = await lookup(`type=${t}&field=${F}&values=US&order=${order}`);
        const groups = r.body.data.map((x: any) => `${x.payload.city}|${x.payload.zip}`);
        // contiguous groups
        const seenGroups: string[] = [];
        for (const g of groups) if (seenGroups[seenGroups.length - 1] !== g) seenGroups.push(g);
        expect(new Set(seenGroups).size).toBe(seenGroups.length);
        const nyc1 = ids(r).filter((id: string) => id === recs.nyc1a.id || id === recs.nyc1b.id);
        expect(nyc1).toEqual(order === 'asc' ? [recs.nyc1a.id, recs.nyc1b.id] : [recs.nyc1b.id, recs.nyc1a.id]);
      }
    });

    it('a later composite field alone → 400 (GET and POST), also as a leading-run gap', async () => {
      expect400(await lookup(`type=${t}&field=city&value=NYC`));
      expect400(await lookup(`type=${t}&field=zip&value=10001`));
      expect400(await api.post('/v1/records/lookup', root, { type: t, field: 'city', value: 'NYC' }));
      expect400(await lookup(`type=${t}&field=${q('city,zip')}&values=NYC&values=10001`));
    });

    it('more values than fields → 400; range / prefix on a composite → 400', async () => {
      expect400(
        await api.post('/v1/records/lookup', root, {
          type: t,
          field: 'country,city,zip',
          values: ['US', 'NYC', '10001', 'x'],
        }),
      );
      expect400(await lookup(`type=${t}&field=${F}&from=A&to=Z`));
      expect400(await lookup(`type=${t}&field=${F}&prefix=U`));
    });

    it('sortFrom / sortTo on a composite lookup need the full tuple (else 400)', async () => {
      expect400(await lookup(`type=${t}&field=${F}&values=US&sortFrom=0`));
      const all = await lookup(`type=${t}&field=${F}&values=US&values=NYC&values=10001&sortFrom=0`);
      expect(all.status, all.text).toBe(200);
      expect(ids(all)).toEqual([recs.nyc1a.id, recs.nyc1b.id]);
    });
  });

  describe('sort-key windows', () => {
    it(
      'sortBy a number field: sortFrom / sortTo inclusive; records without the value sort first and are ' +
        'never in a bounded window',
      async () => {
        const s = await createSchema({
          fields: [
            { fieldId: 'group', fieldType: 'string' },
            { fieldId: 'rank', fieldType: 'number' },
          ],
          lookupFields: ['group'],
          sortBy: 'rank',
        });
        const t = s.typeName;
        const byRank: Record<number, string> = {};
        for (const rank of [5, 1, 3, 2, 4])
          byRank[rank] = (await createRecord({ typeName: t, payload: { group: 'g', rank } })).id;
        const unranked = [
          (await createRecord({ typeName: t, payload: { group: 'g' } })).id,
          (await createRecord({ typeName: t, payload: { group: 'g' } })).id,
        ];
        await createRecord({ typeName: t, payload: { group: 'other', rank: 3 } });

        const asc = ids(await lookup(`type=${t}&field=group&value=g`));
        expect(asc).toHaveLength(7);
        expect(new Set(asc.slice(0, 2))).toEqual(new Set(unranked));
        expect(asc.slice(2)).toEqual([1, 2, 3, 4, 5].map((n) => byRank[n]));
        const desc = ids(await lookup(`type=${t}&field=group&value=g&order=desc`));
        expect(desc.slice(0, 5)).toEqual([5, 4, 3, 2, 1].map((n) => byRank[n]));
        expect(new Set(desc.slice(5))).toEqual(new Set(unranked));

        expect(ids(await lookup(`type=${t}&field=group&value=g&sortFrom=2&sortTo=4`))).toEqual(
          [2, 3, 4].map((n) => byRank[n]),
        );
        expect(ids(await lookup(`type=${t}&field=group&value=g&sortFrom=2&sortTo=4&order=desc`))).toEqual(
          [4, 3, 2].map((n) => byRank[n]),
        );
        expect(ids(await lookup(`type=${t}&field=group&value=g&sortFrom=4`))).toEqual([4, 5].map((n) => byRank[n]));
        expect(ids(await lookup(`type=${t}&field=group&value=g&sortTo=2`))).toEqual([1, 2].map((n) => byRank[n]));
        expect(ids(await lookup(`type=${t}&field=group&value=g&sortFrom=-1000&sortTo=1000`))).toEqual(
          [1, 2, 3, 4, 5].map((n) => byRank[n]),
        );
        const p = await api.post('/v1/records/lookup', root, { type: t, field: 'group', value: 'g', sortTo: 1 });
        expect(ids(p)).toEqual([byRank[1]]);
      },
    );

    it('sortBy lastUpdated orders by the last update', async () => {
      const s = await createSchema({
        fields: [{ fieldId: 'group', fieldType: 'string' }],
        lookupFields: ['group'],
        sortBy: 'lastUpdated',
      });
      const a = await createRecord({ typeName: s.typeName, payload: { group: 'lu' } });
      await sleep(5);
      const b = await createRecord({ typeName: s.typeName, payload: { group: 'lu' } });
      await sleep(5);
      expect((await api.patch(`/v1/records/${a.id}`, root, { status: 'TOUCHED' })).status).toBe(200);
      expect(ids(await lookup(`type=${s.typeName}&field=group&value=lu`))).toEqual([b.id, a.id]);
    });

    it('sortBy set later by PUT (set once) orders the records that already exist (or the PUT is refused)', async () => {
      const s = await createSchema({
        fields: [
          { fieldId: 'group', fieldType: 'string' },
          { fieldId: 'rank', fieldType: 'number' },
        ],
        lookupFields: ['group'],
      });
      const byRank: Record<number, string> = {};
      for (const rank of [3, 1, 2])
        byRank[rank] = (await createRecord({ typeName: s.typeName, payload: { group: 'late', rank } })).id;
      const p = await api.put(`/v1/schemas/${s.id}`, root, { sortBy: 'rank' });
      if (p.status !== 200) return expect400(p);
      expect(ids(await lookup(`type=${s.typeName}&field=group&value=late`))).toEqual([1, 2, 3].map((n) => byRank[n]));
      expect(ids(await lookup(`type=${s.typeName}&field=group&value=late&sortFrom=1&sortTo=2`))).toEqual(
        [1, 2].map((n) => byRank[n]),
      );
    });

    it('default sortBy createdAt: windows in epoch milliseconds', async () => {
      const s = await createSchema({ fields: [{ fieldId: 'group', fieldType: 'string' }], lookupFields: ['group'] });
      const made: any[] = [];
      for (let i = 0; i < 5; i++) {
        made.push(await createRecord({ typeName: s.typeName, payload: { group: 'w' } }));
        await sleep(5);
      }
      const ms = (r: any) => Date.parse(r.createdAt);
      const from = ms(made[1]);
      const to = ms(made[3]);
      const want = made.filter((r) => ms(r) >= from && ms(r) <= to).map((r) => r.id);
      expect(want.length).toBeGreaterThanOrEqual(3);
      expect(ids(await lookup(`type=${s.typeName}&field=group&value=w&sortFrom=${from}&sortTo=${to}`))).toEqual(want);
      expect(ids(await lookup(`type=${s.typeName}&field=group&value=w&sortFrom=${ms(made[4]) + 1}`))).toEqual([]);
    });
  });

  describe('paging', () => {
    let t: string;
    const made: string[] = [];

    beforeAll(async () => {
      const s = await createSchema({ fields: [{ fieldId: 'group', fieldType: 'string' }], lookupFields: ['group'] });
      t = s.typeName;
      for (let i = 0; i < 25; i++) made.push((await createRecord({ typeName: t, payload: { group: 'pg', i } })).id);
      await createRecord({ typeName: t, payload: { group: 'not-this' } });
    });

    it.each(['GET', 'POST'])(
      '%s: following nextCursor with limit 7 returns each match once, then null',
      async (via) => {
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const r: Res =
            via === 'GET'
              ? await lookup(`type=${t}&field=group&value=pg&limit=7${cursor ? `&startFrom=${q(cursor)}` : ''}`)
              : await api.post('/v1/records/lookup', root, {
                  type: t,
                  field: 'group',
                  value: 'pg',
                  limit: 7,
                  ...(cursor ? { startFrom: cursor } : {}),
                });
          expect(r.status, r.text).toBe(200);
          expect(r.body.data.length).toBeLessThanOrEqual(7);
          seen.push(...ids(r));
          cursor = r.body.nextCursor;
          expect(++pages).toBeLessThan(20);
        } while (cursor !== null);
        expect(seen).toHaveLength(25);
        expect(new Set(seen).size).toBe(25);
        expect(seen).toEqual(made);
      },
    );

    it('without limit a page holds 20 (the default)', async () => {
      const r = await lookup(`type=${t}&field=group&value=pg`);
      expect(ids(r)).toEqual(made.slice(0, 20));
      expect(r.body.nextCursor).toEqual(expect.any(String));
    });

    it('a lookup cursor replayed with other parameters or altered → 400', async () => {
      const first = await lookup(`type=${t}&field=group&value=pg&limit=7`);
      const c: string = first.body.nextCursor;
      expect(c).toEqual(expect.any(String));
      expect400(await lookup(`type=${t}&field=group&value=not-this&limit=7&startFrom=${q(c)}`));
      expect400(await lookup(`type=${t}&field=group&value=pg&limit=8&startFrom=${q(c)}`));
      expect400(await lookup(`type=${t}&field=group&value=pg&limit=7&order=desc&startFrom=${q(c)}`));
      const i = Math.floor(c.length / 2);
      const altered = c.slice(0, i) + (c[i] === 'A' ? 'B' : 'A') + c.slice(i + 1);
      expect400(await lookup(`type=${t}&field=group&value=pg&limit=7&startFrom=${q(altered)}`));
    });
  });

  it('POST /v1/records/lookup/batch → 501 with errorCode not_implemented', async () => {
    const r = await api.post('/v1/records/lookup/batch', root, { lookups: [] });
    expect(r.status, r.text).toBe(501);
    expect(r.body.errorCode).toBe('not_implemented');
  });
});

// ---------------------------------------------------------------------------
describe('concurrency', () => {
  it('50 concurrent creates with one externalId → exactly one record; every response names it', async () => {
    const s = await createSchema();
    const ext = uniq('race');
    const res = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        api.post('/v1/records', root, { typeName: s.typeName, payload: { i }, externalId: ext }),
      ),
    );
    for (const r of res) expect([200, 201], r.text).toContain(r.status);
    expect(res.filter((r) => r.status === 201)).toHaveLength(1);
    const idsSeen = new Set(res.map((r) => r.body.id));
    expect(idsSeen.size).toBe(1);
    const l = await api.get(`/v1/records?type=${s.typeName}&limit=100`, root);
    expect(l.body.data).toHaveLength(1);
    expect(l.body.data[0].id).toBe([...idsSeen][0]);
  });

  it('50 concurrent creates of distinct records, one unique lookup value → exactly one 201, the rest 409', async () => {
    const s = await createSchema({
      fields: [{ fieldId: 'code', fieldType: 'string' }],
      lookupFields: [{ fieldName: 'code', unique: true }],
    });
    const res = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        api.post('/v1/records', root, { typeName: s.typeName, payload: { code: 'ONE', i } }),
      ),
    );
    const created = res.filter((r) => r.status === 201);
    expect(created).toHaveLength(1);
    for (const r of res.filter((x) => x.status !== 201)) {
      expect(r.status, r.text).toBe(409);
      expect(r.body.errorCode).toBe('CONFLICT');
    }
    const l = await api.get(`/v1/records?type=${s.typeName}&limit=100`, root);
    expect(l.body.data.map((x: any) => x.id)).toEqual([created[0].body.id]);
    const lk = await api.get(`/v1/records/lookup?type=${s.typeName}&field=code&value=ONE`, root);
    expect(lk.body.data.map((x: any) => x.id)).toEqual([created[0].body.id]);
  });
});

// ---------------------------------------------------------------------------
describe('listRecords', () => {
  it('filters by type, userId, scope and folderId; includePayload only accepts true/false', async () => {
    const s = await createSchema();
    const other = await createSchema();
    const folder = await createFolder();
    const a = await createRecord({
      typeName: s.typeName,
      payload: { k: 'a' },
      userId: 'list-user',
      scopes: ['org:list-scope'],
    });
    const b = await createRecord({ typeName: s.typeName, payload: { k: 'b' }, folderId: folder });
    const c = await createRecord({ typeName: other.typeName, payload: { k: 'c' }, scopes: ['org:list-scope'] });
    const list = async (query: string) => {
      const r = await api.get(`/v1/records?limit=100&${query}`, root);
      expect(r.status, r.text).toBe(200);
      return r.body.data.map((x: any) => x.id);
    };
    expect(await list(`type=${s.typeName}`)).toEqual([a.id, b.id]);
    expect(await list(`type=${s.typeName}&userId=list-user`)).toEqual([a.id]);
    expect((await list(`scope=${q('org:list-scope')}`)).sort()).toEqual([a.id, c.id].sort());
    expect(await list(`folderId=${folder}`)).toEqual([b.id]);
    expect400(await api.get('/v1/records?limit=101', root));
    expect400(await api.get('/v1/records?includePayload=yes', root));
  });

  it('a u2 token lists only its own records', async () => {
    const s = await createSchema();
    const mine = await createRecord({ typeName: s.typeName, payload: {} }, u2);
    await createRecord({ typeName: s.typeName, payload: {} }, u1);
    await createRecord({ typeName: s.typeName, payload: {} });
    const r = await api.get(`/v1/records?type=${s.typeName}`, u2);
    expect(r.body.data.map((x: any) => x.id)).toEqual([mine.id]);
  });

  describe('pagination under concurrent writes', () => {
    let t: string;
    let otherType: string;
    const existing: string[] = [];

    beforeAll(async () => {
      t = (await createSchema()).typeName;
      otherType = (await createSchema()).typeName;
      for (let b = 0; b < 20; b++) {
        const r = await api.post('/v1/records/batch', root, {
          records: Array.from({ length: 50 }, (_, i) => ({ typeName: t, payload: { n: b * 50 + i } })),
        });
        expect(r.status, r.text.slice(0, 300)).toBe(200);
        for (const item of r.body.results) {
          expect(item.status).toBe('created');
          existing.push(item.id);
        }
      }
      expect(existing).toHaveLength(1000);
    }, 180_000);

    it(
      '1,000 records listed in pages of 37 while other clients keep creating: every pre-existing record ' +
        'appears exactly once',
      async () => {
        let listing = true;
        let extra = 0;
        const writer = async (typeName: string) => {
          while (listing) {
            const r = await api.post('/v1/records', root, { typeName, payload: { late: true } });
            expect(r.status, r.text).toBe(201);
            extra++;
          }
        };
        const writers = [writer(t), writer(t), writer(otherType)];
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        try {
          do {
            const r: Res = await api.get(
              `/v1/records?type=${t}&limit=37${cursor ? `&startFrom=${q(cursor)}` : ''}`,
              root,
            );
            expect(r.status, r.text).toBe(200);
            expect(r.body.data.length).toBeLessThanOrEqual(37);
            for (const x of r.body.data) expect(x.typeName).toBe(t);
            seen.push(...r.body.data.map((x: any) => x.id));
            cursor = r.body.nextCursor;
            expect(++pages).toBeLessThan(500);
          } while (cursor !== null);
        } finally {
          listing = false;
          await Promise.all(writers);
        }
        expect(extra).toBeGreaterThan(0);
        expect(new Set(seen).size).toBe(seen.length); // nothing twice
        const counts = new Map<string, number>();
        for (const id of seen) counts.set(id, (counts.get(id) ?? 0) + 1);
        const missing = existing.filter((id) => counts.get(id) !== 1);
        expect(missing).toEqual([]);
        expect(pages).toBeGreaterThanOrEqual(Math.ceil(1000 / 37));
      },
      180_000,
    );

    it('a cursor replayed with another type, limit or includePayload → 400; altered by one byte → 400', async () => {
      const first = await api.get(`/v1/records?type=${t}&limit=37`, root);
      const c: string = first.body.nextCursor;
      expect(c).toEqual(expect.any(String));
      const second = await api.get(`/v1/records?type=${t}&limit=37&startFrom=${q(c)}`, root);
      expect(second.status).toBe(200);
      for (const query of [
        `type=${otherType}&limit=37`,
        `limit=37`,
        `type=${t}&limit=36`,
        `type=${t}`,
        `type=${t}&limit=37&includePayload=true`,
      ]) {
        const r = await api.get(`/v1/records?${query}&startFrom=${q(c)}`, root);
        expect400(r);
        expect(r.body.errorCode).toBe('INVALID_CURSOR');
      }
      const i = Math.floor(c.length / 2);
      const altered = c.slice(0, i) + (c[i] === 'A' ? 'B' : 'A') + c.slice(i + 1);
      const r = await api.get(`/v1/records?type=${t}&limit=37&startFrom=${q(altered)}`, root);
      expect400(r);
      expect(r.body.errorCode).toBe('INVALID_CURSOR');
      const last = await api.get(`/v1/records?type=${t}&limit=37&startFrom=${q(c.slice(0, -1))}`, root);
      expect400(last);
    });
  });
});

// ---------------------------------------------------------------------------
describe('batch write (POST /v1/records/batch)', () => {
  let t: string;
  beforeAll(async () => {
    t = (
      await createSchema({
        fields: [
          { fieldId: 'code', fieldType: 'string' },
          { fieldId: 'n', fieldType: 'number' },
        ],
        lookupFields: [{ fieldName: 'code', unique: true }],
      })
    ).typeName;
  });

  it('50 items → 200 with a per-item created result; 51 → 400 and nothing is stored', async () => {
    const tag = uniq('b');
    const r = await api.post('/v1/records/batch', root, {
      records: Array.from({ length: 50 }, (_, i) => ({ typeName: t, payload: { n: i }, externalId: `${tag}-${i}` })),
    });
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    expect(r.body.results).toHaveLength(50);
    for (const item of r.body.results) {
      expect(item.status).toBe('created');
      expect((await getRecord(item.id)).status).toBe(200);
    }
    const tag2 = uniq('b');
    expect400(
      await api.post('/v1/records/batch', root, {
        records: Array.from({ length: 51 }, (_, i) => ({ typeName: t, payload: { n: i }, externalId: `${tag2}-${i}` })),
      }),
    );
    const list = await api.get(`/v1/records?type=${t}&limit=100`, root);
    expect(list.body.data.filter((x: any) => x.externalId?.startsWith(tag2))).toEqual([]);
  });

  it('re-sending the caller’s own externalId → updated (the record takes the new payload)', async () => {
    const ext = uniq('own');
    const first = await api.post('/v1/records/batch', root, {
      records: [{ typeName: t, payload: { n: 1 }, externalId: ext }],
    });
    expect(first.body.results[0].status).toBe('created');
    const id = first.body.results[0].id;
    const again = await api.post('/v1/records/batch', root, {
      records: [{ typeName: t, payload: { n: 2 }, externalId: ext }],
    });
    expect(again.status).toBe(200);
    expect(again.body.results[0]).toMatchObject({ status: 'updated', id });
    const g = await getRecord(id);
    expect(g.body.payload).toEqual({ n: 2 });
    expect(g.body.version).toBe(2);
  });

  it(
    'a violated unique value → conflict with error.code already_exists; HTTP 200 and the other items are ' + 'created',
    async () => {
      const code = uniq('code');
      await createRecord({ typeName: t, payload: { code } });
      const r = await api.post('/v1/records/batch', root, {
        records: [
          { typeName: t, payload: { n: 1 } },
          { typeName: t, payload: { code } },
          { typeName: t, payload: { n: 'not a number' } },
          { typeName: t, payload: { code: code + '-2' } },
        ],
      });
      expect(r.status, r.text).toBe(200);
      const res = r.body.results;
      expect(res).toHaveLength(4);
      expect(res[0].status).toBe('created');
      expect(res[1].status).toBe('conflict');
      expect(res[1].error.code).toBe('already_exists');
      expect(res[2].status).not.toBe('created');
      expect(res[2].status).not.toBe('updated');
      expect(res[3].status).toBe('created');
      const lk = await api.get(`/v1/records/lookup?type=${t}&field=code&value=${q(code)}`, root);
      expect(lk.body.data).toHaveLength(1);
    },
  );

  it('two items of one batch with the same unique value: the second is a conflict', async () => {
    const code = uniq('same');
    const r = await api.post('/v1/records/batch', root, {
      records: [
        { typeName: t, payload: { code } },
        { typeName: t, payload: { code } },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.results.map((x: any) => x.status)).toEqual(['created', 'conflict']);
    expect(r.body.results[1].error.code).toBe('already_exists');
    expect(r.body.results[1].errorCode).toBe('already_exists');
  });

  it('an empty body or a missing records array → 400', async () => {
    expect400(await api.post('/v1/records/batch', root, {}));
    expect400(await api.post('/v1/records/batch', root, { records: 'x' }));
  });

  it(
    "an item the item schema refuses is that item's error (VALIDATION_ERROR); the batch is 200 and its " +
      'valid items are written',
    async () => {
      const ext = uniq('ok');
      const r = await api.post('/v1/records/batch', root, {
        records: [
          { typeName: t, payload: { code: uniq('a') }, nope: 1 },
          { typeName: t, payload: { code: uniq('b') }, externalId: ext },
          { typeName: t, payload: { code: uniq('c') }, scopes: ['org:a', 'org:b', 'org:c'] },
          { typeName: t, payload: 'not an object' },
          { typeName: t, payload: { code: uniq('d') }, externalId: 'x'.repeat(257) },
        ],
      });
      expect(r.status, r.text).toBe(200);
      expect(r.body.results.map((x: any) => [x.index, x.status])).toEqual([
        [0, 'error'],
        [1, 'created'],
        [2, 'error'],
        [3, 'error'],
        [4, 'error'],
      ]);
      for (const i of [0, 2, 3, 4]) {
        expect(r.body.results[i].error.code).toBe('VALIDATION_ERROR');
        expect(r.body.results[i].errorCode).toBe('VALIDATION_ERROR');
        expect(typeof r.body.results[i].error.message).toBe('string');
      }
      expect(r.body.results[0].error.message).toContain('nope');
      expect((await getRecord(r.body.results[1].id)).body.externalId).toBe(ext);
    },
  );

  it(
    "re-sending an owned externalId is an update: without records:u it is that item's FORBIDDEN, and the " +
      'record is unchanged',
    async () => {
      const ext = uniq('upd');
      const first = await api.post('/v1/records/batch', root, {
        records: [{ typeName: t, payload: { code: uniq('v1') }, externalId: ext }],
      });
      expect(first.body.results[0].status).toBe('created');
      const createOnly = await mint(root, ['records:c', 'records:r']);
      const again = await api.post('/v1/records/batch', createOnly, {
        records: [
          { typeName: t, payload: { code: uniq('v2') }, externalId: ext },
          { typeName: t, payload: { code: uniq('new') } },
        ],
      });
      expect(again.status, again.text).toBe(200);
      expect(again.body.results.map((x: any) => x.status)).toEqual(['error', 'created']);
      expect(again.body.results[0].errorCode).toBe('FORBIDDEN');
      expect((await getRecord(first.body.results[0].id)).body.payload.code).toBe(
        first.body.results[0].record.payload.code,
      );
      const withUpdate = await mint(root, ['records:c', 'records:r', 'records:u']);
      const third = await api.post('/v1/records/batch', withUpdate, {
        records: [{ typeName: t, payload: { code: uniq('v3') }, externalId: ext }],
      });
      expect(third.body.results[0].status).toBe('updated');
    },
  );
});

describe('batch-write collision budget', () => {
  let bRoot: string;
  let bU1: string;
  let bU2: string;
  let bt: string;

  beforeAll(async () => {
    // a dedicated account: the budget is per account
    const b = await enterprise();
    bRoot = b.tenants.live.rootKey;
    bU1 = await mint(bRoot, ALL, { userId: 'u1' });
    bU2 = await mint(bRoot, ALL, { userId: 'u2' });
    const r = await api.post('/v1/schemas', bRoot, {
      typeName: 'Coll',
      displayName: 'Coll',
      allowedSurfaces: ['record'],
      fields: [{ fieldId: 'code', fieldType: 'string' }],
      lookupFields: [{ fieldName: 'code', unique: true }],
    });
    expect(r.status, r.text).toBe(201);
    bt = r.body.typeName;
  });

  it(
    'own re-sends and reachable conflicts spend nothing; collisions with values outside the caller’s reach ' +
      'spend it; then 429 RATE_LIMITED',
    async () => {
      // stay inside one fixed minute window
      const secs = new Date().getUTCSeconds();
      if (secs > 35) await sleep((61 - secs) * 1000);

      // holders, written by u1: externalIds held-0..9 and unique codes code-0..9
      const holders = await api.post('/v1/records/batch', bU1, {
        records: Array.from({ length: 10 }, (_, i) => ({
          typeName: bt,
          payload: { code: `code-${i}` },
          externalId: `held-${i}`,
        })),
      });
      expect(holders.status, holders.text).toBe(200);
      expect(holders.body.results.every((x: any) => x.status === 'created')).toBe(true);

      // u1 re-sends its own externalIds (updated) and collides with its own unique values (reachable): no budget spent
      for (let round = 0; round < 3; round++) {
        const own = await api.post('/v1/records/batch', bU1, {
          records: [
            ...Array.from({ length: 10 }, (_, i) => ({
              typeName: bt,
              payload: { code: `code-${i}` },
              externalId: `held-${i}`,
            })),
            ...Array.from({ length: 10 }, (_, i) => ({ typeName: bt, payload: { code: `code-${i}` } })),
          ],
        });
        expect(own.status, own.text).toBe(200);
        expect(own.body.results.slice(0, 10).map((x: any) => x.status)).toEqual(Array(10).fill('updated'));
        for (const x of own.body.results.slice(10))
          expect(x).toMatchObject({ status: 'conflict', error: { code: 'already_exists' } });
      }
      // clean imports spend nothing either
      const clean = await api.post('/v1/records/batch', bU2, {
        records: Array.from({ length: 30 }, () => ({ typeName: bt, payload: {} })),
      });
      expect(clean.status).toBe(200);
      const u2Own = await api.post('/v1/records/batch', bU2, {
        records: [{ typeName: bt, payload: { code: 'u2-code' }, externalId: 'u2-own' }],
      });
      expect(u2Own.body.results[0].status, u2Own.text).toBe('created');

      // u2 collides with u1's values (outside u2's reach): 4 batches of 5 = 20 units, each answered 200 with conflicts
      const colliding = (k: number) =>
        k % 2 === 0
          ? Array.from({ length: 5 }, (_, i) => ({ typeName: bt, payload: {}, externalId: `held-${(i + k) % 10}` }))
          : Array.from({ length: 5 }, (_, i) => ({ typeName: bt, payload: { code: `code-${(i + k) % 10}` } }));
      for (let k = 0; k < 4; k++) {
        const r = await api.post('/v1/records/batch', bU2, { records: colliding(k) });
        expect(r.status, `batch ${k}: ${r.text}`).toBe(200);
        for (const x of r.body.results)
          expect(x).toMatchObject({ status: 'conflict', error: { code: 'already_exists' } });
        expect(JSON.stringify(r.body)).not.toContain('u1'); // nothing about the holder is revealed
      }
      const limited = await api.post('/v1/records/batch', bU2, { records: colliding(4) });
      expect(limited.status, limited.text).toBe(429);
      expect(limited.body.errorCode).toBe('RATE_LIMITED');
      expect(limited.body.message).toMatch(/collision budget/i);
      expect(limited.body.requestId).toBe(limited.headers.get('x-request-id'));
      // Every 429 says X-RateLimit-Remaining: 0 beside the plan maximum (spec "Rate limits"), though the burst count is
      // far from it.
      expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(limited.headers.get('x-ratelimit-limit')).toBe('1000000');
      const retryAfter = Number(limited.headers.get('retry-after'));
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // the holders are untouched
      const held = await api.get(`/v1/records/lookup?type=${bt}&field=code&value=code-0`, bU1);
      expect(held.body.data).toHaveLength(1);
      expect(held.body.data[0].userId).toBe('u1');

      // Exhausted, the budget refuses only a batch that would spend it: one colliding item among clean ones is
      // still a 429, and nothing of that batch is written.
      const mixed = await api.post('/v1/records/batch', bU2, {
        records: [
          { typeName: bt, payload: { code: 'mixed-clean' } },
          { typeName: bt, payload: {}, externalId: 'held-0' },
        ],
      });
      expect(mixed.status, mixed.text).toBe(429);
      expect(mixed.body.message).toMatch(/collision budget/i);
      expect((await api.get(`/v1/records/lookup?type=${bt}&field=code&value=mixed-clean`, bU2)).body.data).toHaveLength(
        0,
      );
      // The cleaned-up resubmission (conflicting items removed) goes through at once, in the same window: new rows,
      // a re-send of the caller's own externalId, and a conflict with a value the caller can read spend nothing.
      const cleaned = await api.post('/v1/records/batch', bU2, {
        records: [
          { typeName: bt, payload: { code: 'mixed-clean' } },
          { typeName: bt, payload: { code: 'u2-code' }, externalId: 'u2-own' },
          { typeName: bt, payload: { code: 'u2-code' } },
        ],
      });
      expect(cleaned.status, cleaned.text).toBe(200);
      expect(cleaned.body.results.map((x: any) => x.status)).toEqual(['created', 'updated', 'conflict']);
      // ... and leaves the budget as exhausted as it was.
      const still = await api.post('/v1/records/batch', bU2, { records: colliding(5) });
      expect(still.status, still.text).toBe(429);
    },
    90_000,
  );
});

// ---------------------------------------------------------------------------
describe('batch get (POST /v1/records/batch-get)', () => {
  it('returns reachable records in data and the others in notFound', async () => {
    const s = await createSchema();
    const mine = await createRecord({ typeName: s.typeName, payload: { who: 'u2' } }, u2);
    const mine2 = await createRecord({ typeName: s.typeName, payload: { who: 'u2b' } }, u2);
    const theirs = await createRecord({ typeName: s.typeName, payload: { who: 'u1' } }, u1);
    const deleted = await createRecord({ typeName: s.typeName, payload: {} }, u2);
    expect((await api.del(`/v1/records/${deleted.id}`, u2)).status).toBe(204);
    const missing = randomUUID();
    const otherAcct = await api.newAccount();
    const os = await api.post('/v1/schemas', otherAcct.tenants.live.rootKey, {
      typeName: 'X',
      displayName: 'X',
      allowedSurfaces: ['record'],
    });
    const foreign = await api.post('/v1/records', otherAcct.tenants.live.rootKey, {
      typeName: os.body.typeName,
      payload: {},
    });
    expect(foreign.status).toBe(201);

    const r = await api.post('/v1/records/batch-get', u2, {
      ids: [mine.id, theirs.id, missing, deleted.id, foreign.body.id, mine2.id],
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.map((x: any) => x.id).sort()).toEqual([mine.id, mine2.id].sort());
    expect(r.body.data.find((x: any) => x.id === mine.id)).toEqual((await getRecord(mine.id, u2)).body);
    expect([...r.body.notFound].sort()).toEqual([theirs.id, missing, deleted.id, foreign.body.id].sort());

    const byRoot = await api.post('/v1/records/batch-get', root, { ids: [mine.id, theirs.id, foreign.body.id] });
    expect(byRoot.body.data.map((x: any) => x.id).sort()).toEqual([mine.id, theirs.id].sort());
    expect(byRoot.body.notFound).toEqual([foreign.body.id]);
  });

  it('100 ids are accepted; 101 → 400', async () => {
    const ok = await api.post('/v1/records/batch-get', root, { ids: Array.from({ length: 100 }, () => randomUUID()) });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data).toEqual([]);
    expect(ok.body.notFound).toHaveLength(100);
    expect400(await api.post('/v1/records/batch-get', root, { ids: Array.from({ length: 101 }, () => randomUUID()) }));
  });

  it('a full payload is returned for out-of-line records', async () => {
    const s = await createSchema({ fields: [{ fieldId: 'body', fieldType: 'string' }] });
    const payload = { body: 'z'.repeat(6000) };
    const r = await createRecord({ typeName: s.typeName, payload });
    expect(r.payloadExternalized).toBe(true);
    const bg = await api.post('/v1/records/batch-get', root, { ids: [r.id] });
    expect(bg.body.data[0].payload).toEqual(payload);
  });
});
