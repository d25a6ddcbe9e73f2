import { describe, expect, it } from 'vitest';
import { given } from '../shared/given-when-then.test-support';
import { indexOutcomeDecider, OUTCOMES_PER_EVENT, type RecordOutcome } from './index-outcome-log';

const outcome = (i: number): RecordOutcome => ({
  recordId: `r${i}`,
  forRevision: 0,
  status: 'INDEXED',
  code: null,
  message: null,
});

describe('index outcome decider', () => {
  it('a context outcomes in RecordsIndexed events of at most 500', () => {
    const outcomes = Array.from({ length: OUTCOMES_PER_EVENT + 1 }, (_, i) => outcome(i));
    const events = given(indexOutcomeDecider).when({ type: 'RecordIndexOutcomes', outcomes }).events();
    expect(events.map((e) => e.data.outcomes.length)).toEqual([500, 1]);
    expect(events.flatMap((e) => e.data.outcomes)).toEqual(outcomes);
  });
  it('no outcome, no event', () => {
    given(indexOutcomeDecider).when({ type: 'RecordIndexOutcomes', outcomes: [] }).then([]);
  });
});
