import { Worker } from 'node:worker_threads';
import type { Sql, SqlQueryable } from '@svc/domain';
import { pgliteSharedBuffers, pgliteWasmModule } from './sql';
import { seedPgliteDataDir } from './pglite-template.mjs';

type Reply = { id: number; rows?: unknown[]; error?: Record<string, unknown> & { message: string } };

/**
 * Embedded PostgreSQL (PGlite) in a thread of its own, persisted in `dataDir`: the search side's database
 * in the embedded default (docs/search.md "Where the search index lives"). Its statements (text analysis,
 * GIN inserts, term statistics) then run on another core than the API's, at the thread niceness `nice`
 * (Linux), instead of holding the API's one embedded connection.
 *
 * One connection, as PGlite is: statements run in the order they are sent, and a transaction holds every
 * other statement of this object until it ends (the same rule as PGlite's own `transaction`).
 */
export async function openPgliteThread(dataDir: string | undefined, o: { nice?: number } = {}): Promise<Sql> {
  if (dataDir) await seedPgliteDataDir(dataDir, await pgliteWasmModule());
  // Plain .mjs: no TypeScript loader needed in the thread; execArgv [] keeps the parent's loaders and flags out.
  const worker = new Worker(new URL('./pglite-worker.mjs', import.meta.url), {
    execArgv: [],
    workerData: {
      dataDir,
      nice: o.nice ?? 0,
      sharedBuffers: pgliteSharedBuffers(),
      wasmModule: await pgliteWasmModule(),
    },
  });
  const calls = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();
  const listeners = new Map<string, Set<(payload: string) => void>>();
  let next = 0;
  let dead: Error | undefined;

  await new Promise<void>((resolve, reject) => {
    worker.once('message', (m: { ready: boolean; error?: { message: string } }) =>
      m.ready ? resolve() : reject(new Error(`embedded search database: ${m.error?.message}`)),
    );
    worker.once('error', reject);
  });
  worker.on('message', (m: Reply & { channel?: string; payload?: string }) => {
    if (m.channel !== undefined) return listeners.get(m.channel)?.forEach((l) => l(m.payload ?? ''));
    const c = calls.get(m.id);
    calls.delete(m.id);
    c?.resolve(m);
  });
  const fail = (e: Error) => {
    dead = e;
    for (const c of calls.values()) c.reject(e);
    calls.clear();
  };
  worker.on('error', (e) => fail(e));
  worker.on('exit', (code) => fail(new Error(`embedded search database thread exited (${code})`)));

  const call = async (m: Record<string, unknown>): Promise<Reply> => {
    if (dead) throw dead;
    const id = ++next;
    const reply = await new Promise<Reply>((resolve, reject) => {
      calls.set(id, { resolve, reject });
      worker.postMessage({ ...m, id });
    });
    if (reply.error) throw Object.assign(new Error(reply.error.message), reply.error);
    return reply;
  };
  // inTx: a statement of the transaction this object opened (the thread neither waits for nor syncs it alone).
  const direct = (inTx: boolean): SqlQueryable => ({
    query: async <T>(text: string, params?: unknown[]) => ({
      rows: (await call({ op: 'query', text, params, inTx })).rows as T[],
    }),
    exec: async (text: string) => {
      await call({ op: 'exec', text });
    },
  });
  const alone = direct(false);
  const inTx = direct(true);

  // Statements are posted as soon as they are sent (the thread runs them in that order, so independent ones
  // overlap with the round trips of the others); only an open transaction holds the rest until it ends, so a
  // statement from outside never lands inside it.
  let open: Promise<void> | undefined;
  const outside = async <T>(f: () => Promise<T>): Promise<T> => {
    while (open) await open;
    return f();
  };

  return {
    kind: 'pglite',
    query: (text, params) => outside(() => alone.query(text, params)),
    exec: (text) => outside(() => alone.exec(text)),
    tx: (fn) =>
      outside(async () => {
        let end!: () => void;
        open = new Promise<void>((r) => (end = r));
        try {
          await inTx.exec('BEGIN');
          try {
            const out = await fn(inTx);
            await inTx.exec('COMMIT');
            return out;
          } catch (e) {
            await inTx.exec('ROLLBACK').catch(() => {});
            throw e;
          }
        } finally {
          open = undefined;
          end();
        }
      }),
    // One message: the thread runs them in one transaction.
    batch: (statements) =>
      statements.length
        ? outside(async () => (await call({ op: 'batch', statements })).rows as unknown[][])
        : Promise.resolve([]),
    async listen(channel, listener) {
      let set = listeners.get(channel);
      if (!set) {
        set = new Set();
        listeners.set(channel, set);
        await outside(() => call({ op: 'listen', channel }));
      }
      set.add(listener);
      return async () => {
        set!.delete(listener);
      };
    },
    async close() {
      if (!dead) await outside(() => call({ op: 'close' })).catch(() => {});
      await worker.terminate();
    },
  };
}
