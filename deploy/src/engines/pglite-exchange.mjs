// One statement in one exchange with PGlite, shared by the in-process adapter (sql.ts) and the database thread
// (pglite-worker.mjs), so the same SQL behaves the same in both. Plain .mjs: the thread runs it without a TypeScript
// loader.
import { parse, protocol } from '@electric-sql/pglite';
import utils from 'pg/lib/utils.js';

const { serialize } = protocol;

/**
 * Parse, Bind, Describe, Execute and Sync sent together. PGlite's own query() makes six exchanges of them (a first
 * Describe learns the parameter types its serializers need), and on the service's thread that protocol traffic was a
 * fifth of a record create's CPU. Values are prepared as node-postgres prepares them for a server (text format,
 * arrays as array literals, objects as JSON), so the same SQL behaves the same on PGlite and on PostgreSQL; rows are
 * parsed by PGlite's own result parser. Outside a transaction (`inTx` false) the statement waits for any transaction
 * in progress and the data directory is synced after it, as PGlite's query() does.
 */
export async function queryInOneExchange(db, text, params, inTx) {
  if (!inTx)
    return db._runExclusiveTransaction(() =>
      queryInOneExchange(db, text, params, true).then(async (rows) => (await db.syncToFs(), rows)),
    );
  return db._runExclusiveQuery(async () => {
    const parts = [
      serialize.parse({ text }),
      serialize.bind({ values: (params ?? []).map((v) => utils.prepareValue(v)) }),
      serialize.describe({ type: 'P' }),
      serialize.execute({}),
      serialize.sync(),
    ];
    const message = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      message.set(p, at);
      at += p.length;
    }
    const { messages } = await db.execProtocol(message, { syncToFs: false });
    return parse.parseResults(messages, db.parsers)[0]?.rows ?? [];
  });
}
