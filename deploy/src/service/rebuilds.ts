import { randomUUID } from 'node:crypto';
import { conflict } from '@svc/contracts';
import type { EventStore, Sql } from '@svc/domain';
import { OnlineRebuild, type ProjectionRunner, readModelProjections, type RebuildProgress } from '@svc/projectors';
import { openPostgres } from '../engines/sql';

/** The targets an online rebuild knows (the offline `npm run rebuild` also knows `search-index` and `all`). */
export const ONLINE_REBUILD_TARGETS = ['read-models'] as const;

/** The database URL with the connection's search_path replaced by `path` (the rebuild's shadow schema first). */
export function withSearchPath(url: string, path: string[]): string {
  const u = new URL(url);
  const others = (u.searchParams.get('options') ?? '').replace(/-c\s*search_path=\S*/g, '').trim();
  // Spaces separate the server's command-line options unless escaped with a backslash.
  const list = path
    .map((s) => (/^[a-z_][a-z0-9_$]*$/.test(s) ? s : `"${s.replace(/"/g, '""')}"`.replace(/ /g, '\\ ')))
    .join(',');
  u.searchParams.set('options', `${others ? `${others} ` : ''}-c search_path=${list}`);
  return u.toString();
}

/**
 * The online rebuilds of this process's read models (POST /operator/rebuilds): one at a time, kept in memory
 * with their progress (the last 20). On a PostgreSQL server only: the embedded database is one process, rebuilt
 * offline with `npm run rebuild`.
 */
export class OnlineRebuilds {
  private readonly runs: OnlineRebuild[] = [];
  private current?: { rebuild: OnlineRebuild; done: Promise<unknown> };

  constructor(
    private readonly o: {
      databaseUrl?: string;
      sql: Sql;
      store: EventStore;
      runner: ProjectionRunner;
      /** Drops every read-model cache of this process (the switch changed every table). */
      dropCaches(): void;
      log: (msg: string) => void;
      batchSize?: number;
    },
  ) {}

  start(target: string): RebuildProgress {
    const url = this.o.databaseUrl;
    // The route's schema admits only the targets rebuilt online; the search index is rebuilt offline (npm run rebuild).
    if (!(ONLINE_REBUILD_TARGETS as readonly string[]).includes(target))
      throw conflict(`No online rebuild of '${target}'`);
    if (!url || this.o.sql.kind !== 'postgres')
      throw conflict(
        'An online rebuild needs a PostgreSQL server (DATABASE_URL); the embedded database is rebuilt ' +
          'offline with npm run rebuild, the service stopped',
      );
    if (this.current) throw conflict(`Rebuild ${this.current.rebuild.progress.id} is still running`);
    const rebuild = new OnlineRebuild({
      id: randomUUID(),
      live: this.o.runner,
      sql: this.o.sql,
      store: this.o.store,
      projections: readModelProjections({}),
      openShadow: (path) => openPostgres(withSearchPath(url, path), 4),
      onSwitched: () => this.o.dropCaches(),
      batchSize: this.o.batchSize,
      log: (m, e) => this.o.log(e === undefined ? m : `${m}: ${e instanceof Error ? e.message : String(e)}`),
    });
    this.runs.unshift(rebuild);
    this.runs.splice(20);
    this.current = { rebuild, done: rebuild.run().finally(() => (this.current = undefined)) };
    return rebuild.progress;
  }

  get(id: string): RebuildProgress | undefined {
    return this.runs.find((r) => r.progress.id === id)?.progress;
  }

  list(): RebuildProgress[] {
    return this.runs.map((r) => r.progress);
  }

  /** Stops a running build (the serving read models stay as they are) and waits for it. */
  async close(): Promise<void> {
    if (!this.current) return;
    this.current.rebuild.stop();
    await this.current.done;
  }
}
