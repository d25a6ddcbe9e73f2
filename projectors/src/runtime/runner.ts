import {
  ensureCheckpoints,
  type EventFeed,
  type EventStore,
  readCheckpoint,
  type ReadModelBarrier,
  resetCheckpoint,
  type Sql,
  type SqlQueryable,
  type StoredEvent,
  streams,
  touchCheckpoint,
  writeCheckpoint,
} from '@svc/domain';
import { catchUpFeed } from './feed';
import { traceBatch } from './trace';
import {
  clearQuarantine,
  ensureQuarantine,
  errorText,
  listQuarantine,
  park,
  unpark,
  type QuarantineEntry,
} from './quarantine';

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
  /**
   * Applies a whole batch at once, after every other projection applied it
   * (same transaction): for read models that only fold events into counters
   * (usage), whatever else the batch interleaves. Replaces `apply` / `applyMany`.
   */
  applyBatch?(q: SqlQueryable, events: StoredEvent[]): Promise<void>;
  /** Called after the batch transaction commits (cache invalidation). */
  afterCommit?(events: StoredEvent[]): void;
}

/**
 * Event types whose consecutive runs every projection may apply as one set:
 * creations of distinct new entities, reservation bookkeeping and metering
 * (the usage projection folds a run into one set of counter updates), which no
 * projection reads back within the run.
 */
export const BULK_TYPES = new Set([
  'RecordCreated',
  'RecordIndexed',
  'RecordIndexFailed',
  'RecordsIndexed',
  'ReservationClaimed',
  'ReservationReleased',
  'UsageMetered',
  'ReadsMetered',
]);

/**
 * The other streams an event speaks for: a RecordsIndexed event (in its context's outcome stream) carries the
 * outcomes of many records. While one of those record streams is held in quarantine, the event is applied for the
 * others and also parked behind that stream, so the stream's release applies it again after the record's own
 * events (the read model takes an outcome only for the revision it names, so applying it twice is harmless).
 */
export function relatedStreams(e: StoredEvent): string[] {
  return e.type === 'RecordsIndexed' ? e.data.outcomes.map((o) => streams.record(o.recordId)) : [];
}

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

/**
 * Announces a runner's new checkpoint to the barriers of command-only processes (delivered at commit).
 * NOTIFY channels are per database, not per schema: the payload names the schema, so deployments (or test
 * suites) sharing a database in different schemas never release each other's barriers.
 */
export const notifyCheckpoint = (q: SqlQueryable, runnerName: string, position: number) =>
  q.query(`SELECT pg_notify($1, current_schema() || ':' || $2)`, [CHECKPOINT_CHANNEL, `${runnerName}:${position}`]);

/** writeCheckpoint and notifyCheckpoint in one statement: a server's projection batch costs one round trip less. */
const writeAndNotifyCheckpoint = (q: SqlQueryable, runnerName: string, position: number) =>
  q.query(
    'WITH w AS (INSERT INTO proj_checkpoints (name, position) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET ' +
      `position = excluded.position) SELECT pg_notify($3, current_schema() || ':' || $4)`,
    [runnerName, position, CHECKPOINT_CHANNEL, `${runnerName}:${position}`],
  );

/** What every follower of the global log reports (projector runners, the Kafka relay). */
export interface FollowerStats {
  name: string;
  /** Position of the last event done with (the follower's checkpoint). */
  position: number;
  batches: number;
  events: number;
  errors: number;
  lastError: string | null;
}

export interface RunnerStats extends FollowerStats {
  /** Events held in quarantine (failing events and the later events of their streams). */
  quarantined: number;
  /** Consecutive failed attempts of the current batch (0 once a batch commits). */
  failing: number;
}

/** Attempts of one event, each in its own transaction, before it is quarantined. */
const EVENT_ATTEMPTS = 3;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
    this.stats = { name, position: 0, batches: 0, events: 0, errors: 0, lastError: null, quarantined: 0, failing: 0 };
  }

  /**
   * Streams with a quarantined event, by the position of that event: their later events are parked behind it, not
   * applied.
   */
  private held = new Map<string, number>();
  /** Applying batches, retries and skips run one at a time. */
  private turn: Promise<unknown> = Promise.resolve();
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.turn.then(fn, fn);
    this.turn = run.catch(() => {});
    return run;
  }

  async init(): Promise<void> {
    await ensureCheckpoints(this.sql);
    await ensureQuarantine(this.sql);
    for (const p of this.projections) await this.sql.exec(p.ddl);
    this.position = await readCheckpoint(this.sql, this.name);
    this.stats.position = this.position;
    await this.loadQuarantine();
  }

  private async loadQuarantine() {
    const rows = await listQuarantine(this.sql, this.name);
    this.held = new Map(rows.filter((r) => r.parkedBehind === null).map((r) => [r.streamId, r.position]));
    this.stats.quarantined = rows.length;
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
        this.stats.failing = attempt;
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

  private applyBatch(events: StoredEvent[]): Promise<number> {
    return this.exclusive(() => traceBatch(this.name, events, () => this.applyOrIsolate(events)));
  }

  /**
   * Applies a batch in one transaction. When it fails and the database is
   * healthy, applies its events one by one so that only an event that keeps
   * failing is quarantined (with the rest of its stream) and the log moves on
   * for every other stream. A database that does not answer is not the event's
   * fault: the batch is thrown back to the feed, which retries it.
   */
  private async applyOrIsolate(batch: StoredEvent[]): Promise<number> {
    const last = batch[batch.length - 1].position;
    // A batch delivered again (after a failure part-way through isolation, or by Kafka) skips what is already applied
    // or quarantined.
    const events = batch.filter((e) => e.position > this.position);
    if (!events.length) return Math.max(last, this.position);
    try {
      await this.commit(events, last);
      return last;
    } catch (e) {
      if (!(await this.healthy())) throw e;
      this.log(`projection ${this.name}: batch up to ${last} failed, applying its events one by one`, e);
    }
    for (const e of events) {
      let failure: unknown;
      for (let attempt = 1; attempt <= EVENT_ATTEMPTS; attempt++) {
        try {
          await this.commit([e], e.position);
          failure = undefined;
          break;
        } catch (err) {
          failure = err;
          if (!(await this.healthy())) throw err;
          if (attempt < EVENT_ATTEMPTS) await pause(50 * attempt);
        }
      }
      if (failure !== undefined) await this.quarantine(e, failure);
    }
    return last;
  }

  private async healthy(): Promise<boolean> {
    try {
      await this.sql.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }

  private async quarantine(e: StoredEvent, failure: unknown) {
    const error = errorText(failure);
    this.stats.errors += 1;
    this.stats.lastError = `position ${e.position} (${e.streamId}, ${e.type}) quarantined: ${error}`;
    this.log(`projection ${this.name}: event ${e.position} of ${e.streamId} (${e.type}) quarantined`, failure);
    await this.sql.tx(async (q) => {
      await park(q, this.name, e, error, null);
      await this.moveCheckpoint(q, e.position);
    });
    this.held.set(e.streamId, e.position);
    this.stats.quarantined += 1;
    this.advanced([], e.position);
  }

  /**
   * One transaction: the events of streams not held are applied, those of held streams parked, the checkpoint moved to
   * `last`.
   */
  private async commit(events: StoredEvent[], last: number) {
    const live = this.held.size ? events.filter((e) => !this.held.has(e.streamId)) : events;
    const parked = live.length === events.length ? [] : events.filter((e) => this.held.has(e.streamId));
    // Applied now and parked too (relatedStreams): one row per position, so behind the first held stream it names.
    const alsoParked = this.held.size
      ? live.flatMap((e) =>
          relatedStreams(e)
            .filter((s) => this.held.has(s))
            .slice(0, 1)
            .map((s) => ({ e, s })),
        )
      : [];
    await this.sql.tx(async (q) => {
      await this.applyEvents(q, live);
      for (const e of parked) {
        const cause = this.held.get(e.streamId)!;
        await park(q, this.name, e, `waiting behind position ${cause}`, cause);
      }
      for (const { e, s } of alsoParked) {
        const cause = this.held.get(s)!;
        await park(q, this.name, { ...e, streamId: s }, `applied, and again after position ${cause}`, cause);
      }
      await this.moveCheckpoint(q, last);
    });
    this.stats.quarantined += parked.length;
    this.advanced(live, last);
  }

  private async applyEvents(q: SqlQueryable, events: StoredEvent[]) {
    for (const seg of segments(events)) {
      for (const p of this.projections) {
        if (p.applyBatch) continue;
        if (seg.bulk && p.applyMany) await p.applyMany(q, seg.events);
        else for (const e of seg.events) await p.apply(q, e);
      }
    }
    for (const p of this.projections) if (p.applyBatch && events.length) await p.applyBatch(q, events);
  }

  private async moveCheckpoint(q: SqlQueryable, last: number) {
    if (last <= this.position) return;
    if (this.sql.kind === 'postgres') await writeAndNotifyCheckpoint(q, this.name, last);
    else await writeCheckpoint(q, this.name, last);
  }

  /** After a commit: hooks hear the applied events, waiters up to `last` are released. */
  private advanced(applied: StoredEvent[], last: number) {
    this.committed(applied);
    this.stats.failing = 0;
    if (last <= this.position) return;
    this.position = last;
    this.stats.position = last;
    this.stats.batches += 1;
    this.stats.events += applied.length;
    this.waiters = this.waiters.filter((w) => (w.position <= last ? (w.resolve(), false) : true));
  }

  /** Committed events reach the projections' hooks and onCommitted (cache invalidation). */
  private committed(applied: StoredEvent[]) {
    if (!applied.length) return;
    for (const p of this.projections) p.afterCommit?.(applied);
    this.onCommitted?.(applied);
  }

  /** The quarantined events of this runner (oldest first). */
  quarantined(streamId?: string): Promise<QuarantineEntry[]> {
    return listQuarantine(this.sql, this.name, streamId);
  }

  /**
   * Re-applies the quarantined events of one stream in log order (after a fix).
   * Stops at the first that still fails, which becomes the stream's cause again.
   * Returns how many events of the stream remain quarantined.
   */
  retry(streamId: string): Promise<number> {
    return this.exclusive(() => this.release(streamId));
  }

  /**
   * Drops one quarantined event for good, then retries the rest of its stream. Null when that position is not
   * quarantined.
   */
  skip(position: number): Promise<{ streamId: string; remaining: number } | null> {
    return this.exclusive(async () => {
      const entry = (await listQuarantine(this.sql, this.name)).find((r) => r.position === position);
      if (!entry) return null;
      await unpark(this.sql, this.name, position);
      this.log(`projection ${this.name}: operator skipped event ${position} of ${entry.streamId}`);
      return { streamId: entry.streamId, remaining: await this.release(entry.streamId) };
    });
  }

  private async release(streamId: string): Promise<number> {
    const rows = await listQuarantine(this.sql, this.name, streamId);
    let done = 0;
    for (const row of rows) {
      const [e] = await this.store.readAll(row.position - 1, 1);
      if (!e || e.position !== row.position) {
        await unpark(this.sql, this.name, row.position);
        done += 1;
        continue;
      }
      try {
        await this.sql.tx(async (q) => {
          await this.applyEvents(q, [e]);
          await unpark(q, this.name, row.position);
          // The read models changed behind the checkpoint: their version moves (read-model-version.ts).
          await touchCheckpoint(q, this.name);
        });
        done += 1;
        this.committed([e]);
      } catch (err) {
        const error = errorText(err);
        await this.sql.tx(async (q) => {
          await park(q, this.name, e, error, null);
          for (const later of rows.filter((r) => r.position > row.position))
            await park(
              q,
              this.name,
              { ...e, position: later.position, type: later.eventType },
              `waiting behind position ${row.position}`,
              row.position,
            );
        });
        this.stats.lastError = `position ${e.position} (${streamId}, ${e.type}) still fails: ${error}`;
        break;
      }
    }
    await this.loadQuarantine();
    return rows.length - done;
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

  /**
   * Applies the log from the checkpoint up to at least `target` (or the log's end) in batches of `batchSize`, the
   * next batch read while this one applies. For a runner that follows nothing else (a rebuild's replay).
   */
  async replayTo(target: number, batchSize = 1000): Promise<number> {
    let next = this.position < target ? this.store.readAll(this.position, batchSize) : undefined;
    while (next) {
      const events = await next;
      if (events.length === 0) break;
      const last = events[events.length - 1].position;
      next = last < target ? this.store.readAll(last, batchSize) : undefined;
      // A read ahead that fails while this batch applies is thrown when awaited, not as an unhandled rejection.
      next?.catch(() => {});
      await this.applyBatch(events);
    }
    return this.position;
  }

  /**
   * Runs `fn` with the runner paused: the batch in progress finishes first and none applies until `fn` is done
   * (the feed's next batch waits). Then the checkpoint and quarantine are read again (`fn` may have replaced them:
   * an online rebuild's switch), and writes waiting on a position now reached are released.
   */
  paused<T>(fn: () => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      try {
        return await fn();
      } finally {
        await this.reload().catch((e) =>
          this.log(`projection ${this.name}: reading the checkpoint after a pause failed`, e),
        );
      }
    });
  }

  private async reload() {
    const position = await readCheckpoint(this.sql, this.name);
    await this.loadQuarantine();
    if (position !== this.position) {
      this.position = position;
      this.stats.position = position;
      this.waiters = this.waiters.filter((w) => (w.position <= position ? (w.resolve(), false) : true));
    }
  }

  /** Drops every table of the group and replays the log from position 0. */
  async rebuild(): Promise<number> {
    await this.stop();
    for (const t of this.projections.flatMap((p) => p.tables)) await this.sql.exec(`DROP TABLE IF EXISTS ${t} CASCADE`);
    await ensureCheckpoints(this.sql);
    await resetCheckpoint(this.sql, this.name);
    await ensureQuarantine(this.sql);
    await clearQuarantine(this.sql, this.name);
    this.held.clear();
    this.stats.quarantined = 0;
    for (const p of this.projections) await this.sql.exec(p.ddl);
    this.position = 0;
    return this.replayTo(await this.store.headPosition());
  }
}

/** The read-your-writes barrier (port: domain/src/ports/read-model-barrier.ts) in one process: watches the runner. */
export const inProcessBarrier = (runner: ProjectionRunner): ReadModelBarrier => ({
  waitFor: (position, timeoutMs = 10_000) => runner.waitFor(position, timeoutMs),
});

/**
 * The barrier in a command-only process: follows the runner's row of the checkpoint table (notifications, polling as
 * the fallback).
 */
export async function remoteBarrier(
  sql: Sql,
  runnerName: string,
  pollMs = 25,
): Promise<ReadModelBarrier & { close(): Promise<void> }> {
  let known = 0;
  const read = async () => {
    known = await readCheckpoint(sql, runnerName);
  };
  // Only this schema's runner moves this barrier (notifyCheckpoint).
  const { rows } = await sql.query<{ schema: string }>('SELECT current_schema() AS schema');
  const schema = rows[0].schema;
  const unlisten = await sql.listen(CHECKPOINT_CHANNEL, (payload) => {
    const [from, name, pos] = payload.split(':');
    if (from === schema && name === runnerName) known = Math.max(known, Number(pos));
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
