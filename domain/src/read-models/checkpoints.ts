import type { Sql, SqlQueryable } from '../ports/sql';

/**
 * Checkpoints of every subscriber of the log (read models, search index,
 * document worker): one row per name, the last position applied. Written in
 * the same transaction as the work where the work is SQL. Here in domain
 * because both the projectors' runtime and the search indexer (@svc/search)
 * keep one, and neither imports the other's package.
 */
export const ensureCheckpoints = (sql: Sql) =>
  sql.exec(`CREATE TABLE IF NOT EXISTS proj_checkpoints (name text PRIMARY KEY, position bigint NOT NULL)`);

export async function readCheckpoint(q: SqlQueryable, name: string): Promise<number> {
  const { rows } = await q.query<{ position: number }>('SELECT position FROM proj_checkpoints WHERE name = $1', [name]);
  return rows.length ? Number(rows[0].position) : 0;
}

export const writeCheckpoint = (q: SqlQueryable, name: string, position: number) =>
  q.query(
    'INSERT INTO proj_checkpoints (name, position) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET ' +
      'position = excluded.position',
    [name, position],
  );

/**
 * Writes the row again without moving it: its `xmin` changes, and with it the read models' version that processes
 * without a projector check their caches against (domain read-model-version.ts). For read-model changes that do not
 * move the position (a quarantined event applied on release).
 */
export const touchCheckpoint = (q: SqlQueryable, name: string) =>
  q.query('UPDATE proj_checkpoints SET position = position WHERE name = $1', [name]);

/**
 * Moves a row forward only: for a write that may land after a later one of the same subscriber (reactor.ts, idle
 * flush).
 */
export const advanceCheckpoint = (q: SqlQueryable, name: string, position: number) =>
  q.query(
    'INSERT INTO proj_checkpoints (name, position) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET ' +
      'position = greatest(proj_checkpoints.position, excluded.position)',
    [name, position],
  );

export const resetCheckpoint = (q: SqlQueryable, name: string) =>
  q.query('DELETE FROM proj_checkpoints WHERE name = $1', [name]);
