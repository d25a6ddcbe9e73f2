import type { EventData } from '@svc/contracts';
import { assertNever, type Decider, type EventsOf } from '../shared/decider';
import type { UsageItem } from './charges';

/**
 * A tenant's usage stream (`usage-<tenantId>`): an append-only log of charges, never read to decide (the
 * command handler appends it unread, expected revision 'any'); the usage projection applies each revision once.
 * The rules here: nothing to charge appends nothing; the counts are whole and not negative.
 */
export type UsageEvent = EventsOf<'UsageMetered' | 'ReadsMetered'>;

export type UsageCommand =
  /**
   * Priced work (a file ingest, a search, a script run, an inference call) charged to a tenant's context in a period.
   */
  | { type: 'MeterUsage'; tenantId: string; contextId: string | null; period: string; items: UsageItem[] }
  /** Read calls and response bytes tallied in process, one entry per period, with the terms that price them. */
  | {
      type: 'MeterReads';
      tenantId: string;
      contextId: string | null;
      reads: Array<Pick<EventData<'ReadsMetered'>, 'period' | 'calls' | 'bytes' | 'terms'>>;
    };

export const usageDecider: Decider<null, UsageCommand, UsageEvent> = {
  initialState: () => null,
  decide(cmd) {
    switch (cmd.type) {
      case 'MeterUsage':
        return cmd.items.length
          ? [
              {
                type: 'UsageMetered',
                data: { tenantId: cmd.tenantId, contextId: cmd.contextId, period: cmd.period, items: cmd.items },
              },
            ]
          : [];
      case 'MeterReads':
        return cmd.reads
          .filter((r) => r.calls > 0 || r.bytes > 0)
          .map((r) => ({
            type: 'ReadsMetered',
            data: {
              tenantId: cmd.tenantId,
              contextId: cmd.contextId,
              period: r.period,
              calls: Math.round(r.calls),
              bytes: Math.max(0, Math.round(r.bytes)),
              terms: r.terms,
            },
          }));
      default:
        return assertNever(cmd);
    }
  },
  evolve: (state) => state,
};
