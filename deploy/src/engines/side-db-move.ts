import { ensureCheckpoints, readCheckpoint, resetCheckpoint, type Sql, writeCheckpoint } from '@svc/domain';
import { SEARCH_INDEX } from '@svc/search';
import { ACTIVITY_TABLE } from '@svc/query-api';
import { tableExists } from './sql';

/**
 * The embedded default's second database (DATA_DIR/pg-search, in its own thread) holds the search side's
 * tables and the activity log. A data directory written before they lived there keeps them in the main
 * database: they are moved at the next start.
 */

/** The search side's tables (search/src). */
const SEARCH_TABLES = [
  'si_schemas',
  'si_items',
  'si_vector_jobs',
  'si_vector_models',
  'si_reported',
  'ti_passages',
  'ti_terms',
  'ti_stats',
];
/** Heap pages copied per statement (8 KiB each): about 2 MiB of rows at a time. */
const PAGES = 256;

/** The search checkpoint, or null where there is none (no table, or no row: a checkpoint is never written at 0). */
const checkpointOf = async (sql: Sql): Promise<number | null> => {
  if (!(await tableExists(sql, 'proj_checkpoints'))) return null;
  return (await readCheckpoint(sql, SEARCH_INDEX)) || null;
};

/**
 * A data directory written before the search side had its own embedded database keeps the search tables in
 * the main one. Moves them (rows and the search checkpoint) into `to`, whose tables the search indexer has
 * just created, so an upgrade neither replays the log nor embeds every passage again. The checkpoint is
 * written last: a move cut short is started over (the copied rows are emptied first). Returns whether rows moved.
 */
export async function moveSearchTables(from: Sql, to: Sql, log: (m: string) => void): Promise<boolean> {
  if ((await checkpointOf(to)) !== null) {
    // Moved already (or a fresh layout); what a move cut short before its last step left behind goes.
    await dropOld(from);
    return false;
  }
  const position = await checkpointOf(from);
  if (position === null || !(await tableExists(from, 'si_items'))) return false;
  const started = Date.now();
  let rows = 0;
  for (const t of SEARCH_TABLES) {
    if (!(await tableExists(from, t)) || !(await tableExists(to, t))) continue;
    await to.exec(`DELETE FROM ${t}`);
    const { rows: size } = await from.query<{ pages: number }>(
      `SELECT (pg_relation_size('${t}') / 8192)::int AS pages`,
    );
    for (let p = 0; p <= size[0].pages; p += PAGES) {
      // A TID range: each page of the heap read once, whatever the table's keys.
      const { rows: batch } = await from.query<{ r: unknown }>(
        `SELECT to_jsonb(t) AS r FROM ${t} t WHERE ctid >= '(${p},0)'::tid AND ctid < '(${p + PAGES},0)'::tid`,
      );
      if (!batch.length) continue;
      await to.query(`INSERT INTO ${t} SELECT * FROM jsonb_populate_recordset(NULL::${t}, $1::jsonb)`, [
        JSON.stringify(batch.map((b) => b.r)),
      ]);
      rows += batch.length;
    }
  }
  await ensureCheckpoints(to);
  await writeCheckpoint(to, SEARCH_INDEX, position);
  await dropOld(from);
  log(`search index: moved ${rows} rows to its own embedded database (pg-search) in ${Date.now() - started} ms`);
  return true;
}

async function dropOld(from: Sql) {
  if (!(await tableExists(from, 'si_items'))) return;
  for (const t of SEARCH_TABLES) await from.exec(`DROP TABLE IF EXISTS ${t} CASCADE`);
  await resetCheckpoint(from, SEARCH_INDEX);
}

/** Progress of an activity log move, in the target: heap pages of the source copied so far. */
const ACTIVITY_MOVE = 'al_move';

/**
 * The activity log's entries (al_entries) from the main database into `to`, whose table the recorder writes
 * from now on (created there already). Page by page, each page's rows and the progress in one transaction of
 * the target, so a move cut short resumes where it stopped and copies no entry twice; the source is read only,
 * then dropped. Runs before the recorder starts. Returns whether entries moved.
 */
export async function moveActivityLog(from: Sql, to: Sql, log: (m: string) => void): Promise<boolean> {
  if (!(await tableExists(from, ACTIVITY_TABLE))) {
    await to.exec(`DROP TABLE IF EXISTS ${ACTIVITY_MOVE}`);
    return false;
  }
  const started = Date.now();
  await to.exec(`CREATE TABLE IF NOT EXISTS ${ACTIVITY_MOVE} (pages_done int NOT NULL)`);
  const { rows: progress } = await to.query<{ pages_done: number }>(`SELECT pages_done FROM ${ACTIVITY_MOVE}`);
  if (!progress.length) await to.query(`INSERT INTO ${ACTIVITY_MOVE} VALUES (0)`);
  const { rows: size } = await from.query<{ pages: number }>(
    `SELECT (pg_relation_size('${ACTIVITY_TABLE}') / 8192)::int AS pages`,
  );
  let entries = 0;
  for (let p = progress[0]?.pages_done ?? 0; p <= size[0].pages; p += PAGES) {
    const { rows: batch } = await from.query<{ r: unknown }>(
      `SELECT to_jsonb(t) AS r FROM ${ACTIVITY_TABLE} t WHERE ctid >= '(${p},0)'::tid AND ctid < ` +
        `'(${p + PAGES},0)'::tid`,
    );
    await to.tx(async (q) => {
      if (batch.length)
        await q.query(
          `INSERT INTO ${ACTIVITY_TABLE} SELECT * FROM jsonb_populate_recordset(NULL::${ACTIVITY_TABLE}, $1::jsonb)`,
          [JSON.stringify(batch.map((b) => b.r))],
        );
      await q.query(`UPDATE ${ACTIVITY_MOVE} SET pages_done = $1`, [p + PAGES]);
    });
    entries += batch.length;
  }
  await from.exec(`DROP TABLE ${ACTIVITY_TABLE}`);
  await to.exec(`DROP TABLE ${ACTIVITY_MOVE}`);
  log(
    `activity log: moved ${entries} entries to the second embedded database (pg-search) in ${Date.now() - started} ms`,
  );
  return true;
}
