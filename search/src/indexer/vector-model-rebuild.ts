import type { EventMetadata, SchemaDefinition } from '@svc/contracts';
import {
  type BlobStore,
  chunkText,
  type EventStore,
  type Passage,
  recordPassages,
  type Sql,
  streams,
  systemMetadata,
} from '@svc/domain';
import type { SearchCatalogue } from '../engines/catalogue';
import { isoKey } from '../engines/vector-index';
import type { ModelSwitchVectorIndex } from '../engines/vector-models';
import { loadDocument } from './documents';
import type { SearchIndexer } from './indexer';

// The rebuild after a change of embedding model (engines/vector-models.ts tells the whole scheme): the write side of
// it, kept beside the search projector it feeds.

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
