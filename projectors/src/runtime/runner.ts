import { ensureCheckpoints, readCheckpoint, resetCheckpoint, writeCheckpoint } from './checkpoints';
import type { EventStore, StoredEvent } from '@svc/domain/ports/event-store';
import type { Sql, SqlQueryable } from '@svc/domain/ports/sql';
import { catchUpFeed, type EventFeed } from './feed';

/**
 * A read model kept in SQL. `apply` runs inside the batch transaction that also
 * moves the checkpoint, so a batch is applied exactly once even when the feed
 * delivers it again; handlers are still written to be idempotent (guarded by
 * entity version) so a replay from any position converges.
 */
export interface SqlProjection {
  name: string;
  /** CREATE ... IF NOT EXISTS statements. */
  ddl: string;
  /** Tables dropped by a rebuild. */
  tables: string[];
  apply(q: SqlQueryable, event: StoredEvent): Promise<void>;
  /**
   * Applies a run of events that do not depend on each other (only BULK_TYPES,
   * e.g. many RecordCreated) with multi-row statements. Without it, `apply`
   * runs per event.
   */
  applyMany?(q: SqlQueryable, events: StoredEvent[]): Promise<void>;
  /** Called after the batch transaction commits (cache invalidation). */
  afterCommit?(events: StoredEvent[]): void;
}

/**
 * Event types whose consecutive runs every projection may apply as one set:
 * creations of distinct new entities and reservation bookkeeping, which no
 * projection reads back within the run.
 */
export const BULK_TYPES = new Set(['RecordCreated', 'ReservationClaimed', 'ReservationReleased']);

/** Splits a batch into maximal runs of bulk-safe events and single other events, in log order. */
export function segments(events: StoredEvent[]): Array<{ bulk: boolean; events: StoredEvent[] }> {
  const out: Array<{ bulk: boolean; events: StoredEvent[] }> = [];
  for (const e of events) {
    const bulk = BULK_TYPES.has(e.type);
    const last = out[out.length - 1];
    if (bulk && last?.bulk) last.events.push(e);
    else out.push({ bulk, events: [e] });
  }
  return out;
}

export const CHECKPOINT_CHANNEL = 'proj_checkpoint';

export interface RunnerStats {
  name: string;
  position: number;
  batches: number;
  events: number;
  errors: number;
  lastError: string | null;
}

/** Runs a group of SQL projections from one checkpoint. */
export class ProjectionRunner {
  private position = 0;
  private waiters: Array<{ position: number; resolve: () => void }> = [];
  private abort = new AbortController();
  private loop: Promise<void> | undefined;
  readonly stats: RunnerStats;
  /** Hears every committed batch before writes waiting on it are released (cache invalidation). */
  onCommitted?: (events: StoredEvent[]) => void;
  /** Where events come from (set before start): the store's catch-up subscription unless Kafka is configured. */
  feed?: EventFeed;

  constructor(
    readonly name: string,
    private readonly sql: Sql,
    private readonly store: EventStore,
    private readonly projections: SqlProjection[],
    private readonly log: (msg: string, err?: unknown) => void = () => {},
  ) {
    this.stats = { name, position: 0, batches: 0, events: 0, errors: 0, lastError: null };
  }

  async init(): Promise<void> {
    await ensureCheckpoints(this.sql);
    for (const p of this.projections) await this.sql.exec(p.ddl);
    this.position = await readCheckpoint(this.sql, this.name);
    this.stats.position = this.position;
  }

  start(): void {
    if (this.loop) return;
    this.abort = new AbortController();
    this.loop = (this.feed ?? catchUpFeed(this.store)).follow(this.name, {
      from: this.position,
      signal: this.abort.signal,
      handle: (events) => this.applyBatch(events),
      onError: (e, attempt) => {
        this.stats.errors += 1;
        this.stats.lastError = e instanceof Error ? e.message : String(e);
        this.log(`projection ${this.name}: batch failed (attempt ${attempt}), retrying`, e);
      },
    });
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    this.loop = undefined;
  }

  get current(): number {
    return this.position;
  }

  private async applyBatch(events: StoredEvent[]): Promise<number> {
    const last = events[events.length - 1].position;
    await this.sql.tx(async (q) => {
      for (const seg of segments(events)) {
        for (const p of this.projections) {
          if (seg.bulk && p.applyMany) await p.applyMany(q, seg.events);
          else for (const e of seg.events) await p.apply(q, e);
        }
      }
      await writeCheckpoint(q, this.name, last);
      if (this.sql.kind === 'postgres') await q.query('SELECT pg_notify($1, $2)', [CHECKPOINT_CHANNEL, `${this.name}:${last}`]);
    });
    for (const p of this.projections) p.afterCommit?.(events);
    this.onCommitted?.(events);
    this.position = last;
    this.stats.position = last;
    this.stats.batches += 1;
    this.stats.events += events.length;
    this.waiters = this.waiters.filter((w) => (w.position <= last ? (w.resolve(), false) : true));
    return last;
  }

  /** Resolves once every event up to `position` is applied (or after `timeoutMs`, returning false). */
  waitFor(position: number, timeoutMs: number): Promise<boolean> {
    if (this.position >= position) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      const waiter = {
        position,
        resolve: () => {
          clearTimeout(t);
          resolve(true);
        },
      };
      this.waiters.push(waiter);
    });
  }

  /** Drops every table of the group and replays the log from position 0. */
  async rebuild(): Promise<number> {
    await this.stop();
    for (const t of this.projections.flatMap((p) => p.tables)) await this.sql.exec(`DROP TABLE IF EXISTS ${t} CASCADE`);
    await ensureCheckpoints(this.sql);
    await resetCheckpoint(this.sql, this.name);
    for (const p of this.projections) await this.sql.exec(p.ddl);
    this.position = 0;
    const head = await this.store.headPosition();
    while (this.position < head) {
      const events = await this.store.readAll(this.position, 1000);
      if (events.length === 0) break;
      await this.applyBatch(events);
    }
    return this.position;
  }
}

/**
 * The read-your-writes barrier a write's response waits on. In one process it
 * watches the runner; in a command-only process it follows the checkpoint table
 * (notifications, with polling as the fallback).
 */
export interface ReadModelBarrier {
  waitFor(position: number, timeoutMs?: number): Promise<boolean>;
}

export const inProcessBarrier = (runner: ProjectionRunner): ReadModelBarrier => ({
  waitFor: (position, timeoutMs = 10_000) => runner.waitFor(position, timeoutMs),
});

export async function remoteBarrier(sql: Sql, runnerName: string, pollMs = 25): Promise<ReadModelBarrier & { close(): Promise<void> }> {
  let known = 0;
  const read = async () => {
    known = await readCheckpoint(sql, runnerName);
  };
  const unlisten = await sql.listen(CHECKPOINT_CHANNEL, (payload) => {
    const [name, pos] = payload.split(':');
    if (name === runnerName) known = Math.max(known, Number(pos));
  });
  return {
    async waitFor(position, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (known < position) {
        if (Date.now() > deadline) return false;
        await new Promise((r) => setTimeout(r, pollMs));
        if (known < position) await read().catch(() => {});
      }
      return true;
    },
    close: unlisten,
  };
}
