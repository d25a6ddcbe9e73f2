import {
  IDENTITY_TABLES,
  type LiveEntity,
  type LiveUser,
  type NamespaceEntry,
  type Sql,
  TENANCY_TABLES,
} from '@svc/domain';
import { firstRow } from '../first-row';
import {
  type CreatedKey,
  dataScopeArgs,
  type DataScopeFilter,
  inDataScope,
  oldestFirstAfter,
  pageArgs,
} from '../lists';

export type UserRow = Omit<LiveUser, 'exists'>;
export type EntityRow = Omit<LiveEntity, 'exists'>;

type RawUser = {
  user_id: string;
  tenant_id: string;
  context_id: string;
  email: string | null;
  display_name: string | null;
  payload: Record<string, unknown>;
  schema_id: string | null;
  scopes: string[];
  created_at: Date | string;
  updated_at: Date | string;
  version: number;
};
type RawEntity = {
  entity_id: string;
  tenant_id: string;
  context_id: string;
  namespace: string;
  key: string;
  payload: Record<string, unknown>;
  schema_id: string | null;
  created_at: Date | string;
  updated_at: Date | string;
  version: number;
};
const iso = (d: Date | string) => new Date(d).toISOString();

const toUser = (r: RawUser): UserRow => ({
  id: r.user_id,
  tenantId: r.tenant_id,
  contextId: r.context_id,
  email: r.email,
  displayName: r.display_name,
  payload: r.payload,
  schemaId: r.schema_id,
  scopes: r.scopes,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
  version: r.version,
});
const toEntity = (r: RawEntity): EntityRow => ({
  id: r.entity_id,
  tenantId: r.tenant_id,
  contextId: r.context_id,
  namespace: r.namespace,
  key: r.key,
  payload: r.payload,
  schemaId: r.schema_id,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
  version: r.version,
});

export class IdentityReads {
  constructor(private readonly sql: Sql) {}

  /** When the tenant came to be: the creation time shown for the built-in namespaces. */
  async tenantCreatedAt(tenantId: string): Promise<string> {
    const { rows } = await this.sql.query<{ created_at: Date | string }>(
      `SELECT a.created_at FROM ${TENANCY_TABLES.tenants} t JOIN ${TENANCY_TABLES.accounts} a ON a.account_id = ` +
        `t.account_id WHERE t.tenant_id = $1`,
      [tenantId],
    );
    return rows[0] ? iso(rows[0].created_at) : new Date(0).toISOString();
  }

  async namespace(tenantId: string, name: string): Promise<NamespaceEntry | null> {
    const { rows } = await this.sql.query<{ name: string; description: string | null; created_at: Date | string }>(
      `SELECT * FROM ${IDENTITY_TABLES.namespaces} WHERE tenant_id = $1 AND name = $2`,
      [tenantId, name],
    );
    return rows[0]
      ? { name: rows[0].name, description: rows[0].description, createdAt: iso(rows[0].created_at) }
      : null;
  }

  /** Registered namespaces, oldest first by (createdAt, name). */
  async namespaces(tenantId: string, after: [string, string] | undefined, limit: number): Promise<NamespaceEntry[]> {
    const { rows } = await this.sql.query<{ name: string; description: string | null; created_at: Date | string }>(
      `SELECT * FROM ${IDENTITY_TABLES.namespaces} WHERE tenant_id = $1 AND ${oldestFirstAfter('name', 2)}`,
      [tenantId, ...pageArgs(after, limit)],
    );
    return rows.map((r) => ({ name: r.name, description: r.description, createdAt: iso(r.created_at) }));
  }

  async user(id: string): Promise<UserRow | null> {
    return firstRow(this.sql, `SELECT * FROM ${IDENTITY_TABLES.users} WHERE user_id = $1`, [id], toUser);
  }

  /**
   * Oldest first; `email` matches without case; the data scope (bound user, any of the scopes) applies before the
   * limit.
   */
  async users(
    tenantId: string,
    contextId: string,
    f: { email?: string; scope?: string } & DataScopeFilter,
    after: CreatedKey | undefined,
    limit: number,
  ): Promise<UserRow[]> {
    const { rows } = await this.sql.query<RawUser>(
      `SELECT * FROM ${IDENTITY_TABLES.users}
        WHERE tenant_id = $1 AND context_id = $2 AND ($3::text IS NULL OR ` +
        `email_key = lower(trim($3::text))) AND ($4::text IS NULL OR scopes ? $4::text)
          AND ` +
        `${inDataScope(5)} AND ${oldestFirstAfter('user_id', 7)}`,
      [tenantId, contextId, f.email ?? null, f.scope ?? null, ...dataScopeArgs(f), ...pageArgs(after, limit)],
    );
    return rows.map(toUser);
  }

  async entity(id: string): Promise<EntityRow | null> {
    return firstRow(this.sql, `SELECT * FROM ${IDENTITY_TABLES.entities} WHERE entity_id = $1`, [id], toEntity);
  }

  /** Oldest first; a credential limited to scopes sees the entities those scopes name. */
  async entities(
    tenantId: string,
    contextId: string,
    f: { namespace?: string; key?: string; scopeAnyOf?: string[] },
    after: CreatedKey | undefined,
    limit: number,
  ): Promise<EntityRow[]> {
    const { rows } = await this.sql.query<RawEntity>(
      `SELECT * FROM ${IDENTITY_TABLES.entities}
        WHERE tenant_id = $1 AND context_id = $2 AND ($3::text IS NULL ` +
        `OR namespace = $3) AND ($4::text IS NULL OR key = $4)
          AND ($5::jsonb IS NULL OR ` +
        `(namespace || ':' || key) IN (SELECT jsonb_array_elements_text($5::jsonb))) AND ` +
        `${oldestFirstAfter('entity_id', 6)}`,
      [
        tenantId,
        contextId,
        f.namespace ?? null,
        f.key ?? null,
        f.scopeAnyOf?.length ? JSON.stringify(f.scopeAnyOf) : null,
        ...pageArgs(after, limit),
      ],
    );
    return rows.map(toEntity);
  }
}
