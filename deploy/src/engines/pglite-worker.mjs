// The search side's embedded database, in its own thread (sql-thread.ts): one PGlite, statements
// run in arrival order. Plain .mjs so the thread needs no TypeScript loader (tsx, vitest and node alike).
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { queryInOneExchange } from './pglite-exchange.mjs';

// wasmModule: PostgreSQL's WASM as the parent compiled it (sql.ts pgliteWasmModule), so its machine code is shared.
const { dataDir, nice, sharedBuffers, wasmModule } = workerData;

/** A database error as data (structured clone drops an Error's own fields such as `code`). */
const asData = (e) => {
  const out = { message: e instanceof Error ? e.message : String(e) };
  if (e && typeof e === 'object')
    for (const [k, v] of Object.entries(e)) if (typeof v === 'string' || typeof v === 'number') out[k] = v;
  return out;
};

// Linux gives each thread its own niceness: a lower priority for this thread only, so the API's thread wins the CPU
// when both want it. Elsewhere (or without permission) the thread keeps the process's priority. Lowered once the
// database is open: opening it at a low priority on a busy machine would hold the service's start up.
const lowerPriority = () => {
  if (!nice) return;
  try {
    setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), nice);
  } catch {
    /* not Linux, or not allowed: same priority as the API */
  }
};

let db;
try {
  db = await PGlite.create({
    ...(dataDir ? { dataDir } : {}),
    startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${sharedBuffers}`],
    pgliteWasmModule: wasmModule,
  });
  lowerPriority();
  parentPort.postMessage({ ready: true });
} catch (e) {
  parentPort.postMessage({ ready: false, error: asData(e) });
}

parentPort.on('message', async (m) => {
  try {
    switch (m.op) {
      case 'query':
        // inTx: a statement of a transaction the parent opened with BEGIN (it waits for none, syncs nothing).
        parentPort.postMessage({ id: m.id, rows: await queryInOneExchange(db, m.text, m.params, !!m.inTx) });
        return;
      case 'batch': {
        const rows = await db.transaction(async () => {
          const out = [];
          for (const st of m.statements) out.push(await queryInOneExchange(db, st.text, st.params, true));
          return out;
        });
        parentPort.postMessage({ id: m.id, rows });
        return;
      }
      case 'exec':
        await db.exec(m.text);
        parentPort.postMessage({ id: m.id });
        return;
      case 'listen':
        await db.listen(m.channel, (payload) => parentPort.postMessage({ channel: m.channel, payload }));
        parentPort.postMessage({ id: m.id });
        return;
      case 'close':
        await db.close();
        parentPort.postMessage({ id: m.id });
        return;
    }
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: asData(e) });
  }
});
