import type { EventData } from '@svc/contracts';
import { assertNever, type Decider, type EventsOf, unexpected } from '../shared/decider';

/**
 * One firing of a rule on one log event (its stream: triggerStreams.firing): settled once, by TriggerFired
 * (committed with the script's writes) or TriggerFailed. Whoever settles it second decides nothing: a
 * replayed batch, or a runner that finds the firing committed by the executor, fires nothing twice.
 */
export type FiringOutcomeEvent = EventsOf<'TriggerFired' | 'TriggerFailed'>;
export interface FiringOutcomeState {
  settled: boolean;
}

/** Longest failure message kept (the script's message may be anything). */
export const TRIGGER_FAILURE_MESSAGE_MAX = 2_000;

export type FiringOutcomeCommand =
  | ({ type: 'MarkFired' } & EventData<'TriggerFired'>)
  /** A terminal failure at `at`; `firstFailedAt` of the earlier attempts (absent: this is the first). */
  | ({ type: 'RecordFailure'; at: string; firstFailedAt?: string } & Omit<
      EventData<'TriggerFailed'>,
      'firstFailedAt' | 'lastFailedAt'
    >);

export const firingOutcomeDecider: Decider<FiringOutcomeState, FiringOutcomeCommand, FiringOutcomeEvent> = {
  initialState: () => ({ settled: false }),
  decide(cmd, state) {
    if (state.settled) return [];
    switch (cmd.type) {
      case 'MarkFired': {
        const { type: _, ...data } = cmd;
        return [{ type: 'TriggerFired', data }];
      }
      case 'RecordFailure': {
        const { type: _, at, firstFailedAt, ...rest } = cmd;
        return [
          {
            type: 'TriggerFailed',
            data: {
              ...rest,
              message: rest.message.slice(0, TRIGGER_FAILURE_MESSAGE_MAX),
              firstFailedAt: firstFailedAt ?? at,
              lastFailedAt: at,
            },
          },
        ];
      }
      default:
        return assertNever(cmd);
    }
  },
  evolve(state, e) {
    switch (e.type) {
      case 'TriggerFired':
      case 'TriggerFailed':
        return { settled: true };
      default:
        return unexpected(e, state);
    }
  },
};
