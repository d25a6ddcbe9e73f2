import type { EventStore, ReadModelCheckpoint, StoredEvent } from '@svc/domain';
import { type Change, type ChangeResolver } from './resolve';

/** The `id:`, `event:` and `data:` lines of one change (JSON has no raw newlines), encoded once for every stream. */
export const changeFrame = (c: Change): Buffer =>
  (c.frame ??= Buffer.from(
    `id: ${c.position}\nevent: ${c.type}\ndata: ` +
      JSON.stringify({
        position: c.position,
        type: c.type,
        entityId: c.entityId,
        typeName: c.typeName,
        version: c.version,
        at: c.at,
        entity: c.entity,
      }) +
      '\n\n',
  ));

/** The frames of the changes a stream wants, in log order, as one buffer (null when it wants none of them). */
export interface FrameBatch {
  frames: Buffer | null;
  count: number;
  bytes: number;
}

/** Encodes the wanted changes of `changes` into one batch. */
export function frameBatch(changes: readonly Change[], wanted: (c: Change) => boolean): FrameBatch {
  const out: Buffer[] = [];
  let bytes = 0;
  for (const c of changes) {
    if (!wanted(c)) continue;
    const f = changeFrame(c);
    out.push(f);
    bytes += f.length;
  }
  return {
    frames: out.length === 0 ? null : out.length === 1 ? out[0] : Buffer.concat(out, bytes),
    count: out.length,
    bytes,
  };
}

/**
 * A stream at the head, served by the feed at each wake (fan-out) rather than reading for itself: streams with the
 * same cursor and the same filter share one filtering and one encoded buffer.
 */
export interface LiveStream {
  /** Everything up to here was sent to it or left out by its filter. */
  cursor: number;
  /** Streams with equal keys want exactly the same changes (same visibility, kinds and types). */
  readonly filterKey: string;
  wanted(c: Change): boolean;
  /** The changes in (cursor, head] it wants (perhaps none); it moves its cursor to `head`. */
  deliver(batch: FrameBatch, head: number): void;
  /** What it has not seen left the memory: it leaves the fan-out and reads the rest itself. */
  fellBehind(): void;
}

/** Log events read per page (catch-up and the live feed alike). */
const PAGE = 500;
/** Changes kept in memory for the streams at the head; a stream further behind reads the log itself. */
const KEPT = 20_000;
/**
 * The log is read (and its page resolved against the read models) at most this often, and no sooner than the streams'
 * next wake (wakeEveryMs): under a stream of small batches each read costs queries, so changes that come within this
 * window are read together.
 */
const READ_EVERY_MS = 25;
/**
 * The streams at the head are woken at most this often. Each wake costs every one of them a socket write (a system
 * call on each side, whatever the bytes), so the window grows with their number: 25 ms, plus 3 ms per 4 streams,
 * at most 100 ms (reached at 100 streams). Changes within a window go out together, at most that much later.
 */
export const wakeEveryMs = (streams: number) => Math.min(100, READ_EVERY_MS + Math.floor((3 * streams) / 4));

/**
 * The process's one follower of the log for its change streams (GET /v1/changes). It follows the read models'
 * checkpoint, not the appends: an event is read from the log and announced once the read models have applied it,
 * so its `entity` is what a GET returns and the client can GET it. Each page is resolved once (resolve.ts) for every
 * stream; the last changes are kept so that streams at the head take them from memory. A stream that starts
 * behind them (Last-Event-ID, startFrom) pages through the log from its position up to the followed one, then
 * joins. Positions are the log's global positions, so where a stream resumes does not depend on which process or
 * which run of it answers. It runs only while a stream is open.
 */
export class ChangeFeed {
  /** Everything up to here is resolved into `kept` (or was before the oldest kept change). */
  private head = 0;
  /** Changes in (floor, head], oldest first. */
  private kept: Change[] = [];
  private floor = 0;
  private readonly wakers = new Set<() => void>();
  /** Streams at the head, sent each wake's changes by fanOut. */
  private readonly live = new Set<LiveStream>();
  private unsubscribe?: () => void;
  private starting?: Promise<void>;
  private pumping = false;
  private again = false;
  private open = new Map<string, number>();
  private closed = false;
  private lastWake = 0;
  private lastPump = 0;
  private pumpTimer?: NodeJS.Timeout;
  private wakeTimer?: NodeJS.Timeout;
  /** Moves each time following starts or stops: a page read for an earlier run is dropped, not added to a later one. */
  private run = 0;

  constructor(
    private readonly o: {
      store: EventStore;
      /**
       * How the head is read (default `store.readAll`): the process's shared log reader where it has one, so the
       * page the projection runner just read is not read from the store again. Catch-up reads go to the store.
       */
      readHead?: (after: number, maxCount: number) => Promise<StoredEvent[]>;
      checkpoint: ReadModelCheckpoint;
      resolver: ChangeResolver;
      /** Most open streams per context in this process (CHANGE_STREAMS_PER_CONTEXT). */
      perContext: number;
      /**
       * Resolves a bearer credential again (revoked, expired, context deleted: null), so an open stream ends with it.
       */
      credentials?: { resolve(token: string): Promise<unknown> };
      log?: (msg: string) => void;
    },
  ) {}

  get perContext() {
    return this.o.perContext;
  }

  /** Whether the credential a stream was opened with still works (true when this process cannot tell). */
  async stillValid(token: string | null): Promise<boolean> {
    if (!this.o.credentials || !token) return true;
    return (await this.o.credentials.resolve(token).catch(() => true)) != null;
  }

  /** Counts a stream of a context in; false when the context is at its limit. */
  admit(context: string): boolean {
    const n = this.open.get(context) ?? 0;
    if (this.closed || n >= this.o.perContext) return false;
    this.open.set(context, n + 1);
    return true;
  }

  release(context: string) {
    const n = (this.open.get(context) ?? 1) - 1;
    if (n > 0) this.open.set(context, n);
    else this.open.delete(context);
  }

  /** Starts following (at the read models' position) when the first stream opens; resolves to that head. */
  async join(wake: () => void): Promise<number> {
    this.wakers.add(wake);
    if (!this.unsubscribe) {
      this.starting ??= (async () => {
        const at = await this.o.checkpoint.position();
        if (!this.unsubscribe) {
          this.run += 1;
          this.head = this.floor = at;
          this.kept = [];
          this.unsubscribe = this.o.checkpoint.onAdvance(() => this.pumpSoon());
        }
      })().finally(() => (this.starting = undefined));
      await this.starting;
    }
    return this.head;
  }

  leave(wake: () => void) {
    this.wakers.delete(wake);
    if (this.wakers.size || !this.unsubscribe) return;
    // Nobody listens: stop following; the next stream starts again at the head.
    this.unsubscribe();
    this.unsubscribe = undefined;
    clearTimeout(this.pumpTimer);
    this.pumpTimer = undefined;
    this.run += 1;
    this.kept = [];
  }

  /** Serves a stream from the feed's wakes from its cursor on (it has read up to the head, see `after`). */
  attach(s: LiveStream) {
    if (!this.closed) this.live.add(s);
  }

  detach(s: LiveStream) {
    this.live.delete(s);
  }

  /**
   * Sends every live stream what came since its cursor: one filtering and one buffer per (cursor, filter key),
   * however many streams share them (all of a context's dashboards, typically).
   */
  private fanOut() {
    const head = this.head;
    const batches = new Map<string, FrameBatch>();
    for (const s of this.live) {
      if (s.cursor >= head) continue;
      if (s.cursor < this.floor) {
        this.live.delete(s);
        s.fellBehind();
        continue;
      }
      const key = `${s.cursor}\u0000${s.filterKey}`;
      let b = batches.get(key);
      if (!b) batches.set(key, (b = frameBatch(this.kept.slice(firstAfter(this.kept, s.cursor)), (c) => s.wanted(c))));
      s.deliver(b, head);
    }
  }

  /** The position up to which changes are known. */
  get position() {
    return this.head;
  }

  /**
   * The changes after `after` up to the head, and where the caller is then. From memory when `after` is within what
   * is kept; else one page of the log read and resolved for this caller alone (catch-up).
   */
  async after(after: number): Promise<{ changes: Change[]; next: number }> {
    const head = this.head;
    if (after >= head) return { changes: [], next: after };
    if (after >= this.floor) return { changes: this.kept.slice(firstAfter(this.kept, after)), next: head };
    const page = (await this.o.store.readAll(after, PAGE)).filter((e) => e.position <= head);
    const next = page.length === PAGE ? page[page.length - 1].position : head;
    return { changes: await this.o.resolver.resolve(page), next };
  }

  /** Pumps now, or at the end of the current read window. */
  private pumpSoon() {
    if (this.pumpTimer) return;
    const go = () => {
      this.pumpTimer = undefined;
      this.lastPump = Date.now();
      this.pump();
    };
    // What is read before the streams' next wake waits for it anyway.
    const wait = this.lastPump + wakeEveryMs(this.live.size) - Date.now();
    if (wait <= 0) go();
    else this.pumpTimer = setTimeout(go, wait);
  }

  /** Reads and resolves the log up to the read models' position, then wakes the streams. One run at a time. */
  private pump() {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void (async () => {
      try {
        do {
          this.again = false;
          const target = await this.o.checkpoint.position();
          const run = this.run;
          while (this.unsubscribe && run === this.run && this.head < target) {
            const page = (await (this.o.readHead ?? ((a, n) => this.o.store.readAll(a, n)))(this.head, PAGE)).filter(
              (e) => e.position <= target,
            );
            const changes = await this.o.resolver.resolve(page);
            if (run !== this.run) break;
            this.kept.push(...changes);
            this.head = page.length === PAGE ? page[page.length - 1].position : target;
            if (this.kept.length > KEPT) {
              const drop = this.kept.length - KEPT;
              this.floor = this.kept[drop - 1].position;
              // Changes of one position stay together: the floor is below all of them or above all.
              let cut = drop;
              while (cut < this.kept.length && this.kept[cut].position === this.floor) cut++;
              this.kept = this.kept.slice(cut);
            }
            this.wakeStreams();
          }
        } while (this.again && this.unsubscribe);
      } catch (e) {
        this.o.log?.(
          `change stream: reading the log failed, trying again at the next change: ` +
            `${e instanceof Error ? e.message : String(e)}`,
        );
        setTimeout(() => this.pump(), 1000).unref();
      } finally {
        this.pumping = false;
      }
    })();
  }

  private wakeStreams() {
    if (this.wakeTimer) return;
    const wait = this.lastWake + wakeEveryMs(this.live.size) - Date.now();
    const wake = () => {
      this.wakeTimer = undefined;
      this.lastWake = Date.now();
      this.fanOut();
      for (const w of this.wakers) w();
    };
    if (wait <= 0) wake();
    else this.wakeTimer = setTimeout(wake, wait);
  }

  /** Ends every stream (the process is stopping) and stops following the checkpoint. */
  async close() {
    this.closed = true;
    clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    clearTimeout(this.pumpTimer);
    this.pumpTimer = undefined;
    this.live.clear();
    for (const w of [...this.wakers]) w();
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await this.o.checkpoint.close();
  }

  get closing() {
    return this.closed;
  }
}

/** Index of the first change after `position` (binary search: `kept` is in log order). */
function firstAfter(kept: Change[], position: number): number {
  let lo = 0;
  let hi = kept.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (kept[mid].position <= position) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
