import { describe, expect, it } from 'vitest';
import type { EventStore, StoredEvent } from '@svc/domain';
import { catchUp } from './catch-up';
import { LogTail, type LogTailOptions } from './log-tail';

/** An in-memory log: sparse positions (as KurrentDB's commit positions), reads counted, optionally slow. */
function memoryLog(o: { readDelayMs?: number } = {}) {
  const events: StoredEvent[] = [];
  const listeners = new Set<() => void>();
  let next = 0;
  const stats = { reads: 0 };
  const store = {
    async readAll(after: number, max: number) {
      stats.reads += 1;
      // The snapshot is taken when the read starts; the answer arrives later (appends meanwhile are not in it).
      const page = events.filter((e) => e.position > after).slice(0, max);
      await new Promise((r) => setTimeout(r, o.readDelayMs ?? 0));
      return page.map((e) => ({ ...e, data: { ...e.data }, metadata: { ...e.metadata } }));
    },
    onAppended(l: () => void) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
  } as unknown as EventStore;
  /** Appends `n` events; `silent` leaves subscribers unwarned (another process wrote). */
  const append = (n: number, silent = false) => {
    for (let i = 0; i < n; i++) {
      next += 1 + (next % 3); // gaps between positions
      events.push({
        id: `e${next}`,
        type: 'RecordCreated',
        streamId: `s${next % 7}`,
        revision: 0,
        position: next,
        data: { n: next, nested: { tags: ['a'] } },
        metadata: { tenantId: 't' },
      } as unknown as StoredEvent);
    }
    if (!silent) for (const l of listeners) l();
  };
  return { store, append, events, stats, head: () => next };
}

/**
 * Follows the log through `read` from `from` until aborted; collects positions, as a subscriber with `batchSize` and a
 * handler delay.
 */
function subscriber(
  store: EventStore,
  read: LogTail['read'],
  from: number,
  o: { batchSize?: number; handleMs?: number; signal: AbortSignal; pollMs?: number },
) {
  const seen: number[] = [];
  const done = catchUp(
    store,
    {
      from,
      batchSize: o.batchSize ?? 50,
      signal: o.signal,
      pollMs: o.pollMs ?? 1000,
      handle: async (events) => {
        if (o.handleMs) await new Promise((r) => setTimeout(r, o.handleMs));
        seen.push(...events.map((e) => e.position));
        return events[events.length - 1].position;
      },
    },
    read,
  );
  return { seen, done };
}

const until = async (cond: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
};

const tail = (store: EventStore, o: LogTailOptions = {}) => new LogTail(store, { freeze: true, ...o });

describe('the shared log reader (LogTail)', () => {
  /** Five subscribers at different positions, with different batch sizes and speeds, while 40 appends go on. */
  async function fiveSubscribers(shared: boolean) {
    const log = memoryLog({ readDelayMs: 2 });
    log.append(300);
    const t = tail(log.store, { pageSize: 100 });
    const read = shared ? t.read : (after: number, n: number) => log.store.readAll(after, n);
    const ac = new AbortController();
    const starts = [0, 0, log.events[40].position, log.events[120].position, log.events[299].position];
    const subs = starts.map((from, i) => ({
      from,
      ...subscriber(log.store, read, from, { batchSize: [50, 200, 30, 100, 500][i], handleMs: i, signal: ac.signal }),
    }));
    for (let k = 0; k < 40; k++) {
      log.append(1 + (k % 5));
      await new Promise((r) => setTimeout(r, k % 3));
    }
    await until(() => subs.every((s) => s.seen[s.seen.length - 1] === log.head()));
    ac.abort();
    await Promise.all(subs.map((s) => s.done));
    for (const s of subs) expect(s.seen).toEqual(log.events.map((e) => e.position).filter((p) => p > s.from));
    return { reads: log.stats.reads, fromMemory: t.stats.servedFromMemory };
  }

  it(
    'subscribers at different positions each see every later event once, in order, while appends go on; the ' +
      'store is read far less than alone',
    async () => {
      const alone = await fiveSubscribers(false);
      const shared = await fiveSubscribers(true);
      expect(shared.fromMemory).toBeGreaterThan(0);
      expect(shared.reads).toBeLessThan(alone.reads / 2);
    },
  );

  it(
    'concurrent reads at the same position make one store read; a short page is trusted only until the next ' +
      'append',
    async () => {
      const log = memoryLog({ readDelayMs: 5 });
      log.append(10);
      const t = tail(log.store);
      const pages = await Promise.all([t.read(0, 5), t.read(0, 500), t.read(0, 3)]);
      expect(pages.map((p) => p.length)).toEqual([5, 10, 3]);
      expect(log.stats.reads).toBe(1);
      // Inside what is held: from memory.
      expect((await t.read(log.events[2].position, 100)).map((e) => e.position)).toEqual(
        log.events.slice(3).map((e) => e.position),
      );
      expect(log.stats.reads).toBe(1);
      // At the end of what is held, just after a short page with no append since: nothing new, without a read.
      expect(await t.read(log.head(), 100)).toEqual([]);
      expect(log.stats.reads).toBe(1);
      // An append is announced: the next read at the end goes to the store.
      log.append(2);
      expect((await t.read(log.events[9].position, 100)).map((e) => e.position)).toEqual(
        log.events.slice(10).map((e) => e.position),
      );
      expect(log.stats.reads).toBe(2);
    },
  );

  it(
    "an append nobody announced (another process) is still found by a subscriber's poll once the short page " +
      'is older than quietMs',
    async () => {
      const log = memoryLog();
      log.append(3);
      const t = tail(log.store, { quietMs: 20 });
      const ac = new AbortController();
      const s = subscriber(log.store, t.read, 0, { signal: ac.signal, pollMs: 30 });
      await until(() => s.seen.length === 3);
      log.append(4, true);
      await until(() => s.seen.length === 7, 2000);
      ac.abort();
      await s.done;
      expect(s.seen).toEqual(log.events.map((e) => e.position));
    },
  );

  it(
    'a subscriber far behind what is held reads the store page by page and misses nothing; memory stays ' + 'bounded',
    async () => {
      const log = memoryLog();
      log.append(2_000);
      const t = tail(log.store, { maxEvents: 300, pageSize: 100 });
      const ac = new AbortController();
      // One subscriber at the head keeps the newest pages held...
      const head = subscriber(log.store, t.read, log.events[1_900].position, { signal: ac.signal });
      await until(() => head.seen.length === 99);
      // ...one starts from the beginning, far behind them.
      const behind = subscriber(log.store, t.read, 0, { batchSize: 70, signal: ac.signal });
      for (let k = 0; k < 20; k++) {
        log.append(7);
        await new Promise((r) => setTimeout(r, 1));
      }
      await until(() => behind.seen.length === log.events.length && head.seen[head.seen.length - 1] === log.head());
      ac.abort();
      await Promise.all([head.done, behind.done]);
      expect(behind.seen).toEqual(log.events.map((e) => e.position));
      expect(head.seen).toEqual(log.events.slice(1_901).map((e) => e.position));
      const held = (t as unknown as { events: number }).events;
      expect(held).toBeLessThanOrEqual(300);
    },
  );

  it('events handed out are shared and frozen: a handler mutating one throws (tests run with freeze on)', async () => {
    const log = memoryLog();
    log.append(3);
    const t = tail(log.store);
    const [a] = await t.read(0, 1);
    const [b] = await t.read(0, 1);
    expect(a).toBe(b);
    expect(() => {
      (a.data as unknown as { nested: { tags: string[] } }).nested.tags.push('x');
    }).toThrow(TypeError);
    expect(() => {
      (a.metadata as { tenantId: string | null }).tenantId = 'other';
    }).toThrow(TypeError);
  });

  it(
    'abort ends a subscription waiting on a slow read; a failed read reaches every reader that joined it ' +
      'and is retried',
    async () => {
      const log = memoryLog({ readDelayMs: 50 });
      log.append(5);
      const t = tail(log.store);
      const ac = new AbortController();
      const s = subscriber(log.store, t.read, 0, { signal: ac.signal });
      ac.abort();
      await s.done;
      // A failing store: joined readers all see the error; the next read tries the store again.
      let fail = true;
      const readAll = log.store.readAll.bind(log.store);
      (log.store as { readAll: EventStore['readAll'] }).readAll = (after, n) =>
        fail ? Promise.reject(new Error('down')) : readAll(after, n);
      const t2 = tail(log.store);
      const results = await Promise.allSettled([t2.read(0, 10), t2.read(0, 10)]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
      fail = false;
      expect((await t2.read(0, 10)).length).toBe(5);
    },
  );

  it('a page already handed to a reader never changes when later pages extend the run it was kept in', async () => {
    const log = memoryLog();
    log.append(10);
    const t = tail(log.store, { pageSize: 10 });
    const first = await t.read(0, 10);
    const positions = first.map((e) => e.position);
    log.append(10);
    const second = await t.read(positions[positions.length - 1], 10);
    expect(second).toHaveLength(10);
    expect(first.map((e) => e.position)).toEqual(positions);
    // Both pages are now one held run, served from memory in order.
    const all = await t.read(0, 100);
    expect(all.map((e) => e.position)).toEqual(log.events.map((e) => e.position));
    expect(t.stats.servedFromMemory).toBeGreaterThan(0);
  });
});
