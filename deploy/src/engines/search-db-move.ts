import type { Sql } from '@svc/domain';

/** The search side's tables (projectors/src/search) and its checkpoint's name. */
const SEARCH_TABLES = ['si_schemas', 'si_items', 'si_vector_jobs', 'si_vector_models', 'ti_passages', 'ti_terms', 'ti_stats'];
const CHECKPOINT = 'search-index';
/** Heap pages copied per statement (8 KiB each): about 2 MiB of rows at a time. */
const PAGES = 256;

const tableExists = async (sql: Sql, table: string) =>
  (await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1`, [table])).rows[0].n > 0;

const checkpointOf = async (sql: Sql): Promise<number | null> => {
  if (!(await tableExists(sql, 'proj_checkpoints'))) return null;
  const { rows } = await sql.query<{ position: number }>('SELECT position FROM proj_checkpoints WHERE name = $1', [CHECKPOINT]);
  return rows.length ? Number(rows[0].position) : null;
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
    const { rows: size } = await from.query<{ pages: number }>(`SELECT (pg_relation_size('${t}') / 8192)::int AS pages`);
    for (let p = 0; p <= size[0].pages; p += PAGES) {
      // A TID range: each page of the heap read once, whatever the table's keys.
      const { rows: batch } = await from.query<{ r: unknown }>(`SELECT to_jsonb(t) AS r FROM ${t} t WHERE ctid >= '(${p},0)'::tid AND ctid < '(${p + PAGES},0)'::tid`);
      if (!batch.length) continue;
      await to.query(`INSERT INTO ${t} SELECT * FROM jsonb_populate_recordset(NULL::${t}, $1::jsonb)`, [JSON.stringify(batch.map((b) => b.r))]);
      rows += batch.length;
    }
  }
  await to.exec('CREATE TABLE IF NOT EXISTS proj_checkpoints (name text PRIMARY KEY, position bigint NOT NULL)');
  await to.query('INSERT INTO proj_checkpoints (name, position) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET position = excluded.position', [CHECKPOINT, position]);
  await dropOld(from);
  log(`search index: moved ${rows} rows to its own embedded database (pg-search) in ${Date.now() - started} ms`);
  return true;
}

async function dropOld(from: Sql) {
  if (!(await tableExists(from, 'si_items'))) return;
  for (const t of SEARCH_TABLES) await from.exec(`DROP TABLE IF EXISTS ${t} CASCADE`);
  await from.query('DELETE FROM proj_checkpoints WHERE name = $1', [CHECKPOINT]);
}
