import { describe, expect, it } from 'vitest';
import { discoveryUrlOf, isKeySourceUrl, putJwtIssuersBody } from './jwt-issuers';

describe('where keys may be fetched from', () => {
  it.each([
    ['https://idp.example.com/jwks', true],
    ['https://idp.example.com:8443/realms/acme', true],
    ['http://127.0.0.1:8080/jwks', true],
    ['http://127.10.0.1/jwks', true],
    ['http://localhost:3000/', true],
    ['http://[::1]:9000/jwks', true],
    ['http://idp.example.com/jwks', false],
    ['http://10.0.0.1/jwks', false],
    ['http://127.0.0.1.example.com/jwks', false],
    ['ftp://idp.example.com/jwks', false],
    ['https://user:pw@idp.example.com/jwks', false],
    ['https://idp.example.com/jwks#x', false],
    ['urn:example:idp', false],
    ['not a url', false],
  ])('%s: %s', (url, allowed) => expect(isKeySourceUrl(url)).toBe(allowed));

  it('the discovery document is the issuer without its trailing slash, plus the well-known path', () => {
    expect(discoveryUrlOf('https://acme.eu.auth0.com/')).toBe(
      'https://acme.eu.auth0.com/.well-known/openid-configuration',
    );
    expect(discoveryUrlOf('https://sso.example.com/realms/acme')).toBe(
      'https://sso.example.com/realms/acme/.well-known/openid-configuration',
    );
  });

  it('an issuer that is no URL needs a jwksUrl', () => {
    expect(putJwtIssuersBody.safeParse({ issuers: [{ issuer: 'urn:x', audience: 'a' }] }).success).toBe(false);
    expect(
      putJwtIssuersBody.safeParse({ issuers: [{ issuer: 'urn:x', audience: 'a', jwksUrl: 'https://x.example/k' }] })
        .success,
    ).toBe(true);
  });
});
