import { type EventData, forbidden, InternalError, notFound, type UpdateWebhookBody } from '@svc/contracts';
import { assertNever, type Decider, type EventsOf, unexpected } from '../shared/decider';

/** One registration as its own stream folds it. */
export type WebhookState =
  | { exists: false; deleted: boolean }
  | ({ exists: true } & Omit<EventData<'WebhookRegistered'>, 'sealedSecret'> & {
        status: 'ACTIVE' | 'DISABLED';
        disabledReason: EventData<'WebhookUpdated'>['disabledReason'];
      });

/** A registration the developer's account owns; anything else reads as not found. */
export function ownedWebhook(s: WebhookState, accountId: string): WebhookState & { exists: true } {
  if (!s.exists || s.accountId !== accountId) throw notFound();
  return s;
}

/** The account's tenant named by `tenantId` ('live' or 'test'); another account's is a 403 (registration rule 3). */
export function ownTenant(
  tenants: { live: { tenantId: string }; test: { tenantId: string } },
  tenantId: string,
): 'live' | 'test' {
  if (tenants.live.tenantId === tenantId) return 'live';
  if (tenants.test.tenantId === tenantId) return 'test';
  throw forbidden();
}

export type WebhookEvent = EventsOf<'WebhookRegistered' | 'WebhookUpdated' | 'WebhookDisabled' | 'WebhookDeleted'>;

export type WebhookCommand =
  /**
   * Registration rules 1-5 are checked before (body schema, own tenant, addresses, verified domain); the secret arrives
   * sealed.
   */
  | ({ type: 'RegisterWebhook' } & EventData<'WebhookRegistered'>)
  /**
   * PUT by the owning account: the mutable fields after the change. `domain` is the new URL's hostname once
   * the URL rules passed (they re-run only when the URL changes). Setting ACTIVE re-enables and resets the
   * failure count; setting DISABLED is a manual disable.
   */
  | { type: 'UpdateWebhook'; accountId: string; body: UpdateWebhookBody; domain: string }
  | { type: 'DeleteWebhook'; accountId: string }
  /**
   * The dispatcher's: too many consecutive failed deliveries, or an address that became private (SSRF). An active
   * registration only.
   */
  | { type: 'DisableWebhook'; reason: EventData<'WebhookDisabled'>['reason'] };

export const webhookDecider: Decider<WebhookState, WebhookCommand, WebhookEvent> = {
  initialState: () => ({ exists: false, deleted: false }),

  decide(cmd, state) {
    switch (cmd.type) {
      case 'RegisterWebhook': {
        if (state.exists || state.deleted) throw new InternalError('webhook id reused');
        const { type: _, ...data } = cmd;
        return [{ type: 'WebhookRegistered', data }];
      }
      case 'UpdateWebhook': {
        const s = ownedWebhook(state, cmd.accountId);
        const { body } = cmd;
        const status = body.status ?? s.status;
        const disabledReason =
          status === 'ACTIVE'
            ? null
            : body.status === 'DISABLED' && s.status === 'ACTIVE'
              ? 'manual'
              : s.disabledReason;
        return [
          {
            type: 'WebhookUpdated',
            data: {
              webhookId: s.webhookId,
              url: body.url ?? s.url,
              domain: cmd.domain,
              events: body.events ?? s.events,
              apiVersion: body.apiVersion ?? s.apiVersion,
              status,
              disabledReason,
              resetFailures: body.status === 'ACTIVE',
            },
          },
        ];
      }
      case 'DeleteWebhook': {
        const s = ownedWebhook(state, cmd.accountId);
        return [{ type: 'WebhookDeleted', data: { webhookId: s.webhookId, tenantId: s.tenantId } }];
      }
      case 'DisableWebhook':
        // Disabled already (by hand or by an earlier failure) or deleted: nothing changes.
        return state.exists && state.status === 'ACTIVE'
          ? [{ type: 'WebhookDisabled', data: { webhookId: state.webhookId, reason: cmd.reason } }]
          : [];
      default:
        return assertNever(cmd);
    }
  },

  evolve(s, e) {
    switch (e.type) {
      case 'WebhookRegistered': {
        const { sealedSecret: _, ...d } = e.data;
        return { exists: true, ...d, status: 'ACTIVE', disabledReason: null };
      }
      case 'WebhookUpdated':
        return s.exists
          ? {
              ...s,
              url: e.data.url,
              domain: e.data.domain,
              events: e.data.events,
              apiVersion: e.data.apiVersion,
              status: e.data.status,
              disabledReason: e.data.disabledReason,
            }
          : s;
      case 'WebhookDisabled':
        return s.exists && s.status === 'ACTIVE' ? { ...s, status: 'DISABLED', disabledReason: e.data.reason } : s;
      case 'WebhookDeleted':
        return { exists: false, deleted: true };
      default:
        return unexpected(e, s);
    }
  },
};
