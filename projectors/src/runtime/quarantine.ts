import type { RecordedEvent, Sql, SqlQueryable } from '@svc/domain';

/**
 * Events a subscriber could not apply, per stream. The first failing event of a
 * stream is its cause (`parkedBehind` null); every later event of that stream is
 * parked behind it, so a stream never applies out of order while the rest of
 * the log moves on. Rows are written in the transaction that moves the
 * checkpoint past them; an operator retries or skips them (docs/operations.md).
 */
export interface QuarantineEntry {
  subscriber: string;
  position: number;
  streamId: string;
  eventType: string;
  error: string;
  /** Position of the event this one waits behind; null for the failing event itself. */
  parkedBehind: number | null;
  failedAt: string;
}

export const QUARANTINE_DDL = `CREATE TABLE IF NOT EXISTS proj_quarantine (
  subscriber text NOT NULL, position bigint NOT NULL, stream_id text NOT NULL, event_type text NOT NULL,
  error text NOT NULL, parked_behind bigint, failed_at timestamptz NOT NULL, PRIMARY KEY (subscriber, position))`;

export const ensureQuarantine = (sql: Sql) => sql.exec(QUARANTINE_DDL);

type Row = {
  subscriber: string;
  position: string | number;
  stream_id: string;
  event_type: string;
  error: string;
  parked_behind: string | number | null;
  failed_at: string | Date;
};

const toEntry = (r: Row): QuarantineEntry => ({
  subscriber: r.subscriber,
  position: Number(r.position),
  streamId: r.stream_id,
  eventType: r.event_type,
  error: r.error,
  parkedBehind: r.parked_behind === null ? null : Number(r.parked_behind),
  failedAt: new Date(r.failed_at).toISOString(),
});

/** Errors are kept short: they are shown to operators, not parsed. */
export const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e)).slice(0, 1000);

export async function park(
  q: SqlQueryable,
  subscriber: string,
  e: RecordedEvent,
  error: string,
  behind: number | null,
): Promise<void> {
  await q.query(
    `INSERT INTO proj_quarantine (subscriber, position, stream_id, event_type, error, parked_behind, ` +
      `failed_at) VALUES ($1, $2, $3, $4, $5, $6, now())
     ON CONFLICT (subscriber, position) DO UPDATE ` +
      `SET error = excluded.error, parked_behind = excluded.parked_behind, failed_at = excluded.failed_at`,
    [subscriber, e.position, e.streamId, e.type, error, behind],
  );
}

export async function listQuarantine(
  q: SqlQueryable,
  subscriber?: string,
  streamId?: string,
): Promise<QuarantineEntry[]> {
  const { rows } = await q.query<Row>(
    `SELECT * FROM proj_quarantine WHERE ($1::text IS NULL OR subscriber = $1) AND ($2::text IS NULL OR ` +
      `stream_id = $2) ORDER BY subscriber, position`,
    [subscriber ?? null, streamId ?? null],
  );
  return rows.map(toEntry);
}

export const unpark = (q: SqlQueryable, subscriber: string, position: number) =>
  q.query('DELETE FROM proj_quarantine WHERE subscriber = $1 AND position = $2', [subscriber, position]);

export const clearQuarantine = (q: SqlQueryable, subscriber: string) =>
  q.query('DELETE FROM proj_quarantine WHERE subscriber = $1', [subscriber]);
