import { describe, expect, it } from 'vitest';
import type { DomainEvent, Principal, SchemaDefinition } from '@svc/contracts';
import { decideCreateNamespace, decideDeleteNamespace, namespaceNames, namespaceRegistry, type NamespaceRegistry } from './namespace';
import { decideChangeUser, decideCreateUser, emailKey, userAggregate, userView, type LiveUser } from './user';
import { canSeeEntity, decideChangeEntity, decideCreateEntity, entityAggregate, type LiveEntity } from './entity';

const registry = (events: DomainEvent[]) => events.reduce<NamespaceRegistry>((s, e) => namespaceRegistry.evolve(s, e), namespaceRegistry.initialState());
const principal = (over: Partial<Principal> = {}): Principal => ({
  credentialId: 'k', kind: 'token', accountId: 'a', tenantId: 't', environment: 'live', contextId: 'c', crossContext: false, allowedActions: ['*'], dataScope: null, userId: null, wireVersionPin: null, ...over,
});
const def = { typeName: 'person', displayName: 'Person', allowedSurfaces: ['user'], fields: [{ fieldId: 'age', fieldType: 'number', required: true }, { fieldId: 'ssn', fieldType: 'string', sensitive: true }] } as SchemaDefinition;

describe('namespace registry', () => {
  it('registers, refuses built-ins and duplicates, lists built-ins first', () => {
    const s = registry(decideCreateNamespace({ name: 'team' }, registry([])));
    expect(namespaceNames(s)).toEqual(['org', 'client', 'team']);
    expect(() => decideCreateNamespace({ name: 'team' }, s)).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
    expect(() => decideCreateNamespace({ name: 'org' }, s)).toThrow(expect.objectContaining({ code: 'VALIDATION_ERROR' }));
  });

  it('deletes a registered namespace without entities only', () => {
    const s = registry(decideCreateNamespace({ name: 'team' }, registry([])));
    expect(() => decideDeleteNamespace('team', s, 1)).toThrow(expect.objectContaining({ code: 'VALIDATION_ERROR' }));
    expect(() => decideDeleteNamespace('client', s, 0)).toThrow(expect.objectContaining({ code: 'VALIDATION_ERROR' }));
    expect(() => decideDeleteNamespace('nope', s, 0)).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
    const after = registry([...decideCreateNamespace({ name: 'team' }, registry([])), ...decideDeleteNamespace('team', s, 0)]);
    expect(namespaceNames(after)).toEqual(['org', 'client']);
  });
});

describe('users', () => {
  const u = decideCreateUser({ userId: 'u1', email: 'A@x.io', payload: { age: 3, ssn: 's' }, schemaId: 's1', definition: def, scopes: [] }, { exists: false }).reduce((s, e) => userAggregate.evolve(s, e), userAggregate.initialState()) as LiveUser;

  it('validates the payload against the bound schema', () => {
    expect(() => decideCreateUser({ userId: 'u2', payload: {}, definition: def, scopes: [] }, { exists: false })).toThrow(/age/);
    expect(() => decideChangeUser({ kind: 'patch', body: { payload: { age: 'x' } }, definition: def }, u)).toThrow(/age/);
  });

  it('emails compare without case or surrounding spaces', () => {
    expect(emailKey(' A@X.io ')).toBe(emailKey('a@x.io'));
  });

  it('views omit unset fields and mask sensitive values', () => {
    expect(userView(u, def)).toEqual({ id: 'u1', email: 'A@x.io', payload: { age: 3, ssn: '********' }, schemaId: 's1', scopes: [] });
  });

  it('schemaId is immutable', () => {
    expect(() => decideChangeUser({ kind: 'put', body: { schemaId: 'other' }, definition: def }, u)).toThrow(/immutable/);
    expect(() => decideChangeUser({ kind: 'patch', body: { schemaId: 's1' }, definition: def }, u)).toThrow(/cannot be changed/);
  });
});

describe('entities', () => {
  const e = decideCreateEntity({ entityId: 'e1', namespace: 'org', key: 'acme', namespaces: ['org', 'client'] }, { exists: false }).reduce(
    (s, ev) => entityAggregate.evolve(s, ev, { tenantId: 't', contextId: 'c', accountId: null, actorKeyId: null, userId: null, requestId: null, occurredAt: 'x', schemaVersion: 1 }),
    entityAggregate.initialState(),
  ) as LiveEntity;

  it('needs a known namespace', () => {
    expect(() => decideCreateEntity({ entityId: 'e2', namespace: 'team', key: 'k', namespaces: ['org', 'client'] }, { exists: false })).toThrow(/namespace/);
  });

  it('counts versions and guards them', () => {
    const [ev] = decideChangeEntity({ kind: 'patch', body: { payload: { a: 1 }, expectedVersion: 1 } }, e);
    expect(entityAggregate.evolve(e, ev)).toMatchObject({ version: 2, payload: { a: 1 } });
    expect(() => decideChangeEntity({ kind: 'put', body: { payload: {}, expectedVersion: 2 } }, e)).toThrow(expect.objectContaining({ code: 'VERSION_CONFLICT' }));
  });

  it('is visible to scope-limited credentials naming it, whatever their bound user', () => {
    expect(canSeeEntity(principal(), e)).toBe(true);
    expect(canSeeEntity(principal({ dataScope: { scopes: ['org:acme'] } }), e)).toBe(true);
    expect(canSeeEntity(principal({ dataScope: { scopes: ['org:other'] } }), e)).toBe(false);
    expect(canSeeEntity(principal({ userId: 'someone' }), e)).toBe(true);
    expect(canSeeEntity(principal({ contextId: 'c2' }), e)).toBe(false);
  });
});
