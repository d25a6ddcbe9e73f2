import type { EventStore, StoredEvent } from '../ports/event-store';
import { streams } from '../shared/streams';
import type { DomainAppend } from './appends';
import { type Reservation, reservationFrom } from './reservations';

/**
 * A whole stream, from the store's cache where it has one (readStreamCached). When that cache may be behind the log
 * (a server other processes append to), a check of the revision read is added to `checks`: appended with the write
 * this read decides, it fails that write if the stream moved (the caller then reads again, from the log).
 */
export async function readStreamChecked(
  store: EventStore,
  streamId: string,
  checks: DomainAppend[],
): Promise<StoredEvent[]> {
  if (!store.readStreamCached) return store.readStream(streamId);
  const { events, exact } = await store.readStreamCached(streamId);
  if (!exact) {
    const last = events.length ? events[events.length - 1].revision : -1;
    checks.push({ streamId, events: [], expectedRevision: last < 0 ? 'no_stream' : last, check: true });
  }
  return events;
}

/** readReservation through readStreamChecked. */
export async function readReservationChecked(
  store: EventStore,
  checks: DomainAppend[],
  ...parts: string[]
): Promise<Reservation> {
  const streamId = streams.reservation(...parts);
  const events = await readStreamChecked(store, streamId, checks);
  return reservationFrom(streamId, parts.join('/'), events[events.length - 1]);
}
