import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Api, type Bootstrap, type TestService } from '../support/service';
import { expectStatus, unwrap, type Body } from '../support/typed';

/**
 * Schemas (spec "Schema", "FieldDef", "LookupDef", "RenderHintDef", "Schemas
 * (operations by name)", decisions §1/§4, docs/api.md) and payload validation
 * against a schema (FieldDef validation keys, enumValues, number rules, inline
 * limit, out-of-line payloads). Black-box over HTTP, one service for the file.
 */
let svc: TestService;
let api: Api;
let acct: Bootstrap;
let root: string; // live root key of a dedicated enterprise account (no rate or credit ceilings in the way)
let u1: string; // token bound to dataScope userId u1
let u2: string; // token bound to dataScope userId u2

type Res = Awaited<ReturnType<Api['call']>>;
const ALL = ['schemas:c', 'schemas:r', 'schemas:u', 'schemas:d', 'records:c', 'records:r', 'records:u', 'records:d'];

beforeAll(async () => {
  svc = await startService();
  api = svc.api;
  acct = await api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 });
  root = acct.tenants.live.rootKey;
  u1 = await mint(ALL, { dataScope: { userId: 'u1' } });
  u2 = await mint(ALL, { dataScope: { userId: 'u2' } });
});

afterAll(async () => {
  await svc?.stop();
});

async function mint(
  allowedActions: string[],
  scopeExtra: Omit<Body<'mintToken'>['scope'], 'allowedActions'> = {},
): Promise<string> {
  return (
    await expectStatus(svc.client(root).POST('/v1/tokens', { body: { scope: { allowedActions, ...scopeExtra } } }), 201)
  ).token;
}

const call = (method: string, path: string, token: string, body?: unknown, ctx?: string) =>
  api.call(method, path, { token, body, headers: ctx ? { 'x-context-id': ctx } : undefined });

const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;

/** A minimal valid schema body; `over` replaces keys. */
const schemaBody = (over: Record<string, unknown> = {}) => ({
  typeName: uniq('T'),
  displayName: 'A type',
  allowedSurfaces: ['record'],
  ...over,
});

// Typed calls (@svc/client): the answers are the generated types, so a renamed field fails the typecheck.
async function createSchema(over: Record<string, unknown> = {}, token = root, ctx?: string) {
  return expectStatus(
    svc.client(token, { contextId: ctx }).POST('/v1/schemas', { body: schemaBody(over) as Body<'createSchema'> }),
    201,
  );
}
const readSchema = (id: string, token = root) =>
  unwrap(svc.client(token).GET('/v1/schemas/{id}', { params: { path: { id } } }));

function expect400(r: Res) {
  expect(r.status, r.text).toBe(400);
  expect(Object.keys(r.body)).toEqual(expect.arrayContaining(['message', 'errorCode', 'requestId']));
  expect(r.body.requestId).toBe(r.headers.get('x-request-id'));
}

function expect403(r: Res) {
  expect(r.status, r.text).toBe(403);
  expect(r.body.errorCode).toBe('FORBIDDEN');
}

const getSchema = (id: string, token = root) => call('GET', `/v1/schemas/${id}`, token);
const schemaVersions = async (id: string, token = root) =>
  (
    await unwrap(
      svc.client(token).GET('/v1/schemas/{id}/versions', { params: { path: { id }, query: { limit: 100 } } }),
    )
  ).data;
const snapshotSchema = async (id: string) => ({ schema: await readSchema(id), history: await schemaVersions(id) });
/** The schema and its history are exactly as before a rejected write. */
async function expectSchemaUnchanged(id: string, before: Awaited<ReturnType<typeof snapshotSchema>>) {
  expect(await snapshotSchema(id)).toEqual(before);
}

// ---------------------------------------------------------------------------
describe('createSchema', () => {
  it('POST /v1/schemas → 201 with id, schemaVersion 1, active true, default capabilities', async () => {
    const body: Body<'createSchema'> = {
      typeName: uniq('T'),
      displayName: 'A type',
      allowedSurfaces: ['record'],
      description: 'd',
      fields: [{ fieldId: 'name', fieldType: 'string' }],
      indexMode: 'NONE',
    };
    const r = await expectStatus(svc.client(root).POST('/v1/schemas', { body }), 201);
    expect(r).toMatchObject({
      typeName: body.typeName,
      displayName: 'A type',
      description: 'd',
      allowedSurfaces: ['record'],
      schemaVersion: 1,
      active: true,
      indexMode: 'NONE',
    });
    expect(r.id).toEqual(expect.any(String));
    expect(r.capabilities).toEqual({ auditHistory: true, triggersEnabled: false });
    expect(r.fields).toEqual([{ fieldId: 'name', fieldType: 'string' }]);
    expect(await readSchema(r.id)).toEqual(r);
  });

  it(
    'defaults in every answer: storageProfile STANDARD; a reference field targetField externalId, ' +
      'cardinality one (create, GET, list, versions)',
    async () => {
      const ref = { fieldId: 'r', fieldType: 'reference' as const, targetTypeName: 'Other', targetSurface: 'record' };
      const s = await createSchema({ fields: [{ fieldId: 'name', fieldType: 'string' }, ref] });
      const fields = [
        { fieldId: 'name', fieldType: 'string' },
        { ...ref, targetField: 'externalId', cardinality: 'one' },
      ];
      expect(s).toMatchObject({ storageProfile: 'STANDARD', fields });
      expect(await readSchema(s.id)).toEqual(s);
      const list = await unwrap(svc.client(root).GET('/v1/schemas', { params: { query: { limit: 100 } } }));
      expect(list.data.find((x) => x.id === s.id)).toEqual(s);
      const [v1] = await schemaVersions(s.id);
      expect(v1.state).toMatchObject({ storageProfile: 'STANDARD', fields });
      // a PUT keeps answering them; what is given is answered as given
      const p = await api.put(`/v1/schemas/${s.id}`, root, { displayName: 'Two' });
      expect(p.body).toMatchObject({ storageProfile: 'STANDARD', fields });
      const explicit = await createSchema({
        storageProfile: 'LOW_LATENCY',
        fields: [{ ...ref, targetField: 'code', cardinality: 'many' }],
      });
      expect(explicit).toMatchObject({
        storageProfile: 'LOW_LATENCY',
        fields: [{ ...ref, targetField: 'code', cardinality: 'many' }],
      });
    },
  );

  it('a user schema needs the root key: a scoped credential gets 403 FORBIDDEN and nothing is created', async () => {
    const scoped = await mint(ALL);
    const body = schemaBody({ allowedSurfaces: ['user'] });
    expect403(await api.post('/v1/schemas', scoped, body));
    expect403(await api.post('/v1/schemas', scoped, schemaBody({ allowedSurfaces: ['record', 'user'] })));
    // the typeName was not taken: the root key creates it fresh (201)
    expect((await api.post('/v1/schemas', root, body)).status).toBe(201);
    // other surfaces need no root key
    expect(
      (await api.post('/v1/schemas', scoped, schemaBody({ allowedSurfaces: ['record', 'document'] }))).status,
    ).toBe(201);
  });

  it('re-creating the same typeName with the same owner → 200, the same id, nothing changed', async () => {
    const s = await createSchema();
    const before = await snapshotSchema(s.id);
    const again = await expectStatus(
      svc.client(root).POST('/v1/schemas', {
        body: { typeName: s.typeName, displayName: 'Another name', allowedSurfaces: ['record', 'document'] },
      }),
      200,
    );
    expect(again.id).toBe(s.id);
    expect(again.schemaVersion).toBe(1);
    expect(again.displayName).toBe('A type');
    await expectSchemaUnchanged(s.id, before);
  });

  it(
    'another owner (token with dataScope userId) reusing the name without basedOn → 400, with basedOn = ' +
      'base → 201 variant',
    async () => {
      const base = await createSchema();
      const noBase = await api.post('/v1/schemas', u1, {
        typeName: base.typeName,
        displayName: 'Mine',
        allowedSurfaces: ['record'],
      });
      expect400(noBase);
      const v = await api.post('/v1/schemas', u1, {
        typeName: base.typeName,
        displayName: 'Mine',
        allowedSurfaces: ['record'],
        basedOn: base.id,
      });
      expect(v.status, v.text).toBe(201);
      expect(v.body.id).not.toBe(base.id);
      expect(v.body).toMatchObject({ typeName: base.typeName, basedOn: base.id, userId: 'u1', schemaVersion: 1 });
      // the owner re-creating its variant gets it back (200)
      const again = await api.post('/v1/schemas', u1, {
        typeName: base.typeName,
        displayName: 'Mine',
        allowedSurfaces: ['record'],
        basedOn: base.id,
      });
      expect(again.status, again.text).toBe(200);
      expect(again.body.id).toBe(v.body.id);
      // the base is unchanged and still the root's schema for that name
      const rootAgain = await api.post('/v1/schemas', root, {
        typeName: base.typeName,
        displayName: 'x',
        allowedSurfaces: ['record'],
      });
      expect(rootAgain.status).toBe(200);
      expect(rootAgain.body.id).toBe(base.id);
    },
  );

  it('basedOn not the base of the typeName → 400 (another schema, a variant (two hops), an unknown id)', async () => {
    const base = await createSchema();
    const other = await createSchema();
    const v1 = await createSchema({ typeName: base.typeName, basedOn: base.id }, u1);
    const before = await snapshotSchema(base.id);
    expect400(await api.post('/v1/schemas', u2, schemaBody({ typeName: base.typeName, basedOn: other.id })));
    expect400(await api.post('/v1/schemas', u2, schemaBody({ typeName: base.typeName, basedOn: v1.id })));
    expect400(await api.post('/v1/schemas', u2, schemaBody({ typeName: base.typeName, basedOn: randomUUID() })));
    // the shared base itself (unscoped credential, first of its name) cannot set basedOn
    expect400(await api.post('/v1/schemas', root, schemaBody({ basedOn: base.id })));
    await expectSchemaUnchanged(base.id, before);
    // u2 created nothing: with basedOn = base it is a fresh 201
    const ok = await api.post('/v1/schemas', u2, schemaBody({ typeName: base.typeName, basedOn: base.id }));
    expect(ok.status, ok.text).toBe(201);
  });

  it('a record created by typeName alone uses the caller’s own variant, else the shared base', async () => {
    const base = await createSchema();
    const v1 = await createSchema({ typeName: base.typeName, basedOn: base.id }, u1);
    const byU1 = await api.post('/v1/records', u1, { typeName: base.typeName, payload: {} });
    expect(byU1.status, byU1.text).toBe(201);
    expect(byU1.body.schemaId).toBe(v1.id);
    const byU2 = await api.post('/v1/records', u2, { typeName: base.typeName, payload: {} });
    expect(byU2.status, byU2.text).toBe(201);
    expect(byU2.body.schemaId).toBe(base.id);
    const byRoot = await api.post('/v1/records', root, { typeName: base.typeName, payload: {} });
    expect(byRoot.status, byRoot.text).toBe(201);
    expect(byRoot.body.schemaId).toBe(base.id);
  });

  it('a variant is not visible to another owner (404), and is visible to its own', async () => {
    const base = await createSchema();
    const v1 = await createSchema({ typeName: base.typeName, basedOn: base.id }, u1);
    expect((await getSchema(v1.id, u1)).status).toBe(200);
    expect((await getSchema(v1.id, u2)).status).toBe(404);
    expect((await getSchema(base.id, u2)).status).toBe(200);
  });

  it.each([
    ['a typeName with a space', { typeName: 'bad name' }],
    ['a typeName of 65 characters', { typeName: 'a'.repeat(65) }],
    ['an empty typeName', { typeName: '' }],
    ['no displayName', { displayName: undefined }],
    ['empty allowedSurfaces', { allowedSurfaces: [] }],
    ['no allowedSurfaces', { allowedSurfaces: undefined }],
    ['an unknown surface', { allowedSurfaces: ['galaxy'] }],
    ['a fieldId breaking the identifier grammar', { fields: [{ fieldId: 'a.b', fieldType: 'string' }] }],
    ['an unknown fieldType', { fields: [{ fieldId: 'a', fieldType: 'money' }] }],
    ['an unknown validation key', { fields: [{ fieldId: 'a', fieldType: 'string', validation: { shout: true } }] }],
    ['an unknown indexMode', { indexMode: 'FAST' }],
    ['an unknown storageProfile', { storageProfile: 'HUGE' }],
    [
      'an unknown render widget',
      { fields: [{ fieldId: 'a', fieldType: 'string' }], renderHints: { a: { widget: 'slider' } } },
    ],
    [
      'two displayField render hints',
      {
        fields: [
          { fieldId: 'a', fieldType: 'string' },
          { fieldId: 'b', fieldType: 'string' },
        ],
        renderHints: { a: { displayField: true }, b: { displayField: true } },
      },
    ],
    ['3 ownership scopes', { scopes: ['org:a', 'org:b', 'org:c'] }],
  ])('%s → 400', async (_, over) => {
    expect400(await api.post('/v1/schemas', root, schemaBody(over)));
  });

  it('render hints with every documented key are accepted', async () => {
    const s = await createSchema({
      fields: [
        { fieldId: 'a', fieldType: 'string' },
        { fieldId: 'b', fieldType: 'string' },
      ],
      renderHints: {
        a: { label: 'A', widget: 'textarea', order: 1, section: 'main', helpText: 'help', displayField: true },
        b: { widget: 'select' },
      },
    });
    expect(s.renderHints?.a).toEqual({
      label: 'A',
      widget: 'textarea',
      order: 1,
      section: 'main',
      helpText: 'help',
      displayField: true,
    });
  });
});

describe('schema definition rules', () => {
  const lookups = (n: number) => Array.from({ length: n }, (_, i) => `f${i}`);
  const fieldsFor = (n: number) => Array.from({ length: n }, (_, i) => ({ fieldId: `f${i}`, fieldType: 'string' }));

  it('10 lookupFields are accepted; 11 → 400', async () => {
    await createSchema({ fields: fieldsFor(11), lookupFields: lookups(10) });
    expect400(await api.post('/v1/schemas', root, schemaBody({ fields: fieldsFor(11), lookupFields: lookups(11) })));
  });

  it('11 lookupFields on a bare schema → 400 too', async () => {
    expect400(await api.post('/v1/schemas', root, schemaBody({ lookupFields: lookups(11) })));
  });

  it.each(['userId', 'scopes'])('reserved name %s as a field → 400', async (name) => {
    expect400(await api.post('/v1/schemas', root, schemaBody({ fields: [{ fieldId: name, fieldType: 'string' }] })));
  });

  it.each(['userId', 'scopes'])(
    'reserved name %s as a lookup field → 400 (bare string, object, composite)',
    async (name) => {
      expect400(await api.post('/v1/schemas', root, schemaBody({ lookupFields: [name] })));
      expect400(await api.post('/v1/schemas', root, schemaBody({ lookupFields: [{ fieldName: name, unique: true }] })));
      expect400(await api.post('/v1/schemas', root, schemaBody({ lookupFields: [{ fieldNames: ['a', name] }] })));
    },
  );

  it('sensitive + inline → 400; either alone is fine', async () => {
    expect400(
      await api.post(
        '/v1/schemas',
        root,
        schemaBody({ fields: [{ fieldId: 's', fieldType: 'string', sensitive: true, inline: true }] }),
      ),
    );
    await createSchema({ fields: [{ fieldId: 's', fieldType: 'string', sensitive: true }] });
    await createSchema({ fields: [{ fieldId: 's', fieldType: 'string', inline: true }] });
  });

  it('enum without enumValues → 400 (missing or empty); with values → 201', async () => {
    expect400(await api.post('/v1/schemas', root, schemaBody({ fields: [{ fieldId: 'e', fieldType: 'enum' }] })));
    expect400(
      await api.post(
        '/v1/schemas',
        root,
        schemaBody({ fields: [{ fieldId: 'e', fieldType: 'enum', enumValues: [] }] }),
      ),
    );
    await createSchema({ fields: [{ fieldId: 'e', fieldType: 'enum', enumValues: ['a', 'b'] }] });
  });

  it('reference without targetTypeName or without targetSurface → 400', async () => {
    expect400(
      await api.post(
        '/v1/schemas',
        root,
        schemaBody({ fields: [{ fieldId: 'r', fieldType: 'reference', targetSurface: 'record' }] }),
      ),
    );
    expect400(
      await api.post(
        '/v1/schemas',
        root,
        schemaBody({ fields: [{ fieldId: 'r', fieldType: 'reference', targetTypeName: 'Other' }] }),
      ),
    );
  });

  it(
    "reference to an unregistered namespace ('galaxy') → 400; 'org', 'client', 'record', 'document', 'user' " +
      'are accepted',
    async () => {
      expect400(
        await api.post(
          '/v1/schemas',
          root,
          schemaBody({
            fields: [{ fieldId: 'r', fieldType: 'reference', targetTypeName: 'Star', targetSurface: 'galaxy' }],
          }),
        ),
      );
      for (const surface of ['org', 'client', 'record', 'document', 'user']) {
        const s = await createSchema({
          fields: [
            {
              fieldId: 'r',
              fieldType: 'reference',
              targetTypeName: 'Other',
              targetSurface: surface,
              targetField: 'externalId',
              cardinality: 'many',
            },
          ],
        });
        expect(s.fields?.[0]).toMatchObject({ targetSurface: surface, targetTypeName: 'Other', cardinality: 'many' });
      }
    },
  );

  it('a composite lookup on a schema whose allowedSurfaces includes document → 400; record-only is fine', async () => {
    const fields = [
      { fieldId: 'a', fieldType: 'string' },
      { fieldId: 'b', fieldType: 'string' },
    ];
    expect400(
      await api.post(
        '/v1/schemas',
        root,
        schemaBody({ fields, allowedSurfaces: ['record', 'document'], lookupFields: [{ fieldNames: ['a', 'b'] }] }),
      ),
    );
    expect400(
      await api.post(
        '/v1/schemas',
        root,
        schemaBody({ fields, allowedSurfaces: ['document'], lookupFields: [{ fieldNames: ['a', 'b'] }] }),
      ),
    );
    await createSchema({ fields, lookupFields: [{ fieldNames: ['a', 'b'] }] });
  });

  it('a composite lookup of 1 or 4 fields, or with unique / rangeEnabled → 400', async () => {
    const fields = ['a', 'b', 'c', 'd'].map((f) => ({ fieldId: f, fieldType: 'string' }));
    expect400(await api.post('/v1/schemas', root, schemaBody({ fields, lookupFields: [{ fieldNames: ['a'] }] })));
    expect400(
      await api.post('/v1/schemas', root, schemaBody({ fields, lookupFields: [{ fieldNames: ['a', 'b', 'c', 'd'] }] })),
    );
    expect400(
      await api.post(
        '/v1/schemas',
        root,
        schemaBody({ fields, lookupFields: [{ fieldNames: ['a', 'b'], unique: true }] }),
      ),
    );
    expect400(
      await api.post(
        '/v1/schemas',
        root,
        schemaBody({ fields, lookupFields: [{ fieldNames: ['a', 'b'], rangeEnabled: true }] }),
      ),
    );
    await createSchema({ fields, lookupFields: [{ fieldNames: ['a', 'b', 'c'] }] });
  });

  it('sortBy: createdAt, lastUpdated or a declared non-sensitive field; otherwise 400', async () => {
    const fields = [
      { fieldId: 'rank', fieldType: 'number' },
      { fieldId: 'secret', fieldType: 'string', sensitive: true },
    ];
    await createSchema({ fields, lookupFields: ['rank'], sortBy: 'createdAt' });
    await createSchema({ fields, lookupFields: ['rank'], sortBy: 'lastUpdated' });
    await createSchema({ fields, lookupFields: ['rank'], sortBy: 'rank' });
    expect400(await api.post('/v1/schemas', root, schemaBody({ fields, lookupFields: ['rank'], sortBy: 'secret' })));
    expect400(await api.post('/v1/schemas', root, schemaBody({ fields, lookupFields: ['rank'], sortBy: 'nope' })));
  });
});

// ---------------------------------------------------------------------------
describe('updateSchema (PUT)', () => {
  it('schemaVersion +1 per update; typeName repeated unchanged is fine', async () => {
    const s = await createSchema({ fields: [{ fieldId: 'a', fieldType: 'string' }] });
    const p1 = await api.put(`/v1/schemas/${s.id}`, root, { typeName: s.typeName, displayName: 'Two' });
    expect(p1.status, p1.text).toBe(200);
    expect(p1.body.schemaVersion).toBe(2);
    const p2 = await api.put(`/v1/schemas/${s.id}`, root, { displayName: 'Three' });
    expect(p2.status, p2.text).toBe(200);
    expect(p2.body.schemaVersion).toBe(3);
    expect(p2.body.id).toBe(s.id);
    expect((await getSchema(s.id)).body).toMatchObject({ schemaVersion: 3, displayName: 'Three' });
  });

  it('a typeName change → 400 and changes nothing', async () => {
    const s = await createSchema();
    const before = await snapshotSchema(s.id);
    expect400(await api.put(`/v1/schemas/${s.id}`, root, { typeName: uniq('Renamed'), displayName: 'x' }));
    await expectSchemaUnchanged(s.id, before);
  });

  it('a basedOn change → 400 (immutable) and changes nothing', async () => {
    const base = await createSchema();
    const v = await createSchema({ typeName: base.typeName, basedOn: base.id }, u1);
    const other = await createSchema();
    const before = await api.get(`/v1/schemas/${v.id}`, u1);
    expect400(await api.put(`/v1/schemas/${v.id}`, u1, { basedOn: other.id }));
    expect((await api.get(`/v1/schemas/${v.id}`, u1)).body).toEqual(before.body);
  });

  it('collections are replaced in full; omitted scalars are kept', async () => {
    const s = await createSchema({
      description: 'keep me',
      indexMode: 'TEXT',
      storageProfile: 'LOW_LATENCY',
      fields: [
        { fieldId: 'a', fieldType: 'string' },
        { fieldId: 'b', fieldType: 'number' },
      ],
      lookupFields: ['a', 'b'],
      allowedSurfaces: ['record', 'document'],
      scopes: undefined,
    });
    const r = await api.put(`/v1/schemas/${s.id}`, root, {
      fields: [{ fieldId: 'c', fieldType: 'boolean' }],
      lookupFields: ['c'],
      allowedSurfaces: ['record'],
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.fields).toEqual([{ fieldId: 'c', fieldType: 'boolean' }]);
    expect(r.body.lookupFields).toEqual(['c']);
    expect(r.body.allowedSurfaces).toEqual(['record']);
    expect(r.body).toMatchObject({
      description: 'keep me',
      indexMode: 'TEXT',
      storageProfile: 'LOW_LATENCY',
      displayName: 'A type',
      typeName: s.typeName,
      active: true,
    });
    expect((await getSchema(s.id)).body).toEqual(r.body);
  });

  it(
    'capabilities: replaced in full when supplied (a partial map resets the other flag to its default); ' +
      'omitted → preserved',
    async () => {
      const s = await createSchema({ capabilities: { auditHistory: false, triggersEnabled: true } });
      expect(s.capabilities).toEqual({ auditHistory: false, triggersEnabled: true });
      const p1 = await api.put(`/v1/schemas/${s.id}`, root, { capabilities: { triggersEnabled: true } });
      expect(p1.status, p1.text).toBe(200);
      expect(p1.body.capabilities).toEqual({ auditHistory: true, triggersEnabled: true });
      const p2 = await api.put(`/v1/schemas/${s.id}`, root, { displayName: 'No capabilities given' });
      expect(p2.body.capabilities).toEqual({ auditHistory: true, triggersEnabled: true });
      const p3 = await api.put(`/v1/schemas/${s.id}`, root, { capabilities: { auditHistory: false } });
      expect(p3.body.capabilities).toEqual({ auditHistory: false, triggersEnabled: false });
      expect((await getSchema(s.id)).body.capabilities).toEqual({ auditHistory: false, triggersEnabled: false });
    },
  );

  it('expectedVersion mismatch → 409 VERSION_CONFLICT and nothing changes; the right one succeeds', async () => {
    const s = await createSchema();
    const before = await snapshotSchema(s.id);
    const r = await api.put(`/v1/schemas/${s.id}`, root, { displayName: 'Changed', expectedVersion: 7 });
    expect(r.status, r.text).toBe(409);
    expect(r.body.errorCode).toBe('VERSION_CONFLICT');
    await expectSchemaUnchanged(s.id, before);
    const ok = await api.put(`/v1/schemas/${s.id}`, root, { displayName: 'Changed', expectedVersion: 1 });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.schemaVersion).toBe(2);
  });

  it('an update breaking a definition rule → 400 and changes nothing', async () => {
    const s = await createSchema({ fields: [{ fieldId: 'a', fieldType: 'string' }] });
    const before = await snapshotSchema(s.id);
    expect400(
      await api.put(`/v1/schemas/${s.id}`, root, { lookupFields: Array.from({ length: 11 }, (_, i) => `x${i}`) }),
    );
    expect400(await api.put(`/v1/schemas/${s.id}`, root, { fields: [{ fieldId: 'userId', fieldType: 'string' }] }));
    expect400(
      await api.put(`/v1/schemas/${s.id}`, root, {
        fields: [{ fieldId: 'p', fieldType: 'string', sensitive: true, inline: true }],
      }),
    );
    expect400(await api.put(`/v1/schemas/${s.id}`, root, { fields: [{ fieldId: 'e', fieldType: 'enum' }] }));
    expect400(
      await api.put(`/v1/schemas/${s.id}`, root, {
        fields: [{ fieldId: 'r', fieldType: 'reference', targetTypeName: 'X', targetSurface: 'galaxy' }],
      }),
    );
    expect400(await api.put(`/v1/schemas/${s.id}`, root, { allowedSurfaces: [] }));
    await expectSchemaUnchanged(s.id, before);
  });

  it(
    'sortBy is set once: changing it → 400; the order of a composite lookup is fixed once live → 400; ' +
      'nothing changed',
    async () => {
      const s = await createSchema({
        fields: [
          { fieldId: 'a', fieldType: 'string' },
          { fieldId: 'b', fieldType: 'number' },
        ],
        lookupFields: [{ fieldNames: ['a', 'b'] }],
        sortBy: 'b',
      });
      const before = await snapshotSchema(s.id);
      expect400(await api.put(`/v1/schemas/${s.id}`, root, { sortBy: 'createdAt' }));
      expect400(await api.put(`/v1/schemas/${s.id}`, root, { lookupFields: [{ fieldNames: ['b', 'a'] }] }));
      await expectSchemaUnchanged(s.id, before);
      const same = await api.put(`/v1/schemas/${s.id}`, root, {
        sortBy: 'b',
        lookupFields: [{ fieldNames: ['a', 'b'] }],
      });
      expect(same.status, same.text).toBe(200);
    },
  );

  it('another owner’s variant: PUT and DELETE → 404 and nothing changes', async () => {
    const base = await createSchema();
    const v = await createSchema({ typeName: base.typeName, basedOn: base.id }, u1);
    const before = await api.get(`/v1/schemas/${v.id}`, u1);
    expect((await api.put(`/v1/schemas/${v.id}`, u2, { displayName: 'taken' })).status).toBe(404);
    expect((await api.del(`/v1/schemas/${v.id}`, u2)).status).toBe(404);
    expect((await api.get(`/v1/schemas/${v.id}`, u1)).body).toEqual(before.body);
  });

  it(
    'a user schema needs the root key: a scoped credential adding the user surface, or changing a user ' +
      'schema, gets 403 and nothing changes',
    async () => {
      const scoped = await mint(ALL);
      const s = await createSchema();
      const before = await snapshotSchema(s.id);
      expect403(await api.put(`/v1/schemas/${s.id}`, scoped, { allowedSurfaces: ['record', 'user'] }));
      await expectSchemaUnchanged(s.id, before);
      const u = await createSchema({ allowedSurfaces: ['user'] });
      const userBefore = await snapshotSchema(u.id);
      expect403(await api.put(`/v1/schemas/${u.id}`, scoped, { displayName: 'Renamed' }));
      expect403(await api.put(`/v1/schemas/${u.id}`, scoped, { allowedSurfaces: ['record'] }));
      await expectSchemaUnchanged(u.id, userBefore);
      // the root key may
      const ok = await api.put(`/v1/schemas/${s.id}`, root, { allowedSurfaces: ['record', 'user'] });
      expect(ok.status, ok.text).toBe(200);
      expect(ok.body.allowedSurfaces).toEqual(['record', 'user']);
      // a scoped credential still changes a schema without the user surface
      const other = await createSchema();
      expect((await api.put(`/v1/schemas/${other.id}`, scoped, { displayName: 'Fine' })).status).toBe(200);
    },
  );

  it('PUT on an unknown schema → 404', async () => {
    expect((await api.put(`/v1/schemas/${randomUUID()}`, root, { displayName: 'x' })).status).toBe(404);
  });
});

// ---------------------------------------------------------------------------
describe('listSchemas, versions, delete', () => {
  let ctx: string;
  const created: any[] = [];

  beforeAll(async () => {
    const c = await api.post('/v1/contexts', root, { name: uniq('schemas-list') });
    expect(c.status, c.text).toBe(201);
    ctx = c.body.id;
    const surfaces = [
      ['record'],
      ['document'],
      ['record', 'document'],
      ['entity'],
      ['record'],
      ['document'],
      ['record'],
    ];
    for (const s of surfaces) created.push(await createSchema({ allowedSurfaces: s }, root, ctx));
  });

  const listAll = async (q: string, limit: number) => {
    const seen: any[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r: Res = await call(
        'GET',
        `/v1/schemas?limit=${limit}${q}${cursor ? `&startFrom=${encodeURIComponent(cursor)}` : ''}`,
        root,
        undefined,
        ctx,
      );
      expect(r.status, r.text).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(['data', 'nextCursor']);
      expect(r.body.data.length).toBeLessThanOrEqual(limit);
      seen.push(...r.body.data);
      cursor = r.body.nextCursor;
      expect(++pages).toBeLessThan(50);
    } while (cursor !== null);
    return seen;
  };

  it('pages of 2 return every schema of the context exactly once, newest first', async () => {
    const seen = await listAll('', 2);
    expect(seen).toHaveLength(created.length);
    expect(seen.map((s) => s.id).sort()).toEqual(created.map((s) => s.id).sort());
    const times = seen.map((s) => Date.parse(s.createdAt));
    for (let i = 1; i < times.length; i++) expect(times[i]).toBeLessThanOrEqual(times[i - 1]);
  });

  it('surface filter returns only schemas allowing that surface', async () => {
    const docs = await listAll('&surface=document', 2);
    expect(docs.map((s) => s.id).sort()).toEqual(
      created
        .filter((s) => s.allowedSurfaces.includes('document'))
        .map((s) => s.id)
        .sort(),
    );
    const entity = await listAll('&surface=entity', 20);
    expect(entity.map((s) => s.id)).toEqual(
      created.filter((s) => s.allowedSurfaces.includes('entity')).map((s) => s.id),
    );
  });

  it('an unknown surface → 400; limit 101 → 400; a cursor replayed with another surface or limit → 400', async () => {
    expect400(await call('GET', '/v1/schemas?surface=galaxy', root, undefined, ctx));
    expect400(await call('GET', '/v1/schemas?limit=101', root, undefined, ctx));
    const first = await call('GET', '/v1/schemas?limit=2', root, undefined, ctx);
    const cur = encodeURIComponent(first.body.nextCursor);
    expect400(await call('GET', `/v1/schemas?limit=2&surface=record&startFrom=${cur}`, root, undefined, ctx));
    expect400(await call('GET', `/v1/schemas?limit=3&startFrom=${cur}`, root, undefined, ctx));
    expect400(await call('GET', '/v1/schemas?limit=2&startFrom=hand-built', root, undefined, ctx));
  });

  it('a credential bound to a user lists the shared bases and its own variants, not another user’s', async () => {
    const tokenFor = async (userId: string) => {
      const r = await api.post('/v1/tokens', root, {
        scope: { allowedActions: ALL, dataScope: { userId } },
        contextId: ctx,
      });
      expect(r.status, r.text).toBe(201);
      return r.body.token as string;
    };
    const t1 = await tokenFor('lu1');
    const t2 = await tokenFor('lu2');
    const base = created[0];
    const v1 = await api.post('/v1/schemas', t1, schemaBody({ typeName: base.typeName, basedOn: base.id }));
    expect(v1.status, v1.text).toBe(201);
    const v2 = await api.post('/v1/schemas', t2, schemaBody({ typeName: base.typeName, basedOn: base.id }));
    expect(v2.status, v2.text).toBe(201);
    const l1 = await api.get('/v1/schemas?limit=100', t1);
    expect(l1.status).toBe(200);
    expect(l1.body.data.map((x: any) => x.id).sort()).toEqual([...created.map((x) => x.id), v1.body.id].sort());
    const all = await listAll('', 100);
    expect(all.map((x) => x.id)).toEqual(expect.arrayContaining([v1.body.id, v2.body.id]));
    // keep the context's list as the other tests expect it
    expect((await api.del(`/v1/schemas/${v1.body.id}`, t1)).status).toBe(204);
    expect((await api.del(`/v1/schemas/${v2.body.id}`, t2)).status).toBe(204);
  });

  it('the list of another context does not include these schemas', async () => {
    const r = await api.get('/v1/schemas?limit=100', root);
    const ids = new Set(r.body.data.map((s: any) => s.id));
    for (const s of created) expect(ids.has(s.id)).toBe(false);
  });

  it('versions: one row per revision, oldest first, with the state as it was; paging by last row id', async () => {
    const s = await createSchema({ fields: [{ fieldId: 'a', fieldType: 'string' }] });
    await api.put(`/v1/schemas/${s.id}`, root, { displayName: 'v2' });
    await api.put(`/v1/schemas/${s.id}`, root, { displayName: 'v3', fields: [{ fieldId: 'b', fieldType: 'number' }] });
    const rows = await schemaVersions(s.id);
    expect(rows).toHaveLength(3);
    expect(rows.map((r) => r.version)).toEqual([1, 2, 3]);
    expect(rows.map((r) => r.state?.displayName)).toEqual(['A type', 'v2', 'v3']);
    expect(rows.map((r) => r.state?.schemaVersion)).toEqual([1, 2, 3]);
    expect(rows[0].state?.fields).toEqual([{ fieldId: 'a', fieldType: 'string' }]);
    expect(rows[2].state?.fields).toEqual([{ fieldId: 'b', fieldType: 'number' }]);
    for (const r of rows) {
      expect(Object.keys(r).sort()).toEqual([
        'actor',
        'entityId',
        'entityKind',
        'eventType',
        'id',
        'recordedAt',
        'requestId',
        'state',
        'version',
      ]);
      expect(r.entityId).toBe(s.id);
      expect(r.entityKind).toBe('schema');
    }
    const p1 = await api.get(`/v1/schemas/${s.id}/versions?limit=2`, root);
    expect(p1.body.data.map((r: any) => r.id)).toEqual(rows.slice(0, 2).map((r) => r.id));
    expect(p1.body.nextCursor).toBe(rows[1].id);
    const p2 = await api.get(`/v1/schemas/${s.id}/versions?limit=2&startFrom=${p1.body.nextCursor}`, root);
    expect(p2.body.data.map((r: any) => r.id)).toEqual([rows[2].id]);
    expect(p2.body.nextCursor).toBeNull();
  });

  it(
    'auditHistory false: a live schema answers an empty history (200), as a record does; another owner’s ' +
      'variant stays 404',
    async () => {
      const s = await createSchema({ capabilities: { auditHistory: false } });
      expect((await api.put(`/v1/schemas/${s.id}`, root, { displayName: 'Two' })).status).toBe(200);
      const v = await api.get(`/v1/schemas/${s.id}/versions`, root);
      expect(v.status, v.text).toBe(200);
      expect(v.body).toEqual({ data: [], nextCursor: null });
      const variant = await createSchema(
        { typeName: s.typeName, basedOn: s.id, capabilities: { auditHistory: false } },
        u1,
      );
      expect((await api.get(`/v1/schemas/${variant.id}/versions`, u1)).body).toEqual({ data: [], nextCursor: null });
      expect((await api.get(`/v1/schemas/${variant.id}/versions`, u2)).status).toBe(404);
    },
  );

  it('versions of an unknown schema → 404', async () => {
    expect((await api.get(`/v1/schemas/${randomUUID()}/versions`, root)).status).toBe(404);
  });

  it('delete → 204, then GET 404, PUT 404, DELETE 404, and it leaves the list', async () => {
    const s = await createSchema({}, root, ctx);
    const d = await call('DELETE', `/v1/schemas/${s.id}`, root, undefined, ctx);
    expect(d.status, d.text).toBe(204);
    expect(d.text).toBe('');
    expect((await call('GET', `/v1/schemas/${s.id}`, root, undefined, ctx)).status).toBe(404);
    expect((await call('PUT', `/v1/schemas/${s.id}`, root, { displayName: 'x' }, ctx)).status).toBe(404);
    expect((await call('DELETE', `/v1/schemas/${s.id}`, root, undefined, ctx)).status).toBe(404);
    const all = await listAll('', 100);
    expect(all.map((x) => x.id)).not.toContain(s.id);
  });

  it('GET of an unknown id → 404', async () => {
    expect((await getSchema(randomUUID())).status).toBe(404);
  });
});

// ---------------------------------------------------------------------------
describe('payload validation', () => {
  const newRecord = (typeName: string, payload: unknown, token = root) =>
    api.post('/v1/records', token, { typeName, payload });

  async function typeWith(fields: unknown[], over: Record<string, unknown> = {}) {
    return (await createSchema({ fields, ...over })).typeName as string;
  }

  it.each([
    ['string', {}, ['x', ''], [1, true, ['x'], { a: 1 }]],
    ['number', {}, [0, -3.5, 42], ['5', true, [1]]],
    ['boolean', {}, [true, false], ['true', 0, 1]],
    [
      'date',
      {},
      ['2024-05-01', '2024-05-01T10:20:30Z', '2024-05-01T10:20:30.123+02:00', 1714557600000],
      ['not a date', '2024-13-45', '01/05/2024', true, 1.5],
    ],
    ['enum', { enumValues: ['red', 'green', 3] }, ['red', 'green', 3], ['blue', 'RED', '3', 4]],
    ['array', {}, [[], [1, 'a', { b: 2 }]], [{}, 'a', 1]],
    ['object', {}, [{}, { a: { b: [1] } }], [[], 'a', 1]],
    ['reference', { targetTypeName: 'Other', targetSurface: 'record' }, ['ext-1'], [1, ['a'], '', { id: 'x' }]],
  ])('fieldType %s: accepts valid values, 400 on others', async (fieldType, extra, good, bad) => {
    const t = await typeWith([{ fieldId: 'v', fieldType, ...extra }]);
    for (const v of good) {
      const r = await newRecord(t, { v });
      expect(r.status, `${JSON.stringify(v)}: ${r.text}`).toBe(201);
    }
    for (const v of bad) {
      const r = await newRecord(t, { v });
      expect(r.status, `${JSON.stringify(v)}: ${r.text}`).toBe(400);
    }
  });

  it('reference with cardinality many takes an array of reference strings', async () => {
    const t = await typeWith([
      { fieldId: 'v', fieldType: 'reference', targetTypeName: 'Other', targetSurface: 'record', cardinality: 'many' },
    ]);
    expect((await newRecord(t, { v: ['a', 'b'] })).status).toBe(201);
    expect((await newRecord(t, { v: 'a' })).status).toBe(400);
    expect((await newRecord(t, { v: [1] })).status).toBe(400);
  });

  it('required (field flag and validation.required) is enforced on create; optional fields may be absent', async () => {
    const t = await typeWith([
      { fieldId: 'a', fieldType: 'string', required: true },
      { fieldId: 'b', fieldType: 'string', validation: { required: true } },
      { fieldId: 'c', fieldType: 'string' },
    ]);
    expect((await newRecord(t, { a: 'x', b: 'y' })).status).toBe(201);
    expect400(await newRecord(t, { b: 'y' }));
    expect400(await newRecord(t, { a: 'x' }));
    expect400(await newRecord(t, {}));
    expect400(await api.post('/v1/records', root, { typeName: t }));
  });

  it.each([
    ['minLength', 'string', { minLength: 3 }, ['abc', 'abcd'], ['ab', '']],
    ['maxLength', 'string', { maxLength: 3 }, ['abc', ''], ['abcd']],
    ['pattern', 'string', { pattern: '^[A-Z]{2}-\\d+$' }, ['AB-12'], ['ab-12', 'AB-', 'xAB-12']],
    ['email', 'string', { email: true }, ['a@example.com'], ['a@', 'example.com', 'a b@c.de']],
    [
      'url',
      'string',
      { url: true },
      ['https://example.com/x', 'http://a.b'],
      ['example.com', 'not a url', 'javascript:alert(1)'],
    ],
    ['phone', 'string', { phone: true }, ['+1 555 123 4567', '020 7946 0958'], ['call me', 'abc-def', '12']],
    ['min', 'number', { min: 10 }, [10, 11.5], [9.99, -1]],
    ['max', 'number', { max: 10 }, [10, -5], [10.01, 11]],
    ['step', 'number', { min: 1, step: 0.5 }, [1, 1.5, 3], [1.2, 2.25]],
    ['multipleOf', 'number', { multipleOf: 3 }, [0, 3, -9, 300], [1, 4, 3.3]],
    [
      'minItems',
      'array',
      { minItems: 2 },
      [
        [1, 2],
        [1, 2, 3],
      ],
      [[], [1]],
    ],
    ['maxItems', 'array', { maxItems: 2 }, [[], [1, 2]], [[1, 2, 3]]],
  ])('validation.%s', async (_, fieldType, validation, good, bad) => {
    const t = await typeWith([{ fieldId: 'v', fieldType, validation }]);
    for (const v of good) {
      const r = await newRecord(t, { v });
      expect(r.status, `${JSON.stringify(v)}: ${r.text}`).toBe(201);
    }
    for (const v of bad) {
      const r = await newRecord(t, { v });
      expect(r.status, `${JSON.stringify(v)}: ${r.text}`).toBe(400);
    }
  });

  it('a rejected payload persists nothing (the type lists no records)', async () => {
    const t = await typeWith([{ fieldId: 'v', fieldType: 'number', validation: { max: 1 } }]);
    expect400(await newRecord(t, { v: 2 }));
    const l = await api.get(`/v1/records?type=${t}`, root);
    expect(l.body.data).toEqual([]);
  });

  it('a bare schema (no fields) accepts any payload', async () => {
    const t = (await createSchema()).typeName;
    const payload = {
      s: 'x',
      n: 1.5,
      b: false,
      nil: null,
      arr: [1, 'a', [2], { c: 3 }],
      obj: { deep: { deeper: ['x'] } },
    };
    const r = await newRecord(t, payload);
    expect(r.status, r.text).toBe(201);
    expect(r.body.payload).toEqual(payload);
    expect((await api.get(`/v1/records/${r.body.id}`, root)).body.payload).toEqual(payload);
  });

  it.each(['userId', 'scopes'])('reserved name %s as a payload key → 400', async (k) => {
    const t = (await createSchema()).typeName;
    expect400(await newRecord(t, { [k]: 'x' }));
  });

  it.each([
    ['1e-200 (magnitude below 1e-130)', '1e-200'],
    ['a 40-digit number', '1234567890123456789012345678901234567890'],
    ['1e400 (infinite)', '1e400'],
    ['a number beyond int64', '9223372036854775808'],
    ['a 39-digit fraction', '0.123456789012345678901234567890123456789'],
  ])('payload number %s → 400 (also nested in arrays)', async (_, lit) => {
    const t = (await createSchema()).typeName;
    expect400(
      await api.call('POST', '/v1/records', { token: root, raw: `{"typeName":"${t}","payload":{"x":${lit}}}` }),
    );
    expect400(
      await api.call('POST', '/v1/records', {
        token: root,
        raw: `{"typeName":"${t}","payload":{"x":{"y":[1,${lit}]}}}`,
      }),
    );
    expect((await api.get(`/v1/records?type=${t}`, root)).body.data).toEqual([]);
  });

  it('numbers at the edges of the rules are accepted (38 significant digits, 1e-120)', async () => {
    const t = (await createSchema()).typeName;
    for (const lit of ['0.12345678901234567890123456789012345678', '1e-120', '0', '-0.5', '-9223372036854775000']) {
      const r = await api.call('POST', '/v1/records', {
        token: root,
        raw: `{"typeName":"${t}","payload":{"x":${lit}}}`,
      });
      expect(r.status, `${lit}: ${r.text}`).toBe(201);
    }
  });

  it(
    'the int64 bounds 9223372036854775807 and -9223372036854775808 are within the signed 64-bit range and ' +
      'accepted in a payload',
    async () => {
      const t = (await createSchema()).typeName;
      for (const lit of ['9223372036854775807', '-9223372036854775808']) {
        const r = await api.call('POST', '/v1/records', {
          token: root,
          raw: `{"typeName":"${t}","payload":{"x":${lit}}}`,
        });
        expect(r.status, `${lit}: ${r.text}`).toBe(201);
      }
    },
  );

  it('the same literals inside strings are not numbers', async () => {
    const t = (await createSchema()).typeName;
    const r = await api.call('POST', '/v1/records', {
      token: root,
      raw: `{"typeName":"${t}","payload":{"x":"1e-200","y":"1234567890123456789012345678901234567890"}}`,
    });
    expect(r.status, r.text).toBe(201);
  });

  describe('payload size and out-of-line storage', () => {
    let typeName: string;
    const fields = [
      { fieldId: 'title', fieldType: 'string', inline: true },
      { fieldId: 'code', fieldType: 'string' },
      { fieldId: 'body', fieldType: 'string' },
      { fieldId: 'extra', fieldType: 'object' },
    ];

    beforeAll(async () => {
      typeName = (await createSchema({ fields, lookupFields: ['code'] })).typeName;
    });

    it('inline fields over 224 KB → 400; the same bytes in a non-inline field are stored apart (201)', async () => {
      const big = 'x'.repeat(225 * 1024);
      expect400(await newRecord(typeName, { title: big }));
      const ok = await newRecord(typeName, { title: 'small', body: big });
      expect(ok.status, ok.text.slice(0, 300)).toBe(201);
      expect(ok.body.payloadExternalized).toBe(true);
      expect((await api.get(`/v1/records/${ok.body.id}`, root)).body.payload.body).toBe(big);
    });

    it('a small payload is not externalised', async () => {
      const r = await newRecord(typeName, { title: 't', code: 'c', body: 'b' });
      expect(r.status).toBe(201);
      expect(r.body.payloadExternalized).toBe(false);
      expect(r.body.payloadBytes).toBeGreaterThan(0);
      expect(r.body.payloadBytes).toBeLessThan(4096);
    });

    it(
      'a 5 KB payload: payloadExternalized, payloadBytes; list shows only inline + lookup fields; get and ' +
        'includePayload=true show it all',
      async () => {
        const payload = { title: 'five-kb', code: uniq('c'), body: 'y'.repeat(5 * 1024), extra: { n: 1 } };
        const bytes = Buffer.byteLength(JSON.stringify(payload));
        const r = await newRecord(typeName, payload);
        expect(r.status, r.text).toBe(201);
        expect(r.body.payloadExternalized).toBe(true);
        expect(r.body.payloadBytes).toBeGreaterThanOrEqual(5 * 1024);
        expect(r.body.payloadBytes).toBeLessThanOrEqual(bytes + 64);
        const g = await api.get(`/v1/records/${r.body.id}`, root);
        expect(g.body.payload).toEqual(payload);
        expect(g.body.payloadExternalized).toBe(true);
        expect(g.body.payloadBytes).toBe(r.body.payloadBytes);

        const list = await api.get(`/v1/records?type=${typeName}&limit=100`, root);
        const item = list.body.data.find((x: any) => x.id === r.body.id);
        expect(item.payloadExternalized).toBe(true);
        expect(item.payloadBytes).toBe(r.body.payloadBytes);
        expect(item.payload).toEqual({ title: 'five-kb', code: payload.code });

        const full = await api.get(`/v1/records?type=${typeName}&limit=100&includePayload=true`, root);
        expect(full.body.data.find((x: any) => x.id === r.body.id).payload).toEqual(payload);

        const lk = await api.get(`/v1/records/lookup?type=${typeName}&field=code&value=${payload.code}`, root);
        expect(lk.status, lk.text).toBe(200);
        expect(lk.body.data).toHaveLength(1);
        expect(lk.body.data[0].payload).toEqual({ title: 'five-kb', code: payload.code });
        expect(lk.body.data[0].payloadExternalized).toBe(true);
        const lkFull = await api.get(
          `/v1/records/lookup?type=${typeName}&field=code&value=${payload.code}&includePayload=true`,
          root,
        );
        expect(lkFull.body.data[0].payload).toEqual(payload);
      },
    );

    it('storageProfile LARGE_PAYLOAD externalises even a small payload', async () => {
      const t = (await createSchema({ fields, lookupFields: ['code'], storageProfile: 'LARGE_PAYLOAD' })).typeName;
      const payload = { title: 'tiny', code: 'c1', body: 'b', extra: { z: true } };
      const r = await newRecord(t, payload);
      expect(r.status, r.text).toBe(201);
      expect(r.body.payloadExternalized).toBe(true);
      expect(r.body.payloadBytes).toBeLessThan(4096);
      expect((await api.get(`/v1/records/${r.body.id}`, root)).body.payload).toEqual(payload);
      const list = await api.get(`/v1/records?type=${t}`, root);
      expect(list.body.data[0].payloadExternalized).toBe(true);
      expect(list.body.data[0].payload).toEqual({ title: 'tiny', code: 'c1' });
      const full = await api.get(`/v1/records?type=${t}&includePayload=true`, root);
      expect(full.body.data[0].payload).toEqual(payload);
    });
  });

  it('an inactive schema rejects new records (400); PUT active:true re-enables it', async () => {
    const s = await createSchema({ active: false });
    expect(s.active).toBe(false);
    expect400(await newRecord(s.typeName, {}));
    expect400(await api.post('/v1/records', root, { schemaId: s.id, payload: {} }));
    const p = await api.put(`/v1/schemas/${s.id}`, root, { active: true });
    expect(p.status, p.text).toBe(200);
    expect((await newRecord(s.typeName, {})).status).toBe(201);
  });
});

describe('listSchemas surface=entity', () => {
  it('lists the caller context first, then the tenant-wide home (default context), through one cursor', async () => {
    const ctx = (await api.post('/v1/contexts', root, { name: uniq('entity-ctx') })).body.id as string;
    const home = [
      await createSchema({ allowedSurfaces: ['entity'] }),
      await createSchema({ allowedSurfaces: ['entity'] }),
    ];
    const own = [
      await createSchema({ allowedSurfaces: ['entity'] }, root, ctx),
      await createSchema({ allowedSurfaces: ['entity'] }, root, ctx),
    ];
    await createSchema({ allowedSurfaces: ['record'] }, root, ctx); // not an entity schema: never listed
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r: Res = await call(
        'GET',
        `/v1/schemas?surface=entity&limit=1${cursor ? `&startFrom=${encodeURIComponent(cursor)}` : ''}`,
        root,
        undefined,
        ctx,
      );
      expect(r.status, r.text).toBe(200);
      seen.push(...r.body.data.map((s: { id: string }) => s.id));
      cursor = r.body.nextCursor;
    } while (cursor);
    const ownIds = own.map((s) => s.id).reverse(); // newest first
    expect(seen.slice(0, 2)).toEqual(ownIds);
    expect(seen).toEqual(expect.arrayContaining(home.map((s) => s.id)));
    expect(seen.indexOf(home[1].id)).toBeLessThan(seen.indexOf(home[0].id));
    expect(new Set(seen).size).toBe(seen.length);
    // Without surface=entity only the own context is listed.
    const plain = await call('GET', '/v1/schemas?limit=100', root, undefined, ctx);
    expect(plain.body.data.map((s: { id: string }) => s.id)).not.toContain(home[0].id);
  });
});
