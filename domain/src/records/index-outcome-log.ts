import type { EventData } from '@svc/contracts';
import type { Decider, EventsOf } from '../shared/decider';

/** One record's index outcome, as RecordsIndexed carries it. */
export type RecordOutcome = EventData<'RecordsIndexed'>['outcomes'][number];

/** Outcomes per RecordsIndexed event: about 50 KB of event at most, well inside a Kafka message. */
export const OUTCOMES_PER_EVENT = 500;

/**
 * A context's index outcome stream (streams.outcomes): an append-only log of the search projector's record
 * outcomes, never read to decide (appended unread, expected revision 'any'). Which outcomes are new is the
 * projector's to say (it remembers what it reported); the rule here is the event size.
 */
export const indexOutcomeDecider: Decider<
  null,
  { type: 'RecordIndexOutcomes'; outcomes: RecordOutcome[] },
  EventsOf<'RecordsIndexed'>
> = {
  initialState: () => null,
  decide(cmd) {
    const events: Array<EventsOf<'RecordsIndexed'>> = [];
    for (let i = 0; i < cmd.outcomes.length; i += OUTCOMES_PER_EVENT)
      events.push({ type: 'RecordsIndexed', data: { outcomes: cmd.outcomes.slice(i, i + OUTCOMES_PER_EVENT) } });
    return events;
  },
  evolve: (state) => state,
};
