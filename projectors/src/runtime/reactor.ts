import {
  advanceCheckpoint,
  ensureCheckpoints,
  type EventFeed,
  type EventStore,
  readCheckpoint,
  type Sql,
  type SqlQueryable,
  type StoredEvent,
  writeCheckpoint,
} from '@svc/domain';
import { catchUpFeed } from './feed';

/** What every reactor reports in /readyz and /metrics, beside its own counters. */
export interface ReactorStats {
  name: string;
  position: number;
  errors: number;
  lastError: string | null;
}

export interface ReactorBase {
  store: EventStore;
  sql: Sql;
  log?: (msg: string) => void;
  /** Events handed to `handle` at most at once. */
  batchSize: number;
  /** How its log lines begin ("document worker", ...). */
  label: string;
}

/** How long the checkpoint row of a reactor with nothing to do may lag behind its position (see `passed`). */
export const IDLE_CHECKPOINT_MS = 1000;

/**
 * A reactor: a checkpointed subscriber of the log beside the read models (the
 * document worker, the trigger runner, the webhook dispatcher). The loop is
 * this class's: `init` reads the checkpoint, `start` follows the feed from it
 * (the store's catch-up subscription unless Kafka is configured), a failed
 * batch is logged and retried by the feed, `stop` aborts and waits. A reactor
 * reacts to each batch in `handle`, which returns the position it checkpointed;
 * it may prepare tables (`prepare`) and run work of its own beside the loop
 * (`started`, `stopping`, `drained`). A batch that needed nothing ends with
 * `passed`: its row is written at most once a second and at stop, since a
 * replay of such events does nothing again (one row write per batch for each
 * of three reactors was a tenth of a record create's CPU).
 */
export abstract class Reactor<S extends ReactorStats> {
  protected position = 0;
  protected abort = new AbortController();
  private loop: Promise<void> | undefined;
  /** The position is ahead of the checkpoint row (batches that needed nothing). */
  private unwritten = false;
  private writtenAt = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private timerFlush: Promise<void> = Promise.resolve();
  /** Where events come from (set before start). */
  feed?: EventFeed;

  constructor(
    readonly stats: S,
    private readonly base: ReactorBase,
  ) {}

  get name(): string {
    return this.stats.name;
  }

  /** The position checkpointed so far. */
  get current(): number {
    return this.position;
  }

  async init(): Promise<void> {
    await ensureCheckpoints(this.base.sql);
    await this.prepare();
    this.position = await readCheckpoint(this.base.sql, this.name);
    this.stats.position = this.position;
  }

  start(): void {
    if (this.loop) return;
    this.abort = new AbortController();
    this.loop = (this.feed ?? catchUpFeed(this.base.store)).follow(this.name, {
      from: this.position,
      batchSize: this.base.batchSize,
      signal: this.abort.signal,
      handle: (events) => this.handle(events),
      onError: (e, attempt) => this.failed(`batch failed (attempt ${attempt}), retrying`, e),
    });
    this.started();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.stopping();
    await this.loop;
    this.loop = undefined;
    await this.drained();
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    await this.timerFlush;
    if (this.unwritten) await this.flushRow().catch((e) => this.failed('checkpoint not written at stop', e));
  }

  /**
   * Writes the checkpoint row (in the transaction of the reactor's work where that is SQL); `moved` follows once it
   * holds.
   */
  protected async checkpoint(q: SqlQueryable, position: number): Promise<void> {
    await writeCheckpoint(q, this.name, position);
    this.rowWritten(position);
  }

  /** The position now reached (its row written, or about to be by `passed`). */
  protected moved(position: number): void {
    this.position = position;
    this.stats.position = position;
  }

  /**
   * A batch that needed nothing of this reactor: the position moves now, the row at most once every IDLE_CHECKPOINT_MS
   * and at stop.
   */
  protected async passed(last: number): Promise<number> {
    if (last <= this.position) return this.position;
    this.moved(last);
    this.unwritten = true;
    const wait = this.writtenAt + IDLE_CHECKPOINT_MS - Date.now();
    if (wait <= 0) await this.flushRow();
    else
      this.flushTimer ??= setTimeout(() => {
        this.flushTimer = undefined;
        if (this.unwritten) this.timerFlush = this.flushRow().catch((e) => this.failed('checkpoint not written', e));
      }, wait).unref();
    return last;
  }

  /** Writes the row of the position reached; forward only, as a batch's own write may land first. */
  private async flushRow(): Promise<void> {
    const position = this.position;
    await advanceCheckpoint(this.base.sql, this.name, position);
    this.rowWritten(position);
  }

  private rowWritten(position: number): void {
    if (position >= this.position) this.unwritten = false;
    this.writtenAt = Date.now();
  }

  /** Reacts to one batch (in log order); returns the position now checkpointed. Throwing retries the batch. */
  protected abstract handle(events: StoredEvent[]): Promise<number>;
  /** Its own tables, before the checkpoint is read. */
  protected async prepare(): Promise<void> {}
  /** Work beside the loop (timers, a sender), once started. */
  protected started(): void {}
  /** Told to stop (the loop is aborting): wake or clear what runs beside it. */
  protected stopping(): void {}
  /** After the loop ended: wait for the work beside it. */
  protected async drained(): Promise<void> {}

  /** Counts and logs a failure of the reactor's work. */
  protected failed(what: string, e: unknown): void {
    this.stats.errors += 1;
    this.stats.lastError = e instanceof Error ? e.message : String(e);
    this.base.log?.(`${this.base.label}: ${what}: ${this.stats.lastError}`);
  }
}
