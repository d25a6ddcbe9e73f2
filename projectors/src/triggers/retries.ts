import type { Sql, SqlQueryable } from '@svc/domain';

/**
 * Firings waiting for their next attempt after a service-side failure
 * (`trg_retries`): durable, so a restart resumes the schedule where it was.
 * Not a read model: a rebuild never drops it (nor the runner's checkpoint).
 */
export const ensureRetries = (sql: Sql) =>
  sql.exec(
    `CREATE TABLE IF NOT EXISTS trg_retries (
  rule_id text NOT NULL, event_id text NOT NULL, position ` +
      `bigint NOT NULL, attempts int NOT NULL, due_at bigint NOT NULL,
  first_failed_at text NOT NULL, ` +
      `last_reason text NOT NULL, last_message text NOT NULL, PRIMARY KEY (rule_id, event_id));
CREATE INDEX ` +
      `IF NOT EXISTS trg_retries_due ON trg_retries (due_at);`,
  );

export interface RetryRow {
  ruleId: string;
  eventId: string;
  position: number;
  attempts: number;
  dueAt: number;
  firstFailedAt: string;
  lastReason: string;
  lastMessage: string;
}

export async function retryOf(q: SqlQueryable, ruleId: string, eventId: string): Promise<RetryRow | null> {
  const { rows } = await q.query<Record<string, unknown>>(
    'SELECT * FROM trg_retries WHERE rule_id = $1 AND event_id = $2',
    [ruleId, eventId],
  );
  return rows.length ? toRow(rows[0]) : null;
}

export async function dueRetries(q: SqlQueryable, now: number, limit = 50): Promise<RetryRow[]> {
  const { rows } = await q.query<Record<string, unknown>>(
    'SELECT * FROM trg_retries WHERE due_at <= $1 ORDER BY due_at, position LIMIT $2',
    [now, limit],
  );
  return rows.map(toRow);
}

export const scheduleRetry = (q: SqlQueryable, r: RetryRow) =>
  q.query(
    `INSERT INTO trg_retries (rule_id, event_id, position, attempts, due_at, first_failed_at, ` +
      `last_reason, last_message) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)
     ON CONFLICT (rule_id, event_id) DO ` +
      `UPDATE SET attempts = excluded.attempts, due_at = excluded.due_at, last_reason = ` +
      `excluded.last_reason, last_message = excluded.last_message`,
    [r.ruleId, r.eventId, r.position, r.attempts, r.dueAt, r.firstFailedAt, r.lastReason, r.lastMessage],
  );

export const clearRetry = (q: SqlQueryable, ruleId: string, eventId: string) =>
  q.query('DELETE FROM trg_retries WHERE rule_id = $1 AND event_id = $2', [ruleId, eventId]);

export async function pendingRetries(q: SqlQueryable): Promise<number> {
  const { rows } = await q.query<{ n: number | string }>('SELECT count(*) AS n FROM trg_retries');
  return Number(rows[0]?.n ?? 0);
}

const toRow = (r: Record<string, unknown>): RetryRow => ({
  ruleId: String(r.rule_id),
  eventId: String(r.event_id),
  position: Number(r.position),
  attempts: Number(r.attempts),
  dueAt: Number(r.due_at),
  firstFailedAt: String(r.first_failed_at),
  lastReason: String(r.last_reason),
  lastMessage: String(r.last_message),
});
