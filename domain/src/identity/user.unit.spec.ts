import { describe, expect, it } from 'vitest';
import { InternalError, type Principal, type SchemaDefinition } from '@svc/contracts';
import { given, TEST_METADATA } from '../shared/given-when-then.test-support';
import { fakeSealing } from './fake-sealing';
import { emailKey, type LiveUser, type UserCommand, userDecider, type UserEvent, userView } from './user';

const users = userDecider(fakeSealing);
const def = {
  typeName: 'person',
  displayName: 'Person',
  allowedSurfaces: ['user'],
  fields: [
    { fieldId: 'age', fieldType: 'number', required: true },
    { fieldId: 'ssn', fieldType: 'string', sensitive: true },
  ],
} as SchemaDefinition;
const actor = (over: Partial<Principal> = {}): Principal => ({
  credentialId: 'k1',
  kind: 'root',
  accountId: 'a1',
  tenantId: TEST_METADATA.tenantId,
  environment: 'live',
  contextId: TEST_METADATA.contextId,
  crossContext: true,
  allowedActions: ['*'],
  dataScope: null,
  userId: null,
  wireVersionPin: null,
  ...over,
});

const created: UserEvent = {
  type: 'UserCreated',
  data: {
    userId: 'u1',
    email: 'A@x.io',
    displayName: null,
    payload: { age: 3, ssn: fakeSealing.sealed('s') },
    schemaId: 's1',
    scopes: ['org:a'],
  },
};
const bare: UserEvent = {
  type: 'UserCreated',
  data: { userId: 'u2', email: null, displayName: 'Bo', payload: { n: 1 }, schemaId: null, scopes: [] },
};
const deleted: UserEvent = { type: 'UserDeleted', data: { userId: 'u1', email: 'A@x.io' } };
const updated = (over: Partial<Extract<UserEvent, { type: 'UserUpdated' }>['data']>): UserEvent => ({
  type: 'UserUpdated',
  data: {
    userId: 'u1',
    email: 'A@x.io',
    displayName: null,
    payload: { age: 3, ssn: fakeSealing.sealed('s') },
    scopes: ['org:a'],
    change: 'patch',
    ...over,
  },
});
/** `definition`: the bound schema's (null: a user bound to none). */
const change = (
  kind: 'put' | 'patch',
  body: Record<string, unknown>,
  by = actor(),
  definition: SchemaDefinition | null = def,
): UserCommand => ({ type: 'ChangeUser', actor: by, kind, body, definition: definition ?? undefined });

describe('CreateUser', () => {
  it('stores the payload with its sensitive values sealed', () => {
    given(users)
      .when({
        type: 'CreateUser',
        userId: 'u1',
        email: 'A@x.io',
        payload: { age: 3, ssn: 's' },
        schemaId: 's1',
        definition: def,
        scopes: ['org:a'],
      })
      .then([created]);
    given(users)
      .when({ type: 'CreateUser', userId: 'u2', displayName: 'Bo', payload: { n: 1 }, scopes: [] })
      .then([bare]);
  });

  it('validates the payload against the bound schema, or the bare rules', () => {
    given(users)
      .when({ type: 'CreateUser', userId: 'u1', payload: {}, definition: def, scopes: [] })
      .thenThrows('VALIDATION_ERROR');
    given(users)
      .when({ type: 'CreateUser', userId: 'u1', payload: { n: Number.NaN }, scopes: [] })
      .thenThrows('VALIDATION_ERROR');
  });

  it('never reuses an id', () => {
    expect(() => given(users, [created]).when({ type: 'CreateUser', userId: 'u1', scopes: [] }).events()).toThrow(
      InternalError,
    );
  });
});

describe('ChangeUser', () => {
  it('PATCH merges into the unsealed payload and seals it again', () => {
    given(users, [created])
      .when(change('patch', { payload: { age: 4 }, displayName: 'A' }))
      .then([updated({ payload: { age: 4, ssn: fakeSealing.sealed('s') }, displayName: 'A' })]);
  });

  it('PUT replaces email, displayName and payload', () => {
    given(users, [created])
      .when(change('put', { payload: { age: 5 } }))
      .then([updated({ email: null, payload: { age: 5 }, change: 'put' })]);
  });

  it('scopes change within the credential scopes only', () => {
    given(users, [bare])
      .when(change('patch', { scopes: ['org:b'] }, actor(), null))
      .then([
        {
          type: 'UserUpdated',
          data: { userId: 'u2', email: null, displayName: 'Bo', payload: { n: 1 }, scopes: ['org:b'], change: 'patch' },
        },
      ]);
    given(users, [created])
      .when(change('patch', { scopes: ['org:b'] }, actor({ dataScope: { scopes: ['org:a'] } })))
      .thenThrows('FORBIDDEN');
  });

  it('counts versions', () => {
    expect(
      given(users, [created])
        .when(change('patch', { displayName: 'x' }))
        .state(),
    ).toMatchObject({ version: 2, displayName: 'x' });
  });

  it('a missing, deleted or unreachable user is not found', () => {
    given(users).when(change('put', {})).thenThrows('NOT_FOUND');
    given(users, [created, deleted]).when(change('put', {})).thenThrows('NOT_FOUND');
    given(users, [created])
      .when(change('put', {}, actor({ userId: 'u9' })))
      .thenThrows('NOT_FOUND');
  });

  it('a schema-bound user is written with the root key only', () => {
    given(users, [created])
      .when(change('patch', { displayName: 'x' }, actor({ kind: 'scoped' })))
      .thenThrows('FORBIDDEN');
    given(users, [bare])
      .when(change('patch', { displayName: 'x' }, actor({ kind: 'scoped' }), null))
      .then([
        {
          type: 'UserUpdated',
          data: { userId: 'u2', email: null, displayName: 'x', payload: { n: 1 }, scopes: [], change: 'patch' },
        },
      ]);
  });

  it('refuses an invalid payload, a changed schemaId and unpatchable keys', () => {
    given(users, [created])
      .when(change('patch', { payload: { age: 'x' } }))
      .thenThrows('VALIDATION_ERROR');
    given(users, [created])
      .when(change('put', { schemaId: 'other' }))
      .thenThrows('VALIDATION_ERROR');
    given(users, [created])
      .when(change('patch', { schemaId: 's1' }))
      .thenThrows('VALIDATION_ERROR');
    given(users, [created])
      .when(change('patch', { email: null }))
      .thenThrows('VALIDATION_ERROR');
    given(users, [created])
      .when(change('patch', { other: 1 }))
      .thenThrows('VALIDATION_ERROR');
  });
});

describe('DeleteUser', () => {
  it('deletes a user (its email is in the event, for its reservation)', () => {
    given(users, [created]).when({ type: 'DeleteUser', actor: actor() }).then([deleted]);
  });

  it('refuses a missing or unreachable user, and a schema-bound one without the root key', () => {
    given(users).when({ type: 'DeleteUser', actor: actor() }).thenThrows('NOT_FOUND');
    given(users, [created])
      .when({ type: 'DeleteUser', actor: actor({ dataScope: { scopes: ['org:z'] } }) })
      .thenThrows('NOT_FOUND');
    given(users, [created])
      .when({ type: 'DeleteUser', actor: actor({ kind: 'scoped' }) })
      .thenThrows('FORBIDDEN');
  });
});

describe('views and emails', () => {
  it('emails compare without case or surrounding spaces', () => {
    expect(emailKey(' A@X.io ')).toBe(emailKey('a@x.io'));
  });

  it('views omit unset fields and mask sensitive values', () => {
    const u = given(users, [created]).state() as LiveUser;
    expect(userView(u, def)).toEqual({
      id: 'u1',
      email: 'A@x.io',
      payload: { age: 3, ssn: '********' },
      schemaId: 's1',
      scopes: ['org:a'],
    });
  });
});
