import { describe, it } from 'vitest';
import { given } from '../shared/given-when-then.test-support';
import { type FiringOutcomeCommand, firingOutcomeDecider as decider, type FiringOutcomeEvent } from './firing-outcome';

const fired: FiringOutcomeEvent = {
  type: 'TriggerFired',
  data: { ruleId: 'r1', eventId: 'e1', recordId: 'rec1', executionId: 'x1', depth: 1 },
};
const markFired: FiringOutcomeCommand = { type: 'MarkFired', ...fired.data };
const failure = (
  over: Partial<Extract<FiringOutcomeCommand, { type: 'RecordFailure' }>> = {},
): FiringOutcomeCommand => ({
  type: 'RecordFailure',
  failureId: 'f1',
  ruleId: 'r1',
  eventId: 'e1',
  scriptRef: { name: 's', version: 1 },
  recordId: 'rec1',
  event: 'CREATE',
  reason: 'SCRIPT_ERROR',
  message: 'boom',
  attempts: 3,
  at: '2026-01-02T00:00:00.000Z',
  ...over,
});
const failed = (firstFailedAt: string, message = 'boom'): FiringOutcomeEvent => ({
  type: 'TriggerFailed',
  data: {
    failureId: 'f1',
    ruleId: 'r1',
    eventId: 'e1',
    scriptRef: { name: 's', version: 1 },
    recordId: 'rec1',
    event: 'CREATE',
    reason: 'SCRIPT_ERROR',
    message,
    attempts: 3,
    firstFailedAt,
    lastFailedAt: '2026-01-02T00:00:00.000Z',
  },
});

describe('trigger firing outcome decider', () => {
  it('an unsettled firing is settled as fired', () => {
    given(decider).when(markFired).then([fired]);
  });
  it(
    'a terminal failure: first failed when the earlier attempts say so, else now; the message is cut at ' +
      '2,000 characters',
    () => {
      given(decider)
        .when(failure({ firstFailedAt: '2026-01-01T00:00:00.000Z' }))
        .then([failed('2026-01-01T00:00:00.000Z')]);
      given(decider)
        .when(failure())
        .then([failed('2026-01-02T00:00:00.000Z')]);
      given(decider)
        .when(failure({ message: 'x'.repeat(2_500) }))
        .then([failed('2026-01-02T00:00:00.000Z', 'x'.repeat(2_000))]);
    },
  );
  it('a settled firing (fired, or failed) is settled once: the second outcome decides nothing', () => {
    given(decider, [fired]).when(failure()).then([]);
    given(decider, [fired]).when(markFired).then([]);
    given(decider, [failed('2026-01-01T00:00:00.000Z')])
      .when(markFired)
      .then([]);
  });
});
