import * as lancedb from '@lancedb/lancedb';

/**
 * Vectors in LanceDB (DATA_DIR/lancedb, or LANCEDB_URI). One table per
 * embedding model; every row carries `iso` = `<tenantId>/<contextId>`, the
 * isolation key applied as a prefilter on every search, and `tenant_id` for
 * the per-tenant capacity. Cosine distance; flat search (no ANN index yet).
 */
export interface VectorRow {
  itemId: string;
  chunkNo: number;
  tenantId: string;
  contextId: string;
  vector: number[];
  chunkText: string;
  contextText: string;
}

export interface VectorHit {
  itemId: string;
  chunkNo: number;
  /** Cosine similarity, clamped to [0, 1]. */
  similarity: number;
  chunkText: string;
  contextText: string;
}

export interface VectorIndex {
  init(): Promise<void>;
  replaceItem(itemId: string, rows: VectorRow[]): Promise<void>;
  deleteItem(itemId: string): Promise<void>;
  deleteContext(tenantId: string, contextId: string): Promise<void>;
  search(q: { tenantId: string; contextId: string; vector: number[]; limit: number; itemIds?: string[] }): Promise<VectorHit[]>;
  drop(): Promise<void>;
  close(): Promise<void>;
}

const str = (s: string) => `'${s.replace(/'/g, "''")}'`;
export const isoKey = (tenantId: string, contextId: string) => `${tenantId}/${contextId}`;

export class LanceVectorIndex implements VectorIndex {
  private db: lancedb.Connection | undefined;
  private table: lancedb.Table | undefined;
  private readonly name: string;

  constructor(
    private readonly uri: string,
    model: string,
    private readonly dims: number,
  ) {
    this.name = `passages_${model.replace(/[^A-Za-z0-9_]/g, '_')}_${dims}`;
  }

  async init(): Promise<void> {
    this.db ??= await lancedb.connect(this.uri);
    if (!this.table && (await this.db.tableNames()).includes(this.name)) this.table = await this.db.openTable(this.name);
  }

  private async tableFor(rows: Record<string, unknown>[]): Promise<lancedb.Table> {
    await this.init();
    if (!this.table) {
      try {
        this.table = await this.db!.createTable(this.name, rows);
        return this.table;
      } catch {
        this.table = await this.db!.openTable(this.name); // created meanwhile
      }
    }
    await this.table.add(rows);
    return this.table;
  }

  async replaceItem(itemId: string, rows: VectorRow[]): Promise<void> {
    await this.deleteItem(itemId);
    if (!rows.length) return;
    for (const r of rows) if (r.vector.length !== this.dims) throw new Error(`vector has ${r.vector.length} dimensions, expected ${this.dims}`);
    await this.tableFor(
      rows.map((r) => ({
        id: `${r.itemId}:${r.chunkNo}`, item_id: r.itemId, chunk_no: r.chunkNo, tenant_id: r.tenantId, iso: isoKey(r.tenantId, r.contextId),
        chunk_text: r.chunkText, context_text: r.contextText, vector: r.vector,
      })),
    );
  }

  async deleteItem(itemId: string): Promise<void> {
    await this.init();
    await this.table?.delete(`item_id = ${str(itemId)}`);
  }

  async deleteContext(tenantId: string, contextId: string): Promise<void> {
    await this.init();
    await this.table?.delete(`iso = ${str(isoKey(tenantId, contextId))}`);
  }

  async search(q: { tenantId: string; contextId: string; vector: number[]; limit: number; itemIds?: string[] }): Promise<VectorHit[]> {
    await this.init();
    if (!this.table || q.itemIds?.length === 0) return [];
    let where = `iso = ${str(isoKey(q.tenantId, q.contextId))}`;
    if (q.itemIds) where += ` AND item_id IN (${q.itemIds.map(str).join(', ')})`;
    const rows = (await this.table.vectorSearch(q.vector).distanceType('cosine').where(where).limit(q.limit).toArray()) as Array<{
      item_id: string; chunk_no: number; _distance: number; chunk_text: string; context_text: string;
    }>;
    return rows.map((r) => ({
      itemId: r.item_id,
      chunkNo: Number(r.chunk_no),
      similarity: Math.max(0, Math.min(1, 1 - r._distance)),
      chunkText: r.chunk_text,
      contextText: r.context_text,
    }));
  }

  async drop(): Promise<void> {
    await this.init();
    if ((await this.db!.tableNames()).includes(this.name)) await this.db!.dropTable(this.name);
    this.table = undefined;
  }

  async close(): Promise<void> {
    this.table?.close();
    this.db?.close();
    this.table = undefined;
    this.db = undefined;
  }
}
