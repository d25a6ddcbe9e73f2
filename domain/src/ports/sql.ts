/**
 * A SQL connection as the adapters above it need it: PGlite in-process or a
 * PostgreSQL pool. The same SQL runs on both.
 */
export interface SqlQueryable {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ rows: T[] }>;
  /** Runs several statements separated by `;` (no parameters). */
  exec(text: string): Promise<void>;
}

export interface Sql extends SqlQueryable {
  readonly kind: 'pglite' | 'postgres';
  /** One transaction; rolled back when `fn` throws. */
  tx<T>(fn: (q: SqlQueryable) => Promise<T>): Promise<T>;
  /** Calls `listener` with each payload of `NOTIFY channel`. Returns an unsubscribe. */
  listen(channel: string, listener: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
