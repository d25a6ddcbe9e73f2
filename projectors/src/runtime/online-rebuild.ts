import { type EventStore, type Sql, type SqlQueryable, WEBHOOK_TABLES, writeCheckpoint } from '@svc/domain';
import { notifyCheckpoint, ProjectionRunner, type SqlProjection } from './runner';

/** Where an online rebuild is (GET /operator/rebuilds/{id}). */
export type RebuildState = 'building' | 'switching' | 'done' | 'failed';

export interface RebuildProgress {
  id: string;
  target: string;
  state: RebuildState;
  /** The fresh read models' checkpoint. */
  position: number;
  /** The log's head when last looked at. */
  head: number;
  /** Events replayed into the fresh read models so far. */
  events: number;
  /** Replay rate since the start (events / second of the build). */
  eventsPerSecond: number;
  startedAt: string;
  /** When the fresh read models replaced the serving ones. */
  switchedAt: string | null;
  /** How long the live projector was paused for the last catch-up and the switch (ms). */
  pausedMs: number | null;
  finishedAt: string | null;
  error: string | null;
}

export interface OnlineRebuildOptions {
  id: string;
  /** The serving runner: paused for the last catch-up and the switch, then resumed from the switched checkpoint. */
  live: ProjectionRunner;
  /** The serving connection (its current schema holds the serving read models). */
  sql: Sql;
  store: EventStore;
  /** Fresh projection instances for the build (no cache hooks: nothing serves from them before the switch). */
  projections: SqlProjection[];
  /** Opens a connection whose search_path is the given list (shadow schema first). */
  openShadow(searchPath: string[]): Promise<Sql>;
  /**
   * After the switch, before the live runner resumes: every cache of the read models is dropped (this process's;
   * other processes see the version move).
   */
  onSwitched?(): void;
  /** Events per batch of the replay (default 5000). */
  batchSize?: number;
  /** The build pauses the live runner once it is this close to the head (default 100 events). */
  switchLag?: number;
  log?: (msg: string, err?: unknown) => void;
}

/**
 * Tables of the runtime, not of a read model: each subscriber's checkpoint row and quarantine rows are swapped as rows.
 */
const RUNTIME_TABLES = new Set(['proj_checkpoints', 'proj_quarantine']);

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Rebuilds a runner's read models from the log beside the serving ones and switches over when caught up
 * (docs/deployment.md "Rebuilding without downtime").
 *
 * The fresh tables are built in a schema of their own (`<serving>_rebuild`) through a connection whose search_path
 * puts it before the serving schema: the group's DDL creates its tables (and a checkpoint and quarantine table)
 * there, while every other name (the event store, other subscribers' tables) resolves to the serving schema. A
 * second runner of the same name replays the log into them in large batches. Close to the head, the live runner is
 * paused (the batch it is applying finishes, no other starts), the build catches up to the head, and one
 * transaction locks the serving tables, moves them to `<serving>_retired` and the fresh ones in, and writes the
 * live runner's checkpoint row (position and quarantine of the build): the read models' version moves with that
 * row (every replica's caches are dropped on its next request) and its NOTIFY releases the writes waiting on the
 * barrier. The live runner resumes from there. Readers see one short lock wait.
 */
export class OnlineRebuild {
  readonly progress: RebuildProgress;
  private readonly log: (msg: string, err?: unknown) => void;
  private startedMs = Date.now();
  private stopped = false;

  constructor(private readonly o: OnlineRebuildOptions) {
    this.log = o.log ?? (() => {});
    this.progress = {
      id: o.id,
      target: o.live.name,
      state: 'building',
      position: 0,
      head: 0,
      events: 0,
      eventsPerSecond: 0,
      startedAt: new Date().toISOString(),
      switchedAt: null,
      pausedMs: null,
      finishedAt: null,
      error: null,
    };
  }

  /** Stops the build before its switch (the service is closing): the serving read models stay as they are. */
  stop(): void {
    this.stopped = true;
  }

  private checkStopped() {
    if (this.stopped) throw new Error('stopped before the switch (the process is closing)');
  }

  /** Runs the rebuild to its end; the outcome is in `progress` too. */
  async run(): Promise<RebuildProgress> {
    const { sql, store, live } = this.o;
    const p = this.progress;
    let shadowSql: Sql | undefined;
    let shadow: string | undefined;
    try {
      const { rows } = await sql.query<{ schema: string; path: string[] }>(
        'SELECT current_schema() AS schema, current_schemas(false) AS path',
      );
      const serving = rows[0].schema;
      shadow = `${serving}_rebuild`.slice(0, 63);
      const retired = `${serving}_retired`.slice(0, 63);
      // A build or a retired set left by a crash is of no use: started afresh.
      await sql.exec(
        `DROP SCHEMA IF EXISTS ${ident(shadow)} CASCADE; DROP SCHEMA IF EXISTS ${ident(retired)} CASCADE; ` +
          `CREATE SCHEMA ${ident(shadow)}`,
      );
      shadowSql = await this.o.openShadow([shadow, ...pathOf(rows[0].path)]);
      const builder = new ProjectionRunner(live.name, shadowSql, store, this.o.projections, this.log);
      await builder.init();
      this.startedMs = Date.now();
      const batch = this.o.batchSize ?? 5000;
      const lag = this.o.switchLag ?? 100;
      // The bulk of the log, without pausing anything; then close enough to the head, paused.
      for (;;) {
        this.checkStopped();
        p.head = await store.headPosition();
        if (p.head - builder.current <= lag) break;
        await this.replay(builder, Math.min(p.head, builder.current + batch * 4), batch);
      }
      // A few short rounds more while writes go on: each ends nearer the head, so the pause has less to apply.
      for (let round = 0; round < 5; round++) {
        this.checkStopped();
        p.head = await store.headPosition();
        if (p.head - builder.current <= 10) break;
        await this.replay(builder, p.head, batch);
      }
      this.checkStopped();
      p.state = 'switching';
      const pausedAt = Date.now();
      let held = 0;
      let caughtUp = 0;
      await live.paused(async () => {
        held = Date.now();
        p.head = await store.headPosition();
        await this.replay(builder, Math.max(p.head, live.current), batch);
        caughtUp = Date.now();
        await this.switch(builder, { serving, shadow: shadow!, retired }, batch);
        // Before the live runner resumes: resuming releases the writes the build applied, and their readers must
        // not find a row cached from before them (the live runner's commit hooks never heard of those events).
        this.o.onSwitched?.();
      });
      this.log(
        `rebuild ${p.id}: live projector paused after ${held - pausedAt} ms, last catch-up ` +
          `${caughtUp - held} ms, switch ${Date.now() - caughtUp} ms`,
      );
      p.pausedMs = Date.now() - pausedAt;
      p.switchedAt = new Date().toISOString();
      await shadowSql.close();
      shadowSql = undefined;
      await sql
        .exec(`DROP SCHEMA IF EXISTS ${ident(retired)} CASCADE; DROP SCHEMA IF EXISTS ${ident(shadow)} CASCADE`)
        .catch((e) => this.log(`rebuild ${p.id}: dropping the retired tables failed (dropped by the next rebuild)`, e));
      p.state = 'done';
      this.log(
        `rebuild ${p.id} of ${p.target}: switched at position ${p.position} (${p.events} events, ` +
          `${p.eventsPerSecond} events/s, live projector paused ${p.pausedMs} ms)`,
      );
    } catch (e) {
      p.state = 'failed';
      p.error = e instanceof Error ? e.message : String(e);
      this.log(`rebuild ${p.id} of ${p.target} failed; the serving read models are unchanged`, e);
      await shadowSql?.close().catch(() => {});
      // The build's tables are of no use now (the switch is one transaction: it happened in full or not at all).
      if (shadow) await sql.exec(`DROP SCHEMA IF EXISTS ${ident(shadow)} CASCADE`).catch(() => {});
    } finally {
      p.finishedAt = new Date().toISOString();
    }
    return p;
  }

  private async replay(builder: ProjectionRunner, target: number, batch: number) {
    const before = builder.current;
    await builder.replayTo(target, batch);
    const p = this.progress;
    p.events += builder.current - before;
    p.position = builder.current;
    p.head = Math.max(p.head, builder.current);
    p.eventsPerSecond = Math.round(p.events / Math.max(0.001, (Date.now() - this.startedMs) / 1000));
    if (builder.stats.failing || builder.stats.errors) this.log(`rebuild ${p.id}: ${builder.stats.lastError ?? ''}`);
  }

  /** One transaction: the serving tables out, the fresh ones in, the checkpoint row and quarantine rows replaced. */
  private async switch(
    builder: ProjectionRunner,
    s: { serving: string; shadow: string; retired: string },
    batch: number,
  ) {
    const { sql, live } = this.o;
    const S = ident(s.serving);
    const N = ident(s.shadow);
    const R = ident(s.retired);
    for (let attempt = 1; ; attempt++) {
      try {
        await sql.tx(async (q) => {
          // Readers hold these locks briefly; waiting longer would queue every reader behind the switch.
          await q.exec(`SET LOCAL lock_timeout = '1s'`);
          // The checkpoint row first: no other process's runner (a standby that took over) can commit a batch now. One
          // that did since the catch-up has applied events the fresh tables lack: they catch up, and the switch runs
          // again.
          const { rows: at } = await q.query<{ position: number }>(
            `SELECT position FROM ${S}.proj_checkpoints WHERE name = $1 FOR UPDATE`,
            [live.name],
          );
          const servingAt = Number(at[0]?.position ?? 0);
          if (servingAt > builder.current) throw new ServingMovedOn(servingAt);
          const { rows } = await q.query<{ t: string; serving: boolean }>(
            `SELECT c.relname AS t, EXISTS (SELECT 1 FROM pg_tables x WHERE x.schemaname = $2 AND ` +
              `x.tablename = c.relname) AS serving
             FROM pg_class c JOIN pg_namespace n ON n.oid ` +
              `= c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY c.relname`,
            [s.shadow, s.serving],
          );
          const tables = rows.filter((r) => !RUNTIME_TABLES.has(r.t));
          const servingTables = tables.filter((r) => r.serving).map((r) => `${S}.${ident(r.t)}`);
          if (servingTables.length) {
            // The tables are locked one after another, and a reader joins them in its own order: a reader that holds
            // rm_credentials and queued for rm_contexts behind this lock (waiting for a long read of rm_contexts)
            // closes a deadlock once the lock moves on to rm_credentials. PostgreSQL aborts whichever waiter checks
            // first, after deadlock_timeout, and the reader waited first: a 500. Bounded to half of deadlock_timeout,
            // this statement gives up (57014) before any reader queued behind it checks, and is tried again; once it
            // holds every table the switch waits for nothing a reader holds.
            const { rows: t } = await q.query<{ prev: string; ms: number }>(
              `SELECT current_setting('statement_timeout') AS prev, (SELECT setting::int FROM pg_settings ` +
                `WHERE name = 'deadlock_timeout') AS ms`,
            );
            await q.query(`SELECT set_config('statement_timeout', $1, true)`, [
              String(Math.max(1, Math.floor(Number(t[0].ms) / 2))),
            ]);
            await q.exec(`LOCK TABLE ${servingTables.join(', ')} IN ACCESS EXCLUSIVE MODE`);
            await q.query(`SELECT set_config('statement_timeout', $1, true)`, [t[0].prev]);
          }
          await carryOver(
            q,
            S,
            N,
            tables.filter((r) => r.serving).map((r) => r.t),
          );
          await q.exec(`CREATE SCHEMA ${R}`);
          for (const r of tables) {
            if (r.serving) await q.exec(`ALTER TABLE ${S}.${ident(r.t)} SET SCHEMA ${R}`);
            await q.exec(`ALTER TABLE ${N}.${ident(r.t)} SET SCHEMA ${S}`);
          }
          await q.query(`DELETE FROM ${S}.proj_quarantine WHERE subscriber = $1`, [live.name]);
          await q.query(`INSERT INTO ${S}.proj_quarantine SELECT * FROM ${N}.proj_quarantine WHERE subscriber = $1`, [
            live.name,
          ]);
          // The serving connection's own checkpoint table: the version moves (new xmin) and the barrier hears it.
          await writeCheckpoint(q, live.name, builder.current);
          await notifyCheckpoint(q, live.name, builder.current);
        });
        return;
      } catch (e) {
        if (e instanceof ServingMovedOn && attempt < 10) {
          this.log(
            `rebuild ${this.progress.id}: the serving read models moved on to ${e.position} (another ` +
              `runner applied events); catching up before the switch`,
          );
          await this.replay(builder, e.position, batch);
          continue;
        }
        // 55P03: a lock not granted in time, 57014: the serving tables not all locked in time (a long read); 40P01: a
        // deadlock with a reader. All leave nothing changed.
        const code = (e as { code?: string }).code ?? (e as { cause?: { code?: string } }).cause?.code;
        if ((code !== '55P03' && code !== '57014' && code !== '40P01') || attempt >= 10) throw e;
        this.log(
          `rebuild ${this.progress.id}: switch attempt ${attempt} could not lock the serving tables ` +
            `(${code}), trying again`,
        );
        await new Promise((r) => setTimeout(r, 50 * attempt));
      }
    }
  }
}

/** The serving checkpoint is past the fresh tables' (another process's runner applied events meanwhile). */
class ServingMovedOn extends Error {
  constructor(readonly position: number) {
    super(`the serving read models moved on to position ${position}`);
  }
}

/** The schemas of the serving search_path, as a list (pg may return the array as text). */
function pathOf(path: string[] | string): string[] {
  if (Array.isArray(path)) return path;
  return path
    .replace(/^\{|\}$/g, '')
    .split(',')
    .filter(Boolean)
    .map((x) => x.replace(/^"|"$/g, ''));
}

/**
 * State kept in a read model that is not in the log: a webhook registration's consecutive failed deliveries (the
 * dispatcher counts them). Taken from the serving rows, which are at the same position as the fresh ones here.
 */
async function carryOver(q: SqlQueryable, S: string, N: string, inBoth: string[]) {
  if (inBoth.includes(WEBHOOK_TABLES.webhooks))
    await q.exec(
      `UPDATE ${N}.${WEBHOOK_TABLES.webhooks} n SET consecutive_failures = s.consecutive_failures ` +
        `FROM ${S}.${WEBHOOK_TABLES.webhooks} ` +
        `s WHERE s.webhook_id = n.webhook_id AND s.consecutive_failures <> n.consecutive_failures`,
    );
}
