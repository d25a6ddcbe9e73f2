import { describe, expect, it } from 'vitest';
import { InternalError } from '@svc/contracts';
import { given } from '../shared/given-when-then.test-support';
import { type AccountEvent, accountDecider, environmentOf } from './accounts';

const tenants = { live: { tenantId: 'tl', contextId: 'cl' }, test: { tenantId: 'tt', contextId: 'ct' } };
const opened: AccountEvent = {
  type: 'AccountOpened',
  data: {
    accountId: 'a1',
    name: null,
    plan: 'free',
    inferenceBalanceCents: 0,
    creditLimit: null,
    rateLimitPerMinute: null,
    entitlements: { allowGlobalRegion: false },
    tenants,
  },
};
const changed = (data: Omit<Extract<AccountEvent, { type: 'AccountChanged' }>['data'], 'accountId'>): AccountEvent => ({
  type: 'AccountChanged',
  data: { accountId: 'a1', ...data },
});

describe('OpenAccount', () => {
  it('opens on the free plan with no limits by default', () => {
    given(accountDecider).when({ type: 'OpenAccount', accountId: 'a1', tenants }).then([opened]);
  });

  it('takes what the operator names', () => {
    const cmd = {
      type: 'OpenAccount',
      accountId: 'a1',
      tenants,
      name: 'n',
      plan: 'pro',
      inferenceBalanceCents: 5,
      creditLimit: 10,
      rateLimitPerMinute: 60,
      entitlements: { allowGlobalRegion: true },
    } as const;
    given(accountDecider)
      .when(cmd)
      .then([
        {
          ...opened,
          data: {
            ...opened.data,
            name: 'n',
            plan: 'pro',
            inferenceBalanceCents: 5,
            creditLimit: 10,
            rateLimitPerMinute: 60,
            entitlements: { allowGlobalRegion: true },
          },
        } as AccountEvent,
      ]);
  });

  it('never reuses an id', () => {
    expect(() =>
      given(accountDecider, [opened]).when({ type: 'OpenAccount', accountId: 'a1', tenants }).events(),
    ).toThrow(InternalError);
  });
});

describe('ChangeAccount', () => {
  it('records what changes; limits set to null are removed; a top-up adds to the balance', () => {
    given(accountDecider, [opened])
      .when({ type: 'ChangeAccount', plan: 'pro', creditLimit: null, inferenceBalanceCents: 7 })
      .then([changed({ plan: 'pro', creditLimit: { value: null }, inferenceBalanceCentsDelta: 7 })]);
    const s = given(accountDecider, [
      opened,
      changed({ creditLimit: { value: 9 }, inferenceBalanceCentsDelta: 7 }),
      changed({ plan: 'scale', inferenceBalanceCentsDelta: 3 }),
    ]).state();
    expect(s).toMatchObject({ plan: 'scale', creditLimit: 9, inferenceBalanceCents: 10, rateLimitPerMinute: null });
  });

  it(
    'merges entitlements into the stored ones: one left out keeps its value (decisions §2: ' +
      'allowGlobalRegion is optional)',
    () => {
      const entitled = changed({ entitlements: { allowGlobalRegion: true } });
      given(accountDecider, [opened, entitled])
        .when({ type: 'ChangeAccount', entitlements: {} })
        .then([changed({ entitlements: { allowGlobalRegion: true } })]);
      given(accountDecider, [opened, entitled])
        .when({ type: 'ChangeAccount', plan: 'pro', entitlements: {} })
        .then([changed({ plan: 'pro', entitlements: { allowGlobalRegion: true } })]);
      given(accountDecider, [opened, entitled])
        .when({ type: 'ChangeAccount', entitlements: { allowGlobalRegion: false } })
        .then([changed({ entitlements: { allowGlobalRegion: false } })]);
      // Opening with an empty entitlements object: each one absent is false.
      given(accountDecider).when({ type: 'OpenAccount', accountId: 'a1', tenants, entitlements: {} }).then([opened]);
    },
  );

  it('refuses a missing account and a negative top-up', () => {
    given(accountDecider).when({ type: 'ChangeAccount', plan: 'pro' }).thenThrows('NOT_FOUND');
    given(accountDecider, [opened])
      .when({ type: 'ChangeAccount', inferenceBalanceCents: -1 })
      .thenThrows('VALIDATION_ERROR');
  });
});

describe('environmentOf', () => {
  it('names which of the account tenants a tenant id is', () => {
    const account = given(accountDecider, [opened]).state();
    if (!account.exists) throw new Error('opened');
    expect([environmentOf(account, 'tl'), environmentOf(account, 'tt'), environmentOf(account, 'other')]).toEqual([
      'live',
      'test',
      null,
    ]);
  });
});
