import type { Principal, SchemaDefinition } from '@svc/contracts';
import { canSeeSchema, type Owned, type Sql } from '@svc/domain';

export type SchemaDoc = SchemaDefinition & { id: string; schemaVersion: number; createdAt: string; updatedAt: string; active: boolean; capabilities: Record<string, boolean> };
type Row = { doc: SchemaDoc; tenant_id: string; context_id: string; deleted: boolean; created_at: Date | string };

/**
 * Schema reads. Definitions used to shape record responses are cached briefly;
 * this process's projector clears an entry as soon as the schema changes.
 */
export class SchemaReads {
  private cache = new Map<string, { doc: SchemaDoc; at: number }>();
  private readonly ttlMs = 2000;

  constructor(private readonly sql: Sql) {}

  /** A schema the principal may see (canSeeSchema), else null. */
  async byId(p: Principal, schemaId: string): Promise<SchemaDoc | null> {
    return (await this.visible(p, schemaId))?.doc ?? null;
  }

  /** The owner of a live schema the principal may see, else null (history reads of a schema that records none). */
  async liveOwner(p: Principal, schemaId: string): Promise<Owned | null> {
    const r = await this.visible(p, schemaId);
    return r && { tenantId: r.tenant_id, contextId: r.context_id, userId: r.doc.userId ?? null, scopes: r.doc.scopes ?? [] };
  }

  private async visible(p: Principal, schemaId: string): Promise<Row | null> {
    const { rows } = await this.sql.query<Row>('SELECT doc, tenant_id, context_id, deleted FROM rm_schemas WHERE schema_id = $1', [schemaId]);
    const r = rows[0];
    if (!r || r.deleted || !canSeeSchema(p, { tenantId: r.tenant_id, contextId: r.context_id, ...r.doc })) return null;
    return r;
  }

  /** The definition a record was written against (deleted schemas still describe their records). */
  async definition(schemaId: string): Promise<SchemaDoc | undefined> {
    const hit = this.cache.get(schemaId);
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.doc;
    const { rows } = await this.sql.query<Row>('SELECT doc FROM rm_schemas WHERE schema_id = $1', [schemaId]);
    if (!rows[0]) return undefined;
    this.cache.set(schemaId, { doc: rows[0].doc, at: Date.now() });
    if (this.cache.size > 10_000) this.cache.clear();
    return rows[0].doc;
  }

  invalidate(schemaId?: string) {
    if (schemaId) this.cache.delete(schemaId);
    else this.cache.clear();
  }

  /**
   * Newest first; owned variants outside the caller's data scope are filtered
   * before the limit. `surface=entity` also lists the tenant-wide home (the
   * default context): the caller's own context first, then the home, one cursor.
   */
  async list(p: Principal, surface: string | undefined, after: [number, string, string] | undefined, limit: number): Promise<Array<{ doc: SchemaDoc; createdAt: string; group: number }>> {
    const userId = p.dataScope?.userId ?? p.userId ?? null;
    const scopes = p.dataScope?.scopes?.length ? p.dataScope.scopes : null;
    const { rows } = await this.sql.query<Row & { grp: number }>(
      `WITH ctx AS (
         SELECT $2::text AS context_id, 0 AS grp
         UNION ALL SELECT default_context_id, 1 FROM rm_tenants WHERE tenant_id = $1 AND $3::text = 'entity' AND default_context_id <> $2)
       SELECT s.doc, s.created_at, ctx.grp FROM rm_schemas s JOIN ctx ON ctx.context_id = s.context_id
        WHERE s.tenant_id = $1 AND NOT s.deleted
          AND ($3::text IS NULL OR s.doc->'allowedSurfaces' ? $3::text)
          AND ($4::int IS NULL OR ctx.grp > $4 OR (ctx.grp = $4 AND (s.created_at, s.schema_id) < ($5::timestamptz, $6::text)))
          AND (s.owner_key = '' OR (($8::text IS NULL OR s.doc->>'userId' = $8) AND ($9::text[] IS NULL OR coalesce(s.doc->'scopes', '[]'::jsonb) ?| $9::text[])))
        ORDER BY ctx.grp, s.created_at DESC, s.schema_id DESC LIMIT $7`,
      [p.tenantId, p.contextId, surface ?? null, after?.[0] ?? null, after?.[1] ?? null, after?.[2] ?? null, limit, userId, scopes],
    );
    return rows.map((r) => ({ doc: r.doc, createdAt: new Date(r.created_at).toISOString(), group: r.grp }));
  }
}

/** The schema a typeName means for a caller: its own basedOn variant if there is one, else the shared base. */
export async function schemaForType(sql: Sql, tenantId: string, contextId: string, typeName: string, ownerKey: string): Promise<SchemaDoc | null> {
  const { rows } = await sql.query<{ doc: SchemaDoc }>(
    `SELECT doc FROM rm_schemas WHERE tenant_id = $1 AND context_id = $2 AND type_name = $3 AND NOT deleted AND owner_key = ANY($4::text[])
      ORDER BY (owner_key = '') ASC LIMIT 1`,
    [tenantId, contextId, typeName, ownerKey ? [ownerKey, ''] : ['']],
  );
  return rows[0]?.doc ?? null;
}
