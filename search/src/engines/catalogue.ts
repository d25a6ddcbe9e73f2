import type { SchemaDefinition } from '@svc/contracts';
import type {
  AttrValue,
  CatalogueItem,
  ItemFilter,
  SearchCatalogueReads,
  SourceKind,
  Sql,
  SqlQueryable,
} from '@svc/domain';
import { filterSql } from './filter-sql';

/** The vector jobs' table (indexer/vector-queue.ts): part of the catalogue, created and moved with it. */
export const VECTOR_JOBS_TABLE = 'si_vector_jobs';
export const VECTOR_JOBS_DDL = `
CREATE TABLE IF NOT EXISTS si_vector_jobs (
  item_id text PRIMARY KEY, tenant_id text NOT NULL, context_id text NOT NULL, position bigint NOT NULL,
  job jsonb NOT NULL, passages jsonb NOT NULL, enqueued_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX IF NOT EXISTS si_vector_jobs_ctx ON si_vector_jobs (tenant_id, context_id);`;

/**
 * The search projector's own state in SQL, whatever the text engine: the
 * schemas it indexes with (si_schemas), and one row per known item (si_items)
 * with what an update needs (type, schema, creation time), the filter columns
 * that narrow the vector leg, the metadata results show, the revision indexed
 * and its vector count (per-tenant capacity: the vectors written, or, while
 * its vector job is queued, the vectors it will have), and the queued vector
 * jobs (si_vector_jobs, ../indexer/vector-queue.ts).
 */
export const CATALOGUE_TABLES = ['si_items', 'si_schemas', VECTOR_JOBS_TABLE];
export const CATALOGUE_DDL =
  `
CREATE TABLE IF NOT EXISTS si_schemas (schema_id text PRIMARY KEY, doc jsonb NOT NULL);
CREATE TABLE IF ` +
  `NOT EXISTS si_items (
  item_id text PRIMARY KEY, tenant_id text NOT NULL, context_id text NOT NULL, ` +
  `account_id text, source_type text NOT NULL,
  type_name text, schema_id text, external_id text, ` +
  `index_mode text, folder_id text, user_id text, scopes jsonb NOT NULL,
  attrs jsonb NOT NULL, created_at ` +
  `timestamptz NOT NULL, metadata jsonb NOT NULL, revision bigint NOT NULL, vectors int NOT NULL DEFAULT ` +
  `0);
CREATE INDEX IF NOT EXISTS si_items_ctx ON si_items (tenant_id, context_id, created_at);
CREATE INDEX ` +
  `IF NOT EXISTS si_items_tenant ON si_items (tenant_id);
${VECTOR_JOBS_DDL}`;

type Raw = {
  item_id: string;
  tenant_id: string;
  context_id: string;
  account_id: string | null;
  source_type: SourceKind;
  type_name: string | null;
  schema_id: string | null;
  external_id: string | null;
  index_mode: string | null;
  folder_id: string | null;
  user_id: string | null;
  scopes: string[];
  attrs: Record<string, AttrValue>;
  created_at: Date | string;
  metadata: Record<string, unknown>;
  revision: number;
  vectors: number;
};
const toItem = (r: Raw): CatalogueItem => ({
  itemId: r.item_id,
  tenantId: r.tenant_id,
  contextId: r.context_id,
  accountId: r.account_id,
  sourceType: r.source_type,
  typeName: r.type_name,
  schemaId: r.schema_id,
  externalId: r.external_id,
  indexMode: r.index_mode,
  folderId: r.folder_id,
  userId: r.user_id,
  scopes: r.scopes,
  attrs: r.attrs,
  createdAt: new Date(r.created_at).toISOString(),
  metadata: r.metadata,
  revision: Number(r.revision),
  vectors: Number(r.vectors),
});

export class SearchCatalogue implements SearchCatalogueReads {
  /** Items by id, kept only where every catalogue write goes through this object (the service's role all). */
  private readonly cache: Map<string, CatalogueItem> | undefined;
  /** Schema definitions by id, kept on the same terms (each batch of the indexer reads them). */
  private readonly schemaCache: Map<string, SchemaDefinition> | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly o: { cacheItems?: number } = {},
  ) {
    this.cache = o.cacheItems ? new Map() : undefined;
    this.schemaCache = o.cacheItems ? new Map() : undefined;
  }

  async init(q: SqlQueryable = this.sql): Promise<void> {
    this.cache?.clear(); // a rebuild drops the tables and starts here
    this.schemaCache?.clear();
    await q.exec(CATALOGUE_DDL);
  }

  async putSchema(schemaId: string, doc: SchemaDefinition): Promise<void> {
    this.schemaCache?.delete(schemaId); // read back as stored at the next use
    await this.sql.query(
      'INSERT INTO si_schemas VALUES ($1, $2) ON CONFLICT (schema_id) DO UPDATE SET doc = excluded.doc',
      [schemaId, JSON.stringify(doc)],
    );
  }

  async schemas(ids: string[]): Promise<Map<string, SchemaDefinition>> {
    const out = new Map<string, SchemaDefinition>();
    const missing: string[] = [];
    for (const id of new Set(ids)) {
      const hit = this.schemaCache?.get(id);
      if (hit) out.set(id, hit);
      else missing.push(id);
    }
    if (!missing.length) return out;
    const { rows } = await this.sql.query<{ schema_id: string; doc: SchemaDefinition }>(
      'SELECT schema_id, doc FROM si_schemas WHERE schema_id = ANY($1::text[])',
      [missing],
    );
    for (const r of rows) {
      out.set(r.schema_id, r.doc);
      this.schemaCache?.set(r.schema_id, r.doc);
    }
    return out;
  }

  async items(ids: string[]): Promise<Map<string, CatalogueItem>> {
    const out = new Map<string, CatalogueItem>();
    const missing: string[] = [];
    for (const id of new Set(ids)) {
      const hit = this.cache?.get(id);
      if (hit) out.set(id, hit);
      else missing.push(id);
    }
    if (!missing.length) return out;
    const { rows } = await this.sql.query<Raw>('SELECT * FROM si_items WHERE item_id = ANY($1::text[])', [missing]);
    for (const r of rows) {
      const it = toItem(r);
      out.set(it.itemId, it);
      if (this.cache) {
        if (this.cache.size >= this.o.cacheItems!) this.cache.delete(this.cache.keys().next().value!);
        this.cache.set(it.itemId, it);
      }
    }
    return out;
  }

  put(i: CatalogueItem): Promise<void> {
    return this.putMany([i]);
  }

  /** Items written in one statement (the search projector's batch; one row each, the last of an item wins). */
  async putMany(items: CatalogueItem[]): Promise<void> {
    const byId = new Map(items.map((i) => [i.itemId, i]));
    if (!byId.size) return;
    const xs = [...byId.values()];
    for (const i of xs) this.cache?.delete(i.itemId);
    const col = <T>(f: (i: CatalogueItem) => T) => xs.map(f);
    await this.sql.query(
      `INSERT INTO si_items
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], ` +
        `$5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
         ` +
        `$12::jsonb[], $13::jsonb[], $14::timestamptz[], $15::jsonb[], $16::bigint[], $17::int[])
       ON ` +
        `CONFLICT (item_id) DO UPDATE SET type_name = excluded.type_name, schema_id = excluded.schema_id, ` +
        `external_id = excluded.external_id, folder_id = excluded.folder_id, user_id = excluded.user_id, ` +
        `scopes = excluded.scopes, attrs = excluded.attrs,
         metadata = excluded.metadata, revision = ` +
        `excluded.revision, vectors = excluded.vectors`,
      [
        col((i) => i.itemId),
        col((i) => i.tenantId),
        col((i) => i.contextId),
        col((i) => i.accountId),
        col((i) => i.sourceType),
        col((i) => i.typeName),
        col((i) => i.schemaId),
        col((i) => i.externalId),
        col((i) => i.indexMode),
        col((i) => i.folderId),
        col((i) => i.userId),
        col((i) => JSON.stringify(i.scopes)),
        col((i) => JSON.stringify(i.attrs)),
        col((i) => i.createdAt),
        col((i) => JSON.stringify(i.metadata)),
        col((i) => i.revision),
        col((i) => i.vectors),
      ],
    );
  }

  /** Sets only the vector count of an item (its other columns may have changed since its vector job was queued). */
  async setVectors(itemId: string, vectors: number): Promise<void> {
    this.cache?.delete(itemId);
    await this.sql.query('UPDATE si_items SET vectors = $2 WHERE item_id = $1', [itemId, vectors]);
  }

  async remove(itemId: string): Promise<void> {
    this.cache?.delete(itemId);
    await this.sql.query('DELETE FROM si_items WHERE item_id = $1', [itemId]);
  }

  async removeContext(tenantId: string, contextId: string): Promise<void> {
    this.cache?.clear();
    await this.sql.query('DELETE FROM si_items WHERE tenant_id = $1 AND context_id = $2', [tenantId, contextId]);
  }

  async vectorCount(tenantId: string): Promise<number> {
    const { rows } = await this.sql.query<{ n: number | string | null }>(
      'SELECT sum(vectors) AS n FROM si_items WHERE tenant_id = $1',
      [tenantId],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Ids of the items a filter admits, or null when more than `max` do (the caller then filters after the vector
   * search).
   */
  async admitted(f: ItemFilter, max: number): Promise<string[] | null> {
    const params: unknown[] = [];
    const where = filterSql(f, 'c', params);
    params.push(max + 1);
    const { rows } = await this.sql.query<{ item_id: string }>(
      `SELECT c.item_id FROM si_items c WHERE ${where} LIMIT $${params.length}`,
      params,
    );
    return rows.length > max ? null : rows.map((r) => r.item_id);
  }

  /** The subset of `ids` a filter admits. */
  async admit(f: ItemFilter, ids: string[]): Promise<Set<string>> {
    const params: unknown[] = [];
    const where = filterSql(f, 'c', params);
    params.push([...new Set(ids)]);
    const { rows } = await this.sql.query<{ item_id: string }>(
      `SELECT c.item_id FROM si_items c WHERE ${where} AND c.item_id = ANY($${params.length}::text[])`,
      params,
    );
    return new Set(rows.map((r) => r.item_id));
  }
}
