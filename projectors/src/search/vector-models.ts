import type { EventMetadata, SchemaDefinition } from '@svc/contracts';
import {
  type BlobStore,
  chunkText,
  type EventStore,
  type MaintainReport,
  type Passage,
  recordPassages,
  type Sql,
  streams,
  systemMetadata,
  type VectorHit,
  type VectorIndex,
  type VectorRow,
  type VectorScope,
  type VectorSearch,
} from '@svc/domain';
import type { SearchCatalogue } from './catalogue';
import { loadDocument } from './documents';
import type { SearchIndexer } from './indexer';
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
 *  - VectorModelRebuild (in the process running the search projector) finds the contexts whose
 *    record names another model, derives each item's passages from the log (a record's latest
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

/** Re-embedding jobs queued at a time, per rebuild (their passages are held in memory). */
const WINDOW = 256;

/**
 * Rebuilds, for the configured model, the vectors of every context recorded with another one (see above). Runs
 * beside the search projector, in the background: `start()` returns at once; `status()` says how far it is.
 */
export class VectorModelRebuild {
  private pending = new Map<string, string>(); // itemId → iso
  private left = new Map<string, number>(); // iso → items not yet written
  private running: Promise<void> | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;
  readonly stats = {
    contexts: 0,
    contextsDone: 0,
    items: 0,
    itemsDone: 0,
    failures: 0,
    current: null as string | null,
  };

  constructor(
    private readonly o: {
      index: ModelSwitchVectorIndex;
      indexer: SearchIndexer;
      sql: Sql;
      store: EventStore;
      blobs: BlobStore;
      catalogue: SearchCatalogue;
      log?: (m: string, e?: unknown) => void;
    },
  ) {
    o.index.onWritten = (ids) => this.written(ids);
  }

  start(): void {
    this.stopped = false;
    this.running ??= this.run()
      .catch((e) => this.o.log?.('vector model rebuild stopped on an error (it resumes at the next start)', e))
      .finally(() => (this.running = undefined));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.running;
  }

  private written(ids: string[]) {
    for (const id of ids) {
      const iso = this.pending.get(id);
      if (iso === undefined) continue;
      this.pending.delete(id);
      this.stats.itemsDone++;
      this.left.set(iso, (this.left.get(iso) ?? 1) - 1);
    }
    this.wake?.();
  }

  private waitFor(cond: () => boolean): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (cond() || this.stopped) {
          clearInterval(t);
          this.wake = undefined;
          resolve();
        }
      };
      const t = setInterval(check, 500);
      t.unref?.();
      this.wake = check;
      check();
    });
  }

  private async run(): Promise<void> {
    const { index } = this.o;
    await this.adoptUnrecorded();
    const stale = await index.stale();
    this.stats.contexts = stale.length;
    // The earlier models answering these contexts' queries meanwhile: loaded now, not by the first query.
    for (const m of new Set(stale.map((c) => c.model)))
      index.previous
        .find((p) => p.model === m)
        ?.embedQuery('warm up')
        .catch(() => {});
    for (const c of stale) {
      if (this.stopped) return;
      this.stats.current = `${c.tenantId}/${c.contextId}`;
      const t0 = performance.now();
      const meanwhile = index.previous.some((p) => p.model === c.model)
        ? ` (${c.model} answers meanwhile)`
        : ` (${c.model} is not at hand: ${index.model} answers with what is rebuilt so far)`;
      this.o.log?.(
        `vector model rebuild: context ${c.tenantId}/${c.contextId} from ${c.model} to ${index.model}${meanwhile}`,
      );
      await this.rebuildContext(c.tenantId, c.contextId);
      if (this.stopped) return;
      if (!index.isStale(c.tenantId, c.contextId)) continue; // deleted meanwhile
      await index.record(c.tenantId, c.contextId, index.model, index.dims);
      // The earlier model's rows of this context are no longer asked.
      for (const p of index.previous)
        await p.index
          .deleteContext(c.tenantId, c.contextId)
          .catch((e) =>
            this.o.log?.(`vector model rebuild: old vectors of ${c.tenantId}/${c.contextId} not deleted`, e),
          );
      this.stats.contextsDone++;
      this.o.log?.(
        `vector model rebuild: context ${c.tenantId}/${c.contextId} done in ` +
          `${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
    }
    this.stats.current = null;
  }

  /**
   * Contexts with vectors but no record (written before records existed): recorded with the model whose index
   * holds their rows (an earlier model at hand), else with the configured one.
   */
  private async adoptUnrecorded(): Promise<void> {
    const { index, sql } = this.o;
    const { rows } = await sql.query<{ tenant_id: string; context_id: string }>(
      `SELECT DISTINCT i.tenant_id, i.context_id FROM si_items i
        WHERE i.vectors > 0 AND NOT ` +
        `EXISTS (SELECT 1 FROM si_vector_models m WHERE m.tenant_id = i.tenant_id AND m.context_id = ` +
        `i.context_id)`,
    );
    for (const r of rows) {
      let model = index.model;
      let dims = index.dims;
      for (const p of index.previous) {
        const probe = await p.index
          .search({
            tenantId: r.tenant_id,
            contextId: r.context_id,
            vector: new Array(p.dims).fill(1 / Math.sqrt(p.dims)),
            limit: 1,
            exact: true,
          })
          .catch(() => []);
        const mine = await index.current
          .search({
            tenantId: r.tenant_id,
            contextId: r.context_id,
            vector: new Array(index.dims).fill(1 / Math.sqrt(index.dims)),
            limit: 1,
            exact: true,
          })
          .catch(() => []);
        if (probe.length && !mine.length) {
          model = p.model;
          dims = p.dims;
          break;
        }
      }
      await index.record(r.tenant_id, r.context_id, model, dims);
    }
  }

  /** Queues every item of a context that has vectors, WINDOW at a time, and waits until all are written. */
  private async rebuildContext(tenantId: string, contextId: string): Promise<void> {
    const iso = isoKey(tenantId, contextId);
    const { rows } = await this.o.sql.query<{ item_id: string }>(
      `SELECT item_id FROM si_items WHERE tenant_id = $1 AND context_id = $2 AND index_mode IN ` +
        `('SEMANTIC', 'HYBRID') AND vectors > 0 ORDER BY item_id`,
      [tenantId, contextId],
    );
    this.stats.items += rows.length;
    this.left.set(iso, 0);
    const meta: EventMetadata = systemMetadata({
      tenantId,
      contextId,
      requestId: 'vector-model-rebuild',
      occurredAt: new Date(),
    });
    for (let i = 0; i < rows.length && !this.stopped;) {
      await this.waitFor(() => this.pending.size < WINDOW / 2);
      const take = rows.slice(i, i + (WINDOW - this.pending.size));
      i += take.length;
      const items = await this.o.catalogue.items(take.map((r) => r.item_id));
      const jobs: Parameters<SearchIndexer['reembed']>[0] = [];
      for (const r of take) {
        const it = items.get(r.item_id);
        if (!it) continue;
        try {
          const p = await this.passagesOf(it.itemId, it.sourceType);
          if (!p) continue;
          jobs.push({
            spec: {
              itemId: it.itemId,
              tenantId,
              contextId,
              kind: it.sourceType,
              revision: p.revision,
              mode: it.indexMode ?? 'HYBRID',
              n: p.passages.length,
              textErr: null,
              meta: { ...meta, accountId: it.accountId },
            },
            passages: p.passages,
            lane: `rebuild:${tenantId}`,
          });
        } catch (e) {
          this.stats.failures++;
          this.o.log?.(`vector model rebuild: passages of ${it.itemId} could not be read from the log`, e);
        }
      }
      const queued = this.o.indexer.reembed(jobs);
      for (const id of queued) this.pending.set(id, iso);
      this.left.set(iso, (this.left.get(iso) ?? 0) + queued.length);
    }
    // Done when every queued item is written (or deleted); a context deleted meanwhile has nothing left to wait for.
    await this.waitFor(() => (this.left.get(iso) ?? 0) <= 0 || !this.o.index.isStale(tenantId, contextId));
    this.left.delete(iso);
    for (const [id, at] of this.pending) if (at === iso) this.pending.delete(id);
  }

  /** An item's passages as the search projector derives them: a record's latest payload, a document's retained text. */
  private async passagesOf(
    itemId: string,
    kind: 'record' | 'document',
  ): Promise<{ passages: Passage[]; revision: number } | null> {
    if (kind === 'document') {
      const { state } = await loadDocument(this.o.store, itemId);
      if (!state.exists || !state.textRetained || !state.textRef) return null;
      const text = await this.o.blobs.get(state.textRef);
      return text ? { passages: chunkText(text.toString('utf8')), revision: state.textRevision } : null;
    }
    const events = await this.o.store.readStream(streams.record(itemId));
    let payload: Record<string, unknown> | undefined;
    let schemaId: string | null = null;
    let revision = -1;
    for (const e of events) {
      if (e.type === 'RecordCreated' || e.type === 'RecordUpdated') {
        const d = e.data as { payload: Record<string, unknown>; schemaId?: string | null };
        payload = d.payload;
        if (e.type === 'RecordCreated') schemaId = d.schemaId ?? null;
        revision = e.revision;
      } else if (e.type === 'RecordDeleted') payload = undefined;
    }
    if (!payload) return null;
    const def = schemaId ? (await this.o.catalogue.schemas([schemaId])).get(schemaId) : undefined;
    return { passages: recordPassages(def as SchemaDefinition | undefined, payload), revision };
  }

  status() {
    return { ...this.stats, queued: this.pending.size, running: !!this.running };
  }
}
