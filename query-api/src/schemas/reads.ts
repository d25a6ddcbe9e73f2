import type { Principal, SchemaDefinition } from '@svc/contracts';
import { canSeeSchema, type Owned, type Sql, SCHEMA_TABLES, TENANCY_TABLES } from '@svc/domain';

export interface SchemaCacheOptions {
  /** How long a definition is kept where the projector beside it drops it on change (the backstop; default 2 s). */
  ttlMs?: number;
  /**
   * No projector beside this process: a definition answers only a request that saw the read models' version it
   * was read at (read-model-version.ts); a request without one reads the database.
   */
  versioned?: boolean;
}

export type SchemaDoc = SchemaDefinition & {
  id: string;
  schemaVersion: number;
  createdAt: string;
  updatedAt: string;
  active: boolean;
  capabilities: Record<string, boolean>;
};
type Row = { doc: SchemaDoc; tenant_id: string; context_id: string; deleted: boolean; created_at: Date | string };

/**
 * Schema reads. Definitions used to shape record responses are cached: beside
 * a projector (role all) until it applies a change of that schema (`invalidate`,
 * before the write waiting on it answers; 2 s as the backstop), elsewhere for
 * the read models' version they were read at (`versioned`). A read in flight is
 * shared by the requests that may use it, and one that an invalidation overtook
 * is dropped with its entry.
 */
export class SchemaReads {
  private cache = new Map<string, { doc: Promise<SchemaDoc | undefined>; at: number; version?: string }>();
  private readonly ttlMs: number;
  private readonly versioned: boolean;

  constructor(
    private readonly sql: Sql,
    o: SchemaCacheOptions = {},
  ) {
    this.ttlMs = o.ttlMs ?? 2000;
    this.versioned = o.versioned ?? false;
  }

  /** A schema the principal may see (canSeeSchema), else null. */
  async byId(p: Principal, schemaId: string): Promise<SchemaDoc | null> {
    return (await this.visible(p, schemaId))?.doc ?? null;
  }

  /** The owner of a live schema the principal may see, else null (history reads of a schema that records none). */
  async liveOwner(p: Principal, schemaId: string): Promise<Owned | null> {
    const r = await this.visible(p, schemaId);
    return (
      r && { tenantId: r.tenant_id, contextId: r.context_id, userId: r.doc.userId ?? null, scopes: r.doc.scopes ?? [] }
    );
  }

  private async visible(p: Principal, schemaId: string): Promise<Row | null> {
    const { rows } = await this.sql.query<Row>(
      `SELECT doc, tenant_id, context_id, deleted FROM ${SCHEMA_TABLES.schemas} WHERE schema_id = $1`,
      [schemaId],
    );
    const r = rows[0];
    if (!r || r.deleted || !canSeeSchema(p, { tenantId: r.tenant_id, contextId: r.context_id, ...r.doc })) return null;
    return r;
  }

  /**
   * The definition a record was written against (deleted schemas still describe their records). `version`: the read
   * models' version the request saw.
   */
  definition(schemaId: string, version?: string): Promise<SchemaDoc | undefined> {
    const hit = this.cache.get(schemaId);
    if (hit && (this.versioned ? version !== undefined && hit.version === version : Date.now() - hit.at < this.ttlMs))
      return hit.doc;
    const doc = this.sql
      .query<Row>(`SELECT doc FROM ${SCHEMA_TABLES.schemas} WHERE schema_id = $1`, [schemaId])
      .then(({ rows }) => rows[0]?.doc);
    if (this.versioned && version === undefined) return doc;
    if (this.cache.size >= 10_000) this.cache.clear();
    const entry = { doc, at: Date.now(), version };
    this.cache.set(schemaId, entry);
    doc.catch(() => this.cache.get(schemaId) === entry && this.cache.delete(schemaId));
    return doc;
  }

  /** Forgets one schema's definition, or every one (with any read in flight). */
  invalidate(schemaId?: string) {
    if (schemaId) this.cache.delete(schemaId);
    else this.cache.clear();
  }

  /**
   * Newest first; owned variants outside the caller's data scope are filtered
   * before the limit. `surface=entity` also lists the tenant-wide home (the
   * default context): the caller's own context first, then the home, one cursor.
   */
  async list(
    p: Principal,
    surface: string | undefined,
    after: [number, string, string] | undefined,
    limit: number,
  ): Promise<Array<{ doc: SchemaDoc; createdAt: string; group: number }>> {
    const userId = p.dataScope?.userId ?? p.userId ?? null;
    const scopes = p.dataScope?.scopes?.length ? p.dataScope.scopes : null;
    const { rows } = await this.sql.query<Row & { grp: number }>(
      `WITH ctx AS (
         SELECT $2::text AS context_id, 0 AS grp
         UNION ALL SELECT ` +
        `default_context_id, 1 FROM ${TENANCY_TABLES.tenants} WHERE tenant_id = $1 AND $3::text = 'entity' AND ` +
        `default_context_id <> $2)
       SELECT s.doc, s.created_at, ctx.grp FROM ${SCHEMA_TABLES.schemas} s JOIN ctx ON ` +
        `ctx.context_id = s.context_id
        WHERE s.tenant_id = $1 AND NOT s.deleted
          AND ` +
        `($3::text IS NULL OR s.doc->'allowedSurfaces' ? $3::text)
          AND ($4::int IS NULL OR ctx.grp ` +
        `> $4 OR (ctx.grp = $4 AND (s.created_at, s.schema_id) < ($5::timestamptz, $6::text)))
          AND ` +
        `(s.owner_key = '' OR (($8::text IS NULL OR s.doc->>'userId' = $8) AND ($9::text[] IS NULL OR ` +
        `coalesce(s.doc->'scopes', '[]'::jsonb) ?| $9::text[])))
        ORDER BY ctx.grp, s.created_at ` +
        `DESC, s.schema_id DESC LIMIT $7`,
      [
        p.tenantId,
        p.contextId,
        surface ?? null,
        after?.[0] ?? null,
        after?.[1] ?? null,
        after?.[2] ?? null,
        limit,
        userId,
        scopes,
      ],
    );
    return rows.map((r) => ({ doc: r.doc, createdAt: new Date(r.created_at).toISOString(), group: r.grp }));
  }
}

/** The schema a typeName means for a caller: its own basedOn variant if there is one, else the shared base. */
export async function schemaForType(
  sql: Sql,
  tenantId: string,
  contextId: string,
  typeName: string,
  ownerKey: string,
): Promise<SchemaDoc | null> {
  const { rows } = await sql.query<{ doc: SchemaDoc }>(
    `SELECT doc FROM ${SCHEMA_TABLES.schemas} WHERE tenant_id = $1 AND context_id = $2 AND type_name = $3 AND NOT ` +
      `deleted AND owner_key = ANY($4::text[])
      ORDER BY (owner_key = '') ASC LIMIT 1`,
    [tenantId, contextId, typeName, ownerKey ? [ownerKey, ''] : ['']],
  );
  return rows[0]?.doc ?? null;
}
