import { type DomainEvent, type EventMetadata, parseEventData } from '@svc/contracts';
import type { ExpectedRevision, NewEvent } from '../ports/event-store';
import type { IdGenerator } from '../ports/runtime';

/** Validates each event against the catalogue and stamps id and metadata. */
export function toNewEvents(ids: IdGenerator, events: DomainEvent[], metadata: EventMetadata): NewEvent[] {
  return events.map((e) => ({
    id: ids.newId(),
    type: e.type,
    data: parseEventData(e.type, e.data) as Record<string, unknown>,
    metadata,
  }));
}

/** Domain events bound for one stream; `metadata` overrides the command's (e.g. another tenant id). */
export interface DomainAppend {
  streamId: string;
  events: DomainEvent[];
  expectedRevision: ExpectedRevision;
  metadata?: EventMetadata;
  /**
   * The write's charge (the charges port's `writeCharge`): an entry with no events of its own, carried in the
   * metadata of the commit's first event (EventMetadata.chargeCode), so charging a write appends nothing more.
   */
  charge?: NonNullable<EventMetadata['charge']>;
  /**
   * With no events: appended anyway, as a check that the stream is still at `expectedRevision` (a read served from a
   * cache that may be behind the log, EventStore.readStreamCached). Without it an entry with no events is dropped.
   */
  check?: boolean;
}
