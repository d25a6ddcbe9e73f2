import { type Sql, type SqlQueryable, WEBHOOK_TABLES } from '@svc/domain';

/**
 * The delivery table (the dispatcher's): one row per (registration, log
 * event), with its due time persisted, so nothing lives only in a timer.
 * `body` is the envelope's exact JSON text; it is never returned by the API.
 */
export const ensureDeliveries = (sql: Sql) =>
  sql.exec(
    `
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  delivery_id text PRIMARY KEY, webhook_id text NOT ` +
      `NULL, tenant_id text NOT NULL, event_id text NOT NULL, event_type text NOT NULL,
  source_id text NOT ` +
      `NULL, source_type text NOT NULL, status text NOT NULL, attempts int NOT NULL DEFAULT 0, next_attempt_at ` +
      `bigint,
  created_at bigint NOT NULL, settled_at bigint, body text NOT NULL, last_error text);
CREATE ` +
      `UNIQUE INDEX IF NOT EXISTS webhook_deliveries_event ON webhook_deliveries (webhook_id, ` +
      `event_id);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at) ` +
      `WHERE status = 'PENDING';
CREATE INDEX IF NOT EXISTS webhook_deliveries_history ON webhook_deliveries ` +
      `(webhook_id, created_at DESC, delivery_id DESC);`,
  );

export interface NewDelivery {
  deliveryId: string;
  webhookId: string;
  tenantId: string;
  eventId: string;
  eventType: string;
  sourceId: string;
  sourceType: string;
  createdAt: number;
  body: string;
}

export async function insertDeliveries(q: SqlQueryable, rows: NewDelivery[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 200) {
    const chunk = rows.slice(i, i + 200);
    const params: unknown[] = [];
    const values = chunk.map((r, k) => {
      params.push(
        r.deliveryId,
        r.webhookId,
        r.tenantId,
        r.eventId,
        r.eventType,
        r.sourceId,
        r.sourceType,
        r.createdAt,
        r.body,
      );
      const p = (i: number) => `$${k * 9 + i}`;
      return `(${p(1)},${p(2)},${p(3)},${p(4)},${p(5)},${p(6)},${p(7)},'PENDING',0,${p(8)},${p(8)},${p(9)})`;
    });
    await q.query(
      `INSERT INTO webhook_deliveries (delivery_id, webhook_id, tenant_id, event_id, event_type, ` +
        `source_id, source_type, status, attempts, next_attempt_at, created_at, body)
       VALUES ` +
        `${values.join(',')} ON CONFLICT DO NOTHING`,
      params,
    );
  }
}

export interface DueDelivery {
  delivery_id: string;
  webhook_id: string;
  tenant_id: string;
  status: string;
  attempts: number;
  body: string;
  url: string;
  sealed_secret: string;
}

/**
 * Due deliveries of ACTIVE registrations, at most `perWebhook` of each, none of
 * the registrations or tenants already at their concurrency limit: a slow
 * receiver's backlog never fills the page another one needs.
 */
export async function dueDeliveries(
  sql: Sql,
  o: { now: number; busyWebhooks: string[]; busyTenants: string[]; skip: string[]; perWebhook: number; limit: number },
): Promise<DueDelivery[]> {
  // A bounded scan in due order (the partial index), skipping registrations and tenants at their limit, then at most
  // `perWebhook` of each: the cost of a pick does not grow with the backlog.
  const { rows } = await sql.query<DueDelivery>(
    `WITH due AS (
       SELECT d.delivery_id, d.webhook_id, d.next_attempt_at FROM webhook_deliveries d ` +
      `JOIN ${WEBHOOK_TABLES.webhooks} w ON w.webhook_id = d.webhook_id
       WHERE d.status = 'PENDING' AND ` +
      `d.next_attempt_at <= $1 AND w.status = 'ACTIVE'
         AND NOT (d.webhook_id = ANY($2::text[])) AND ` +
      `NOT (d.tenant_id = ANY($3::text[])) AND NOT (d.delivery_id = ANY($4::text[]))
       ORDER BY ` +
      `d.next_attempt_at LIMIT $6 * 8
     ), ranked AS (SELECT delivery_id, next_attempt_at, row_number() ` +
      `OVER (PARTITION BY webhook_id ORDER BY next_attempt_at, delivery_id) AS rn FROM due)
     SELECT ` +
      `d.delivery_id, d.webhook_id, d.tenant_id, d.status, d.attempts, d.body, w.url, w.sealed_secret
     ` +
      `FROM ranked r JOIN webhook_deliveries d ON d.delivery_id = r.delivery_id JOIN ${WEBHOOK_TABLES.webhooks} w ON ` +
      `w.webhook_id = d.webhook_id
     WHERE r.rn <= $5 ORDER BY r.next_attempt_at, r.delivery_id LIMIT $6`,
    [o.now, o.busyWebhooks, o.busyTenants, o.skip, o.perWebhook, o.limit],
  );
  return rows;
}

export interface AttemptResult {
  deliveryId: string;
  webhookId: string;
  status: string;
  attempts: number;
  nextAttemptAt: number | null;
  settledAt: number | null;
  error: string | null;
  ok: boolean;
}

/**
 * Records the results of several attempts in one transaction and counts them
 * on their registrations in order: a success resets the count, a failure adds
 * one. Returns each touched registration's count and whether it is ACTIVE.
 */
export async function settleAttempts(
  sql: Sql,
  results: AttemptResult[],
): Promise<Map<string, { consecutiveFailures: number; active: boolean }>> {
  // Per registration: failures after its last success in this batch, and whether a success reset the count.
  const counts = new Map<string, { reset: boolean; tail: number }>();
  for (const r of results) {
    const c = counts.get(r.webhookId) ?? { reset: false, tail: 0 };
    counts.set(r.webhookId, r.ok ? { reset: true, tail: 0 } : { reset: c.reset, tail: c.tail + 1 });
  }
  return sql.tx(async (q) => {
    await q.query(
      `UPDATE webhook_deliveries d SET status = v.status, attempts = v.attempts, next_attempt_at = ` +
        `v.next_at, settled_at = v.settled_at, last_error = v.error
       FROM (SELECT unnest($1::text[]) ` +
        `AS id, unnest($2::text[]) AS status, unnest($3::int[]) AS attempts, unnest($4::bigint[]) AS ` +
        `next_at,
                    unnest($5::bigint[]) AS settled_at, unnest($6::text[]) AS error) ` +
        `v
       WHERE d.delivery_id = v.id`,
      [
        results.map((r) => r.deliveryId),
        results.map((r) => r.status),
        results.map((r) => r.attempts),
        results.map((r) => r.nextAttemptAt),
        results.map((r) => r.settledAt),
        results.map((r) => r.error),
      ],
    );
    const ids = [...counts.keys()];
    const { rows } = await q.query<{ webhook_id: string; n: number; status: string }>(
      `UPDATE ${WEBHOOK_TABLES.webhooks} w SET consecutive_failures = CASE WHEN v.reset THEN v.tail ELSE ` +
        `w.consecutive_failures + v.tail END
       FROM (SELECT unnest($1::text[]) AS id, ` +
        `unnest($2::boolean[]) AS reset, unnest($3::int[]) AS tail) v
       WHERE w.webhook_id = v.id ` +
        `RETURNING w.webhook_id, w.consecutive_failures AS n, w.status`,
      [ids, ids.map((id) => counts.get(id)!.reset), ids.map((id) => counts.get(id)!.tail)],
    );
    return new Map(
      rows.map((r) => [r.webhook_id, { consecutiveFailures: Number(r.n), active: r.status === 'ACTIVE' }]),
    );
  });
}

/** Retention: unresolved (PENDING, FAILED) after 7 days, DELIVERED 30 days after delivery. */
export async function purgeDeliveries(
  sql: Sql,
  now: number,
  unresolvedMs: number,
  deliveredMs: number,
): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(
    `WITH gone AS (DELETE FROM webhook_deliveries WHERE (status <> 'DELIVERED' AND created_at < $1) OR ` +
      `(status = 'DELIVERED' AND settled_at < $2) RETURNING 1) SELECT count(*)::int AS n FROM gone`,
    [now - unresolvedMs, now - deliveredMs],
  );
  return Number(rows[0]?.n ?? 0);
}
