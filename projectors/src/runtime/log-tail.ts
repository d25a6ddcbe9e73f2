import type { EventStore, StoredEvent } from '@svc/domain';

/**
 * How a subscriber reads the global log: `readAll`'s contract (events with position > `after`, oldest first, at most
 * `maxCount`).
 */
export type LogRead = (after: number, maxCount: number) => Promise<StoredEvent[]>;

export interface LogTailOptions {
  /** Events kept at most (the oldest go first). */
  maxEvents?: number;
  /** Approximate bytes kept at most (record payloads reach 1 MiB each). */
  maxBytes?: number;
  /** Events fetched per store read at least (a subscriber asking more gets more). */
  pageSize?: number;
  /**
   * How long an empty read at the head stands for "nothing new" without asking the store again, when no
   * append was announced since it began: the subscribers that finish the same batch one after another share
   * one empty read, and a subscriber's safety poll (an append another process made, not announced) still
   * reaches the store.
   */
  quietMs?: number;
  /** Deep-freezes every event handed out (tests: a subscriber that mutates a shared event throws). */
  freeze?: boolean;
}

/** A run of the log held in memory: every event with position in (lo, last event's position], none missing. */
interface Segment {
  lo: number;
  events: StoredEvent[];
  bytes: number;
}

const hi = (s: Segment) => s.events[s.events.length - 1].position;

/** Index of the first event with position > after (events sorted by position). */
function firstAfter(events: StoredEvent[], after: number): number {
  let a = 0;
  let b = events.length;
  while (a < b) {
    const m = (a + b) >>> 1;
    if (events[m].position <= after) a = m + 1;
    else b = m;
  }
  return a;
}

/** Rough heap size of a parsed JSON value: enough to bound the cache, far cheaper than serializing it. */
function approxBytes(v: unknown, depth = 0): number {
  if (typeof v === 'string') return 16 + v.length;
  if (v === null || typeof v !== 'object') return 8;
  if (depth > 32) return 64;
  let n = 32;
  if (Array.isArray(v)) for (const x of v) n += 8 + approxBytes(x, depth + 1);
  else for (const k in v) n += 24 + k.length + approxBytes((v as Record<string, unknown>)[k], depth + 1);
  return n;
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}

/**
 * One reader of the global log shared by every subscriber of a process (the
 * read-model runner, the search indexer, the reactors): the pages it read last
 * are kept, so subscribers near the head get the same parsed events from one
 * store read instead of one read (and one JSON parse) each.
 *
 * Why serving from memory never skips an event: a page `readAll(after, n)`
 * returned holds every event with position in (after, its last position] —
 * the store's contract that catch-up relies on already (positions commit in
 * order: one connection on PGlite, the append lock on a PostgreSQL server,
 * commit positions on KurrentDB), so no event of that range can appear later.
 * Only such ranges are kept (merged when they touch); nothing beyond a page's
 * last event is assumed, so a read at the end of what is held goes to the
 * store (one read at a time per position, shared by whoever asks meanwhile).
 * A short page says nothing about later appends: it is trusted as "nothing new"
 * only until the store announces an append, and for `quietMs` at most.
 *
 * The events are shared by every subscriber: handlers read them, never mutate
 * them (`freeze` enforces it in tests). Memory is bounded: past `maxEvents` or
 * `maxBytes` the lowest positions go first (subscribers far behind read the
 * store directly, page by page, as before).
 */
export class LogTail {
  private segments: Segment[] = [];
  private events = 0;
  private bytes = 0;
  /** Reads under way, by `after`: asking the same position meanwhile joins them. */
  private inflight = new Map<number, Promise<StoredEvent[]>>();
  /** Appends announced so far (the store's onAppended). */
  private generation = 0;
  /** The last short page: nothing after `position` as of `generation` (at `at`, ms). */
  private tip: { position: number; generation: number; at: number } | undefined;
  private readonly off: () => void;
  private readonly maxEvents: number;
  private readonly maxBytes: number;
  private readonly pageSize: number;
  private readonly quietMs: number;
  private readonly freeze: boolean;
  /** Store reads made (for tests and the bench). */
  readonly stats = { storeReads: 0, servedFromMemory: 0 };

  constructor(
    private readonly store: EventStore,
    o: LogTailOptions = {},
  ) {
    this.maxEvents = o.maxEvents ?? 20_000;
    this.maxBytes = o.maxBytes ?? 64 * 1024 * 1024;
    this.pageSize = o.pageSize ?? 500;
    this.quietMs = o.quietMs ?? 250;
    this.freeze = o.freeze ?? false;
    this.off = store.onAppended(() => {
      this.generation += 1;
    });
  }

  /** `readAll`'s contract, served from memory where the held pages provably cover the range. */
  read: LogRead = async (after, maxCount) => {
    const held = this.segments.find((s) => s.lo <= after && after < hi(s));
    if (held) {
      const from = firstAfter(held.events, after);
      this.stats.servedFromMemory += 1;
      return held.events.slice(from, from + maxCount);
    }
    return (await this.fetch(after, maxCount)).slice(0, maxCount);
  };

  /** Stops hearing appends; what is held is dropped. */
  close(): void {
    this.off();
    this.segments = [];
    this.events = 0;
    this.bytes = 0;
  }

  private quiet(after: number): boolean {
    const t = this.tip;
    return !!t && t.position === after && t.generation === this.generation && Date.now() - t.at < this.quietMs;
  }

  private fetch(after: number, maxCount: number): Promise<StoredEvent[]> {
    if (this.quiet(after)) return Promise.resolve([]);
    const joined = this.inflight.get(after);
    if (joined) return joined;
    const size = Math.max(maxCount, this.pageSize);
    const generation = this.generation;
    this.stats.storeReads += 1;
    const read = this.store.readAll(after, size).then((events) => {
      if (this.freeze) for (const e of events) deepFreeze(e);
      if (events.length < size)
        this.tip = { position: events.length ? events[events.length - 1].position : after, generation, at: Date.now() };
      if (events.length) this.keep(after, events);
      return events;
    });
    this.inflight.set(after, read);
    const done = () => {
      if (this.inflight.get(after) === read) this.inflight.delete(after);
    };
    read.then(done, done);
    return read;
  }

  /**
   * Holds the page (after, last]: merged with every held run it overlaps or touches, then the oldest trimmed to the
   * bounds. A held run's array is its own (read() hands out slices), so a page that only extends a run upwards is
   * pushed onto it: copying the whole run for every page cost ~17 KB of allocation per record create.
   */
  private keep(after: number, page: StoredEvent[]): void {
    // The page array is also the answer of a fetch that readers may still be joining: held runs never share it.
    let run: Segment = {
      lo: after,
      events: page.slice(),
      bytes: page.reduce((n, e) => n + approxBytes(e.data) + approxBytes(e.metadata) + 160, 0),
    };
    this.events += page.length;
    this.bytes += run.bytes;
    const rest: Segment[] = [];
    for (const s of this.segments) {
      if (s.lo <= hi(run) && run.lo <= hi(s)) run = this.merge(s, run);
      else rest.push(s);
    }
    rest.push(run);
    rest.sort((a, b) => a.lo - b.lo);
    this.segments = rest;
    this.trim();
  }

  /** Two runs that overlap or touch: the held one's events stand, the page adds what lies outside it. */
  private merge(held: Segment, page: Segment): Segment {
    const top = hi(held);
    const below = page.events.filter((e) => e.position <= held.lo);
    const above = page.events.filter((e) => e.position > top);
    const dropped = page.events.length - below.length - above.length;
    if (dropped) {
      // Events the held run already had: count them once.
      const share = page.bytes * (dropped / page.events.length);
      this.events -= dropped;
      this.bytes -= share;
      page.bytes -= share;
    }
    if (!below.length) {
      for (const e of above) held.events.push(e);
      held.lo = Math.min(held.lo, page.lo);
      held.bytes += page.bytes;
      return held;
    }
    return {
      lo: Math.min(held.lo, page.lo),
      events: [...below, ...held.events, ...above],
      bytes: held.bytes + page.bytes,
    };
  }

  /** Past the bounds: the lowest positions go (to 90 % of the bound, so trimming is not paid on every page). */
  private trim(): void {
    if (this.events <= this.maxEvents && this.bytes <= this.maxBytes) return;
    const events = Math.floor(this.maxEvents * 0.9);
    const bytes = this.maxBytes * 0.9;
    while (this.segments.length && (this.events > events || this.bytes > bytes)) {
      const s = this.segments[0];
      const per = s.bytes / s.events.length;
      const overEvents = Math.max(0, this.events - events);
      const overBytes = Math.max(0, Math.ceil((this.bytes - bytes) / per));
      const n = Math.min(s.events.length, Math.max(overEvents, overBytes, 1));
      if (n >= s.events.length) {
        this.segments.shift();
        this.events -= s.events.length;
        this.bytes -= s.bytes;
        continue;
      }
      s.lo = s.events[n - 1].position;
      s.events = s.events.slice(n);
      s.bytes -= per * n;
      this.events -= n;
      this.bytes -= per * n;
    }
  }
}

const tails = new WeakMap<EventStore, LogTail>();

/** The process's shared reader of `store` (one per store object, made on first use). */
export function logTailOf(store: EventStore, o?: LogTailOptions): LogTail {
  let tail = tails.get(store);
  if (!tail) tails.set(store, (tail = new LogTail(store, { freeze: process.env.NODE_ENV === 'test', ...o })));
  return tail;
}
