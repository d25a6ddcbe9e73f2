import type { EventStore, ReadModelCheckpoint, StoredEvent } from '@svc/domain';
import { type Change, type ChangeResolver } from './resolve';

/** Log events read per page (catch-up and the live feed alike). */
const PAGE = 500;
/** Changes kept in memory for the streams at the head; a stream further behind reads the log itself. */
const KEPT = 20_000;
/**
 * Streams are woken at most this often: under a stream of small batches each wake costs every open stream a turn
 * and a socket write, so changes that come within this window go out together (at most this much later).
 */
const WAKE_EVERY_MS = 25;

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
  private unsubscribe?: () => void;
  private starting?: Promise<void>;
  private pumping = false;
  private again = false;
  private open = new Map<string, number>();
  private closed = false;
  private lastWake = 0;
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
      /** Resolves a bearer credential again (revoked, expired, context deleted: null), so an open stream ends with it. */
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
          this.unsubscribe = this.o.checkpoint.onAdvance(() => this.pump());
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
    this.run += 1;
    this.kept = [];
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
            const page = (await (this.o.readHead ?? ((a, n) => this.o.store.readAll(a, n)))(this.head, PAGE)).filter((e) => e.position <= target);
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
        this.o.log?.(`change stream: reading the log failed, trying again at the next change: ${e instanceof Error ? e.message : String(e)}`);
        setTimeout(() => this.pump(), 1000).unref();
      } finally {
        this.pumping = false;
      }
    })();
  }

  private wakeStreams() {
    if (this.wakeTimer) return;
    const wait = this.lastWake + WAKE_EVERY_MS - Date.now();
    const wake = () => {
      this.wakeTimer = undefined;
      this.lastWake = Date.now();
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
