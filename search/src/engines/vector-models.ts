import {
  type MaintainReport,
  type Sql,
  type VectorHit,
  type VectorIndex,
  type VectorRow,
  type VectorScope,
  type VectorSearch,
} from '@svc/domain';
import { isoKey } from './vector-index';

/**
 * Vectors of two embedding models never mix, and a model change rebuilds each context's vectors
 * from the log without downtime (docs/search.md, "Changing the embedding model").
 *
 *  - Each model has its own vector table (LanceDB `passages_<model>_<dims>`), so vectors of two
 *    models are never compared.
 *  - `si_vector_models` records, per tenant and context, the model (name and dimensions) whose
 *    vectors answer that context's searches.
 *  - ModelSwitchVectorIndex writes to the configured model's index. A context recorded with another
 *    model is searched in that model's index, with the query embedded by that model, while it is
 *    rebuilt (when that model is still at hand: the built-in models always are); once the rebuild
 *    has written every item, the record moves to the configured model and the old rows of the
 *    context are deleted. Deletes reach both indexes meanwhile.
 *  - VectorModelRebuild (indexer/vector-model-rebuild.ts; in the process running the search projector) finds the
 *    contexts whose record names another model, derives each item's passages from the log (a record's latest
 *    payload from its stream; a document's retained text from the blob store, as a rebuild does)
 *    and queues them as re-embedding jobs (SearchIndexer.reembed: a lane of their own, served in
 *    turn with the tenants' new work).
 */
export const VECTOR_MODELS_DDL =
  `
CREATE TABLE IF NOT EXISTS si_vector_models (
  tenant_id text NOT NULL, context_id text NOT NULL, ` +
  `model text NOT NULL, dims int NOT NULL, updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY ` +
  `(tenant_id, context_id));`;

/** A model whose vectors may still answer some contexts: its index and its query embedding. */
export interface PreviousModel {
  model: string;
  dims: number;
  index: VectorIndex;
  embedQuery(text: string): Promise<number[]>;
  /** Releases its embedder (the ModelSwitchVectorIndex closes it with itself). */
  close?(): Promise<void>;
}

/** The per-context record of the model whose vectors answer it. */
export class VectorModelRegistry {
  private ready: Promise<void> | undefined;
  constructor(private readonly sql: Sql) {}

  init(): Promise<void> {
    return (this.ready ??= this.sql.exec(VECTOR_MODELS_DDL).then(() => undefined));
  }

  async all(): Promise<Map<string, { tenantId: string; contextId: string; model: string; dims: number }>> {
    await this.init();
    const { rows } = await this.sql.query<{ tenant_id: string; context_id: string; model: string; dims: number }>(
      'SELECT tenant_id, context_id, model, dims FROM si_vector_models',
    );
    return new Map(
      rows.map((r) => [
        isoKey(r.tenant_id, r.context_id),
        { tenantId: r.tenant_id, contextId: r.context_id, model: r.model, dims: Number(r.dims) },
      ]),
    );
  }

  async set(tenantId: string, contextId: string, model: string, dims: number): Promise<void> {
    await this.init();
    await this.sql.query(
      `INSERT INTO si_vector_models (tenant_id, context_id, model, dims) VALUES ($1, $2, $3, $4)
       ` +
        `ON CONFLICT (tenant_id, context_id) DO UPDATE SET model = excluded.model, dims = excluded.dims, ` +
        `updated_at = now()`,
      [tenantId, contextId, model, dims],
    );
  }

  async remove(tenantId: string, contextId: string): Promise<void> {
    await this.init();
    await this.sql.query('DELETE FROM si_vector_models WHERE tenant_id = $1 AND context_id = $2', [
      tenantId,
      contextId,
    ]);
  }

  async clear(): Promise<void> {
    await this.init();
    await this.sql.query('DELETE FROM si_vector_models');
  }
}

/**
 * The vector index the service uses: the configured model's index, plus earlier models' indexes serving the
 * contexts not yet rebuilt for it. Reads the records again every `refreshMs` (another process may move them).
 */
export class ModelSwitchVectorIndex implements VectorIndex {
  /** Contexts answered by another model than the configured one: iso → model. */
  private serving = new Map<string, string>();
  /** Contexts known to be recorded (with the configured model, or another). */
  private recorded = new Set<string>();
  private loadedAt = 0;
  private loading: Promise<void> | undefined;
  /** Called with the items of every write or delete (the rebuild counts its items done). */
  onWritten?: (itemIds: string[]) => void;

  constructor(
    readonly current: VectorIndex,
    readonly model: string,
    readonly dims: number,
    private readonly registry: VectorModelRegistry,
    readonly previous: PreviousModel[] = [],
    private readonly o: { refreshMs?: number; log?: (m: string, e?: unknown) => void } = {},
  ) {}

  async init(): Promise<void> {
    await this.current.init();
    await this.refresh(true);
  }

  private async refresh(force = false): Promise<void> {
    if (!force && performance.now() - this.loadedAt < (this.o.refreshMs ?? 10_000)) return;
    this.loading ??= (async () => {
      try {
        const all = await this.registry.all();
        this.recorded = new Set(all.keys());
        this.serving = new Map([...all].filter(([, r]) => r.model !== this.model).map(([iso, r]) => [iso, r.model]));
        this.loadedAt = performance.now();
      } finally {
        this.loading = undefined;
      }
    })();
    await this.loading;
  }

  /** The model whose vectors answer a context (the configured one unless a rebuild is under way). */
  async servingModel(tenantId: string, contextId: string): Promise<string> {
    await this.refresh();
    return this.serving.get(isoKey(tenantId, contextId)) ?? this.model;
  }

  /** Contexts answered by another model (rebuild pending or under way). */
  async stale(): Promise<Array<{ tenantId: string; contextId: string; model: string }>> {
    await this.refresh(true);
    return [...this.serving].map(([iso, model]) => {
      const i = iso.indexOf('/');
      return { tenantId: iso.slice(0, i), contextId: iso.slice(i + 1), model };
    });
  }

  /** Records a context as answered by `model` (the rebuild's start and end). */
  async record(tenantId: string, contextId: string, model: string, dims: number): Promise<void> {
    await this.registry.set(tenantId, contextId, model, dims);
    const iso = isoKey(tenantId, contextId);
    this.recorded.add(iso);
    if (model === this.model) this.serving.delete(iso);
    else this.serving.set(iso, model);
  }

  /** Whether a context is still answered by another model (false once rebuilt, or deleted). */
  isStale(tenantId: string, contextId: string): boolean {
    return this.serving.has(isoKey(tenantId, contextId));
  }

  private previousFor(iso: string): PreviousModel | undefined {
    const m = this.serving.get(iso);
    return m === undefined ? undefined : this.previous.find((p) => p.model === m);
  }

  /** The first write of a context not yet recorded records it with the configured model. */
  private async recordWrites(rows: VectorRow[]): Promise<void> {
    for (const r of rows) {
      const iso = isoKey(r.tenantId, r.contextId);
      if (this.recorded.has(iso)) continue;
      await this.refresh(true);
      if (!this.recorded.has(iso)) await this.record(r.tenantId, r.contextId, this.model, this.dims);
    }
  }

  async replaceItem(itemId: string, rows: VectorRow[]): Promise<void> {
    await this.current.replaceItem(itemId, rows);
    await this.recordWrites(rows);
    this.onWritten?.([itemId]);
  }

  async replaceItems(items: Array<{ itemId: string; rows: VectorRow[] }>): Promise<void> {
    if (this.current.replaceItems) await this.current.replaceItems(items);
    else for (const it of items) await this.current.replaceItem(it.itemId, it.rows);
    await this.recordWrites(items.flatMap((it) => it.rows.slice(0, 1)));
    this.onWritten?.(items.map((it) => it.itemId));
  }

  async deleteItem(itemId: string): Promise<void> {
    await this.current.deleteItem(itemId);
    // An earlier model's vectors of a deleted item must not answer either.
    if (this.serving.size) for (const p of this.previous) await p.index.deleteItem(itemId);
    this.onWritten?.([itemId]);
  }

  async deleteContext(tenantId: string, contextId: string): Promise<void> {
    await this.current.deleteContext(tenantId, contextId);
    for (const p of this.previous) await p.index.deleteContext(tenantId, contextId);
    await this.registry.remove(tenantId, contextId);
    const iso = isoKey(tenantId, contextId);
    this.recorded.delete(iso);
    this.serving.delete(iso);
  }

  async search(q: VectorSearch): Promise<VectorHit[]> {
    await this.refresh();
    const prev = this.previousFor(isoKey(q.tenantId, q.contextId));
    // Without the query's text an earlier model cannot be asked: the configured model answers with what is rebuilt so
    // far.
    if (!prev || q.query === undefined) return this.current.search(q);
    const iso = isoKey(q.tenantId, q.contextId);
    const vector = await prev.embedQuery(q.query);
    const hits = await prev.index.search({ ...q, vector });
    // The context moved to the configured model meanwhile (its old rows are being deleted): ask that one.
    return this.previousFor(iso) === prev ? hits : this.current.search(q);
  }

  async hydrate(hits: VectorHit[], scope: VectorScope): Promise<void> {
    const prev = this.previousFor(isoKey(scope.tenantId, scope.contextId));
    return (prev ?? { index: this.current }).index.hydrate(hits, scope);
  }

  maintain(o?: { force?: boolean }): Promise<MaintainReport> {
    return this.current.maintain ? this.current.maintain(o) : Promise.resolve({ rows: 0, action: 'none', ms: 0 });
  }

  /** Everything is rebuilt (npm run rebuild): every model's vectors go, and so do the records. */
  async drop(): Promise<void> {
    await this.current.drop();
    for (const p of this.previous) await p.index.drop();
    await this.registry.clear();
    this.serving.clear();
    this.recorded.clear();
  }

  async close(): Promise<void> {
    await this.current.close();
    for (const p of this.previous) {
      await p.index.close();
      await p.close?.();
    }
  }
}
