import { describe, expect, it } from 'vitest';
import type { EventStore, ReadModelCheckpoint, StoredEvent } from '@svc/domain';
import type { Principal } from '@svc/contracts';
import { ChangeFeed, wakeEveryMs } from './feed';
import type { Change, ChangeResolver } from './resolve';
import { ChangeStream } from './stream';

/**
 * A log of `n` positions with gaps (every third position missing), each event one change; the read models at `applied`.
 */
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
  const expected = (from: number, to: number) =>
    log.filter((e) => e.position > from && e.position <= to).map((e) => e.position);
  return { feed, advance, drain, expected };
}

describe('ChangeFeed', () => {
  it(
    'a stream from any position gets every change after it up to the read models, once, in order (memory ' +
      'and log alike)',
    async () => {
      const f = fixture(60_000);
      await f.advance(90, false);
      expect(await f.feed.join(() => {})).toBe(90);
      // Only what the read models applied is announced.
      await f.advance(30_000);
      expect(f.feed.position).toBe(30_000);
      await f.advance(60_000);
      // More than the kept changes went by: a stream from 90 reads the log, then joins memory.
      for (const from of [0, 90, 100, 20_000, 59_990, 60_000])
        expect(await f.drain(from)).toEqual(f.expected(from, 60_000));
    },
  );

  it("follows from the read models' position when the first stream joins, and stops when the last leaves", async () => {
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
    expect([f.feed.admit('a'), f.feed.admit('a'), f.feed.admit('a'), f.feed.admit('b')]).toEqual([
      true,
      true,
      false,
      true,
    ]);
    f.feed.release('a');
    expect(f.feed.admit('a')).toBe(true);
  });

  it(
    'streams at the head (fan-out) get each change they want once, in order; a client that stops reading ' +
      'falls out of the fan-out and, reading again, gets the rest',
    async () => {
      const f = fixture(60_000);
      await f.advance(100, false);
      const open = async (filterKey: string, wanted: (c: Change) => boolean) => {
        let s: ChangeStream | undefined;
        const cursor = await f.feed.join(() => s?.wake());
        s = new ChangeStream({
          feed: f.feed,
          principal: {} as Principal,
          token: null,
          cursor,
          filterKey,
          wanted,
          onStop: () => {},
        });
        const got: number[] = [];
        const read = () =>
          s.on('data', (b: Buffer) =>
            got.push(...[...b.toString().matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))),
          );
        return { s, got, read };
      };
      const a = await open('all', () => true);
      const b = await open('all', () => true);
      const even = await open('even', (c) => c.position % 2 === 0);
      const slow = await open('all', () => true);
      for (const x of [a, b, even]) x.read();
      // 60,000 changes, more than the feed keeps: the live streams fall behind it too and read the log.
      await f.advance(30_000);
      await f.advance(60_000);
      const done = () => [a, b, even].every((x) => x.s.cursor === 60_000);
      for (let i = 0; i < 2000 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
      // The slow client has not read: the stream holds a bounded amount and waits, its cursor behind.
      expect(slow.s.cursor).toBeLessThan(60_000);
      slow.read();
      for (let i = 0; i < 2000 && slow.s.cursor < 60_000; i++) await new Promise((r) => setTimeout(r, 5));
      expect(a.got).toEqual(f.expected(100, 60_000));
      expect(b.got).toEqual(a.got);
      expect(even.got).toEqual(a.got.filter((p) => p % 2 === 0));
      expect(slow.got).toEqual(a.got);
      for (const x of [a, b, even, slow]) x.s.stop();
    },
  );
  it(
    'with many streams open, changes close together reach each stream in one write per wake window (100 ms ' +
      'for 100 streams)',
    async () => {
      const f = fixture(1_000);
      await f.advance(10, false);
      const streams: { s: ChangeStream; chunks: number; got: number }[] = [];
      for (let i = 0; i < 100; i++) {
        let s: ChangeStream | undefined;
        const cursor = await f.feed.join(() => s?.wake());
        s = new ChangeStream({
          feed: f.feed,
          principal: {} as Principal,
          token: null,
          cursor,
          filterKey: 'all',
          wanted: () => true,
          onStop: () => {},
        });
        const x = { s, chunks: 0, got: 0 };
        s.on('data', (b: Buffer) => {
          const n = [...b.toString().matchAll(/^id: /gm)].length;
          if (n) ((x.chunks += 1), (x.got += n));
        });
        streams.push(x);
      }
      expect([wakeEveryMs(1), wakeEveryMs(100), wakeEveryMs(1000)]).toEqual([25, 100, 100]);
      await new Promise((r) => setTimeout(r, 100));
      // One change applied every 10 ms for 400 ms.
      const started = performance.now();
      for (let to = 11; to <= 50; to++) {
        await f.advance(to, false);
        await new Promise((r) => setTimeout(r, 10));
      }
      for (let i = 0; i < 2000 && streams.some((x) => x.s.cursor < 50); i++) await new Promise((r) => setTimeout(r, 5));
      const elapsed = performance.now() - started;
      for (const x of streams) {
        expect(x.got).toBe(f.expected(10, 50).length);
        expect(x.chunks).toBeLessThanOrEqual(Math.ceil(elapsed / wakeEveryMs(100)) + 1);
      }
      for (const x of streams) x.s.stop();
    },
  );
});
