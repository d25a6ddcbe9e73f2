import { describe, expect, it } from 'vitest';
import type { EventStore, ReadModelCheckpoint, StoredEvent } from '@svc/domain';
import { ChangeFeed } from './feed';
import type { Change, ChangeResolver } from './resolve';

/** A log of `n` positions with gaps (every third position missing), each event one change; the read models at `applied`. */
function fixture(n: number) {
  const log = Array.from({ length: n }, (_, i) => i + 1)
    .filter((p) => p % 3 !== 0)
    .map((position) => ({ position }) as StoredEvent);
  const store = {
    readAll: async (after: number, max: number) => log.filter((e) => e.position > after).slice(0, max),
  } as unknown as EventStore;
  const listeners = new Set<() => void>();
  let applied = 0;
  const checkpoint: ReadModelCheckpoint = {
    position: async () => applied,
    onAdvance: (l) => (listeners.add(l), () => listeners.delete(l)),
    close: async () => {},
  };
  const resolver = {
    resolve: async (events: StoredEvent[]) => events.map((e) => ({ position: e.position }) as Change),
  } as unknown as ChangeResolver;
  const feed = new ChangeFeed({ store, checkpoint, resolver, perContext: 2 });
  const advance = async (to: number, following = true) => {
    applied = to;
    for (const l of listeners) l();
    for (let i = 0; following && i < 2000 && feed.position < to; i++) await new Promise((r) => setTimeout(r, 1));
  };
  /** What a stream from `cursor` receives up to the feed's position. */
  const drain = async (cursor: number) => {
    const got: number[] = [];
    for (let i = 0; i < 10_000 && cursor < feed.position; i++) {
      const { changes, next } = await feed.after(cursor);
      got.push(...changes.map((c) => c.position));
      cursor = next;
    }
    return got;
  };
  const expected = (from: number, to: number) => log.filter((e) => e.position > from && e.position <= to).map((e) => e.position);
  return { feed, advance, drain, expected };
}

describe('ChangeFeed', () => {
  it('a stream from any position gets every change after it up to the read models, once, in order (memory and log alike)', async () => {
    const f = fixture(60_000);
    await f.advance(90, false);
    expect(await f.feed.join(() => {})).toBe(90);
    // Only what the read models applied is announced.
    await f.advance(30_000);
    expect(f.feed.position).toBe(30_000);
    await f.advance(60_000);
    // More than the kept changes went by: a stream from 90 reads the log, then joins memory.
    for (const from of [0, 90, 100, 20_000, 59_990, 60_000]) expect(await f.drain(from)).toEqual(f.expected(from, 60_000));
  });

  it('follows from the read models\' position when the first stream joins, and stops when the last leaves', async () => {
    const f = fixture(1_000);
    await f.advance(500, false);
    const wake = () => {};
    expect(await f.feed.join(wake)).toBe(500);
    f.feed.leave(wake);
    await f.advance(800, false);
    await new Promise((r) => setTimeout(r, 20));
    // Nobody listened: it did not follow; the next stream starts at the read models' position.
    expect(f.feed.position).toBe(500);
    expect(await f.feed.join(wake)).toBe(800);
    await f.advance(1_000);
    expect(await f.drain(700)).toEqual(f.expected(700, 1_000));
  });

  it('admits at most perContext streams of a context; a released one makes room', () => {
    const f = fixture(10);
    expect([f.feed.admit('a'), f.feed.admit('a'), f.feed.admit('a'), f.feed.admit('b')]).toEqual([true, true, false, true]);
    f.feed.release('a');
    expect(f.feed.admit('a')).toBe(true);
  });
});
