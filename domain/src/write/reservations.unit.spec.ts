import { describe, expect, it } from 'vitest';
import { given } from '../shared/given-when-then.test-support';
import { claim, release, type ReservationEvent, reservationDecider } from './reservations';

const claimed = (ownerId: string): ReservationEvent => ({ type: 'ReservationClaimed', data: { key: 'k', ownerId } });
const released = (ownerId: string): ReservationEvent => ({ type: 'ReservationReleased', data: { key: 'k', ownerId } });

describe('a unique value (reservationDecider)', () => {
  it('a free value is claimed; a value its owner holds already needs nothing', () => {
    given(reservationDecider)
      .when({ type: 'Claim', key: 'k', ownerId: 'a' })
      .then([claimed('a')]);
    given(reservationDecider, [claimed('a')])
      .when({ type: 'Claim', key: 'k', ownerId: 'a' })
      .then([]);
    given(reservationDecider, [claimed('a'), released('a')])
      .when({ type: 'Claim', key: 'k', ownerId: 'b' })
      .then([claimed('b')]);
  });

  it('a value another holds is never taken silently: only a takeover (its holder is gone) claims it', () => {
    given(reservationDecider, [claimed('a')])
      .when({ type: 'Claim', key: 'k', ownerId: 'b' })
      .thenThrows('INTERNAL');
    given(reservationDecider, [claimed('a')])
      .when({ type: 'Claim', key: 'k', ownerId: 'b', takeOver: true })
      .then([claimed('b')]);
  });

  it("only the holder releases a value; releasing a free value or another holder's does nothing", () => {
    given(reservationDecider, [claimed('a')])
      .when({ type: 'Release', key: 'k', ownerId: 'a' })
      .then([released('a')]);
    given(reservationDecider, [claimed('a')])
      .when({ type: 'Release', key: 'k', ownerId: 'b' })
      .then([]);
    given(reservationDecider).when({ type: 'Release', key: 'k', ownerId: 'a' }).then([]);
    expect(given(reservationDecider, [claimed('a'), released('a')]).state()).toEqual({ holder: null });
  });

  it('claim and release append at the revision read, so a concurrent change of the value conflicts', () => {
    expect(claim({ streamId: 's', key: 'k', holder: null, revision: -1 }, 'a')).toEqual({
      streamId: 's',
      events: [claimed('a')],
      expectedRevision: 'no_stream',
    });
    expect(release({ streamId: 's', key: 'k', holder: 'a', revision: 3 })).toEqual({
      streamId: 's',
      events: [released('a')],
      expectedRevision: 3,
    });
  });
});
