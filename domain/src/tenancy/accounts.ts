import { type EventData, InternalError, invalid, notFound } from '@svc/contracts';
import { assertNever, type Decider, type EventsOf, unexpected } from '../shared/decider';

export type Plan = EventData<'AccountOpened'>['plan'];
export const PLANS: readonly Plan[] = ['free', 'starter', 'pro', 'scale', 'enterprise'];

export type AccountState =
  | { exists: false }
  | ({ exists: true } & Omit<EventData<'AccountOpened'>, 'inferenceBalanceCents'> & { inferenceBalanceCents: number });

export type AccountEvent = EventsOf<'AccountOpened' | 'AccountChanged'>;

export type AccountCommand =
  /**
   * POST /operator/accounts: ids of the account, its two tenants and their default contexts arrive with the command.
   */
  | {
      type: 'OpenAccount';
      accountId: string;
      name?: string;
      plan?: Plan;
      inferenceBalanceCents?: number;
      creditLimit?: number;
      rateLimitPerMinute?: number;
      entitlements?: Entitlements;
      tenants: EventData<'AccountOpened'>['tenants'];
    }
  /**
   * PATCH /operator/accounts/{id}: `inferenceBalanceCents` is a top-up added to the balance; `entitlements` are
   * merged into the stored ones (an entitlement left out keeps its value).
   */
  | {
      type: 'ChangeAccount';
      plan?: Plan;
      creditLimit?: number | null;
      rateLimitPerMinute?: number | null;
      inferenceBalanceCents?: number;
      entitlements?: Entitlements;
    };

/**
 * Entitlements as a request gives them (decisions §2: `entitlements?: {allowGlobalRegion?: boolean}`); each absent one
 * is false on open, unchanged on change.
 */
export type Entitlements = { allowGlobalRegion?: boolean };
const ENTITLEMENT_DEFAULTS: EventData<'AccountOpened'>['entitlements'] = { allowGlobalRegion: false };
/** `given` over `base`, an entitlement `given` leaves out keeping its value in `base`. */
const mergeEntitlements = (
  base: EventData<'AccountOpened'>['entitlements'],
  given: Entitlements,
): EventData<'AccountOpened'>['entitlements'] => ({
  ...base,
  ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)),
});

export const accountDecider: Decider<AccountState, AccountCommand, AccountEvent> = {
  initialState: () => ({ exists: false }),

  decide(cmd, state) {
    switch (cmd.type) {
      case 'OpenAccount':
        if (state.exists) throw new InternalError('account id reused');
        return [
          {
            type: 'AccountOpened',
            data: {
              accountId: cmd.accountId,
              name: cmd.name ?? null,
              plan: cmd.plan ?? 'free',
              inferenceBalanceCents: cmd.inferenceBalanceCents ?? 0,
              creditLimit: cmd.creditLimit ?? null,
              rateLimitPerMinute: cmd.rateLimitPerMinute ?? null,
              entitlements: mergeEntitlements(ENTITLEMENT_DEFAULTS, cmd.entitlements ?? {}),
              tenants: cmd.tenants,
            },
          },
        ];
      case 'ChangeAccount':
        if (!state.exists) throw notFound();
        if (cmd.inferenceBalanceCents !== undefined && cmd.inferenceBalanceCents < 0)
          throw invalid('inferenceBalanceCents must not be negative');
        return [
          {
            type: 'AccountChanged',
            data: {
              accountId: state.accountId,
              plan: cmd.plan,
              creditLimit: cmd.creditLimit !== undefined ? { value: cmd.creditLimit } : undefined,
              rateLimitPerMinute: cmd.rateLimitPerMinute !== undefined ? { value: cmd.rateLimitPerMinute } : undefined,
              inferenceBalanceCentsDelta: cmd.inferenceBalanceCents,
              entitlements: cmd.entitlements ? mergeEntitlements(state.entitlements, cmd.entitlements) : undefined,
            },
          },
        ];
      default:
        return assertNever(cmd);
    }
  },

  evolve(state, e) {
    switch (e.type) {
      case 'AccountOpened':
        return { exists: true, ...e.data };
      case 'AccountChanged': {
        if (!state.exists) return state;
        const d = e.data;
        return {
          ...state,
          plan: d.plan ?? state.plan,
          creditLimit: d.creditLimit ? d.creditLimit.value : state.creditLimit,
          rateLimitPerMinute: d.rateLimitPerMinute ? d.rateLimitPerMinute.value : state.rateLimitPerMinute,
          inferenceBalanceCents: state.inferenceBalanceCents + (d.inferenceBalanceCentsDelta ?? 0),
          entitlements: d.entitlements ?? state.entitlements,
        };
      }
      default:
        return unexpected(e, state);
    }
  },
};

/** Which of the account's tenants `tenantId` is; null when it is not one of them. */
export const environmentOf = (account: AccountState & { exists: true }, tenantId: string): 'live' | 'test' | null =>
  account.tenants.live.tenantId === tenantId ? 'live' : account.tenants.test.tenantId === tenantId ? 'test' : null;
