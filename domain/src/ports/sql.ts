/**
 * A SQL connection as the adapters above it need it: PGlite in-process or a
 * PostgreSQL pool. The same SQL runs on both.
 */
export interface SqlQueryable {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ rows: T[] }>;
  /** Runs several statements separated by `;` (no parameters). */
  exec(text: string): Promise<void>;
}

export interface SqlStatement {
  text: string;
  params?: unknown[];
}

export interface Sql extends SqlQueryable {
  readonly kind: 'pglite' | 'postgres';
  /** One transaction; rolled back when `fn` throws. */
  tx<T>(fn: (q: SqlQueryable) => Promise<T>): Promise<T>;
  /**
   * Statements that need nothing from each other's results, run in order in one transaction, all or none; one
   * round trip where the adapter can make it one (the embedded database in its own thread). Call through
   * `sqlBatch`, which falls back to `tx` for an adapter without it. Returns each statement's rows.
   */
  batch?(statements: SqlStatement[]): Promise<unknown[][]>;
  /**
   * A server only: `fn` on a connection of its own whose statements go out without waiting for the answers to the
   * ones before (pipelined): statements issued together cost one round trip. `fn` writes its own BEGIN ... COMMIT;
   * a transaction it leaves open when it throws is rolled back. Calls run one at a time.
   */
  pipelined?<T>(fn: (q: SqlQueryable) => Promise<T>): Promise<T>;
  /** Calls `listener` with each payload of `NOTIFY channel`. Returns an unsubscribe. */
  listen(channel: string, listener: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** `statements` in one transaction: the adapter's single round trip when it has one, else one `tx`. */
export async function sqlBatch(sql: Sql, statements: SqlStatement[]): Promise<unknown[][]> {
  if (!statements.length) return [];
  if (sql.batch) return sql.batch(statements);
  return sql.tx(async (q) => {
    const out: unknown[][] = [];
    for (const s of statements) out.push((await q.query(s.text, s.params)).rows);
    return out;
  });
}
