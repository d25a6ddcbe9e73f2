import { parse as pgliteParse, PGlite, protocol } from '@electric-sql/pglite';
import pg from 'pg';
import { prepareValue } from 'pg/lib/utils.js';
import type { Sql, SqlQueryable } from '@svc/domain';

/** int8 as a JS number: positions and counters stay far below 2^53. */
const pgTypes = {
  getTypeParser: (oid: number, format?: string) =>
    oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text'),
};

const { serialize } = protocol;

/**
 * One statement in one exchange with PGlite: Parse, Bind, Describe, Execute and Sync sent together. PGlite's own
 * query() makes six exchanges of them (a first Describe learns the parameter types its serializers need), and on the
 * service's thread that protocol traffic was a fifth of a record create's CPU. Values are prepared as node-postgres
 * prepares them for a server (text format, arrays as array literals, objects as JSON), so the same SQL behaves the
 * same on both; rows are parsed by PGlite's own result parser.
 */
async function queryInOneExchange<T>(db: PGlite, text: string, params: unknown[] | undefined, inTx: boolean): Promise<T[]> {
  // Outside a transaction a statement waits for any transaction in progress, as PGlite's query() does.
  if (!inTx) return db._runExclusiveTransaction(() => queryInOneExchange<T>(db, text, params, true).then(async (rows) => (await db.syncToFs(), rows)));
  return db._runExclusiveQuery(async () => {
    const parts = [serialize.parse({ text }), serialize.bind({ values: (params ?? []).map((v) => prepareValue(v)) }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()];
    const message = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      message.set(p, at);
      at += p.length;
    }
    const { messages } = await db.execProtocol(message, { syncToFs: false });
    return (pgliteParse.parseResults(messages, db.parsers)[0]?.rows ?? []) as T[];
  });
}

/** Embedded PostgreSQL (PGlite, WASM) persisted in `dataDir`; single connection, queries serialised. */
export async function openPglite(dataDir: string | undefined): Promise<Sql> {
  const db = await PGlite.create(dataDir ? { dataDir } : {});
  const q = (d: { exec: PGlite['exec'] }, inTx: boolean): SqlQueryable => ({
    query: async <T,>(text: string, params?: unknown[]) => ({ rows: await queryInOneExchange<T>(db, text, params, inTx) }),
    exec: async (text: string) => {
      await d.exec(text);
    },
  });
  return {
    kind: 'pglite',
    ...q(db, false),
    tx: (fn) => db.transaction((t) => fn(q(t as never, true))),
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
