import { performance } from 'node:perf_hooks';

/** Requests this process began to serve (its HTTP edge counts them; probes and scrapes aside). */
let requestsBegun = 0;

/** Called by the HTTP edge for each request a client sent (not /healthz, /readyz, /metrics). */
export function noteRequest(): void {
  requestsBegun += 1;
}

/**
 * Whether this process's requests are keeping its event loop busy: the event loop's own utilisation (the share of
 * time it was running callbacks) over the last `windowMs` is above `busyAbove`, and at least `minRequests`
 * requests began in that window. The embedding pool asks before each call for an indexing backlog
 * (`PassagePacing`): the model processes run below the service in the scheduler, but on a 2-core machine they
 * still share the cores' caches and execution units with the API, and took 20-40% of its read throughput while a
 * backlog drained. The count keeps the indexer's own work (its commits, the keyword leg) from pacing it when no
 * one is asking: with the loop's utilisation alone, a bulk load ran at two thirds of the model's rate. Sampled
 * lazily: nothing runs while nobody asks.
 */
export class RequestPressure {
  private last: { idle: number; active: number };
  private at: number;
  private value = 0;
  private lastRequests: number;
  private recentRequests = 0;
  private readonly sample: () => { idle: number; active: number };
  private readonly requests: () => number;
  private readonly now: () => number;
  private readonly windowMs: number;
  private readonly busyAbove: number;
  private readonly minRequests: number;

  constructor(
    o: {
      windowMs?: number;
      busyAbove?: number;
      /** Requests that must begin in a window for it to count as busy (default 2: 20 a second). */
      minRequests?: number;
      sample?: () => { idle: number; active: number };
      /** The count of requests begun so far (default: this process's, `noteRequest`). */
      requests?: () => number;
      now?: () => number;
    } = {},
  ) {
    // Cumulative idle and active milliseconds of this thread's event loop.
    this.sample = o.sample ?? (() => performance.eventLoopUtilization());
    this.requests = o.requests ?? (() => requestsBegun);
    this.now = o.now ?? (() => performance.now());
    this.windowMs = o.windowMs ?? 100;
    this.busyAbove = o.busyAbove ?? 0.5;
    this.minRequests = o.minRequests ?? 2;
    this.last = this.sample();
    this.lastRequests = this.requests();
    this.at = this.now();
  }

  /** The utilisation of the last full window (0 to 1). */
  utilisation(): number {
    const now = this.now();
    if (now - this.at >= this.windowMs) {
      const cur = this.sample();
      const active = cur.active - this.last.active;
      const idle = cur.idle - this.last.idle;
      this.value = active + idle > 0 ? active / (active + idle) : 0;
      this.last = cur;
      const requests = this.requests();
      this.recentRequests = requests - this.lastRequests;
      this.lastRequests = requests;
      this.at = now;
    }
    return this.value;
  }

  busy(): boolean {
    return this.utilisation() > this.busyAbove && this.recentRequests >= this.minRequests;
  }
}

/**
 * When an indexing call of the model may start. While the requests keep the event loop busy, one indexing call
 * at a time and at most one every `busyGapMs` (so a backlog still moves, slowly: the floor); otherwise as many as
 * the pool has members. Calls for queries are never paced (they are requests). `busyGapMs` 0 turns pacing off.
 */
export class PassagePacing {
  private lastStart = -Infinity;

  constructor(
    private readonly pressure: { busy(): boolean },
    readonly busyGapMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * 0 when a passage call may start now (`inflight`: passage calls running), else the milliseconds to wait before
   * asking again.
   */
  wait(inflight: number): number {
    if (this.busyGapMs <= 0 || !this.pressure.busy()) return 0;
    if (inflight > 0) return this.busyGapMs;
    return Math.max(0, this.lastStart + this.busyGapMs - this.now());
  }

  started(): void {
    this.lastStart = this.now();
  }
}

/**
 * EMBEDDING_BUSY_GAP_MS: the floor of indexing calls while requests keep the service busy (default 1,000; 0: no
 * pacing).
 */
export const busyGapMs = (env: NodeJS.ProcessEnv = process.env): number => {
  const n = Number(env.EMBEDDING_BUSY_GAP_MS);
  return env.EMBEDDING_BUSY_GAP_MS !== undefined && env.EMBEDDING_BUSY_GAP_MS !== '' && Number.isInteger(n) && n >= 0
    ? n
    : 1000;
};
