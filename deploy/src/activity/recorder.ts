import type { FastifyReply, FastifyRequest } from 'fastify';
import { ACTIVITY_PATH_MAX, activityResource, type Principal } from '@svc/contracts';
import type { ActivityLogStore, ActivityRow } from '@svc/query-api';

/**
 * Records every `/v1` request of a tenant in the activity log (docs/api.md
 * "Activity log"), off the request path: the edge calls `onResponse` after the
 * response is sent; entries wait in memory and are written in batches (every
 * `flushEveryMs`, or at once when `batchSize` are waiting), `rowsPerInsert`
 * entries an INSERT.
 * Each process writes its own entries to the shared database; `close()` writes
 * what is left.
 *
 * Never recorded: the request and response bodies, the query string, the
 * secret. Requests without a tenant (no credential, an unknown, revoked or
 * expired one: the 401s; developer tokens) are not recorded. A request refused
 * before authentication ran (a bad body, an unsupported Service-Version, an
 * unknown path) is recorded when its bearer credential resolves to a tenant,
 * which is looked up after the response; an edge 429 that came before
 * authentication is not (a flood is not made to cost lookups).
 */
export interface ActivityRecorderOptions {
  store: ActivityLogStore;
  /** Resolves a bearer credential for requests refused before authentication (cached resolver). */
  resolve?: (token: string) => Promise<Principal | null>;
  /** Flush period (default 250 ms). */
  flushEveryMs?: number;
  /** This many waiting entries flush at once, before the period ends (default 500). */
  batchSize?: number;
  /**
   * Entries per INSERT (default 500: on the embedded database each statement has a fixed cost that fewer, larger
   * INSERTs share).
   */
  rowsPerInsert?: number;
  /** Entries held while the database does not answer; beyond it the oldest are dropped and counted (default 50,000). */
  maxBuffered?: number;
  /** Entries older than this are pruned (default 30 days); 0 keeps everything. */
  retentionDays?: number;
  /** Prune period (default 1 hour; the first prune runs a minute after start). */
  pruneEveryMs?: number;
  /** Wall clock, epoch ms (the service's clock; default Date.now). */
  clock?: () => number;
  log?: (msg: string) => void;
}

/** Requests resolved after the response (pre-authentication refusals) at once at most; more are not recorded. */
const MAX_PENDING_RESOLVES = 16;
const V1 = /^\/v1(?:[/?]|$)/;

export class ActivityRecorder {
  private buffer: ActivityRow[] = [];
  private flushing: Promise<void> | undefined;
  private scheduled = false;
  private closed = false;
  private readonly pending = new Set<Promise<void>>();
  private readonly timers: NodeJS.Timeout[] = [];
  private failing = false;
  private pruning: Promise<number> | undefined;
  /** Epoch ms minus performance.now(): arrival times with sub-millisecond resolution, following the wall clock. */
  private offset: number;
  private readonly clock: () => number;
  readonly stats = { recorded: 0, written: 0, dropped: 0, flushes: 0, failedFlushes: 0, pruned: 0 };
  private readonly store: ActivityLogStore;
  private readonly batchSize: number;
  private readonly rowsPerInsert: number;
  private readonly maxBuffered: number;
  private readonly retentionMs: number;
  private readonly log: (msg: string) => void;

  constructor(private readonly opts: ActivityRecorderOptions) {
    this.store = opts.store;
    this.batchSize = opts.batchSize ?? 500;
    this.rowsPerInsert = Math.max(1, opts.rowsPerInsert ?? 500);
    this.maxBuffered = opts.maxBuffered ?? 50_000;
    this.retentionMs = (opts.retentionDays ?? 30) * 86_400_000;
    this.log = opts.log ?? (() => {});
    this.clock = opts.clock ?? Date.now;
    this.offset = this.clock() - performance.now();
  }

  /** Starts the flush timer and the retention pruning. */
  start(): this {
    const every = this.opts.flushEveryMs;
    const flush = setInterval(() => void this.flush(), every !== undefined && every > 0 ? every : 250);
    flush.unref();
    this.timers.push(flush);
    if (this.retentionMs > 0) {
      const first = setTimeout(() => {
        void this.prune();
        const every = setInterval(() => void this.prune(), this.opts.pruneEveryMs ?? 3_600_000);
        every.unref();
        this.timers.push(every);
      }, 60_000);
      first.unref();
      this.timers.push(first);
    }
    return this;
  }

  /** The edge's `onResponse`: synchronous and cheap (an object pushed onto an array). */
  onResponse = (req: FastifyRequest, reply: FastifyReply, durationMs: number): void => {
    if (this.closed || !V1.test(req.url)) return;
    const p = req.principal;
    const status = reply.statusCode;
    const row = this.row(req, status, durationMs, p);
    if (p) {
      if (p.tenantId && p.kind !== 'developer' && p.kind !== 'operator') this.push(row, p);
      return;
    }
    // Refused before authentication: find the tenant afterwards, unless there is none to find.
    if (status === 401 || status === 429 || !this.opts.resolve) return;
    const h = req.headers.authorization;
    const token = typeof h === 'string' && h.startsWith('Bearer ') ? h.slice(7).trim() : '';
    if (!token) return;
    if (this.pending.size >= MAX_PENDING_RESOLVES) {
      this.stats.dropped++;
      return;
    }
    const job = this.opts
      .resolve(token)
      .then((c) => {
        if (c?.tenantId && c.kind !== 'developer' && c.kind !== 'operator') this.push(row, c);
      })
      .catch(() => {})
      .finally(() => this.pending.delete(job));
    this.pending.add(job);
  };

  private row(req: FastifyRequest, status: number, durationMs: number, p: Principal | undefined): ActivityRow {
    const now = performance.now();
    // Follow the wall clock (NTP steps) without reordering a burst: re-sync only on a real drift.
    const drift = this.clock() - now - this.offset;
    if (drift > 20 || drift < -20) this.offset += drift;
    const q = req.url.indexOf('?');
    let path = q < 0 ? req.url : req.url.slice(0, q);
    if (path.length > ACTIVITY_PATH_MAX) path = path.slice(0, ACTIVITY_PATH_MAX - 1) + '…';
    const ms = Number.isFinite(durationMs) ? Math.max(0, durationMs) : 0;
    return {
      tenantId: '',
      contextId: p?.contextId ?? null,
      atUs: Math.round((this.offset + now - ms) * 1000),
      method: req.method,
      resource: activityResource(req.method, path),
      status,
      keyId: p?.credentialId ?? null,
      durationMs: Math.round(ms * 100) / 100,
      path,
      requestId: req.id,
      errorCode: status >= 400 ? (req.errorCode ?? null) : null,
    };
  }

  private push(row: ActivityRow, p: Principal) {
    row.tenantId = p.tenantId!;
    row.keyId = p.credentialId;
    row.contextId ??= p.contextId;
    this.buffer.push(row);
    this.stats.recorded++;
    if (this.buffer.length > this.maxBuffered) {
      const over = this.buffer.length - this.maxBuffered;
      this.buffer.splice(0, over);
      this.stats.dropped += over;
    }
    if (this.buffer.length >= this.batchSize && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        void this.flush();
      });
    }
  }

  /** Writes what is waiting, one INSERT per `rowsPerInsert` entries; one flush at a time. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.buffer.length === 0) return Promise.resolve();
    this.flushing = this.drain().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async drain() {
    while (this.buffer.length > 0) {
      const batch = this.buffer.splice(0, this.rowsPerInsert);
      try {
        await this.store.insert(batch);
        this.stats.written += batch.length;
        this.stats.flushes++;
        if (this.failing) this.log(`activity log: writing again (${this.buffer.length} entries waiting)`);
        this.failing = false;
      } catch (e) {
        // Keep the entries for the next flush (bounded by maxBuffered); say so once per outage.
        this.buffer.unshift(...batch);
        if (this.buffer.length > this.maxBuffered) {
          const over = this.buffer.length - this.maxBuffered;
          this.buffer.splice(0, over);
          this.stats.dropped += over;
        }
        this.stats.failedFlushes++;
        if (!this.failing)
          this.log(`activity log: flush failed, entries kept in memory: ${e instanceof Error ? e.message : String(e)}`);
        this.failing = true;
        return;
      }
    }
  }

  /** Removes entries past the retention period. */
  prune(nowMs = Date.now()): Promise<number> {
    if (this.retentionMs <= 0 || this.closed) return Promise.resolve(0);
    this.pruning ??= this.pruneOnce(nowMs).finally(() => (this.pruning = undefined));
    return this.pruning;
  }

  private async pruneOnce(nowMs: number): Promise<number> {
    try {
      const n = await this.store.prune(nowMs - this.retentionMs);
      this.stats.pruned += n;
      return n;
    } catch (e) {
      if (!this.closed) this.log(`activity log: pruning failed: ${e instanceof Error ? e.message : String(e)}`);
      return 0;
    }
  }

  /**
   * Stops the timers and writes every entry still waiting (call after the HTTP server closed, before the database
   * does).
   */
  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    await Promise.allSettled([...this.pending]);
    this.closed = true;
    await this.pruning;
    for (let i = 0; i < 3 && (this.buffer.length > 0 || this.flushing); i++) await this.flush();
    if (this.buffer.length > 0) this.log(`activity log: ${this.buffer.length} entries could not be written at close`);
  }
}
