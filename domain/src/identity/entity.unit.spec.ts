import { describe, expect, it } from 'vitest';
import { InternalError, type Principal, type SchemaDefinition } from '@svc/contracts';
import { given, TEST_METADATA } from '../shared/given-when-then.test-support';
import { fakeSealing } from './fake-sealing';
import {
  canSeeEntity,
  type EntityCommand,
  entityDecider,
  type EntityEvent,
  entityView,
  type LiveEntity,
} from './entity';

const entities = entityDecider(fakeSealing);
const def = {
  typeName: 'org',
  displayName: 'Org',
  allowedSurfaces: ['entity'],
  fields: [
    { fieldId: 'tier', fieldType: 'string', required: true },
    { fieldId: 'tax', fieldType: 'string', sensitive: true },
  ],
} as SchemaDefinition;
const actor = (over: Partial<Principal> = {}): Principal => ({
  credentialId: 'k1',
  kind: 'scoped',
  accountId: 'a1',
  tenantId: TEST_METADATA.tenantId,
  environment: 'live',
  contextId: TEST_METADATA.contextId,
  crossContext: false,
  allowedActions: ['*'],
  dataScope: null,
  userId: null,
  wireVersionPin: null,
  ...over,
});

const created: EntityEvent = {
  type: 'EntityCreated',
  data: {
    entityId: 'e1',
    namespace: 'org',
    key: 'acme',
    payload: { tier: 'gold', tax: fakeSealing.sealed('t') },
    schemaId: 's1',
  },
};
const deleted: EntityEvent = { type: 'EntityDeleted', data: { entityId: 'e1', namespace: 'org', key: 'acme' } };
const create = (over: Partial<Extract<EntityCommand, { type: 'CreateEntity' }>> = {}): EntityCommand => ({
  type: 'CreateEntity',
  entityId: 'e1',
  namespace: 'org',
  key: 'acme',
  payload: { tier: 'gold', tax: 't' },
  schemaId: 's1',
  definition: def,
  namespaces: ['org', 'client'],
  ...over,
});
const change = (kind: 'put' | 'patch', body: Record<string, unknown>, by = actor()): EntityCommand => ({
  type: 'ChangeEntity',
  actor: by,
  kind,
  body,
  definition: def,
});

describe('CreateEntity', () => {
  it('stores the payload with its sensitive values sealed', () => {
    given(entities).when(create()).then([created]);
    given(entities)
      .when(create({ payload: undefined, schemaId: undefined, definition: undefined }))
      .then([
        { type: 'EntityCreated', data: { entityId: 'e1', namespace: 'org', key: 'acme', payload: {}, schemaId: null } },
      ]);
  });

  it('needs a known namespace and a valid payload', () => {
    given(entities)
      .when(create({ namespace: 'team' }))
      .thenThrows('VALIDATION_ERROR');
    given(entities)
      .when(create({ payload: {} }))
      .thenThrows('VALIDATION_ERROR');
  });

  it('never reuses an id', () => {
    expect(() => given(entities, [created, deleted]).when(create()).events()).toThrow(InternalError);
  });
});

describe('ChangeEntity', () => {
  it('PATCH merges into the unsealed payload; PUT replaces it', () => {
    given(entities, [created])
      .when(change('patch', { payload: { tier: 'silver' }, expectedVersion: 1 }))
      .then([
        {
          type: 'EntityUpdated',
          data: { entityId: 'e1', payload: { tier: 'silver', tax: fakeSealing.sealed('t') }, change: 'patch' },
        },
      ]);
    given(entities, [created])
      .when(change('put', { payload: { tier: 'x' }, namespace: 'org', key: 'acme' }))
      .then([{ type: 'EntityUpdated', data: { entityId: 'e1', payload: { tier: 'x' }, change: 'put' } }]);
  });

  it('counts versions and guards them', () => {
    expect(
      given(entities, [created])
        .when(change('patch', { payload: { tier: 'a' } }))
        .state(),
    ).toMatchObject({ version: 2, payload: { tier: 'a' } });
    given(entities, [created])
      .when(change('put', { payload: { tier: 'a' }, expectedVersion: 2 }))
      .thenThrows('VERSION_CONFLICT');
  });

  it('a missing, deleted or out-of-scope entity is not found', () => {
    given(entities).when(change('put', {})).thenThrows('NOT_FOUND');
    given(entities, [created, deleted]).when(change('put', {})).thenThrows('NOT_FOUND');
    given(entities, [created])
      .when(change('put', {}, actor({ dataScope: { scopes: ['org:other'] } })))
      .thenThrows('NOT_FOUND');
  });

  it('refuses changes of namespace, key or schema, unpatchable keys and an invalid payload', () => {
    for (const body of [{ namespace: 'client' }, { key: 'k' }, { schemaId: 's2' }])
      given(entities, [created])
        .when(change('put', { payload: { tier: 'a' }, ...body }))
        .thenThrows('VALIDATION_ERROR');
    for (const body of [{ key: 'acme' }, { other: 1 }, { payload: null }])
      given(entities, [created]).when(change('patch', body)).thenThrows('VALIDATION_ERROR');
    given(entities, [created])
      .when(change('put', { payload: {} }))
      .thenThrows('VALIDATION_ERROR');
  });
});

describe('DeleteEntity', () => {
  it('deletes an entity (namespace and key in the event, for its reservation)', () => {
    given(entities, [created]).when({ type: 'DeleteEntity', actor: actor(), expectedVersion: 1 }).then([deleted]);
  });

  it('refuses a missing or out-of-scope entity and a stale version', () => {
    given(entities).when({ type: 'DeleteEntity', actor: actor() }).thenThrows('NOT_FOUND');
    given(entities, [created])
      .when({ type: 'DeleteEntity', actor: actor({ contextId: 'c2' }) })
      .thenThrows('NOT_FOUND');
    given(entities, [created])
      .when({ type: 'DeleteEntity', actor: actor(), expectedVersion: 3 })
      .thenThrows('VERSION_CONFLICT');
  });
});

describe('visibility and views', () => {
  const e = given(entities, [created]).state() as LiveEntity;

  it('is visible to scope-limited credentials naming it, whatever their bound user', () => {
    expect(canSeeEntity(actor(), e)).toBe(true);
    expect(canSeeEntity(actor({ dataScope: { scopes: ['org:acme'] } }), e)).toBe(true);
    expect(canSeeEntity(actor({ dataScope: { scopes: ['org:other'] } }), e)).toBe(false);
    expect(canSeeEntity(actor({ userId: 'someone' }), e)).toBe(true);
    expect(canSeeEntity(actor({ contextId: 'c2' }), e)).toBe(false);
  });

  it('masks sensitive values', () => {
    expect(entityView(e, def)).toEqual({
      id: 'e1',
      namespace: 'org',
      key: 'acme',
      payload: { tier: 'gold', tax: '********' },
      schemaId: 's1',
      version: 1,
    });
  });
});
