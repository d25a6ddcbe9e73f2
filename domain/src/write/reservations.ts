import { conflict, InternalError } from '@svc/contracts';
import type { EventStore, ExpectedRevision, StoredEvent } from '../ports/event-store';
import { assertNever, type Decider, type EventsOf, unexpected } from '../shared/decider';
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

export const readReservation = (store: EventStore, ...parts: string[]): Promise<Reservation> =>
  readAt(store, streams.reservation(...parts), parts.join('/'));

/** The reservation as it stands now (after a lost race). */
export const refreshReservation = (store: EventStore, r: Pick<Reservation, 'streamId' | 'key'>) =>
  readAt(store, r.streamId, r.key);

/** The reservation a claim (or release) append was made for: what lost the race when its stream conflicts. */
export function reservationOf(a: DomainAppend): Pick<Reservation, 'streamId' | 'key'> {
  const e = a.events[0];
  return {
    streamId: a.streamId,
    key: e && (e.type === 'ReservationClaimed' || e.type === 'ReservationReleased') ? e.data.key : '',
  };
}

async function readAt(store: EventStore, streamId: string, key: string): Promise<Reservation> {
  const last = await store.readStream(streamId, { direction: 'backwards', maxCount: 1 });
  return reservationFrom(streamId, key, last[0]);
}

/** The reservation whose stream's last event is `last` (none: never claimed). */
export function reservationFrom(streamId: string, key: string, last: StoredEvent | undefined): Reservation {
  return {
    streamId,
    key,
    // A value's holder is decided by its last event alone (reservationDecider.evolve).
    holder: last ? reservationDecider.evolve(reservationDecider.initialState(), last as ReservationEvent).holder : null,
    revision: last ? last.revision : -1,
  };
}

const expected = (r: Reservation): ExpectedRevision => (r.revision < 0 ? 'no_stream' : r.revision);

export type ReservationEvent = EventsOf<'ReservationClaimed' | 'ReservationReleased'>;
export interface ReservationState {
  holder: string | null;
}
export type ReservationCommand =
  /**
   * `ownerId` takes the value. Held by it already: nothing to do. Held by another: only with `takeOver` (the caller
   * established that holder is gone, e.g. a torn-down tenant); otherwise the caller's check was skipped (internal).
   */
  | { type: 'Claim'; key: string; ownerId: string; takeOver?: boolean }
  /** `ownerId` gives the value up; nothing when it does not hold it. */
  | { type: 'Release'; key: string; ownerId: string };

/** One value of a "one X per value" rule: who holds it. Each value has its own stream (streams.reservation). */
export const reservationDecider: Decider<ReservationState, ReservationCommand, ReservationEvent> = {
  initialState: () => ({ holder: null }),
  decide(c, s) {
    switch (c.type) {
      case 'Claim':
        if (s.holder === c.ownerId) return [];
        if (s.holder && !c.takeOver)
          throw new InternalError(`claim of ${c.key}, held by ${s.holder}: the holder is checked before a claim`);
        return [{ type: 'ReservationClaimed', data: { key: c.key, ownerId: c.ownerId } }];
      case 'Release':
        return s.holder === c.ownerId
          ? [{ type: 'ReservationReleased', data: { key: c.key, ownerId: c.ownerId } }]
          : [];
      default:
        return assertNever(c);
    }
  },
  evolve(s, e) {
    switch (e.type) {
      case 'ReservationClaimed':
        return { holder: e.data.ownerId };
      case 'ReservationReleased':
        return { holder: null };
      default:
        return unexpected(e, s);
    }
  },
};

/**
 * The append that gives `r` to `ownerId` (see reservationDecider: `takeOver` for a holder known to be gone), at the
 * revision read.
 */
export const claim = (r: Reservation, ownerId: string, o: { takeOver?: boolean } = {}): DomainAppend => ({
  streamId: r.streamId,
  events: reservationDecider.decide({ type: 'Claim', key: r.key, ownerId, takeOver: o.takeOver }, { holder: r.holder }),
  expectedRevision: expected(r),
});

/** The append that frees `r` (nothing when nobody holds it), at the revision read. */
export const release = (r: Reservation): DomainAppend => ({
  streamId: r.streamId,
  events: reservationDecider.decide({ type: 'Release', key: r.key, ownerId: r.holder ?? '' }, { holder: r.holder }),
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
