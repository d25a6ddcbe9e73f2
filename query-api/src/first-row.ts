import type { SqlQueryable } from '@svc/domain';

/** The first row a query returns, as `toRow` maps it; null when it returns none (a read by id). */
export async function firstRow<Raw, Row>(
  sql: SqlQueryable,
  text: string,
  args: unknown[],
  toRow: (r: Raw) => Row,
): Promise<Row | null> {
  const { rows } = await sql.query<Raw>(text, args);
  return rows[0] ? toRow(rows[0]) : null;
}
