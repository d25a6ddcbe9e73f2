import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { ServiceError } from '@svc/contracts';
import type { Sql, SqlQueryable } from '@svc/domain';
import { queryInOneExchange } from './pglite-exchange.mjs';
import { seedPgliteDataDir } from './pglite-template.mjs';

/** int8 as a JS number: positions and counters stay far below 2^53. */
const pgTypes = {
  getTypeParser: (oid: number, format?: string) =>
    oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text'),
};

/**
 * PGlite's start parameters with a small buffer cache. PostgreSQL's default shared_buffers (128 MB) lives in the
 * WASM memory and PGlite touches all of it at start: 128 MB resident per embedded database, before any data. The
 * data files stay in the operating system's page cache (PGlite reads them with plain file reads), so a smaller
 * cache costs a system call per page missed rather than a disk read. PGLITE_SHARED_BUFFERS (PostgreSQL units, e.g.
 * `64MB`) sets it; the same for both embedded databases (pglite-worker.mjs reads it too).
 */
export const PGLITE_SHARED_BUFFERS_DEFAULT = '16MB';
export const pgliteSharedBuffers = (env: NodeJS.ProcessEnv = process.env): string =>
  env.PGLITE_SHARED_BUFFERS || PGLITE_SHARED_BUFFERS_DEFAULT;
/** PGlite's own start parameters with that cache size (pglite-worker.mjs builds the same). */
const pgliteStartParams = (): string[] => [
  ...PGlite.defaultStartParams,
  '-c',
  `shared_buffers=${pgliteSharedBuffers()}`,
];

type WasmModule = NonNullable<PGliteOptions['pgliteWasmModule']>;
// The global's type is not in this project's libraries (no DOM); the one call it needs.
const wasm = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<WasmModule> } })
  .WebAssembly;
let compiled: Promise<WasmModule> | undefined;
/**
 * PostgreSQL's WASM, compiled once per process and shared by every embedded database in it (the search side's thread
 * gets it in its workerData). Each PGlite otherwise compiles its own copy: one more copy of the machine code, and the
 * optimising compiler's pass over PostgreSQL's largest function (about 600 MB of compiler memory for a few seconds)
 * once per database instead of once per process.
 */
export function pgliteWasmModule(): Promise<WasmModule> {
  compiled ??= readFile(
    join(dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite')), 'pglite.wasm'),
  ).then((bytes) => wasm.compile(bytes));
  return compiled;
}

/** Embedded PostgreSQL (PGlite, WASM) persisted in `dataDir`; single connection, queries serialised. */
export async function openPglite(dataDir: string | undefined): Promise<Sql> {
  if (dataDir) await seedPgliteDataDir(dataDir, await pgliteWasmModule());
  const db = await PGlite.create({
    ...(dataDir ? { dataDir } : {}),
    startParams: pgliteStartParams(),
    pgliteWasmModule: await pgliteWasmModule(),
  });
  const q = (d: { exec: PGlite['exec'] }, inTx: boolean): SqlQueryable => ({
    query: async <T>(text: string, params?: unknown[]) => ({
      rows: await queryInOneExchange<T>(db, text, params, inTx),
    }),
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
  const { rows } = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema() AND ` +
      `table_name = $1`,
    [table],
  );
  return rows[0].n > 0;
}

/**
 * Seconds a client is asked to wait (Retry-After) before retrying a request refused because the database did not
 * answer.
 */
export const DATABASE_RETRY_AFTER_SECONDS = 1;

/**
 * SQLSTATEs of a server that cannot serve now: class 08 (connection exception), 57P01-57P03 (admin or crash
 * shutdown, cannot connect now: stopping or starting), 53300 (too many connections).
 */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[1-3]|53300)$/;
/** Errors of the socket or of node-postgres itself when the server went away or never answered. */
const UNAVAILABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
// node-postgres's messages for a connection lost or not opened (plain words: no regex metacharacters).
const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'Client has encountered a connection error',
  'Client was closed',
  'timeout exceeded when trying to connect',
];
const UNAVAILABLE_MESSAGE = new RegExp(`^(${UNAVAILABLE_MESSAGES.join('|')})`);

/** The database server did not answer, or refused for now: nothing about the statement itself. */
export function databaseUnavailable(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_ERRNO.has(code))) return true;
  return UNAVAILABLE_MESSAGE.test(e.message);
}

/**
 * A lost or refused connection as the service answers it: 503 UNAVAILABLE with Retry-After (never a 500). The
 * request may be retried after the pause; a write whose connection was lost during its commit may have been applied
 * (send an Idempotency-Key to retry it safely). Other errors pass unchanged.
 */
function unavailableError(e: unknown): unknown {
  if (!databaseUnavailable(e)) return e;
  const err = new ServiceError('UNAVAILABLE', 'The database is temporarily unavailable', {
    headers: { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) },
  });
  return Object.assign(err, { cause: e });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The advisory lock that serialises schema changes across the processes sharing a server (any fixed key). */
const DDL_LOCK = 746_201;
const SCHEMA_CHANGE = /^\s*(CREATE|ALTER|DROP)\s/im;

/**
 * A PostgreSQL server through a `pg` pool. A server that goes away (restarted, failed over) is survived: the pool
 * opens new connections once it answers again, a statement or transaction that fails for it throws 503 UNAVAILABLE
 * (unavailableError), a client that broke inside a transaction is discarded instead of crashing the process (a
 * checked-out client's 'error' has no listener in pg-pool), and the LISTEN connection is opened again, after which
 * every listener is called once with an empty payload: notifications sent meanwhile were lost, so whatever it keeps
 * in step by them must be read again.
 */
export async function openPostgres(url: string, max = 10): Promise<Sql> {
  const pool = new pg.Pool({ connectionString: url, max, types: pgTypes as never });
  pool.on('error', () => {}); // idle-client errors surface on the next query instead of crashing
  const listeners = new Map<string, Set<(p: string) => void>>();
  let listenClient: pg.PoolClient | undefined;
  let listening: Promise<pg.PoolClient> | undefined;
  let closed = false;
  const wrap = (c: pg.Pool | pg.PoolClient | pg.Client): SqlQueryable => ({
    query: async <T>(text: string, params?: unknown[]) => {
      try {
        return { rows: (await c.query(text, params as unknown[])).rows as T[] };
      } catch (e) {
        throw unavailableError(e);
      }
    },
    exec: async (text: string) => {
      try {
        // Schema changes (CREATE ... IF NOT EXISTS at every start) from processes starting together on one server
        // can deadlock each other (40P01: two query replicas' read-model DDL): each takes the DDL lock first, held
        // to the end of the statements' implicit transaction.
        await c.query(SCHEMA_CHANGE.test(text) ? `SELECT pg_advisory_xact_lock(${DDL_LOCK});\n${text}` : text);
      } catch (e) {
        throw unavailableError(e);
      }
    },
  });

  /** The LISTEN connection, opened (again) with every channel listened to. */
  const listenConnection = (): Promise<pg.PoolClient> => {
    if (listenClient) return Promise.resolve(listenClient);
    listening ??= (async () => {
      const client = await pool.connect().catch((e) => Promise.reject(unavailableError(e)));
      try {
        for (const channel of listeners.keys()) await client.query(`LISTEN "${channel}"`);
      } catch (e) {
        client.release(e as Error);
        throw unavailableError(e);
      }
      client.on('notification', (n) => listeners.get(n.channel)?.forEach((l) => l(n.payload ?? '')));
      client.on('error', (e) => {
        // The server went away: this connection is discarded and opened again once the server answers.
        if (listenClient !== client) return;
        listenClient = undefined;
        client.release(e);
        void relisten();
      });
      listenClient = client;
      return client;
    })().finally(() => (listening = undefined));
    return listening;
  };

  /**
   * Opens the LISTEN connection again (backoff up to 5 s), then tells every listener that notifications were missed.
   */
  const relisten = async () => {
    for (let attempt = 0; !closed && !listenClient; attempt++) {
      await sleep(Math.min(5000, 100 * 2 ** Math.min(attempt, 6)));
      if (closed) return;
      try {
        await listenConnection();
      } catch {
        continue;
      }
      for (const set of listeners.values()) for (const l of set) l('');
    }
  };

  // The pipelined connection (the event store's appends): opened on first use, opened again after it broke.
  let piped: Promise<pg.Client> | undefined;
  let pipedNow: pg.Client | undefined;
  let pipedTurn: Promise<unknown> = Promise.resolve();
  const pipedClient = (): Promise<pg.Client> =>
    (piped ??= (async () => {
      const client = new pg.Client({ connectionString: url, types: pgTypes as never, pipeline: true } as never);
      pipedNow = client;
      const drop = () => {
        if (pipedNow !== client) return;
        pipedNow = undefined;
        piped = undefined;
        void client.end().catch(() => {});
      };
      client.on('error', drop);
      client.on('end', drop);
      try {
        await client.connect();
      } catch (e) {
        drop();
        throw unavailableError(e);
      }
      return client;
    })());
  const pipelined = <T>(fn: (q: SqlQueryable) => Promise<T>): Promise<T> => {
    const run = pipedTurn.then(async () => {
      const client = await pipedClient();
      try {
        return await fn(wrap(client));
      } catch (e) {
        // Harmless when fn committed or rolled back already (a warning, no error).
        await client.query('ROLLBACK').catch(() => {});
        throw e;
      }
    });
    pipedTurn = run.catch(() => {});
    return run;
  };

  return {
    kind: 'postgres',
    ...wrap(pool),
    // PG_PIPELINE=off: the event store appends in a pooled transaction, a statement per round trip (the path before
    // pipelining, kept for benchmark comparisons).
    ...(process.env.PG_PIPELINE === 'off' ? {} : { pipelined }),
    async tx(fn) {
      const client = await pool.connect().catch((e) => Promise.reject(unavailableError(e)));
      // While checked out, a client's 'error' (the server went away) has no listener of the pool's: caught here, and
      // the client is discarded at release instead of going back to the pool.
      let broken: Error | undefined;
      const onError = (e: Error) => (broken ??= e);
      client.on('error', onError);
      try {
        await client.query('BEGIN');
        const out = await fn(wrap(client));
        await client.query('COMMIT');
        return out;
      } catch (e) {
        await client.query('ROLLBACK').catch((r) => (broken ??= r));
        throw unavailableError(e);
      } finally {
        client.off('error', onError);
        client.release(broken);
      }
    },
    async listen(channel, listener) {
      let set = listeners.get(channel);
      if (!set) {
        set = new Set();
        listeners.set(channel, set);
        const client = await listenConnection();
        // A connection opened just now for this call has listened to the channel already (it LISTENs to every channel
        // known).
        await client.query(`LISTEN "${channel}"`).catch((e) => Promise.reject(unavailableError(e)));
      }
      set.add(listener);
      return async () => {
        set!.delete(listener);
      };
    },
    async close() {
      closed = true;
      const p = piped;
      piped = pipedNow = undefined;
      await p?.then((c) => c.end()).catch(() => {});
      listenClient?.release();
      listenClient = undefined;
      await pool.end();
    },
  };
}

export async function openSql(opts: { databaseUrl?: string; dataDir?: string; poolSize?: number }): Promise<Sql> {
  return opts.databaseUrl ? openPostgres(opts.databaseUrl, opts.poolSize) : openPglite(opts.dataDir);
}
