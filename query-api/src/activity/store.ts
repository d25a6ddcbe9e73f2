import type { Sql } from '@svc/domain';
import type { ActivityEntry } from '@svc/contracts';

/**
 * The activity log table (docs/api.md "Activity log"). Not a read model of the
 * event log: entries are written by every HTTP process in batches
 * (deploy/src/activity/recorder.ts) and never replayed; `npm run rebuild`
 * leaves the table alone.
 *
 * `at_us` is when the request arrived, in epoch microseconds (sub-millisecond
 * resolution keeps one client's consecutive requests in order).
 */
export const ACTIVITY_TABLE = 'al_entries';
export const ACTIVITY_DDL = `
CREATE TABLE IF NOT EXISTS al_entries (
  tenant_id text NOT NULL, context_id text, at_us bigint NOT NULL, method text NOT NULL, resource text NOT NULL,
  status int NOT NULL, key_id text, duration_ms double precision, path text, request_id text NOT NULL, error_code text);
CREATE INDEX IF NOT EXISTS al_entries_tenant_at ON al_entries (tenant_id, at_us DESC);
CREATE INDEX IF NOT EXISTS al_entries_at ON al_entries USING brin (at_us);`;
/** One entry as stored. */
export interface ActivityRow {
  tenantId: string;
  contextId: string | null;
  atUs: number;
  method: string;
  resource: string;
  status: number;
  keyId: string | null;
  durationMs: number | null;
  path: string | null;
  requestId: string;
  errorCode: string | null;
}

export interface ActivityFilter {
  tenantId: string;
  /** Set for a context-confined credential: only requests made in that context. */
  contextId?: string;
  /** Window in epoch milliseconds, both ends inclusive (the end to its last microsecond); no end: open. */
  fromMs: number;
  toMs?: number;
  limit: number;
  errorsOnly?: boolean;
  resource?: string;
  method?: string;
  keyId?: string;
}

type Stored = {
  at_us: number | string;
  method: string;
  resource: string;
  status: number;
  key_id: string | null;
  duration_ms: number | null;
  path: string | null;
  request_id: string;
  error_code: string | null;
};

const PRUNE_BATCH = 5000;

export class ActivityLogStore {
  private ready?: Promise<void>;

  constructor(private readonly sql: Sql) {}

  /** Creates the table and its indexes (once per instance; idempotent). */
  init(): Promise<void> {
    // On a server, exec serialises schema changes across processes (deploy's openPostgres).
    this.ready ??= this.sql.exec(ACTIVITY_DDL).catch((e) => {
      this.ready = undefined;
      throw e;
    });
    return this.ready;
  }

  /** One statement per call, whatever the number of rows (arrays unnested). */
  async insert(rows: ActivityRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.init();
    const col = <K extends keyof ActivityRow>(k: K) => rows.map((r) => r[k]);
    await this.sql.query(
      `INSERT INTO al_entries (tenant_id, context_id, at_us, method, resource, status, key_id, ` +
        `duration_ms, path, request_id, error_code)
       SELECT * FROM unnest($1::text[], $2::text[], ` +
        `$3::bigint[], $4::text[], $5::text[], $6::int[], $7::text[], $8::float8[], $9::text[], $10::text[], ` +
        `$11::text[])`,
      [
        col('tenantId'),
        col('contextId'),
        col('atUs'),
        col('method'),
        col('resource'),
        col('status'),
        col('keyId'),
        col('durationMs'),
        col('path'),
        col('requestId'),
        col('errorCode'),
      ],
    );
  }

  /** Newest first; `limit + 1` rows are read so the caller can tell the window held more. */
  async query(f: ActivityFilter): Promise<{ entries: ActivityEntry[]; truncated: boolean }> {
    await this.init();
    const params: unknown[] = [f.tenantId, f.fromMs * 1000];
    const where = ['tenant_id = $1', 'at_us >= $2'];
    const add = (clause: string, v: unknown) => {
      params.push(v);
      where.push(clause.replace('?', `$${params.length}`));
    };
    if (f.toMs !== undefined) add('at_us <= ?', f.toMs * 1000 + 999);
    if (f.contextId !== undefined) add('context_id = ?', f.contextId);
    if (f.errorsOnly) where.push('status >= 400');
    if (f.resource !== undefined) add('resource = ?', f.resource);
    if (f.method !== undefined) add('method = ?', f.method);
    if (f.keyId !== undefined) add('key_id = ?', f.keyId);
    params.push(f.limit + 1);
    const { rows } = await this.sql.query<Stored>(
      `SELECT at_us, method, resource, status, key_id, duration_ms, path, request_id, error_code
         FROM al_entries WHERE ${where.join(' AND ')}
        ORDER BY at_us DESC, request_id DESC LIMIT $${params.length}`,
      params,
    );
    const truncated = rows.length > f.limit;
    return { entries: rows.slice(0, f.limit).map(toEntry), truncated };
  }

  /**
   * Deletes entries older than `beforeMs`, in batches (the embedded database has one connection). Returns the count.
   */
  async prune(beforeMs: number): Promise<number> {
    await this.init();
    let total = 0;
    for (;;) {
      const { rows } = await this.sql.query<{ n: number }>(
        `WITH d AS (DELETE FROM al_entries WHERE ctid IN (SELECT ctid FROM al_entries WHERE at_us < $1 ` +
          `LIMIT ${PRUNE_BATCH}) RETURNING 1)
         SELECT count(*)::int AS n FROM d`,
        [beforeMs * 1000],
      );
      const n = Number(rows[0]?.n ?? 0);
      total += n;
      if (n < PRUNE_BATCH) return total;
      await new Promise((r) => setImmediate(r));
    }
  }

  /** Every entry of a tenant (tenant teardown). */
  async deleteTenant(tenantId: string): Promise<void> {
    await this.init();
    await this.sql.query('DELETE FROM al_entries WHERE tenant_id = $1', [tenantId]);
  }
}

function toEntry(r: Stored): ActivityEntry {
  return {
    timestamp: new Date(Math.floor(Number(r.at_us) / 1000)).toISOString(),
    method: r.method,
    resource: r.resource,
    status: r.status,
    ...(r.key_id !== null ? { keyId: r.key_id } : {}),
    ...(r.duration_ms !== null ? { durationMs: r.duration_ms } : {}),
    ...(r.path !== null ? { path: r.path } : {}),
    requestId: r.request_id,
    errorCode: r.error_code,
  };
}
