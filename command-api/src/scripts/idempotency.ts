import { createHash } from 'node:crypto';
import { ServiceError } from '@svc/contracts';
import type { Sql } from '@svc/domain';
import { stringify } from 'safe-stable-stringify';

/**
 * Idempotency-Key records of POST /v1/scripts/execute (docs/scripts.md
 * "Idempotency"): one row per tenant, context and key, claimed before the run
 * (status null = in flight) and completed with the response; kept 24 hours.
 * A claim left in flight past `staleMs` (the process died mid-run) answers
 * 500 EXECUTION_OUTCOME_UNKNOWN with the execution id it had.
 */
export const IDEMPOTENCY_DDL = `
CREATE TABLE IF NOT EXISTS script_idempotency (
  tenant_id text NOT NULL, context_id text NOT NULL, key text NOT NULL, request_hash text NOT NULL,
  execution_id text NOT NULL, status int, body jsonb, created_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, context_id, key));`;

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export type Claim = { kind: 'run'; executionId: string } | { kind: 'replay'; status: number; body: unknown };

/**
 * Keys sorted at every depth: the same input with its keys in another order is the same request (a replay, not
 * IDEMPOTENCY_KEY_REUSED).
 */
export const requestHash = (value: unknown) =>
  createHash('sha256')
    .update(stringify(value) ?? 'null')
    .digest('hex');

export class IdempotencyStore {
  private ready: Promise<void> | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly staleMs: number,
  ) {}

  private init() {
    return (this.ready ??= this.sql.exec(IDEMPOTENCY_DDL));
  }

  /**
   * `requestId`: the claiming request's, for the error body of a stale claim it finds (every error body carries one).
   */
  async claim(
    tenantId: string,
    contextId: string,
    key: string,
    hash: string,
    executionId: string,
    now: Date,
    requestId: string,
  ): Promise<Claim> {
    await this.init();
    await this.sql.query(
      'DELETE FROM script_idempotency WHERE tenant_id = $1 AND context_id = $2 AND key = $3 AND created_at < $4',
      [tenantId, contextId, key, new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS).toISOString()],
    );
    const inserted = await this.sql.query(
      `INSERT INTO script_idempotency (tenant_id, context_id, key, request_hash, execution_id, ` +
        `created_at) VALUES ($1,$2,$3,$4,$5,$6)
       ON CONFLICT (tenant_id, context_id, key) DO NOTHING ` +
        `RETURNING key`,
      [tenantId, contextId, key, hash, executionId, now.toISOString()],
    );
    if (inserted.rows.length) return { kind: 'run', executionId };
    const { rows } = await this.sql.query<{
      request_hash: string;
      execution_id: string;
      status: number | null;
      body: unknown;
      created_at: string | Date;
    }>(
      'SELECT request_hash, execution_id, status, body, created_at FROM script_idempotency WHERE ' +
        'tenant_id = $1 AND context_id = $2 AND key = $3',
      [tenantId, contextId, key],
    );
    const row = rows[0];
    if (!row) return this.claim(tenantId, contextId, key, hash, executionId, now, requestId);
    if (row.request_hash !== hash)
      throw new ServiceError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used for a different request');
    if (row.status === null) {
      if (now.getTime() - new Date(row.created_at).getTime() < this.staleMs)
        throw new ServiceError('IDEMPOTENCY_IN_PROGRESS', 'A request with this Idempotency-Key is in flight');
      const body = {
        message: 'The outcome of the script execution could not be determined',
        errorCode: 'EXECUTION_OUTCOME_UNKNOWN',
        requestId,
        execution: { id: row.execution_id },
      };
      await this.complete(tenantId, contextId, key, 500, body);
      return { kind: 'replay', status: 500, body };
    }
    return { kind: 'replay', status: row.status, body: typeof row.body === 'string' ? JSON.parse(row.body) : row.body };
  }

  async complete(tenantId: string, contextId: string, key: string, status: number, body: unknown): Promise<void> {
    await this.sql.query(
      'UPDATE script_idempotency SET status = $4, body = $5 WHERE tenant_id = $1 AND context_id = $2 AND key = $3',
      [tenantId, contextId, key, status, JSON.stringify(body)],
    );
  }

  /** Forgets a claim whose request never ran (refused before the script started): the key may be used again. */
  async release(tenantId: string, contextId: string, key: string): Promise<void> {
    await this.sql.query(
      'DELETE FROM script_idempotency WHERE tenant_id = $1 AND context_id = $2 AND key = $3 AND status IS NULL',
      [tenantId, contextId, key],
    );
  }
}
