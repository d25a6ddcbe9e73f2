import { type DomainEvent, type EventData, forbidden, notFound, type UpdateWebhookBody } from '@svc/contracts';

/** One registration as its own stream folds it. */
export type WebhookState =
  | { exists: false; deleted: boolean }
  | ({ exists: true } & Omit<EventData<'WebhookRegistered'>, 'sealedSecret'> & { status: 'ACTIVE' | 'DISABLED'; disabledReason: EventData<'WebhookUpdated'>['disabledReason'] });

export const webhookAggregate = {
  initialState: (): WebhookState => ({ exists: false, deleted: false }),
  evolve(s: WebhookState, e: DomainEvent): WebhookState {
    switch (e.type) {
      case 'WebhookRegistered': {
        const { sealedSecret: _, ...d } = e.data;
        return { exists: true, ...d, status: 'ACTIVE', disabledReason: null };
      }
      case 'WebhookUpdated':
        return s.exists ? { ...s, url: e.data.url, domain: e.data.domain, events: e.data.events, apiVersion: e.data.apiVersion, status: e.data.status, disabledReason: e.data.disabledReason } : s;
      case 'WebhookDisabled':
        return s.exists && s.status === 'ACTIVE' ? { ...s, status: 'DISABLED', disabledReason: e.data.reason } : s;
      case 'WebhookDeleted':
        return { exists: false, deleted: true };
      default:
        return s;
    }
  },
};

/** A registration the developer's account owns; anything else reads as not found. */
export function ownedWebhook(s: WebhookState, accountId: string): WebhookState & { exists: true } {
  if (!s.exists || s.accountId !== accountId) throw notFound();
  return s;
}

/** The account's tenant named by `tenantId` ('live' or 'test'); another account's is a 403 (registration rule 3). */
export function ownTenant(tenants: { live: { tenantId: string }; test: { tenantId: string } }, tenantId: string): 'live' | 'test' {
  if (tenants.live.tenantId === tenantId) return 'live';
  if (tenants.test.tenantId === tenantId) return 'test';
  throw forbidden();
}

/**
 * PUT: the mutable fields after the change. `checkedUrl` is the new URL's
 * hostname once the URL rules passed (the caller re-runs them only when the
 * URL changes). Setting ACTIVE re-enables and resets the failure count;
 * setting DISABLED is a manual disable.
 */
export function decideWebhookUpdate(s: WebhookState & { exists: true }, body: UpdateWebhookBody, domain: string): DomainEvent[] {
  const status = body.status ?? s.status;
  const disabledReason = status === 'ACTIVE' ? null : body.status === 'DISABLED' && s.status === 'ACTIVE' ? 'manual' : s.disabledReason;
  return [
    {
      type: 'WebhookUpdated',
      data: { webhookId: s.webhookId, url: body.url ?? s.url, domain, events: body.events ?? s.events, apiVersion: body.apiVersion ?? s.apiVersion, status, disabledReason, resetFailures: body.status === 'ACTIVE' },
    },
  ];
}

export function decideWebhookDelete(s: WebhookState & { exists: true }): DomainEvent[] {
  return [{ type: 'WebhookDeleted', data: { webhookId: s.webhookId, tenantId: s.tenantId } }];
}
