import * as lancedb from '@lancedb/lancedb';
import type { MaintainReport, VectorHit, VectorIndex, VectorRow, VectorScope, VectorSearch } from '@svc/domain';

export interface AnnSettings {
  /** Build the ANN index once the table holds this many rows (IVF training needs enough rows). */
  minRows: number;
  /**
   * IVF_FLAT (default): √rows k-means partitions holding the full vectors; a query scans the `nprobes`
   * partitions nearest to it with exact cosine distances. IVF_HNSW_SQ: HNSW graphs over 8-bit
   * scalar-quantised vectors (faster per query, but loses neighbours among many near-duplicate vectors:
   * recall@10 0.72 on the bench's 100k tier). IVF_PQ: product-quantised (slow to train here, lower recall).
   * See docs/search.md for the measurements.
   */
  kind: 'IVF_FLAT' | 'IVF_HNSW_SQ' | 'IVF_PQ';
  /** IVF_HNSW_SQ only: rows per partition at training (IVF_FLAT and IVF_PQ train √rows partitions). */
  rowsPerPartition: number;
  /** IVF_HNSW_SQ only: graph degree and build beam. */
  m: number;
  efConstruction: number;
  /** Partitions probed per query. */
  nprobes: number;
  /** IVF_HNSW_SQ only: search beam, × limit. */
  efFactor: number;
  /**
   * Quantised kinds: candidates re-ranked on the full vectors, limit × refineFactor (0: none; distances from the
   * quantised vectors).
   */
  refineFactor: number;
  /** Upkeep (compaction, and folding new rows into the indexes) after this many written rows or write operations. */
  optimizeAfterRows: number;
  optimizeAfterWrites: number;
  /** Retrain (more partitions) when the table holds this many times the rows the index was trained on. */
  retrainGrowth: number;
}

export const ANN_DEFAULTS: AnnSettings = {
  minRows: 10_000,
  kind: 'IVF_FLAT',
  rowsPerPartition: 100_000,
  m: 20,
  efConstruction: 150,
  nprobes: 20,
  efFactor: 4,
  refineFactor: 0,
  optimizeAfterRows: 5_000,
  optimizeAfterWrites: 200,
  retrainGrowth: 4,
};

const str = (s: string) => `'${s.replace(/'/g, "''")}'`;
export const isoKey = (tenantId: string, contextId: string) => `${tenantId}/${contextId}`;
const VECTOR_INDEX = 'vector_idx';
const COLUMNS = ['item_id', 'chunk_no', 'chunk_text', 'context_text', '_distance'];
const toRecord = (r: VectorRow) => ({
  id: `${r.itemId}:${r.chunkNo}`,
  item_id: r.itemId,
  chunk_no: r.chunkNo,
  tenant_id: r.tenantId,
  iso: isoKey(r.tenantId, r.contextId),
  chunk_text: r.chunkText,
  context_text: r.contextText,
  vector: r.vector,
});

/**
 * Vectors in LanceDB (DATA_DIR/lancedb, or LANCEDB_URI). One table per
 * embedding model; every row carries `iso` = `<tenantId>/<contextId>`, the
 * isolation key applied as a prefilter on every search, and `tenant_id` for
 * the per-tenant capacity. Cosine distance.
 *
 * Search is exact (flat) until the table holds `ann.minRows` rows; then the
 * writer (the search projector) builds an ANN index in the background, off the
 * request path (`maintain`), with scalar indexes on `iso` (bitmap) and
 * `item_id` (btree). Rows written after a build are searched exactly beside
 * the index until the next `maintain` folds them in (after
 * `ann.optimizeAfterRows` writes); the index is retrained with more partitions
 * when the table has grown `ann.retrainGrowth`×. An id-prefiltered search
 * (`itemIds`, at most a few thousand items) and a search of an isolation key
 * with too few rows for the probed partitions are exact. The default index
 * (IVF_FLAT) keeps the full vectors, so `similarity` is exact on every path.
 */
export class LanceVectorIndex implements VectorIndex {
  private db: lancedb.Connection | undefined;
  private table: lancedb.Table | undefined;
  private readonly name: string;
  readonly ann: AnnSettings;
  private readonly readConsistencySeconds: number;
  private readonly autoMaintain: boolean;
  private readonly log: (m: string, e?: unknown) => void;
  /**
   * Whether the table has the ANN index (re-read every 10 s: another process may build it); undefined: not looked yet.
   */
  private annReady: boolean | undefined;
  private annCheckedAt = 0;
  /** Unrefined ANN distance ÷ cosine distance (calibrate). */
  private annDistanceScale = 1;
  /** IVF partitions of the ANN index (as trained). */
  private annPartitions = 1;
  private readonly isoCounts = new Map<string, { n: number; at: number }>();
  /** Rows the ANN index was trained on in this process (retrain trigger); from the index statistics after a restart. */
  private trainedRows: number | undefined;
  private written = { rows: 0, ops: 0 };
  private maintaining: Promise<MaintainReport> | undefined;
  /** Writes and compaction take turns (a delete racing a compaction of its fragment would fail its commit). */
  private writeLock: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly uri: string,
    model: string,
    readonly dims: number,
    o: {
      ann?: Partial<AnnSettings>;
      /**
       * Run upkeep in the background after writes (default true); bulk loaders turn it off and call maintain() once.
       */
      autoMaintain?: boolean;
      readConsistencySeconds?: number;
      log?: (m: string, e?: unknown) => void;
    } = {},
  ) {
    this.name = `passages_${model.replace(/[^A-Za-z0-9_]/g, '_')}_${dims}`;
    this.ann = { ...ANN_DEFAULTS, ...o.ann };
    this.autoMaintain = o.autoMaintain ?? true;
    this.annDistanceScale = this.ann.kind === 'IVF_FLAT' ? 1 : 2;
    this.readConsistencySeconds = o.readConsistencySeconds ?? 1;
    this.log = o.log ?? (() => {});
  }

  async init(): Promise<void> {
    this.closed = false;
    // Another process (the projector) may write this table: look for its new versions (and indexes) at most once a
    // second.
    this.db ??= await lancedb.connect(this.uri, { readConsistencyInterval: this.readConsistencySeconds });
    if (!this.table && (await this.db.tableNames()).includes(this.name))
      this.table = await this.db.openTable(this.name);
  }

  private locked<T>(f: () => Promise<T>): Promise<T> {
    const run = this.writeLock.then(f, f);
    this.writeLock = run.catch(() => {});
    return run;
  }

  private async tableFor(rows: Record<string, unknown>[]): Promise<lancedb.Table> {
    await this.init();
    const t = await this.locked(async () => {
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
    });
    this.wrote(rows.length);
    return t;
  }

  /** Appends rows as they are (no per-item delete): bulk loads. */
  async add(rows: VectorRow[]): Promise<void> {
    if (!rows.length) return;
    for (const r of rows)
      if (r.vector.length !== this.dims)
        throw new Error(`vector has ${r.vector.length} dimensions, expected ${this.dims}`);
    await this.tableFor(rows.map(toRecord));
  }

  async replaceItem(itemId: string, rows: VectorRow[]): Promise<void> {
    await this.deleteItem(itemId);
    if (!rows.length) return;
    for (const r of rows)
      if (r.vector.length !== this.dims)
        throw new Error(`vector has ${r.vector.length} dimensions, expected ${this.dims}`);
    await this.tableFor(rows.map(toRecord));
  }

  /**
   * One delete (`item_id IN (...)`, up to 1,000 ids a predicate) and one add for the whole batch: one table version,
   * one fragment.
   */
  async replaceItems(items: Array<{ itemId: string; rows: VectorRow[] }>): Promise<void> {
    if (!items.length) return;
    for (const it of items)
      for (const r of it.rows) {
        if (r.itemId !== it.itemId) throw new Error(`row of item ${r.itemId} listed under item ${it.itemId}`);
        if (r.vector.length !== this.dims)
          throw new Error(`vector has ${r.vector.length} dimensions, expected ${this.dims}`);
      }
    await this.init();
    const ids = [...new Set(items.map((it) => it.itemId))];
    if (this.table)
      for (let i = 0; i < ids.length; i += 1000) {
        const predicate = `item_id IN (${ids
          .slice(i, i + 1000)
          .map(str)
          .join(', ')})`;
        await this.locked(() => this.table!.delete(predicate));
        this.wrote(0);
      }
    const rows = items.flatMap((it) => it.rows).map(toRecord);
    if (rows.length) await this.tableFor(rows);
  }

  async deleteItem(itemId: string): Promise<void> {
    await this.init();
    if (!this.table) return;
    await this.locked(() => this.table!.delete(`item_id = ${str(itemId)}`));
    this.wrote(0);
  }

  async deleteContext(tenantId: string, contextId: string): Promise<void> {
    await this.init();
    if (!this.table) return;
    await this.locked(() => this.table!.delete(`iso = ${str(isoKey(tenantId, contextId))}`));
    this.wrote(0);
  }

  async search(q: VectorSearch): Promise<VectorHit[]> {
    await this.init();
    if (!this.table || q.itemIds?.length === 0) return [];
    let where = `iso = ${str(isoKey(q.tenantId, q.contextId))}`; // the isolation prefilter (bitmap index once built)
    if (q.itemIds) where += ` AND item_id IN (${q.itemIds.map(str).join(', ')})`;
    let query = this.table.vectorSearch(q.vector).distanceType('cosine').where(where).select(COLUMNS).limit(q.limit);
    const iso = isoKey(q.tenantId, q.contextId);
    const viaAnn = !q.exact && !q.itemIds && (await this.annServes(iso, q.limit));
    if (!viaAnn) query = query.bypassVectorIndex();
    else {
      query = query.nprobes(this.ann.nprobes);
      if (this.ann.refineFactor > 0) query = query.refineFactor(this.ann.refineFactor);
      // HNSW beam: at least the candidates asked of it (limit × refineFactor).
      if (this.ann.kind === 'IVF_HNSW_SQ')
        query = query.ef(Math.ceil(q.limit * Math.max(this.ann.efFactor, this.ann.refineFactor, 1)));
    }
    const rows = (await query.toArray()) as Array<{
      item_id: string;
      chunk_no: number;
      _distance: number;
      chunk_text: string;
      context_text: string;
    }>;
    // Unrefined ANN distances are in the index's own scale (see calibrate); exact ones are cosine distances.
    const scale = viaAnn && this.ann.refineFactor === 0 ? this.annDistanceScale : 1;
    return rows.map((r) => ({
      itemId: r.item_id,
      chunkNo: Number(r.chunk_no),
      similarity: Math.max(0, Math.min(1, 1 - r._distance / scale)),
      chunkText: r.chunk_text,
      contextText: r.context_text,
    }));
  }

  /** The page's texts: one read of the hits' items (btree on `item_id`) within the isolation key. */
  async hydrate(hits: VectorHit[], scope: VectorScope): Promise<void> {
    const bare = hits.filter((h) => h.chunkText === undefined);
    if (!bare.length) return;
    await this.init();
    const texts = new Map<string, { c: string; x: string }>();
    if (this.table) {
      const ids = [...new Set(bare.map((h) => h.itemId))];
      const rows = (await this.table
        .query()
        .where(`iso = ${str(isoKey(scope.tenantId, scope.contextId))} AND item_id IN (${ids.map(str).join(', ')})`)
        .select(['item_id', 'chunk_no', 'chunk_text', 'context_text'])
        .toArray()) as Array<{ item_id: string; chunk_no: number; chunk_text: string; context_text: string }>;
      for (const r of rows) texts.set(`${r.item_id}:${Number(r.chunk_no)}`, { c: r.chunk_text, x: r.context_text });
    }
    for (const h of bare) {
      const t = texts.get(`${h.itemId}:${h.chunkNo}`);
      h.chunkText = t?.c ?? '';
      h.contextText = t?.x ?? '';
    }
  }

  /** Rows of one isolation key. */
  async countRows(scope: VectorScope): Promise<number> {
    await this.init();
    return this.table ? this.table.countRows(`iso = ${str(isoKey(scope.tenantId, scope.contextId))}`) : 0;
  }

  /**
   * Every row of one isolation key (the in-memory index loads a context with it), in Arrow batches:
   * `onBatch(itemIds, chunkNos, vectors, chunkTexts, contextTexts)`, vectors row-major (`dims` floats per row).
   */
  async scan(
    scope: VectorScope,
    onBatch: (
      itemIds: string[],
      chunkNos: number[],
      vectors: Float32Array,
      chunkTexts: string[],
      contextTexts: string[],
    ) => void,
  ): Promise<void> {
    await this.init();
    if (!this.table) return;
    const q = this.table
      .query()
      .where(`iso = ${str(isoKey(scope.tenantId, scope.contextId))}`)
      .select(['item_id', 'chunk_no', 'vector', 'chunk_text', 'context_text']);
    const dims = this.dims;
    for await (const b of q) {
      const n = b.numRows;
      const ids = b.getChild('item_id')!;
      const nos = b.getChild('chunk_no')!;
      const vec = b.getChild('vector')!;
      const ct = b.getChild('chunk_text')!;
      const xt = b.getChild('context_text')!;
      const itemIds: string[] = new Array(n);
      const chunkNos: number[] = new Array(n);
      const chunkTexts: string[] = new Array(n);
      const contextTexts: string[] = new Array(n);
      for (let i = 0; i < n; i++) {
        itemIds[i] = ids.get(i) as string;
        chunkNos[i] = Number(nos.get(i));
        chunkTexts[i] = (ct.get(i) as string | null) ?? '';
        contextTexts[i] = (xt.get(i) as string | null) ?? '';
      }
      const out = new Float32Array(n * dims);
      // FixedSizeList<Float32>: the child's values, row i at (offset + i) × dims.
      const d = vec.data[0];
      const child = d.children[0];
      const values = child.values as Float32Array | Float64Array;
      const start = (child.offset + d.offset * dims) as number;
      if (vec.data.length === 1 && values.length >= start + n * dims) {
        for (let i = 0; i < n * dims; i++) out[i] = values[start + i];
      } else {
        for (let i = 0; i < n; i++) out.set(Float32Array.from(vec.get(i)!.toArray() as ArrayLike<number>), i * dims);
      }
      onBatch(itemIds, chunkNos, out, chunkTexts, contextTexts);
    }
  }

  /**
   * Whether the ANN index answers this search: it exists, and the isolation key has enough rows in
   * the `nprobes` partitions probed (expected isoRows × nprobes / partitions ≥ 4 × limit). A small
   * tenant/context inside a large table would find few of its rows there (a short, poor answer), so it
   * is searched exactly: only its own rows, through the bitmap index on `iso`.
   */
  private async annServes(iso: string, limit: number): Promise<boolean> {
    if (!(await this.hasAnn())) return false;
    const rows = await this.isoRows(iso);
    return (rows * Math.min(this.ann.nprobes, this.annPartitions)) / this.annPartitions >= 4 * limit;
  }

  private async hasAnn(): Promise<boolean> {
    if (this.annReady || (this.annReady === false && performance.now() - this.annCheckedAt < 10_000))
      return this.annReady;
    this.annCheckedAt = performance.now();
    try {
      const ready = (await this.table!.listIndices()).some((i) => i.name === VECTOR_INDEX);
      if (ready) {
        this.annPartitions = this.partitionsFor((await this.table!.indexStats(VECTOR_INDEX))?.numIndexedRows ?? 0);
        await this.calibrate();
      }
      this.annReady = ready;
    } catch {
      this.annReady = false;
    }
    return this.annReady;
  }

  /** Rows of an isolation key, re-counted at most every 30 s (through the bitmap index). */
  private async isoRows(iso: string): Promise<number> {
    const c = this.isoCounts.get(iso);
    if (c && performance.now() - c.at < 30_000) return c.n;
    const n = await this.table!.countRows(`iso = ${str(iso)}`);
    if (this.isoCounts.size > 10_000) this.isoCounts.clear();
    this.isoCounts.set(iso, { n, at: performance.now() });
    return n;
  }

  /**
   * Without re-ranking (refineFactor 0) the index answers distances from its quantised vectors in its own
   * scale: for a cosine IVF_HNSW_SQ index LanceDB normalises the vectors and ranks by squared L2, which
   * is 2 × the cosine distance. Measured once per process on a stored vector (exact vs unrefined answer);
   * an unexpected ratio turns re-ranking back on, so `similarity` is never silently off.
   */
  private async calibrate(): Promise<void> {
    const t = this.table!;
    const [probe] = (await t.query().select(['vector', 'iso']).limit(1).toArray()) as Array<{
      vector: ArrayLike<number>;
      iso: string;
    }>;
    if (!probe) return;
    // A query near a stored vector, but not on it: distances of a few tenths, where quantisation error is small beside
    // them.
    const r = (i: number) => Math.sin(i * 12.9898) * 43758.5453 - Math.floor(Math.sin(i * 12.9898) * 43758.5453) - 0.5;
    const p = Array.from(probe.vector);
    const n0 = Math.hypot(...p) || 1;
    const noisy = p.map((x, i) => x / n0 + r(i) * 0.12);
    const n1 = Math.hypot(...noisy) || 1;
    const q = noisy.map((x) => x / n1);
    const rows = (await t
      .vectorSearch(q)
      .distanceType('cosine')
      .where(`iso = ${str(probe.iso)}`)
      .select(['vector', '_distance'])
      .limit(20)
      .nprobes(this.ann.nprobes)
      .ef(100)
      .toArray()) as Array<{ vector: ArrayLike<number>; _distance: number }>;
    const ratios = rows
      .map((row) => {
        const v = Array.from(row.vector);
        const nv = Math.hypot(...v) || 1;
        const cos = v.reduce((s, x, i) => s + (x / nv) * q[i], 0);
        return { d: row._distance, exact: 1 - cos };
      })
      .filter((x) => x.exact > 0.05)
      .map((x) => x.d / x.exact)
      .sort((a, b) => a - b);
    const ratio = ratios[ratios.length >> 1];
    if (ratio === undefined) return; // nothing to compare: keep the kind's known scale
    if (Math.abs(ratio - 2) < 0.05) this.annDistanceScale = 2;
    else if (Math.abs(ratio - 1) < 0.05) this.annDistanceScale = 1;
    else if (this.ann.refineFactor === 0) {
      this.ann.refineFactor = 1;
      this.log(
        `vector index: unrefined ANN distances do not match cosine distances (ratio ${ratio}); re-ranking ` +
          `on full vectors`,
      );
    }
  }

  /**
   * IVF partitions for a table of `rows`: √rows for IVF_PQ (LanceDB's default), rows / rowsPerPartition for IVF_HNSW_SQ
   * (few large graphs).
   */
  private partitionsFor(rows: number) {
    return Math.max(
      1,
      Math.round(this.ann.kind === 'IVF_HNSW_SQ' ? rows / this.ann.rowsPerPartition : Math.sqrt(rows)),
    );
  }

  /** After a write: start upkeep in the background when a threshold is crossed (never on the request path). */
  private wrote(rows: number) {
    this.written.rows += rows;
    this.written.ops++;
    if (this.maintaining || this.closed || !this.autoMaintain) return;
    const due =
      this.written.rows >= Math.min(this.ann.optimizeAfterRows, this.ann.minRows) ||
      this.written.ops >= this.ann.optimizeAfterWrites;
    if (!due) return;
    this.startMaintain(false).catch((e) => this.log('vector index upkeep failed', e));
  }

  /** One upkeep at a time; `maintaining` is the running one. */
  private startMaintain(force: boolean): Promise<MaintainReport> {
    const run = this.runMaintain(force).finally(() => {
      if (this.maintaining === run) this.maintaining = undefined;
    });
    this.maintaining = run;
    return run;
  }

  /**
   * Index upkeep: build the ANN index (and the scalar indexes) once the table
   * holds `minRows`, retrain it when the table outgrew it `retrainGrowth`×,
   * else compact and fold the rows written since into the indexes (`optimize`).
   * `force` optimizes even when the write counters do not ask for it.
   */
  async maintain(o: { force?: boolean } = {}): Promise<MaintainReport> {
    while (this.maintaining) await this.maintaining.catch(() => {});
    return this.startMaintain(!!o.force);
  }

  private async runMaintain(force: boolean): Promise<MaintainReport> {
    const t0 = performance.now();
    await this.init();
    const t = this.table;
    if (!t) return { rows: 0, action: 'none', ms: 0 };
    const written = this.written;
    this.written = { rows: 0, ops: 0 };
    const rows = await t.countRows();
    const done = (action: MaintainReport['action'], partitions?: number): MaintainReport => ({
      rows,
      action,
      partitions,
      ms: Math.round(performance.now() - t0),
    });
    const current = (await t.listIndices()).find((i) => i.name === VECTOR_INDEX);
    const existing = !!current;
    const sameKind =
      current?.indexType.toLowerCase().replace(/_/g, '') === this.ann.kind.toLowerCase().replace(/_/g, '');
    if (rows >= this.ann.minRows) {
      const trained = this.trainedRows ?? (existing ? ((await t.indexStats(VECTOR_INDEX))?.numIndexedRows ?? rows) : 0);
      this.trainedRows = trained;
      if (!existing || !sameKind || rows >= trained * this.ann.retrainGrowth) {
        // Compact first, and bring the scalar indexes up to date (a stale `iso` bitmap leaves every newer row to a scan
        // per query).
        await this.locked(() => t.optimize({ cleanupOlderThan: new Date(Date.now() - 3_600_000) }));
        // Training reads a sample; writes go on meanwhile (rows added during the build are searched exactly until the
        // next optimize).
        const partitions = this.partitionsFor(rows);
        const config =
          this.ann.kind === 'IVF_PQ'
            ? lancedb.Index.ivfPq({ distanceType: 'cosine', numPartitions: partitions, numSubVectors: this.dims / 16 })
            : this.ann.kind === 'IVF_FLAT'
              ? lancedb.Index.ivfFlat({ distanceType: 'cosine', numPartitions: partitions })
              : lancedb.Index.hnswSq({
                  distanceType: 'cosine',
                  numPartitions: partitions,
                  m: this.ann.m,
                  efConstruction: this.ann.efConstruction,
                });
        await t.createIndex('vector', { config, name: VECTOR_INDEX, replace: true, waitTimeoutSeconds: 3600 });
        const have = new Set((await t.listIndices()).map((i) => i.columns.join(',')));
        if (!have.has('iso')) await t.createIndex('iso', { config: lancedb.Index.bitmap(), waitTimeoutSeconds: 600 });
        if (!have.has('item_id'))
          await t.createIndex('item_id', { config: lancedb.Index.btree(), waitTimeoutSeconds: 600 });
        this.trainedRows = rows;
        this.annPartitions = partitions;
        await this.calibrate();
        this.annReady = true;
        return done(existing ? 'retrained' : 'built', partitions);
      }
    }
    if (!force && written.ops === 0) return done('none');
    // Compact small fragments (every projector write adds one), fold unindexed rows into the indexes, drop versions
    // older than an hour.
    await this.locked(() => t.optimize({ cleanupOlderThan: new Date(Date.now() - 3_600_000) }));
    return done('optimized');
  }

  async drop(): Promise<void> {
    await this.init();
    while (this.maintaining) await this.maintaining.catch(() => {});
    if ((await this.db!.tableNames()).includes(this.name)) await this.db!.dropTable(this.name);
    this.table = undefined;
    this.annReady = undefined;
    this.trainedRows = undefined;
    this.isoCounts.clear();
  }

  async close(): Promise<void> {
    this.closed = true;
    while (this.maintaining) await this.maintaining.catch(() => {});
    this.table?.close();
    this.db?.close();
    this.table = undefined;
    this.db = undefined;
  }
}
