import { describe, expect, it } from 'vitest';
import { pageKey, pageKeyPrefix, ReadCache } from './read-cache';

/** A load the test finishes when it wants, counting how often the cache asked for it. */
function gate<V>(value: V) {
  let release!: () => void;
  const done = new Promise<void>((r) => (release = r));
  const calls = { n: 0 };
  return { calls, release, load: async () => (calls.n++, await done, value) };
}

describe('ReadCache', () => {
  it('does not keep a load that raced with an invalidation of its key', async () => {
    const c = new ReadCache<string>();
    const g = gate('old');
    const p = c.get('a', g.load);
    c.invalidate(['a']);
    g.release();
    expect(await p).toBe('old');
    const fresh = gate('new');
    fresh.release();
    expect(await c.get('a', fresh.load)).toBe('new');
    expect(fresh.calls.n).toBe(1);
  });

  it('keeps a load that raced with the invalidation of another key', async () => {
    // Under a steady stream of writes every batch invalidates its records; reads of other records must still be cached.
    const c = new ReadCache<string>();
    const g = gate('a1');
    const p = c.get('a', g.load);
    c.invalidate(['b']);
    g.release();
    await p;
    const again = gate('a2');
    again.release();
    expect(await c.get('a', again.load)).toBe('a1');
    expect(again.calls.n).toBe(0);
  });

  it('keeps no load in flight across clear()', async () => {
    const c = new ReadCache<string>();
    const g = gate('old');
    const p = c.get('a', g.load);
    c.clear();
    g.release();
    await p;
    const next = gate('new');
    next.release();
    expect(await c.get('a', next.load)).toBe('new');
  });

  it('never keeps the older of two overlapping loads of a key invalidated between them', async () => {
    const c = new ReadCache<string>();
    const first = gate('old');
    const p1 = c.get('a', first.load);
    c.invalidate(['a']);
    const second = gate('new');
    const p2 = c.get('a', second.load);
    second.release();
    await p2;
    first.release();
    await p1;
    const third = gate('newest');
    third.release();
    expect(await c.get('a', third.load)).not.toBe('old');
  });

  it('clearPrefix drops one context’s pages and its loads in flight, and leaves the others', async () => {
    const c = new ReadCache<string>();
    const mine = pageKey('t1', 'c1', 'list', 1);
    const other = pageKey('t1', 'c2', 'list', 1);
    const kept = gate('c2 page');
    kept.release();
    await c.get(other, kept.load);
    const inFlightMine = gate('c1 old');
    const inFlightOther = gate('c2 other');
    const p1 = c.get(mine, inFlightMine.load);
    const p2 = c.get(pageKey('t1', 'c2', 'list', 2), inFlightOther.load);
    c.clearPrefix(pageKeyPrefix('t1', 'c1'));
    inFlightMine.release();
    inFlightOther.release();
    await Promise.all([p1, p2]);
    const probe = (v: string) => {
      const g = gate(v);
      g.release();
      return g;
    };
    const m = probe('c1 new');
    expect(await c.get(mine, m.load)).toBe('c1 new');
    const o1 = probe('x');
    expect(await c.get(other, o1.load)).toBe('c2 page');
    const o2 = probe('y');
    expect(await c.get(pageKey('t1', 'c2', 'list', 2), o2.load)).toBe('c2 other');
    expect(o1.calls.n + o2.calls.n).toBe(0);
  });

  it('a prefix of one context is not the prefix of another whose id starts the same', () => {
    expect(pageKey('t1', 'c10', 'x').startsWith(pageKeyPrefix('t1', 'c1'))).toBe(false);
  });
});
