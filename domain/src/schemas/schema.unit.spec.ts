import { describe, expect, it } from 'vitest';
import type { SchemaDefinition } from '@svc/contracts';
import { given } from '../shared/given-when-then.test-support';
import { type SchemaCommand, schemaDecider, type SchemaEvent, type SchemaState, schemaView } from './schema';

const base: SchemaDefinition = {
  typeName: 'order',
  displayName: 'Order',
  allowedSurfaces: ['record'],
  fields: [
    { fieldId: 'title', fieldType: 'string' },
    { fieldId: 'a', fieldType: 'string' },
    { fieldId: 'b', fieldType: 'string' },
  ],
  lookupFields: [{ fieldNames: ['a', 'b'] }],
};
type Create = Extract<SchemaCommand, { type: 'CreateSchema' }>;
const create = (over: Partial<Create> = {}): Create => ({
  type: 'CreateSchema',
  schemaId: 's1',
  definition: base,
  byRoot: false,
  namespaces: [],
  heldBy: null,
  sharedBase: null,
  ...over,
});
const created = (definition: SchemaDefinition = base): SchemaEvent => ({
  type: 'SchemaCreated',
  data: { schemaId: 's1', typeName: definition.typeName, definition },
});
const update = (
  body: Extract<SchemaCommand, { type: 'UpdateSchema' }>['body'],
  namespaces?: string[],
  byRoot = false,
): SchemaCommand => ({ type: 'UpdateSchema', body, byRoot, namespaces });
const variant: SchemaDefinition = { ...base, userId: 'u1', basedOn: 'base1' };

describe('schema decider: CreateSchema', () => {
  it('a shared base: SchemaCreated with the definition as given', () => {
    given(schemaDecider).when(create()).then([created()]);
  });

  it('a variant of an owner: basedOn must name the shared base of its typeName', () => {
    given(schemaDecider)
      .when(create({ definition: variant, sharedBase: 'base1' }))
      .then([created(variant)]);
    given(schemaDecider)
      .when(create({ definition: variant, sharedBase: null }))
      .thenThrows('VALIDATION_ERROR');
    given(schemaDecider)
      .when(create({ definition: { ...variant, basedOn: 'other' }, sharedBase: 'base1' }))
      .thenThrows('VALIDATION_ERROR');
    given(schemaDecider)
      .when(create({ definition: { ...variant, basedOn: undefined }, sharedBase: 'base1' }))
      .thenThrows('VALIDATION_ERROR');
  });

  it('a shared base cannot set basedOn', () => {
    given(schemaDecider)
      .when(create({ definition: { ...base, basedOn: 'x' } }))
      .thenThrows('VALIDATION_ERROR');
  });

  it('idempotent: with the typeName already held for this owner nothing is decided', () => {
    given(schemaDecider)
      .when(create({ heldBy: 's0' }))
      .then([]);
  });

  it('checks the definition before answering with the holder', () => {
    given(schemaDecider)
      .when(create({ heldBy: 's0', definition: { ...base, fields: [{ fieldId: 'userId', fieldType: 'string' }] } }))
      .thenThrows('VALIDATION_ERROR');
  });

  it('a user schema needs the root key (FORBIDDEN otherwise)', () => {
    const user: SchemaDefinition = { ...base, allowedSurfaces: ['user'], lookupFields: [] };
    given(schemaDecider)
      .when(create({ definition: user }))
      .thenThrows('FORBIDDEN');
    given(schemaDecider)
      .when(create({ definition: { ...user, allowedSurfaces: ['record', 'user'] } }))
      .thenThrows('FORBIDDEN');
    given(schemaDecider)
      .when(create({ definition: user, byRoot: true }))
      .then([created(user)]);
  });

  it(
    'refuses definitions the request shape cannot catch: reserved or repeated fields, unknown lookups, ' +
      'unregistered reference targets',
    () => {
      const bad: SchemaDefinition[] = [
        { ...base, fields: [{ fieldId: 'scopes', fieldType: 'string' }], lookupFields: [] },
        {
          ...base,
          fields: [
            { fieldId: 'x', fieldType: 'string' },
            { fieldId: 'x', fieldType: 'number' },
          ],
          lookupFields: [],
        },
        { ...base, lookupFields: ['nope'] },
        {
          ...base,
          fields: [{ fieldId: 'r', fieldType: 'reference', targetTypeName: 't', targetSurface: 'crm' }],
          lookupFields: [],
        },
        { ...base, fields: [{ fieldId: 's', fieldType: 'string', sensitive: true, inline: true }], lookupFields: [] },
        { ...base, sortBy: 'nope' },
      ];
      for (const definition of bad) given(schemaDecider).when(create({ definition })).thenThrows('VALIDATION_ERROR');
      const ref: SchemaDefinition = {
        ...base,
        fields: [{ fieldId: 'r', fieldType: 'reference', targetTypeName: 't', targetSurface: 'crm' }],
        lookupFields: [],
      };
      given(schemaDecider)
        .when(create({ definition: ref, namespaces: ['crm'] }))
        .then([created(ref)]);
    },
  );

  it('never reuses an id', () => {
    given(schemaDecider, [created()]).when(create()).thenThrows('INTERNAL');
  });

  it('the state after a create: version 1, tenant, context and times from the metadata', () => {
    expect(given(schemaDecider).when(create()).state()).toMatchObject({
      exists: true,
      id: 's1',
      tenantId: 't1',
      contextId: 'c1',
      schemaVersion: 1,
      createdAt: '2026-01-01T00:00:00.000Z',
    });
  });
});

describe('schema decider: UpdateSchema', () => {
  it('PUT semantics: given values replace, omitted ones are kept; schemaVersion + 1', () => {
    const next = { ...base, displayName: 'Orders', active: false };
    given(schemaDecider, [created()])
      .when(update({ displayName: 'Orders', active: false }))
      .then([{ type: 'SchemaUpdated', data: { schemaId: 's1', schemaVersion: 2, definition: next } }]);
    const s = given(schemaDecider, [created()])
      .when(update({ displayName: 'Orders' }))
      .state() as Extract<SchemaState, { exists: true }>;
    expect(s.schemaVersion).toBe(2);
  });

  it('typeName, basedOn and sortBy may be repeated but not changed', () => {
    expect(
      given(schemaDecider, [created()])
        .when(update({ typeName: 'order' }))
        .events(),
    ).toHaveLength(1);
    given(schemaDecider, [created()])
      .when(update({ typeName: 'other' }))
      .thenThrows('VALIDATION_ERROR');
    given(schemaDecider, [created()])
      .when(update({ basedOn: 'x' }))
      .thenThrows('VALIDATION_ERROR');
    given(schemaDecider, [created()])
      .when(update({ sortBy: 'title' }))
      .thenThrows('VALIDATION_ERROR');
  });

  it('the order of a live composite lookup is fixed', () => {
    given(schemaDecider, [created()])
      .when(update({ lookupFields: [{ fieldNames: ['b', 'a'] }] }))
      .thenThrows('VALIDATION_ERROR');
    expect(
      given(schemaDecider, [created()])
        .when(update({ lookupFields: [{ fieldNames: ['a', 'b'] }, 'title'] }))
        .events(),
    ).toHaveLength(1);
  });

  it('the definition after the update is validated (registered namespaces given)', () => {
    const fields = [{ fieldId: 'r', fieldType: 'reference' as const, targetTypeName: 't', targetSurface: 'crm' }];
    given(schemaDecider, [created()])
      .when(update({ fields, lookupFields: [] }))
      .thenThrows('VALIDATION_ERROR');
    expect(
      given(schemaDecider, [created()])
        .when(update({ fields, lookupFields: [] }, ['crm']))
        .events(),
    ).toHaveLength(1);
  });

  it('expectedVersion: the current schemaVersion passes, another is VERSION_CONFLICT', () => {
    expect(
      given(schemaDecider, [created()])
        .when(update({ displayName: 'X', expectedVersion: 1 }))
        .events(),
    ).toHaveLength(1);
    given(schemaDecider, [created()])
      .when(update({ displayName: 'X', expectedVersion: 2 }))
      .thenThrows('VERSION_CONFLICT');
  });

  it(
    'a user schema needs the root key: adding the user surface, or changing a user schema, is FORBIDDEN ' + 'otherwise',
    () => {
      const user: SchemaDefinition = { ...base, allowedSurfaces: ['user'], lookupFields: [] };
      given(schemaDecider, [created()])
        .when(update({ allowedSurfaces: ['record', 'user'], lookupFields: [] }))
        .thenThrows('FORBIDDEN');
      given(schemaDecider, [created(user)])
        .when(update({ displayName: 'People' }))
        .thenThrows('FORBIDDEN');
      given(schemaDecider, [created(user)])
        .when(update({ allowedSurfaces: ['record'] }))
        .thenThrows('FORBIDDEN');
      expect(
        given(schemaDecider, [created()])
          .when(update({ allowedSurfaces: ['record', 'user'], lookupFields: [] }, undefined, true))
          .events(),
      ).toHaveLength(1);
      expect(
        given(schemaDecider, [created(user)])
          .when(update({ displayName: 'People' }, undefined, true))
          .events(),
      ).toHaveLength(1);
      // other surfaces need no root key
      expect(
        given(schemaDecider, [created()])
          .when(update({ allowedSurfaces: ['record', 'entity'], lookupFields: [] }))
          .events(),
      ).toHaveLength(1);
    },
  );

  it('a missing or deleted schema is NOT_FOUND', () => {
    given(schemaDecider)
      .when(update({ displayName: 'X' }))
      .thenThrows('NOT_FOUND');
    given(schemaDecider, [created(), { type: 'SchemaDeleted', data: { schemaId: 's1', typeName: 'order' } }])
      .when(update({ displayName: 'X' }))
      .thenThrows('NOT_FOUND');
  });
});

describe('schema decider: DeleteSchema', () => {
  it('decides SchemaDeleted with the typeName it frees', () => {
    given(schemaDecider, [created()])
      .when({ type: 'DeleteSchema' })
      .then([{ type: 'SchemaDeleted', data: { schemaId: 's1', typeName: 'order' } }]);
    expect(given(schemaDecider, [created()]).when({ type: 'DeleteSchema' }).state()).toEqual({
      exists: false,
      deleted: true,
    });
  });

  it('a missing or deleted schema is NOT_FOUND', () => {
    given(schemaDecider).when({ type: 'DeleteSchema' }).thenThrows('NOT_FOUND');
    given(schemaDecider, [created(), { type: 'SchemaDeleted', data: { schemaId: 's1', typeName: 'order' } }])
      .when({ type: 'DeleteSchema' })
      .thenThrows('NOT_FOUND');
  });
});

describe('schemaView', () => {
  const live = (definition: SchemaDefinition) => ({
    exists: true as const,
    id: 's1',
    tenantId: 't1',
    contextId: 'c1',
    definition,
    schemaVersion: 1,
    createdAt: 'c',
    updatedAt: 'u',
  });

  it(
    'fills the spec defaults: active, capabilities, storageProfile STANDARD; reference fields targetField ' +
      'externalId and cardinality one',
    () => {
      const def: SchemaDefinition = {
        ...base,
        fields: [
          { fieldId: 'title', fieldType: 'string' },
          { fieldId: 'r', fieldType: 'reference', targetTypeName: 't', targetSurface: 'record' },
        ],
      };
      expect(schemaView(live(def))).toEqual({
        id: 's1',
        ...def,
        active: true,
        capabilities: { auditHistory: true, triggersEnabled: false },
        storageProfile: 'STANDARD',
        schemaVersion: 1,
        createdAt: 'c',
        updatedAt: 'u',
        fields: [
          { fieldId: 'title', fieldType: 'string' },
          {
            fieldId: 'r',
            fieldType: 'reference',
            targetTypeName: 't',
            targetSurface: 'record',
            targetField: 'externalId',
            cardinality: 'one',
          },
        ],
      });
    },
  );

  it('keeps what the definition sets, adds no fields to a bare schema, and leaves the definition as written', () => {
    const ref = {
      fieldId: 'r',
      fieldType: 'reference' as const,
      targetTypeName: 't',
      targetSurface: 'record',
      targetField: 'code',
      cardinality: 'many' as const,
    };
    const def: SchemaDefinition = { ...base, storageProfile: 'LARGE_PAYLOAD', fields: [ref] };
    const copy = structuredClone(def);
    expect(schemaView(live(def))).toMatchObject({ storageProfile: 'LARGE_PAYLOAD', fields: [ref] });
    expect(def).toEqual(copy);
    const { fields: _, ...bare } = base;
    expect(schemaView(live(bare))).not.toHaveProperty('fields');
    expect(schemaView(live(bare)).storageProfile).toBe('STANDARD');
  });
});
