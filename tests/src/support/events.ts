import { EVENT_SCHEMA_VERSION, type EventMetadata } from '@svc/contracts';

/**
 * An event's metadata for specs that write events straight to a store or a projection: a request's fields with
 * fixed values, any of them replaced by `o`.
 */
export const eventMetadata = (o: Partial<EventMetadata> = {}): EventMetadata => ({
  tenantId: 't1',
  contextId: 'c1',
  accountId: 'acc',
  actorKeyId: null,
  userId: null,
  requestId: 'r',
  occurredAt: '2026-01-01T00:00:00.000Z',
  schemaVersion: EVENT_SCHEMA_VERSION,
  ...o,
});
