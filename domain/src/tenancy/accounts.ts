import { type EventData, invalid, notFound } from '@svc/contracts';

export type Plan = EventData<'AccountOpened'>['plan'];
export const PLANS: readonly Plan[] = ['free', 'starter', 'pro', 'scale', 'enterprise'];

export type AccountState =
  | { exists: false }
  | ({ exists: true } & Omit<EventData<'AccountOpened'>, 'inferenceBalanceCents'> & { inferenceBalanceCents: number });

type AccountEvent = { type: 'AccountOpened'; data: EventData<'AccountOpened'> } | { type: 'AccountChanged'; data: EventData<'AccountChanged'> };

export const accountDecider = {
  initialState: (): AccountState => ({ exists: false }),
  evolve(state: AccountState, e: AccountEvent): AccountState {
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
    }
  },
  /** PATCH /operator/accounts/{id}: `inferenceBalanceCents` is a top-up added to the balance. */
  decideChange(
    cmd: { plan?: Plan; creditLimit?: number | null; rateLimitPerMinute?: number | null; inferenceBalanceCents?: number; entitlements?: { allowGlobalRegion: boolean } },
    state: AccountState,
  ): AccountEvent[] {
    if (!state.exists) throw notFound();
    if (cmd.inferenceBalanceCents !== undefined && cmd.inferenceBalanceCents < 0) throw invalid('inferenceBalanceCents must not be negative');
    return [
      {
        type: 'AccountChanged',
        data: {
          accountId: state.accountId,
          plan: cmd.plan,
          creditLimit: cmd.creditLimit !== undefined ? { value: cmd.creditLimit } : undefined,
          rateLimitPerMinute: cmd.rateLimitPerMinute !== undefined ? { value: cmd.rateLimitPerMinute } : undefined,
          inferenceBalanceCentsDelta: cmd.inferenceBalanceCents,
          entitlements: cmd.entitlements,
        },
      },
    ];
  },
};
