import { describe, expect, it } from 'vitest';
import { EVENT_SCHEMA_VERSION } from '@svc/contracts';
import type { AppendRequest } from '@svc/domain';
import { withTriggerFiring } from './firing-commit';

const metadata = {
  tenantId: 't',
  contextId: 'c',
  accountId: 'a',
  actorKeyId: null,
  userId: null,
  requestId: 'r',
  occurredAt: 'now',
  schemaVersion: EVENT_SCHEMA_VERSION,
};
const write: AppendRequest = {
  streamId: 'record-1',
  events: [{ id: 'e1', type: 'RecordCreated', data: {}, metadata }],
  expectedRevision: 'no_stream',
};
const marker: AppendRequest = {
  streamId: 'trigger-firing-x',
  events: [{ id: 'm', type: 'TriggerFired', data: {}, metadata }],
  expectedRevision: 'no_stream',
};

describe('a triggered execution commit', () => {
  it('stamps the depth on the writes and commits the marker with them', () => {
    const out = withTriggerFiring([write], { depth: 3, alsoAppend: [marker] });
    expect(out.map((r) => r.streamId)).toEqual(['record-1', 'trigger-firing-x']);
    expect(out[0].events[0].metadata.triggerDepth).toBe(3);
  });

  it('commits the marker alone when the script wrote nothing', () => {
    expect(withTriggerFiring([], { depth: 1, alsoAppend: [marker] })).toEqual([marker]);
  });

  it('leaves a direct execution unchanged', () => {
    expect(withTriggerFiring([write], { depth: 0 })).toEqual([write]);
    expect(withTriggerFiring([write], {})[0].events[0].metadata).not.toHaveProperty('triggerDepth');
  });
});
