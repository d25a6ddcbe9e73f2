import { describe, expect, it } from 'vitest';
import { given } from '../shared/given-when-then.test-support';
import { type JwtIssuer, jwtIssuerPairChanges, jwtIssuersDecider, jwtIssuerView } from './jwt-issuers';

const DEFAULT_CLAIMS = {
  userId: 'sub',
  contextId: 'svc_context',
  scopes: 'svc_scopes',
  permissions: 'svc_permissions',
};
const a: JwtIssuer = {
  issuer: 'https://a.example',
  audience: 'app',
  jwksUrl: null,
  claims: DEFAULT_CLAIMS,
  defaultPermissions: null,
};
const b: JwtIssuer = {
  issuer: 'https://b.example',
  audience: 'app',
  jwksUrl: 'https://b.example/jwks',
  claims: { ...DEFAULT_CLAIMS, userId: 'email' },
  defaultPermissions: ['records:r'],
};
const set = (issuers: JwtIssuer[]) => ({
  type: 'JwtIssuersSet' as const,
  data: { tenantId: 't1', accountId: 'a1', issuers },
});

describe('SetJwtIssuers', () => {
  it('stores the list with the claim defaults filled in', () => {
    given(jwtIssuersDecider)
      .when({
        type: 'SetJwtIssuers',
        tenantId: 't1',
        accountId: 'a1',
        issuers: [
          { issuer: a.issuer, audience: 'app' },
          {
            issuer: b.issuer,
            audience: 'app',
            jwksUrl: b.jwksUrl!,
            claims: { userId: 'email' },
            defaultPermissions: ['records:r', 'records:r'],
          },
        ],
      })
      .then([set([a, b])]);
  });

  it('replaces the previous list; an empty list removes every registration', () => {
    given(jwtIssuersDecider, [set([a, b])])
      .when({ type: 'SetJwtIssuers', tenantId: 't1', accountId: 'a1', issuers: [] })
      .then([set([])]);
    expect(given(jwtIssuersDecider, [set([a, b]), set([b])]).state()).toEqual({ issuers: [b] });
  });

  it('refuses the same pair twice and more than ten issuers', () => {
    given(jwtIssuersDecider)
      .when({
        type: 'SetJwtIssuers',
        tenantId: 't1',
        accountId: 'a1',
        issuers: [
          { issuer: a.issuer, audience: 'app' },
          { issuer: a.issuer, audience: 'app', jwksUrl: 'https://x.example/k' },
        ],
      })
      .thenThrows('VALIDATION_ERROR');
    const many = Array.from({ length: 11 }, (_, n) => ({ issuer: a.issuer, audience: `aud-${n}` }));
    given(jwtIssuersDecider)
      .when({ type: 'SetJwtIssuers', tenantId: 't1', accountId: 'a1', issuers: many })
      .thenThrows('VALIDATION_ERROR');
  });
});

describe('pairs and views', () => {
  it('a change releases the pairs it drops and claims the pairs it adds', () => {
    const a2 = { ...a, claims: { ...DEFAULT_CLAIMS, userId: 'uid' } };
    expect(jwtIssuerPairChanges([a, b], [a2])).toEqual({ released: [b], claimed: [] });
    expect(jwtIssuerPairChanges([], [a])).toEqual({ released: [], claimed: [a] });
  });

  it('shows jwksUrl and defaultPermissions only when registered', () => {
    expect(jwtIssuerView(a)).toEqual({ issuer: a.issuer, audience: 'app', claims: DEFAULT_CLAIMS });
    expect(jwtIssuerView(b)).toEqual({
      issuer: b.issuer,
      audience: 'app',
      jwksUrl: b.jwksUrl,
      claims: b.claims,
      defaultPermissions: ['records:r'],
    });
  });
});
