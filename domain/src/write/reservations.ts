import { conflict } from '@svc/contracts';
import type { EventStore, ExpectedRevision } from '../ports/event-store';
import { streams } from '../shared/streams';
import type { DomainAppend } from './appends';

/**
 * Uniqueness reservations: the documented port through which the write path
 * enforces "one X per value". Each reserved value has its own stream; claiming
 * it is appended atomically with the entity's own events, at the stream's
 * current revision, so two writers can never both hold it.
 */
export interface Reservation {
  streamId: string;
  key: string;
  holder: string | null;
  revision: number;
}

export const readReservation = (store: EventStore, ...parts: string[]): Promise<Reservation> => readAt(store, streams.reservation(...parts), parts.join('/'));

/** The reservation as it stands now (after a lost race). */
export const refreshReservation = (store: EventStore, r: Pick<Reservation, 'streamId' | 'key'>) => readAt(store, r.streamId, r.key);

/** The reservation a claim (or release) append was made for: what lost the race when its stream conflicts. */
export function reservationOf(a: DomainAppend): Pick<Reservation, 'streamId' | 'key'> {
  const e = a.events[0];
  return { streamId: a.streamId, key: e && (e.type === 'ReservationClaimed' || e.type === 'ReservationReleased') ? e.data.key : '' };
}

async function readAt(store: EventStore, streamId: string, key: string): Promise<Reservation> {
  const last = await store.readStream(streamId, { direction: 'backwards', maxCount: 1 });
  const e = last[0];
  return {
    streamId,
    key,
    holder: e && e.type === 'ReservationClaimed' ? e.data.ownerId : null,
    revision: e ? e.revision : -1,
  };
}

const expected = (r: Reservation): ExpectedRevision => (r.revision < 0 ? 'no_stream' : r.revision);

export const claim = (r: Reservation, ownerId: string): DomainAppend => ({
  streamId: r.streamId,
  events: [{ type: 'ReservationClaimed', data: { key: r.key, ownerId } }],
  expectedRevision: expected(r),
});

export const release = (r: Reservation): DomainAppend => ({
  streamId: r.streamId,
  events: [{ type: 'ReservationReleased', data: { key: r.key, ownerId: r.holder ?? '' } }],
  expectedRevision: expected(r),
});

/**
 * The appends that move one holder's unique value from `before` to `after` (either absent: a create or a delete):
 * the old value is released if this holder has it, the new one claimed; 409 `held` when another holder has it.
 * `read` gives the reservation of a value; equal values (as `same` compares them) move nothing.
 */
export async function moveReservation(o: {
  read: (value: string) => Promise<Reservation>;
  holderId: string;
  before?: string | null;
  after?: string | null;
  held: string;
  same?: (a: string, b: string) => boolean;
}): Promise<DomainAppend[]> {
  const { before, after, holderId } = o;
  if (before && after && (o.same ?? Object.is)(before, after)) return [];
  const appends: DomainAppend[] = [];
  if (before) {
    const old = await o.read(before);
    if (old.holder === holderId) appends.push(release(old));
  }
  if (after) {
    const wanted = await o.read(after);
    if (wanted.holder && wanted.holder !== holderId) throw conflict(o.held);
    if (!wanted.holder) appends.push(claim(wanted, holderId));
  }
  return appends;
}
