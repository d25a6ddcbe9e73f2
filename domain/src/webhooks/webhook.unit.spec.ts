import { describe, expect, it } from 'vitest';
import { InternalError } from '@svc/contracts';
import { given } from '../shared/given-when-then.test-support';
import { type WebhookEvent, webhookDecider, ownTenant } from './webhook';

const registered: WebhookEvent = {
  type: 'WebhookRegistered',
  data: {
    webhookId: 'w1',
    accountId: 'a1',
    tenantId: 't1',
    livemode: true,
    url: 'https://h.example.com/x',
    domain: 'h.example.com',
    events: ['record.created'],
    apiVersion: 'v1',
    sealedSecret: 'sealed',
    createdAt: 1,
  },
};
const updated = (over: Partial<Extract<WebhookEvent, { type: 'WebhookUpdated' }>['data']> = {}): WebhookEvent => ({
  type: 'WebhookUpdated',
  data: {
    webhookId: 'w1',
    url: 'https://h.example.com/x',
    domain: 'h.example.com',
    events: ['record.created'],
    apiVersion: 'v1',
    status: 'ACTIVE',
    disabledReason: null,
    resetFailures: false,
    ...over,
  },
});
const disabled: WebhookEvent = { type: 'WebhookDisabled', data: { webhookId: 'w1', reason: 'consecutive_failures' } };
const deleted: WebhookEvent = { type: 'WebhookDeleted', data: { webhookId: 'w1', tenantId: 't1' } };
const update = (body: Record<string, unknown>, domain = 'h.example.com', accountId = 'a1') =>
  ({ type: 'UpdateWebhook', accountId, body, domain }) as const;

describe('RegisterWebhook', () => {
  it('registers once; the state never holds the sealed secret', () => {
    given(webhookDecider)
      .when({ type: 'RegisterWebhook', ...registered.data })
      .then([registered]);
    const s = given(webhookDecider, [registered]).state();
    expect(s).toMatchObject({ exists: true, status: 'ACTIVE', disabledReason: null });
    expect(s).not.toHaveProperty('sealedSecret');
    expect(() =>
      given(webhookDecider, [registered])
        .when({ type: 'RegisterWebhook', ...registered.data })
        .events(),
    ).toThrow(InternalError);
  });
});

describe('UpdateWebhook', () => {
  it('records the mutable fields after the change, in full', () => {
    given(webhookDecider, [registered])
      .when(update({ url: 'https://g.example.com/y', events: ['record.deleted'] }, 'g.example.com'))
      .then([updated({ url: 'https://g.example.com/y', domain: 'g.example.com', events: ['record.deleted'] })]);
  });

  it('DISABLED by hand is a manual disable; ACTIVE re-enables and resets the failure count', () => {
    given(webhookDecider, [registered])
      .when(update({ status: 'DISABLED' }))
      .then([updated({ status: 'DISABLED', disabledReason: 'manual' })]);
    given(webhookDecider, [registered, disabled])
      .when(update({ status: 'ACTIVE' }))
      .then([updated({ resetFailures: true })]);
    // a disabled registration stays disabled, for the reason it had, when the update does not name a status
    given(webhookDecider, [registered, disabled])
      .when(update({ apiVersion: 'v2' }))
      .then([updated({ apiVersion: 'v2', status: 'DISABLED', disabledReason: 'consecutive_failures' })]);
    given(webhookDecider, [registered, disabled])
      .when(update({ status: 'DISABLED' }))
      .then([updated({ status: 'DISABLED', disabledReason: 'consecutive_failures' })]);
  });

  it('another account, a missing or deleted registration is not found', () => {
    given(webhookDecider, [registered])
      .when(update({}, 'h.example.com', 'a2'))
      .thenThrows('NOT_FOUND');
    given(webhookDecider).when(update({})).thenThrows('NOT_FOUND');
    given(webhookDecider, [registered, deleted]).when(update({})).thenThrows('NOT_FOUND');
  });
});

describe('DeleteWebhook', () => {
  it('deletes a registration of the account', () => {
    given(webhookDecider, [registered]).when({ type: 'DeleteWebhook', accountId: 'a1' }).then([deleted]);
    expect(given(webhookDecider, [registered, deleted]).state()).toEqual({ exists: false, deleted: true });
  });

  it('another account, a missing or deleted registration is not found', () => {
    given(webhookDecider, [registered]).when({ type: 'DeleteWebhook', accountId: 'a2' }).thenThrows('NOT_FOUND');
    given(webhookDecider, [registered, deleted])
      .when({ type: 'DeleteWebhook', accountId: 'a1' })
      .thenThrows('NOT_FOUND');
  });
});

describe('the dispatcher disabling', () => {
  it('disables an active registration only', () => {
    expect(given(webhookDecider, [registered, disabled]).state()).toMatchObject({
      status: 'DISABLED',
      disabledReason: 'consecutive_failures',
    });
    const manual = updated({ status: 'DISABLED', disabledReason: 'manual' });
    expect(given(webhookDecider, [registered, manual, disabled]).state()).toMatchObject({
      status: 'DISABLED',
      disabledReason: 'manual',
    });
  });
});

describe('ownTenant', () => {
  it("names the account's tenant; another one is a 403", () => {
    const tenants = { live: { tenantId: 'tl' }, test: { tenantId: 'tt' } };
    expect([ownTenant(tenants, 'tl'), ownTenant(tenants, 'tt')]).toEqual(['live', 'test']);
    expect(() => ownTenant(tenants, 'x')).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
  });
});

describe('DisableWebhook (the dispatcher)', () => {
  it('an active registration is disabled with the reason', () => {
    given(webhookDecider, [registered])
      .when({ type: 'DisableWebhook', reason: 'consecutive_failures' })
      .then([disabled]);
    given(webhookDecider, [registered, updated({ status: 'DISABLED', disabledReason: 'manual' }), updated()])
      .when({ type: 'DisableWebhook', reason: 'ssrf_blocked' })
      .then([{ type: 'WebhookDisabled', data: { webhookId: 'w1', reason: 'ssrf_blocked' } }]);
  });
  it('a registration disabled already (by hand or by the dispatcher) or deleted is left as it is', () => {
    given(webhookDecider, [registered, disabled]).when({ type: 'DisableWebhook', reason: 'ssrf_blocked' }).then([]);
    given(webhookDecider, [registered, updated({ status: 'DISABLED', disabledReason: 'manual' })])
      .when({ type: 'DisableWebhook', reason: 'consecutive_failures' })
      .then([]);
    given(webhookDecider, [registered, deleted])
      .when({ type: 'DisableWebhook', reason: 'consecutive_failures' })
      .then([]);
  });
});
