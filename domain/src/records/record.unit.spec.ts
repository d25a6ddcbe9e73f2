import { describe, expect, it } from 'vitest';
import type { SchemaDefinition } from '@svc/contracts';
import { given, testSealing } from '../shared/given-when-then.test-support';
import { type LiveRecord, type RecordCommand, recordDecider, type RecordEvent, type RecordSchema } from './record';

const decider = recordDecider(testSealing);

const definition: SchemaDefinition = {
  typeName: 'order',
  displayName: 'Order',
  allowedSurfaces: ['record'],
  fields: [
    { fieldId: 'title', fieldType: 'string', required: true, searchable: true },
    { fieldId: 'qty', fieldType: 'number', validation: { min: 0 } },
    { fieldId: 'ssn', fieldType: 'string', sensitive: true },
  ],
};
const schema: RecordSchema = { schemaId: 's1', schemaVersion: 1, definition };

const create = (
  over: Partial<Extract<RecordCommand, { type: 'CreateRecord' }>> = {},
): Extract<RecordCommand, { type: 'CreateRecord' }> => ({
  type: 'CreateRecord',
  recordId: 'r1',
  tenantId: 't1',
  contextId: 'c1',
  schema,
  payload: { title: 'A', qty: 1 },
  userId: null,
  scopes: [],
  ...over,
});
const created = (
  payload: Record<string, unknown> = { title: 'A', qty: 1 },
  over: Partial<Extract<RecordEvent, { type: 'RecordCreated' }>['data']> = {},
): RecordEvent => ({
  type: 'RecordCreated',
  data: {
    recordId: 'r1',
    schemaId: 's1',
    schemaVersion: 1,
    typeName: 'order',
    payload,
    status: 'ACTIVE',
    folderId: null,
    userId: null,
    scopes: [],
    externalId: null,
    indexMode: 'HYBRID',
    ...over,
  },
});
const updated = (
  payload: Record<string, unknown>,
  change: 'put' | 'patch',
  over: Partial<Extract<RecordEvent, { type: 'RecordUpdated' }>['data']> = {},
): RecordEvent => ({
  type: 'RecordUpdated',
  data: {
    recordId: 'r1',
    schemaVersion: 1,
    payload,
    status: 'ACTIVE',
    folderId: null,
    userId: null,
    scopes: [],
    change,
    ...over,
  },
});
const change = (
  kind: 'put' | 'patch',
  body: Record<string, unknown>,
  over: Partial<Extract<RecordCommand, { type: 'ChangeRecord' }>> = {},
): RecordCommand => ({ type: 'ChangeRecord', kind, body, schema, ...over });
const deleted: RecordEvent = { type: 'RecordDeleted', data: { recordId: 'r1', typeName: 'order', externalId: null } };

describe('record decider: CreateRecord', () => {
  it('decides RecordCreated: status ACTIVE, no folder, index mode HYBRID when a field is searchable', () => {
    given(decider).when(create()).then([created()]);
  });

  it('carries status, folder, ownership, externalId and the requested index mode', () => {
    given(decider)
      .when(
        create({ status: 'DRAFT', folderId: 'f1', userId: 'u1', scopes: ['a'], externalId: 'x1', indexMode: 'TEXT' }),
      )
      .then([
        created(undefined, {
          status: 'DRAFT',
          folderId: 'f1',
          userId: 'u1',
          scopes: ['a'],
          externalId: 'x1',
          indexMode: 'TEXT',
        }),
      ]);
  });

  it('index mode: the schema default, else NONE when nothing is searchable', () => {
    const noSearch: RecordSchema = {
      ...schema,
      definition: { ...definition, fields: [{ fieldId: 'title', fieldType: 'string' }] },
    };
    expect(
      given(decider)
        .when(create({ schema: noSearch }))
        .events()[0].data,
    ).toMatchObject({ indexMode: 'NONE' });
    const withDefault: RecordSchema = { ...schema, definition: { ...definition, indexMode: 'SEMANTIC' } };
    expect(
      given(decider)
        .when(create({ schema: withDefault }))
        .events()[0].data,
    ).toMatchObject({ indexMode: 'SEMANTIC' });
  });

  it('seals sensitive values inside the decision and adds their blind index (scoped to tenant, context, type)', () => {
    given(decider)
      .when(create({ payload: { title: 'A', ssn: '123' } }))
      .then([
        created(
          { title: 'A', ssn: { $sealed: 'sealed:"123"' } },
          { blindIndex: { ssn: 'blind:t1/c1/order/ssn="123"' } },
        ),
      ]);
  });

  it('refuses an invalid payload: a missing required field, a wrong type, a broken rule, a reserved key', () => {
    given(decider)
      .when(create({ payload: { qty: 1 } }))
      .thenThrows('VALIDATION_ERROR');
    given(decider)
      .when(create({ payload: { title: 5 } }))
      .thenThrows('VALIDATION_ERROR');
    given(decider)
      .when(create({ payload: { title: 'A', qty: -1 } }))
      .thenThrows('VALIDATION_ERROR');
    given(decider)
      .when(create({ payload: { title: 'A', userId: 'u' } }))
      .thenThrows('VALIDATION_ERROR');
  });

  it('refuses a payload over 1 MiB (413)', () => {
    given(decider)
      .when(create({ payload: { title: 'x'.repeat(1024 * 1024 + 1) } }))
      .thenThrows('PAYLOAD_TOO_LARGE');
  });

  it('refuses an inactive schema and a schema without the record surface', () => {
    given(decider)
      .when(create({ schema: { ...schema, definition: { ...definition, active: false } } }))
      .thenThrows('VALIDATION_ERROR');
    given(decider)
      .when(create({ schema: { ...schema, definition: { ...definition, allowedSurfaces: ['document'] } } }))
      .thenThrows('VALIDATION_ERROR');
  });

  it('never reuses an id (a live or deleted record): an internal error, not a caller error', () => {
    given(decider, [created()]).when(create()).thenThrows('INTERNAL');
    given(decider, [created(), deleted]).when(create()).thenThrows('INTERNAL');
  });

  it('the state after a create is version 1 with tenant, context, creator and times from the metadata', () => {
    const s = given(decider).when(create()).state() as LiveRecord;
    expect(s).toMatchObject({
      exists: true,
      id: 'r1',
      tenantId: 't1',
      contextId: 'c1',
      createdBy: 'k1',
      version: 1,
      createdAt: '2026-01-01T00:00:00.000Z',
    });
  });
});

describe('record decider: ChangeRecord', () => {
  it('PUT replaces the payload in full and keeps what the body leaves out', () => {
    given(decider, [created(undefined, { status: 'DRAFT', folderId: 'f1' })])
      .when(change('put', { payload: { title: 'B' } }))
      .then([updated({ title: 'B' }, 'put', { status: 'DRAFT', folderId: 'f1' })]);
  });

  it('PATCH merges per RFC 7386 (null removes a key) and changes status, folder and ownership', () => {
    given(decider, [created({ title: 'A', qty: 1 })])
      .when(
        change(
          'patch',
          { payload: { qty: null, title: 'C' }, status: 'DONE', folderId: 'f2' },
          { userId: 'u1', scopes: ['s'] },
        ),
      )
      .then([updated({ title: 'C' }, 'patch', { status: 'DONE', folderId: 'f2', userId: 'u1', scopes: ['s'] })]);
  });

  it('PATCH without payload keeps the payload; sensitive values are unsealed to merge and sealed again', () => {
    const history = [
      created({ title: 'A', ssn: { $sealed: 'sealed:"1"' } }, { blindIndex: { ssn: 'blind:t1/c1/order/ssn="1"' } }),
    ];
    given(decider, history)
      .when(change('patch', { status: 'X' }))
      .then([
        updated({ title: 'A', ssn: { $sealed: 'sealed:"1"' } }, 'patch', {
          status: 'X',
          blindIndex: { ssn: 'blind:t1/c1/order/ssn="1"' },
        }),
      ]);
    given(decider, history)
      .when(change('patch', { payload: { ssn: '2' } }))
      .then([
        updated({ title: 'A', ssn: { $sealed: 'sealed:"2"' } }, 'patch', {
          blindIndex: { ssn: 'blind:t1/c1/order/ssn="2"' },
        }),
      ]);
  });

  it('expectedVersion: the current version passes, another is VERSION_CONFLICT', () => {
    expect(
      given(decider, [created()])
        .when(change('put', { payload: { title: 'B' }, expectedVersion: 1 }))
        .events(),
    ).toHaveLength(1);
    given(decider, [created()])
      .when(change('put', { payload: { title: 'B' }, expectedVersion: 2 }))
      .thenThrows('VERSION_CONFLICT');
    given(decider, [created(), updated({ title: 'B' }, 'put')])
      .when(change('patch', { status: 'X', expectedVersion: 1 }))
      .thenThrows('VERSION_CONFLICT');
  });

  it('PATCH refuses immutable keys, unknown keys, nulls and a non-object payload', () => {
    for (const body of [
      { externalId: 'x' },
      { typeName: 'y' },
      { schemaId: 's2' },
      { indexMode: 'TEXT' },
      { nope: 1 },
      { status: null },
      { payload: [1] },
    ])
      given(decider, [created()]).when(change('patch', body)).thenThrows('VALIDATION_ERROR');
  });

  it('PUT refuses a different externalId or indexMode (the same values pass)', () => {
    given(decider, [created(undefined, { externalId: 'x1' })])
      .when(change('put', { payload: { title: 'A' }, externalId: 'x2' }))
      .thenThrows('VALIDATION_ERROR');
    given(decider, [created()])
      .when(change('put', { payload: { title: 'A' }, indexMode: 'TEXT' }))
      .thenThrows('VALIDATION_ERROR');
    expect(
      given(decider, [created(undefined, { externalId: 'x1' })])
        .when(change('put', { payload: { title: 'A' }, externalId: 'x1', indexMode: 'HYBRID' }))
        .events(),
    ).toHaveLength(1);
  });

  it('refuses clearing the folder, more than 2 scopes, and a payload the schema rejects', () => {
    given(decider, [created()])
      .when(change('patch', { folderId: '' }))
      .thenThrows('VALIDATION_ERROR');
    given(decider, [created()])
      .when(change('put', { payload: { title: 'A' }, folderId: null }))
      .thenThrows('VALIDATION_ERROR');
    given(decider, [created()])
      .when(change('patch', { scopes: ['a', 'b', 'c'] }))
      .thenThrows('VALIDATION_ERROR');
    given(decider, [created()])
      .when(change('put', { payload: { title: 'A', qty: -1 } }))
      .thenThrows('VALIDATION_ERROR');
    given(decider, [created()])
      .when(change('patch', { payload: { qty: 'many' } }))
      .thenThrows('VALIDATION_ERROR');
    given(decider, [created()])
      .when(change('patch', { payload: { title: 'x'.repeat(1024 * 1024 + 1) } }))
      .thenThrows('PAYLOAD_TOO_LARGE');
  });

  it(
    'required is enforced on create only: a PUT without a required field, or a PATCH null deleting it, is ' +
      'accepted',
    () => {
      given(decider, [created()])
        .when(change('put', { payload: { qty: 1 } }))
        .then([updated({ qty: 1 }, 'put')]);
      given(decider, [created()])
        .when(change('patch', { payload: { title: null } }))
        .then([updated({ qty: 1 }, 'patch')]);
    },
  );

  it(
    'validates against the schema version given (the record takes it): its rules for the keys present, not ' +
      'a field it newly requires',
    () => {
      const v2: RecordSchema = {
        schemaId: 's1',
        schemaVersion: 2,
        definition: {
          ...definition,
          fields: [
            ...definition.fields!,
            { fieldId: 'note', fieldType: 'string', required: true, validation: { minLength: 2 } },
          ],
        },
      };
      given(decider, [created()])
        .when(change('patch', { status: 'X' }, { schema: v2 }))
        .then([updated({ title: 'A', qty: 1 }, 'patch', { status: 'X', schemaVersion: 2 })]);
      given(decider, [created()])
        .when(change('patch', { payload: { note: 'n' } }, { schema: v2 }))
        .thenThrows('VALIDATION_ERROR');
      given(decider, [created()])
        .when(change('patch', { payload: { note: 'nn' } }, { schema: v2 }))
        .then([updated({ title: 'A', qty: 1, note: 'nn' }, 'patch', { schemaVersion: 2 })]);
    },
  );

  it('a missing or deleted record is NOT_FOUND', () => {
    given(decider)
      .when(change('put', { payload: { title: 'A' } }))
      .thenThrows('NOT_FOUND');
    given(decider, [created(), deleted])
      .when(change('put', { payload: { title: 'A' } }))
      .thenThrows('NOT_FOUND');
  });

  it('each change is one version; index outcomes are not', () => {
    const s = given(decider, [
      created(),
      { type: 'RecordIndexed', data: { recordId: 'r1', status: 'INDEXED', forRevision: 0 } },
      { type: 'RecordIndexFailed', data: { recordId: 'r1', code: 'INTERNAL', message: 'm', forRevision: 0 } },
    ])
      .when(change('patch', { status: 'X' }))
      .state() as LiveRecord;
    expect(s.version).toBe(2);
    expect(s.status).toBe('X');
  });
});

describe('record decider: DeleteRecord', () => {
  it('decides the tombstone (with the externalId it frees)', () => {
    given(decider, [created(undefined, { externalId: 'x1' })])
      .when({ type: 'DeleteRecord' })
      .then([{ type: 'RecordDeleted', data: { recordId: 'r1', typeName: 'order', externalId: 'x1' } }]);
    expect(given(decider, [created()]).when({ type: 'DeleteRecord' }).state()).toEqual({
      exists: false,
      deleted: true,
    });
  });

  it('expectedVersion: the current version passes, another is VERSION_CONFLICT', () => {
    expect(given(decider, [created()]).when({ type: 'DeleteRecord', expectedVersion: 1 }).events()).toEqual([deleted]);
    given(decider, [created()]).when({ type: 'DeleteRecord', expectedVersion: 3 }).thenThrows('VERSION_CONFLICT');
  });

  it('a missing or deleted record is NOT_FOUND', () => {
    given(decider).when({ type: 'DeleteRecord' }).thenThrows('NOT_FOUND');
    given(decider, [created(), deleted]).when({ type: 'DeleteRecord' }).thenThrows('NOT_FOUND');
  });
});
