import { describe, expect, it } from 'vitest';
import { InternalError, ServiceError } from '@svc/contracts';
import { given } from '../shared/given-when-then.test-support';
import { type CredentialEvent, credentialDecider, narrowChild, reachOf } from './credentials';

const parent = (
  o: {
    userId?: string | null;
    dataScope?: { userId?: string; scopes?: string[] } | null;
    allowedActions?: string[];
  } = {},
) => ({
  allowedActions: o.allowedActions ?? ['records:r', 'records:c'],
  dataScope: o.dataScope ?? null,
  userId: o.userId ?? null,
});
const status = (fn: () => unknown) => {
  try {
    fn();
    return 'ok';
  } catch (e) {
    return e instanceof ServiceError ? e.status : e;
  }
};

describe('reachOf', () => {
  it('reads dataScope first, then the bound user; an empty scope list is no limit', () => {
    expect(reachOf(parent({ userId: 'm' }))).toEqual({ userId: 'm', scopes: null });
    expect(reachOf(parent({ userId: 'm', dataScope: { userId: 'x' } }))).toEqual({ userId: 'x', scopes: null });
    expect(reachOf(parent({ dataScope: { scopes: [] } }))).toEqual({ userId: null, scopes: null });
    expect(reachOf(parent({ dataScope: { scopes: ['org:a'] } }))).toEqual({ userId: null, scopes: ['org:a'] });
  });
});

describe('narrowChild', () => {
  it('inherits what it omits', () => {
    expect(narrowChild(parent({ userId: 'm' }), { allowedActions: ['records:r'] })).toEqual({
      userId: 'm',
      dataScope: { userId: 'm' },
    });
    expect(
      narrowChild(parent({ dataScope: { scopes: ['org:a'] } }), { allowedActions: ['records:r'], dataScope: {} }),
    ).toEqual({ userId: null, dataScope: { scopes: ['org:a'] } });
    expect(narrowChild(parent(), { allowedActions: ['records:r'] })).toEqual({ userId: null, dataScope: null });
  });

  it('narrows inside the parent', () => {
    expect(
      narrowChild(parent({ dataScope: { scopes: ['org:a', 'org:b'] } }), {
        allowedActions: ['records:r'],
        userId: 'alice',
        dataScope: { scopes: ['org:b'] },
      }),
    ).toEqual({
      userId: 'alice',
      dataScope: { userId: 'alice', scopes: ['org:b'] },
    });
  });

  it('refuses (403) anything outside the parent: another user, another scope, no scope limit, a permission', () => {
    expect(
      status(() =>
        narrowChild(parent({ userId: 'm' }), { allowedActions: ['records:r'], dataScope: { userId: 'alice' } }),
      ),
    ).toBe(403);
    expect(status(() => narrowChild(parent({ userId: 'm' }), { allowedActions: ['records:r'], userId: 'alice' }))).toBe(
      403,
    );
    expect(
      status(() =>
        narrowChild(parent({ dataScope: { scopes: ['org:a'] } }), {
          allowedActions: ['records:r'],
          dataScope: { scopes: [] },
        }),
      ),
    ).toBe(403);
    expect(
      status(() =>
        narrowChild(parent({ dataScope: { scopes: ['org:a'] } }), {
          allowedActions: ['records:r'],
          dataScope: { scopes: ['org:a', 'org:b'] },
        }),
      ),
    ).toBe(403);
    expect(status(() => narrowChild(parent(), { allowedActions: ['records:d'] }))).toBe(403);
  });

  it('an unlimited parent may mint an unlimited child ([] stays no limit); two different users is a 400', () => {
    expect(narrowChild(parent(), { allowedActions: ['records:r'], dataScope: { scopes: [] } })).toEqual({
      userId: null,
      dataScope: null,
    });
    expect(
      status(() => narrowChild(parent(), { allowedActions: ['records:r'], userId: 'a', dataScope: { userId: 'b' } })),
    ).toBe(400);
  });
});

const issued: CredentialEvent = {
  type: 'CredentialIssued',
  data: {
    credentialId: 'c1',
    accountId: 'a',
    kind: 'token',
    tenantId: 't',
    environment: 'live',
    contextId: 'x',
    crossContext: false,
    secretHash: 'h',
    prefix: 'st_',
    allowedActions: ['records:r'],
    dataScope: null,
    userId: null,
    expiresAt: null,
    wireVersionPin: null,
    parentCredentialId: 'p',
  },
};
const revoked: CredentialEvent = { type: 'CredentialRevoked', data: { credentialId: 'c1' } };

describe('IssueCredential', () => {
  it('issues once', () => {
    given(credentialDecider)
      .when({ type: 'IssueCredential', ...issued.data })
      .then([issued]);
    expect(given(credentialDecider, [issued]).state()).toMatchObject({ exists: true, revoked: false, kind: 'token' });
    expect(() =>
      given(credentialDecider, [issued])
        .when({ type: 'IssueCredential', ...issued.data })
        .events(),
    ).toThrow(InternalError);
  });
});

describe('RevokeCredential', () => {
  it('revokes a live credential', () => {
    given(credentialDecider, [issued]).when({ type: 'RevokeCredential' }).then([revoked]);
  });

  it('a second revocation or a missing credential is a 404', () => {
    given(credentialDecider, [issued, revoked]).when({ type: 'RevokeCredential' }).thenThrows('NOT_FOUND');
    given(credentialDecider).when({ type: 'RevokeCredential' }).thenThrows('NOT_FOUND');
  });
});
