import { once } from 'node:events';
import { createWriteStream, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Writable } from 'node:stream';
import { exportQuery } from '@svc/contracts';
import { type EventStore, TENANCY_TABLES } from '@svc/domain';
import { exportChunks, type ExportProgress, parseKinds, selectionOf } from '@svc/query-api';
import { loadConfig } from './config';
import { openSql, tableExists } from './engines/sql';
import { PostgresEventStore } from './engines/event-store-postgres';
import { loadKurrentDb } from './engines/load-kurrentdb';

/**
 * `npm run export -- --tenant <id> --out <file.ndjson> [--from <iso>] [--to <iso>] [--streams record,document,...]
 * [--context <id>] [--start-from <position>]`: the audit export of one tenant, the lines GET /v1/export serves
 * (docs/api.md "Export"), written to a file (`--out -`: standard output) with a progress line on stderr. It reads
 * the event store only (the tenant may already be torn down: its log stays). With the embedded engines, run it with
 * the service stopped (PGlite is single-process); against PostgreSQL (DATABASE_URL), any time. The file is written
 * as `<file>.partial` (mode 0600) and renamed when complete, so a file under the asked name is always whole.
 */
const USAGE =
  'usage: npm run export -- --tenant <tenantId> --out <file.ndjson|-> [--from <ISO-8601>] [--to ' +
  '<ISO-8601>] [--streams record,document,...] [--context <contextId>] [--start-from <position>]';

function fail(message: string, code = 2): never {
  process.stderr.write(`export: ${message}\n`);
  process.exit(code);
}

const OPTIONS = {
  tenant: { type: 'string' },
  out: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  streams: { type: 'string' },
  context: { type: 'string' },
  'start-from': { type: 'string' },
  help: { type: 'boolean' },
} as const;
let args: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; strict: true }>>['values'];
try {
  args = parseArgs({
    options: OPTIONS,
    strict: true,
  }).values;
} catch (e) {
  fail(`${(e as Error).message}\n${USAGE}`);
}
if (args.help) {
  process.stdout.write(USAGE + '\n');
  process.exit(0);
}
if (!args.tenant || !args.out) fail(USAGE);
const parsed = exportQuery.safeParse({
  from: args.from,
  to: args.to,
  streams: args.streams,
  startFrom: args['start-from'],
});
if (!parsed.success)
  fail(
    parsed.error.issues
      .map((i) => `--${String(i.path[0] ?? '').replace('startFrom', 'start-from')}: ${i.message}`)
      .join('; '),
  );
try {
  parseKinds(args.streams);
} catch (e) {
  fail(`--streams: ${(e as Error).message.replace('Invalid query: streams: ', '')}`);
}

/** Writes `chunks` to `out`, waiting for 'drain' whenever write() says the buffer is full (constant memory). */
async function pump(chunks: AsyncIterable<string>, out: Writable): Promise<void> {
  for await (const chunk of chunks) {
    if (!out.write(chunk)) await once(out, 'drain');
  }
}

/** A progress line on stderr, rewritten in place on a terminal, every 10% otherwise. */
function progress(): {
  update: (p: ExportProgress) => void;
  done: (p: ExportProgress | undefined, ms: number) => void;
} {
  const tty = process.stderr.isTTY === true;
  let shown = -1;
  let lastDraw = 0;
  const bar = (p: ExportProgress) => {
    const frac = p.until > 0 ? Math.min(1, p.position / p.until) : 1;
    const width = 30;
    const full = Math.round(frac * width);
    return (
      `[${'#'.repeat(full)}${'-'.repeat(width - full)}] ${(frac * 100).toFixed(0).padStart(3)}%  ${p.lines} ` +
      `line(s)  position ${p.position}/${p.until}`
    );
  };
  return {
    update(p) {
      const pct = p.until > 0 ? Math.floor((p.position / p.until) * 10) : 10;
      if (tty) {
        if (Date.now() - lastDraw < 100) return;
        lastDraw = Date.now();
        process.stderr.write(`\r${bar(p)}`);
      } else if (pct > shown) {
        shown = pct;
        process.stderr.write(`${bar(p)}\n`);
      }
    },
    done(p, ms) {
      const last = p ?? { position: 0, until: 0, lines: 0 };
      process.stderr.write(`${tty ? '\r' : ''}${bar({ ...last, position: last.until })}\n`);
      process.stderr.write(`exported ${last.lines} line(s) of tenant ${args.tenant} in ${ms} ms\n`);
    },
  };
}

const config = loadConfig();
const sql = await openSql({ databaseUrl: config.databaseUrl, dataDir: join(config.dataDir, 'pg') });
let store: EventStore;
if (config.eventStoreUrl) {
  const { KurrentDbEventStore } = await loadKurrentDb();
  store = await KurrentDbEventStore.open(config.eventStoreUrl);
} else store = await PostgresEventStore.open(sql);

const started = Date.now();
const toStdout = args.out === '-';
const partial = `${args.out}.partial`;
let last: ExportProgress | undefined;
let code = 0;
try {
  // The tenant must have existed (the read model keeps a torn-down tenant's row, and its log stays).
  if (
    (await tableExists(sql, TENANCY_TABLES.tenants)) &&
    (await sql.query(`SELECT 1 FROM ${TENANCY_TABLES.tenants} WHERE tenant_id = $1`, [args.tenant])).rows.length === 0
  )
    throw new Error(`unknown tenant ${args.tenant}`);
  const selection = selectionOf(
    parsed.data,
    { tenantId: args.tenant!, ...(args.context ? { contextId: args.context } : {}) },
    await store.headPosition(),
  );
  const bar = progress();
  const out = toStdout ? process.stdout : createWriteStream(partial, { mode: 0o600 });
  const chunks = exportChunks(store, selection, {
    onProgress: (p) => {
      last = p;
      bar.update(p);
    },
  });
  await pump(chunks, out);
  if (!toStdout) {
    out.end();
    await once(out, 'finish');
    renameSync(partial, args.out!);
  }
  bar.done(last, Date.now() - started);
} catch (e) {
  if (!toStdout) rmSync(partial, { force: true });
  process.stderr.write(`export failed: ${e instanceof Error ? e.message : String(e)}\n`);
  code = 1;
} finally {
  await store.close();
  await sql.close();
}
process.exit(code);
