import { type JwtIssuer, type Sql, TENANCY_TABLES } from '@svc/domain';
import { firstRow } from '../first-row';

export interface ContextRow {
  id: string;
  /** The same value as `id`: the name the rest of the API uses for a context. */
  contextId: string;
  tenantId: string;
  name: string;
  isDefault: boolean;
  createdAt: string;
}

type Raw = { context_id: string; tenant_id: string; name: string; is_default: boolean; created_at: Date | string };
const toContext = (r: Raw): ContextRow => ({
  id: r.context_id,
  contextId: r.context_id,
  tenantId: r.tenant_id,
  name: r.name,
  isDefault: r.is_default,
  createdAt: new Date(r.created_at).toISOString(),
});

/** Reads of tenants and app contexts. */
export class TenancyReads {
  constructor(private readonly sql: Sql) {}

  async contextExists(tenantId: string, contextId: string): Promise<boolean> {
    const { rows } = await this.sql.query(
      `SELECT 1 FROM ${TENANCY_TABLES.contexts} WHERE context_id = $1 AND tenant_id = $2 AND deleted_at IS NULL`,
      [contextId, tenantId],
    );
    return rows.length > 0;
  }

  async context(tenantId: string, contextId: string): Promise<ContextRow | null> {
    return firstRow(
      this.sql,
      `SELECT * FROM ${TENANCY_TABLES.contexts} WHERE context_id = $1 AND tenant_id = $2 AND deleted_at IS NULL`,
      [contextId, tenantId],
      toContext,
    );
  }

  /** Contexts of a tenant, oldest first, keyed by (created_at, id) for cursors. */
  async listContexts(tenantId: string, after: [string, string] | undefined, limit: number): Promise<ContextRow[]> {
    const { rows } = await this.sql.query<Raw>(
      `SELECT * FROM ${TENANCY_TABLES.contexts} WHERE tenant_id = $1 AND deleted_at IS NULL
         AND ($2::timestamptz IS NULL OR (created_at, context_id) > ($2::timestamptz, $3::text))
       ORDER BY created_at, context_id LIMIT $4`,
      [tenantId, after?.[0] ?? null, after?.[1] ?? null, limit],
    );
    return rows.map(toContext);
  }

  async tenantsOfAccount(accountId: string): Promise<Array<{ tenantId: string; environment: 'live' | 'test' }>> {
    const { rows } = await this.sql.query<{ tenant_id: string; environment: 'live' | 'test' }>(
      `SELECT tenant_id, environment FROM ${TENANCY_TABLES.tenants} WHERE account_id = $1`,
      [accountId],
    );
    return rows.map((r) => ({ tenantId: r.tenant_id, environment: r.environment }));
  }

  async account(accountId: string): Promise<Record<string, unknown> | null> {
    const { rows } = await this.sql.query<{ doc: Record<string, unknown> }>(
      `SELECT doc FROM ${TENANCY_TABLES.accounts} WHERE account_id = $1`,
      [accountId],
    );
    return rows[0]?.doc ?? null;
  }

  /** The identity providers a live tenant accepts, in the order registered; null when there is no such tenant. */
  async jwtIssuers(tenantId: string): Promise<JwtIssuer[] | null> {
    const { rows } = await this.sql.query<{ doc: JwtIssuer | null }>(
      `SELECT i.doc FROM ${TENANCY_TABLES.tenants} t LEFT JOIN ${TENANCY_TABLES.jwtIssuers} i ON i.tenant_id = ` +
        `t.tenant_id WHERE ` +
        't.tenant_id = $1 AND t.torn_down_at IS NULL ORDER BY i.ord',
      [tenantId],
    );
    return rows.length ? rows.flatMap((r) => (r.doc ? [r.doc] : [])) : null;
  }

  async anyAccount(): Promise<boolean> {
    const { rows } = await this.sql.query(`SELECT 1 FROM ${TENANCY_TABLES.accounts} LIMIT 1`);
    return rows.length > 0;
  }
}
