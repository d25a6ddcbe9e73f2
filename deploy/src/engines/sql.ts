import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { Sql, SqlQueryable } from '@svc/domain';

/** int8 as a JS number: positions and counters stay far below 2^53. */
const pgTypes = {
  getTypeParser: (oid: number, format?: string) =>
    oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text'),
};

/** Embedded PostgreSQL (PGlite, WASM) persisted in `dataDir`; single connection, queries serialised. */
export async function openPglite(dataDir: string | undefined): Promise<Sql> {
  const db = await PGlite.create(dataDir ? { dataDir } : {});
  const q = (d: { query: PGlite['query']; exec: PGlite['exec'] }): SqlQueryable => ({
    query: async <T,>(text: string, params?: unknown[]) => ({ rows: (await d.query<T>(text, params)).rows }),
    exec: async (text: string) => {
      await d.exec(text);
    },
  });
  return {
    kind: 'pglite',
    ...q(db),
    tx: (fn) => db.transaction((t) => fn(q(t as never))),
    listen: async (channel, listener) => {
      const unsub = await db.listen(channel, listener);
      return async () => unsub();
    },
    close: () => db.close(),
  };
}

/** Whether `table` exists in the connection's current schema. */
export async function tableExists(q: SqlQueryable, table: string): Promise<boolean> {
  const { rows } = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1`, [table]);
  return rows[0].n > 0;
}

/** A PostgreSQL server through a `pg` pool. */
export async function openPostgres(url: string, max = 10): Promise<Sql> {
  const pool = new pg.Pool({ connectionString: url, max, types: pgTypes as never });
  pool.on('error', () => {}); // idle-client errors surface on the next query instead of crashing
  const listeners = new Map<string, Set<(p: string) => void>>();
  let listenClient: pg.PoolClient | undefined;
  const wrap = (c: pg.Pool | pg.PoolClient): SqlQueryable => ({
    query: async <T,>(text: string, params?: unknown[]) => ({ rows: (await c.query(text, params as unknown[])).rows as T[] }),
    exec: async (text: string) => {
      await c.query(text);
    },
  });
  return {
    kind: 'postgres',
    ...wrap(pool),
    async tx(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const out = await fn(wrap(client));
        await client.query('COMMIT');
        return out;
      } catch (e) {
        await client.query('ROLLBACK').catch(() => {});
        throw e;
      } finally {
        client.release();
      }
    },
    async listen(channel, listener) {
      if (!listenClient) {
        listenClient = await pool.connect();
        listenClient.on('notification', (n) => listeners.get(n.channel)?.forEach((l) => l(n.payload ?? '')));
      }
      let set = listeners.get(channel);
      if (!set) {
        set = new Set();
        listeners.set(channel, set);
        await listenClient.query(`LISTEN "${channel}"`);
      }
      set.add(listener);
      return async () => {
        set!.delete(listener);
      };
    },
    async close() {
      listenClient?.release();
      await pool.end();
    },
  };
}

export async function openSql(opts: { databaseUrl?: string; dataDir?: string; poolSize?: number }): Promise<Sql> {
  return opts.databaseUrl ? openPostgres(opts.databaseUrl, opts.poolSize) : openPglite(opts.dataDir);
}
