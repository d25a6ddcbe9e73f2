import { describe, expect, it } from 'vitest';
import { given } from '../shared/given-when-then.test-support';
import { verifiedDomains, verificationRecordName, type WebhookDomainEvent, webhookDomainsDecider } from './domains';

const added = (token = 'wv_1'): WebhookDomainEvent => ({
  type: 'WebhookDomainAdded',
  data: { accountId: 'a1', domain: 'example.com', verificationToken: token },
});
const verified = (method: 'operator' | 'dns'): WebhookDomainEvent => ({
  type: 'WebhookDomainVerified',
  data: { accountId: 'a1', domain: 'example.com', method },
});
const add = { type: 'AddDomain', accountId: 'a1', domain: 'example.com', token: 'wv_1' } as const;
const byOperator = { type: 'VerifyDomainByOperator', accountId: 'a1', domain: 'example.com', token: 'wv_2' } as const;
const byDns = (txtRecords: string[]) =>
  ({ type: 'VerifyDomainByDns', accountId: 'a1', domain: 'example.com', txtRecords }) as const;

describe('AddDomain', () => {
  it('registers a domain with its token; again answers the first token (nothing written)', () => {
    given(webhookDomainsDecider).when(add).then([added()]);
    given(webhookDomainsDecider, [added()])
      .when({ ...add, token: 'wv_other' })
      .then([]);
    expect(given(webhookDomainsDecider, [added()]).state().domains.get('example.com')).toEqual({
      verificationToken: 'wv_1',
      verified: false,
    });
  });
});

describe('VerifyDomainByOperator', () => {
  it('verifies a known domain, registering an unknown one first; twice does nothing', () => {
    given(webhookDomainsDecider, [added()])
      .when(byOperator)
      .then([verified('operator')]);
    given(webhookDomainsDecider)
      .when(byOperator)
      .then([added('wv_2'), verified('operator')]);
    given(webhookDomainsDecider, [added(), verified('dns')])
      .when(byOperator)
      .then([]);
    expect(verifiedDomains(given(webhookDomainsDecider, [added(), verified('operator')]).state())).toEqual([
      'example.com',
    ]);
  });
});

describe('VerifyDomainByDns', () => {
  it(`verifies when a TXT record of ${verificationRecordName('example.com')} carries the token`, () => {
    given(webhookDomainsDecider, [added()])
      .when(byDns(['other', ' wv_1 ']))
      .then([verified('dns')]);
    given(webhookDomainsDecider, [added(), verified('operator')])
      .when(byDns([]))
      .then([]);
  });

  it('refuses an unknown domain (404) and a missing or wrong record (400)', () => {
    given(webhookDomainsDecider)
      .when(byDns(['wv_1']))
      .thenThrows('NOT_FOUND');
    given(webhookDomainsDecider, [added()]).when(byDns([])).thenThrows('VALIDATION_ERROR');
    given(webhookDomainsDecider, [added()])
      .when(byDns(['wv_2']))
      .thenThrows('VALIDATION_ERROR');
  });
});
