import { Readable } from 'node:stream';
import type { Principal } from '@svc/contracts';
import type { UsageCharges } from '@svc/domain';
import { type ChangeFeed, type FrameBatch, frameBatch, type LiveStream } from './feed';
import type { Change } from './resolve';

/** A comment line while nothing else is sent, so that proxies and clients see the stream alive. */
export const CHANGE_PING_MS = 15_000;
/**
 * How often an open stream checks its credential again: a revoked token (or one of a deleted context) stops receiving
 * within this.
 */
const RECHECK_MS = 5_000;
/** How often a stream looks at its ping and credential clocks. */
const TICK_MS = 1_000;
/**
 * Bytes a stream holds for a client that reads slower than the changes come. Past it the stream leaves the feed's
 * fan-out and, once the client has read, reads on from its cursor itself (from memory or the log): nothing is lost,
 * the memory a slow client costs stays bounded.
 */
const BUFFERED_BYTES = 256 * 1024;

/**
 * The body of one GET /v1/changes response. At the head it is one of the feed's live streams: each wake the feed
 * hands it the frames it wants (built once for all streams of the same filter) and it pushes them as one chunk, so
 * an idle stream costs nothing and a busy one one socket write per wake. Behind the head (Last-Event-ID, startFrom,
 * a slow client) it reads pages itself until it is at the head again. `cursor` only moves past what was pushed or
 * left out by the filter: no gap, no duplicate.
 */
export class ChangeStream extends Readable implements LiveStream {
  cursor: number;
  readonly filterKey: string;
  private stopped = false;
  private reading = false;
  /** Stopped pushing because the client is behind (push answered false): `_read` resumes. */
  private blocked = false;
  private lastSent = Date.now();
  private checkedAt = Date.now();
  private readonly tick: NodeJS.Timeout;

  constructor(
    private readonly o: {
      feed: ChangeFeed;
      principal: Principal;
      token: string | null;
      cursor: number;
      filterKey: string;
      wanted: (c: Change) => boolean;
      meter?: UsageCharges;
      /** Called once when the stream stops (client gone, credential ended, process stopping). */
      onStop: () => void;
    },
  ) {
    super({ highWaterMark: BUFFERED_BYTES });
    this.cursor = o.cursor;
    this.filterKey = o.filterKey;
    // Something at once: the response's head leaves now, not with the first change.
    this.push(': stream open\n\n');
    this.tick = setInterval(() => this.onTick(), TICK_MS);
    this.tick.unref();
    void this.readOn();
  }

  wanted(c: Change): boolean {
    return this.o.wanted(c);
  }

  /** The feed moved (or is closing): a stream it did not serve (behind, or joining) reads on. */
  readonly wake = () => {
    if (this.o.feed.closing) this.stop();
    else if (!this.blocked && this.cursor < this.o.feed.position) void this.readOn();
  };

  deliver(batch: FrameBatch, head: number) {
    this.cursor = head;
    if (batch.count) this.send(batch);
  }

  fellBehind() {
    void this.readOn();
  }

  override _read() {
    if (!this.blocked) return;
    this.blocked = false;
    void this.readOn();
  }

  /** Ends the stream (idempotent): out of the feed, the context's slot freed, the body ended. */
  stop() {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.tick);
    this.o.feed.detach(this);
    this.o.onStop();
    this.push(null);
  }

  /** Pushes one batch; false when the client is behind (the stream then leaves the fan-out until it has read). */
  private send(batch: FrameBatch): boolean {
    // A change is sent only to a credential that still works: expired, the stream ends.
    const p = this.o.principal;
    if (p.expiresAt !== undefined && Date.now() >= p.expiresAt) {
      this.stop();
      return false;
    }
    this.lastSent = Date.now();
    // Each event is one read of its bytes, counted together.
    this.o.meter?.countRead(p, batch.bytes, undefined, batch.count);
    if (this.push(batch.frames)) return true;
    this.o.feed.detach(this);
    this.blocked = true;
    return false;
  }

  /** Reads pages from the cursor until at the head, then joins the feed's fan-out. One run at a time. */
  private async readOn() {
    if (this.reading || this.stopped) return;
    this.reading = true;
    try {
      while (!this.stopped && !this.blocked) {
        if (this.o.feed.closing) return this.stop();
        if (this.cursor >= this.o.feed.position) {
          this.o.feed.attach(this);
          return;
        }
        this.o.feed.detach(this);
        const { changes, next } = await this.o.feed.after(this.cursor);
        if (this.stopped) return;
        this.cursor = next;
        const batch = frameBatch(changes, this.o.wanted);
        if (batch.count && !this.send(batch)) return;
      }
    } catch (e) {
      this.destroy(e instanceof Error ? e : undefined);
      this.stop();
    } finally {
      this.reading = false;
    }
  }

  private onTick() {
    const now = Date.now();
    const p = this.o.principal;
    if (p.expiresAt !== undefined && now >= p.expiresAt) return this.stop();
    if (now - this.checkedAt >= RECHECK_MS) {
      this.checkedAt = now;
      void this.o.feed.stillValid(this.o.token).then((ok) => ok || this.stop());
    }
    if (now - this.lastSent >= CHANGE_PING_MS) {
      this.lastSent = now;
      this.push(': ping\n\n');
    }
  }
}
