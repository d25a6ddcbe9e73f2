import { ensureCheckpoints, readCheckpoint, resetCheckpoint, writeCheckpoint } from '../runtime/checkpoints';
import { randomUUID } from 'node:crypto';
import type { SchemaDefinition } from '@svc/contracts/api/schemas';
import { EVENT_SCHEMA_VERSION, parseEventData, type DomainEvent, type EventData, type EventMetadata } from '@svc/contracts/events/catalogue';
import type { BlobStore } from '@svc/domain/ports/blob-store';
import { WrongExpectedRevisionError, type AppendRequest, type EventStore, type StoredEvent } from '@svc/domain/ports/event-store';
import type { Sql } from '@svc/domain/ports/sql';
import { chunkText, type Passage } from '@svc/domain/search/chunking';
import { filterAttributes, recordPassages } from '@svc/domain/search/indexable';
import { streams } from '@svc/domain/shared/streams';
import { catchUpFeed, type EventFeed } from '../runtime/feed';
import { CATALOGUE_TABLES, SearchCatalogue, type CatalogueItem } from './catalogue';
import { documentCatalogueItem, loadDocument } from './documents';
import type { Embedder } from './embeddings';
import type { IndexedItem, TextIndex } from './text-index';
import type { VectorIndex } from './vector-index';

/**
 * The search projector ('search-index'): follows the event log with its own
 * checkpoint (not part of the read-your-writes barrier), keeps the text index
 * and the vector index in step with records and documents, and appends each
 * item's index outcome to its stream: RecordIndexed / RecordIndexFailed for
 * records; DocumentIndexed (INDEXED), DocumentIndexSkipped (SKIPPED) or
 * DocumentFailed for documents (STORED, indexMode NONE, stays with the
 * document worker).
 *
 * Per batch: the final state of every touched record and document is indexed once — text
 * leg first, then embeddings and vectors — and only then is the outcome
 * appended, so an INDEXED record is already findable by keyword (and by
 * meaning). A failing leg retries the batch (bounded); after the last attempt
 * the record is marked FAILED with its indexFailure code and the feed moves on.
 */
export const SEARCH_INDEX = 'search-index';

export interface SearchEngines {
  text: TextIndex;
  vectors: VectorIndex;
  embedder: Embedder;
  catalogue: SearchCatalogue;
}

export interface IndexerOptions {
  /** Per-tenant vector capacity (spec default 5,000,000). */
  vectorCapacity: number;
  /** Document text (DocumentTextReady.textRef). */
  blobs: BlobStore;
  /** Attempts of a batch whose index legs fail before records are marked FAILED. */
  attempts?: number;
  log?: (msg: string, err?: unknown) => void;
  now?: () => Date;
}

type Pending =
  | { kind: 'upsert'; item: CatalogueItem; payload: Record<string, unknown>; status: string; meta: EventMetadata }
  /** A document whose current text (textRevision) is to be indexed. */
  | { kind: 'document'; item: CatalogueItem; passages: Passage[]; textRevision: number; meta: EventMetadata }
  /** A document whose filters changed (folder, payload, ownership, schema): passages stay, filter columns are rewritten. */
  | { kind: 'documentMeta'; item: CatalogueItem }
  | { kind: 'delete'; itemId: string };

type Outcome = { type: 'RecordIndexed'; data: EventData<'RecordIndexed'> } | { type: 'RecordIndexFailed'; data: EventData<'RecordIndexFailed'> };
/** A document's outcome, appended only while the document is still PENDING_INDEX at that text revision. */
type DocOutcome = { documentId: string; textRevision: number; event: DomainEvent; meta: EventMetadata };
/** Document events seen in a batch: the newest text revision, and whether filters changed. */
type DocTouch = { textRevision: number | null; meta: boolean; m: EventMetadata };
type Flushed = { records: Array<{ streamId: string; outcome: Outcome; meta: EventMetadata }>; documents: DocOutcome[] };

class LegFailure extends Error {}

export class SearchIndexer {
  private position = 0;
  private abort = new AbortController();
  private loop: Promise<void> | undefined;
  private attempt = { position: -1, n: 0 };
  readonly stats = { name: SEARCH_INDEX, position: 0, batches: 0, events: 0, errors: 0, lastError: null as string | null };
  private waiters: Array<{ position: number; resolve: () => void }> = [];
  /** Where events come from (set before start): the store's catch-up subscription unless Kafka is configured. */
  feed?: EventFeed;

  /**
   * One write for the whole batch where the adapter offers it; should it fail (or be absent, or the batch hold one
   * item), each item is written on its own, so only the items whose own write fails are marked.
   */
  private async batchThenEach<T>(leg: string, items: T[], batch: ((xs: T[]) => Promise<void>) | undefined, each: (x: T) => Promise<void>) {
    if (batch && items.length > 1) {
      try {
        return await batch(items);
      } catch (e) {
        this.o.log?.(`projection ${SEARCH_INDEX}: batched ${leg} write of ${items.length} items failed, writing them one by one`, e);
      }
    }
    for (const x of items) await each(x);
  }

  constructor(
    private readonly sql: Sql,
    private readonly store: EventStore,
    readonly engines: SearchEngines,
    private readonly o: IndexerOptions,
  ) {}

  get name() {
    return SEARCH_INDEX;
  }
  get current() {
    return this.position;
  }

  async init(): Promise<void> {
    await ensureCheckpoints(this.sql);
    await this.engines.catalogue.init();
    await this.engines.text.init();
    await this.engines.vectors.init();
    this.position = await readCheckpoint(this.sql, SEARCH_INDEX);
    this.stats.position = this.position;
  }

  start(): void {
    if (this.loop) return;
    this.abort = new AbortController();
    this.loop = (this.feed ?? catchUpFeed(this.store)).follow(SEARCH_INDEX, {
      from: this.position,
      // Events per batch: a bulk ingest (~3 events a document) gives batches of ~170 documents: one embedding
      // call, one vector write, one outcome round per batch. A quiet log gives small batches anyway.
      batchSize: 500,
      signal: this.abort.signal,
      handle: (events) => this.applyBatch(events),
      onError: (e, attempt) => {
        this.stats.errors += 1;
        this.stats.lastError = e instanceof Error ? e.message : String(e);
        this.o.log?.(`projection ${SEARCH_INDEX}: batch failed (attempt ${attempt}), retrying`, e);
      },
    });
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    this.loop = undefined;
  }

  /** Resolves once every event up to `position` is indexed (false after `timeoutMs`). */
  waitFor(position: number, timeoutMs: number): Promise<boolean> {
    if (this.position >= position) return Promise.resolve(true);
    return new Promise((resolve) => {
      const w = { position, resolve: () => (clearTimeout(t), resolve(true)) };
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        resolve(false);
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  /** Empties both indexes and the catalogue, then replays the log from position 0. */
  async rebuild(): Promise<number> {
    await this.stop();
    for (const t of CATALOGUE_TABLES) await this.sql.exec(`DROP TABLE IF EXISTS ${t} CASCADE`);
    await this.engines.text.drop();
    await this.engines.vectors.drop();
    await ensureCheckpoints(this.sql);
    await resetCheckpoint(this.sql, SEARCH_INDEX);
    await this.init();
    this.position = 0;
    const head = await this.store.headPosition();
    while (this.position < head) {
      const events = await this.store.readAll(this.position, 500);
      if (!events.length) break;
      await this.applyBatch(events);
    }
    return this.position;
  }

  private async applyBatch(events: StoredEvent[]): Promise<number> {
    const first = events[0].position;
    if (this.attempt.position !== first) this.attempt = { position: first, n: 0 };
    this.attempt.n += 1;
    const lastAttempt = this.attempt.n >= (this.o.attempts ?? 3);
    const cat = this.engines.catalogue;
    const pending = new Map<string, Pending>();
    const docs = new Map<string, DocTouch>();
    const outcomes: Flushed = { records: [], documents: [] };
    const flushAll = async () => {
      outcomes.documents.push(...(await this.resolveDocuments(docs, pending, lastAttempt)));
      docs.clear();
      const f = await this.flush(pending, lastAttempt);
      pending.clear();
      outcomes.records.push(...f.records);
      outcomes.documents.push(...f.documents);
    };

    for (const e of events) {
      const m = e.metadata;
      switch (e.type) {
        case 'SchemaCreated':
        case 'SchemaUpdated': {
          const d = e.data as EventData<'SchemaCreated'>;
          await cat.putSchema(d.schemaId, d.definition as SchemaDefinition);
          break;
        }
        case 'RecordCreated': {
          const d = e.data as EventData<'RecordCreated'>;
          pending.set(d.recordId, {
            kind: 'upsert', payload: d.payload, status: d.status, meta: m,
            item: {
              itemId: d.recordId, tenantId: m.tenantId!, contextId: m.contextId!, accountId: m.accountId, sourceType: 'record', typeName: d.typeName,
              schemaId: d.schemaId, externalId: d.externalId, indexMode: d.indexMode, folderId: d.folderId, userId: d.userId, scopes: d.scopes,
              attrs: {}, createdAt: m.occurredAt, metadata: {}, revision: e.revision, vectors: 0,
            },
          });
          break;
        }
        case 'RecordUpdated': {
          const d = e.data as EventData<'RecordUpdated'>;
          const prev = pending.get(d.recordId);
          const base = prev?.kind === 'upsert' ? prev.item : prev ? undefined : (await cat.items([d.recordId])).get(d.recordId);
          if (!base) break; // created before this projector existed and never seen: a rebuild covers it
          pending.set(d.recordId, {
            kind: 'upsert', payload: d.payload, status: d.status, meta: m,
            item: { ...base, folderId: d.folderId, userId: d.userId, scopes: d.scopes, revision: e.revision },
          });
          break;
        }
        case 'RecordDeleted':
          pending.set((e.data as EventData<'RecordDeleted'>).recordId, { kind: 'delete', itemId: (e.data as EventData<'RecordDeleted'>).recordId });
          break;
        case 'ContextDeleted': {
          const d = e.data as EventData<'ContextDeleted'>;
          await flushAll();
          await this.engines.text.deleteContext(d.tenantId, d.contextId);
          await this.engines.vectors.deleteContext(d.tenantId, d.contextId);
          await cat.removeContext(d.tenantId, d.contextId);
          break;
        }
        case 'DocumentTextReady':
        case 'DocumentUpdated': {
          const id = (e.data as { documentId: string }).documentId;
          const t = docs.get(id) ?? { textRevision: null, meta: false, m };
          if (e.type === 'DocumentTextReady') t.textRevision = Math.max(t.textRevision ?? 0, (e.data as EventData<'DocumentTextReady'>).textRevision);
          else t.meta = true;
          t.m = m;
          docs.set(id, t);
          break;
        }
        case 'DocumentDeleted': {
          const id = (e.data as EventData<'DocumentDeleted'>).documentId;
          docs.delete(id);
          pending.set(id, { kind: 'delete', itemId: id });
          break;
        }
        default:
          break;
      }
    }
    await flushAll();
    await this.appendOutcomes(outcomes.records);
    await this.appendDocumentOutcomes(outcomes.documents);

    const last = events[events.length - 1].position;
    await writeCheckpoint(this.sql, SEARCH_INDEX, last);
    this.position = last;
    this.stats.position = last;
    this.stats.batches += 1;
    this.stats.events += events.length;
    this.waiters = this.waiters.filter((w) => (w.position <= last ? (w.resolve(), false) : true));
    return last;
  }

  /**
   * Turns the documents touched in a batch into pending work, from each
   * document's current state (its stream, folded): deleted -> removed;
   * indexMode NONE -> nothing (the worker settles STORED); a text event whose
   * revision is still the document's current one -> the text is read from the
   * blob store and indexed; an older revision is stale (the newer text event
   * follows) and only the filters are refreshed. Returns SOURCE_UNAVAILABLE
   * failures for texts that cannot be loaded.
   */
  private async resolveDocuments(docs: Map<string, DocTouch>, pending: Map<string, Pending>, lastAttempt: boolean): Promise<DocOutcome[]> {
    const failures: DocOutcome[] = [];
    for (const [id, t] of docs) {
      const { state, revision } = await loadDocument(this.store, id);
      if (!state.exists) {
        pending.set(id, { kind: 'delete', itemId: id });
        continue;
      }
      if (state.indexMode === 'NONE' || !state.tenantId || !state.contextId) continue;
      const def = state.schemaId ? (await this.engines.catalogue.schemas([state.schemaId])).get(state.schemaId) : undefined;
      const item = documentCatalogueItem(state, def, { accountId: t.m.accountId, revision });
      const fresh = t.textRevision !== null && t.textRevision === state.textRevision;
      if (fresh && state.textRetained && state.textRef) {
        let text: Buffer | null;
        try {
          text = await this.o.blobs.get(state.textRef);
        } catch (e) {
          if (!lastAttempt) throw new LegFailure(`document text could not be read: ${(e as Error).message}`);
          text = null;
        }
        if (text === null) {
          const message = 'The document text could not be loaded';
          failures.push({ documentId: id, textRevision: state.textRevision, event: { type: 'DocumentFailed', data: { documentId: id, code: 'SOURCE_UNAVAILABLE', message } }, meta: t.m });
          continue;
        }
        pending.set(id, { kind: 'document', item, passages: chunkText(text.toString('utf8')), textRevision: state.textRevision, meta: t.m });
      } else {
        // Filters changed, a stale text event, or a text already discarded (storeText: false; a rebuild cannot restore it).
        pending.set(id, { kind: 'documentMeta', item });
      }
    }
    return failures;
  }

  /** Indexes the final state of each pending record and document; returns the outcomes to append. */
  private async flush(pending: Map<string, Pending>, lastAttempt: boolean): Promise<Flushed> {
    const { text, vectors, embedder, catalogue } = this.engines;
    const out: Flushed = { records: [], documents: [] };
    for (const p of pending.values()) {
      if (p.kind !== 'delete') continue;
      await text.deleteItem(p.itemId);
      await vectors.deleteItem(p.itemId);
      await catalogue.remove(p.itemId);
    }
    const metaOnly = [...pending.values()].filter((p): p is Extract<Pending, { kind: 'documentMeta' }> => p.kind === 'documentMeta');
    const ups = [...pending.values()].filter((p): p is Extract<Pending, { kind: 'upsert' | 'document' }> => p.kind === 'upsert' || p.kind === 'document');
    if (!ups.length && !metaOnly.length) return out;
    const defs = await catalogue.schemas(ups.map((u) => u.item.schemaId!).filter(Boolean));
    const before = await catalogue.items([...ups, ...metaOnly].map((u) => u.item.itemId));

    // 0. filter changes of documents already indexed (their passages stay)
    for (const p of metaOnly) {
      const known = before.get(p.item.itemId);
      if (!known) continue; // not indexed (yet): its text event indexes it with these filters
      try {
        await text.updateItemMeta(p.item);
      } catch (e) {
        if (!lastAttempt) throw new LegFailure(`index legs failed: ${(e as Error).message}`);
        this.o.log?.(`projection ${SEARCH_INDEX}: filters of a document could not be updated`, e);
      }
      await catalogue.put({ ...p.item, vectors: known.vectors });
    }
    if (!ups.length) return out;
    const tenantVectors = new Map<string, number>();

    // 1. the text leg
    const work = ups.map((u) => {
      const mode = u.item.indexMode ?? 'NONE';
      if (u.kind === 'document') {
        return { u, item: { ...u.item, vectors: 0 }, mode, passages: mode === 'NONE' ? [] : u.passages, textErr: null as string | null, vecErr: null as { code: 'EMBEDDING_FAILED' | 'VECTOR_LIMIT_EXCEEDED'; message: string } | null };
      }
      const def = defs.get(u.item.schemaId!);
      const passages = mode === 'NONE' ? [] : recordPassages(def, u.payload);
      const attrs = filterAttributes(def, u.payload, { typeName: u.item.typeName, status: u.status, externalId: u.item.externalId, schemaId: u.item.schemaId, indexMode: u.item.indexMode });
      const metadata = { typeName: u.item.typeName, schemaId: u.item.schemaId, externalId: u.item.externalId, status: u.status, folderId: u.item.folderId, userId: u.item.userId, scopes: u.item.scopes, attributes: attrs };
      const item: CatalogueItem = { ...u.item, attrs, metadata, vectors: 0 };
      return { u, item, mode, passages, textErr: null as string | null, vecErr: null as { code: 'EMBEDDING_FAILED' | 'VECTOR_LIMIT_EXCEEDED'; message: string } | null };
    })
      // Store-only items (indexMode NONE) that were never indexed cost nothing here: no passages, no catalogue row, no outcome.
      .filter((w) => w.mode !== 'NONE' || before.has(w.item.itemId));
    const indexedOf = (w: (typeof work)[number]): IndexedItem => ({ ...w.item, passages: w.mode === 'TEXT' || w.mode === 'HYBRID' ? w.passages : [] });
    // Elasticsearch: one bulk and one refresh for the batch.
    await this.batchThenEach(
      'text',
      work,
      text.replaceItems && ((ws) => text.replaceItems!(ws.map(indexedOf))),
      async (w) => {
        try {
          await text.replaceItem(indexedOf(w));
        } catch (e) {
          w.textErr = (e as Error).message;
        }
      },
    );

    // 2. embeddings (one batched call) and vectors, within the per-tenant capacity
    const wantVectors = work.filter((w) => (w.mode === 'SEMANTIC' || w.mode === 'HYBRID') && w.passages.length);
    for (const w of work) if (!wantVectors.includes(w) && (before.get(w.item.itemId)?.vectors ?? 0) > 0) await vectors.deleteItem(w.item.itemId);
    const admitted: typeof wantVectors = [];
    for (const w of wantVectors) {
      const t = w.item.tenantId;
      if (!tenantVectors.has(t)) tenantVectors.set(t, await catalogue.vectorCount(t));
      const old = before.get(w.item.itemId)?.vectors ?? 0;
      const next = tenantVectors.get(t)! - old + w.passages.length;
      if (next > this.o.vectorCapacity) {
        w.vecErr = { code: 'VECTOR_LIMIT_EXCEEDED', message: `Per-tenant vector capacity of ${this.o.vectorCapacity} reached; semantic indexing skipped` };
        if (old) await vectors.deleteItem(w.item.itemId);
        tenantVectors.set(t, tenantVectors.get(t)! - old);
        continue;
      }
      tenantVectors.set(t, next);
      admitted.push(w);
    }
    if (admitted.length) {
      let embedded: number[][] | null = null;
      try {
        embedded = await embedder.embed(admitted.flatMap((w) => w.passages.map((p) => p.chunkText)));
      } catch (e) {
        for (const w of admitted) w.vecErr = { code: 'EMBEDDING_FAILED', message: (e as Error).message };
      }
      if (embedded) {
        let k = 0;
        const writes = admitted.map((w) => ({
          w,
          rows: w.passages.map((p) => ({ itemId: w.item.itemId, chunkNo: p.chunkNo, tenantId: w.item.tenantId, contextId: w.item.contextId, vector: embedded![k++], chunkText: p.chunkText, contextText: p.contextText })),
        }));
        const writeOne = async (x: (typeof writes)[number]) => {
          try {
            await vectors.replaceItem(x.w.item.itemId, x.rows);
            x.w.item.vectors = x.rows.length;
          } catch (e) {
            x.w.vecErr = { code: 'EMBEDDING_FAILED', message: `vector index write failed: ${(e as Error).message}` };
          }
        };
        // LanceDB: one delete + one add, so one version and fragment per batch, not per item.
        await this.batchThenEach(
          'vector',
          writes,
          vectors.replaceItems &&
            (async (xs) => {
              await vectors.replaceItems!(xs.map((x) => ({ itemId: x.w.item.itemId, rows: x.rows })));
              for (const x of xs) x.w.item.vectors = x.rows.length;
            }),
          writeOne,
        );
      }
    }
    const transient = work.some((w) => w.textErr || w.vecErr?.code === 'EMBEDDING_FAILED');
    if (transient && !lastAttempt) throw new LegFailure(`index legs failed: ${work.map((w) => w.textErr ?? w.vecErr?.message).filter(Boolean)[0]}`);

    // 3. the catalogue, then the outcome of each record and document
    for (const w of work) {
      await catalogue.put(w.item);
      if (w.u.kind === 'document') {
        const o = documentOutcome(w.item.itemId, w.u.textRevision, w.mode, w.passages.length, w.textErr, w.vecErr);
        if (o) out.documents.push({ documentId: w.item.itemId, textRevision: w.u.textRevision, event: o, meta: w.u.meta });
        continue;
      }
      const o = outcomeOf(w.item.itemId, w.item.revision, w.mode, w.passages.length, w.textErr, w.vecErr);
      if (o) out.records.push({ streamId: streams.record(w.item.itemId), outcome: o, meta: w.u.meta });
    }
    return out;
  }

  /**
   * Appends each document outcome at the stream revision it was checked
   * against, only while the document is PENDING_INDEX at that text revision
   * (a newer text, a settled outcome — replays, rebuilds — or a delete leave
   * it out). A concurrent write re-checks.
   */
  private async appendDocumentOutcomes(list: DocOutcome[]): Promise<void> {
    const now = (this.o.now ?? (() => new Date()))().toISOString();
    for (const o of list) {
      for (let attempt = 0; attempt < 10; attempt++) {
        const { state, revision } = await loadDocument(this.store, o.documentId);
        if (!state.exists || state.status !== 'PENDING_INDEX' || state.textRevision !== o.textRevision) break;
        try {
          await this.store.appendMulti([{
            streamId: streams.document(o.documentId),
            expectedRevision: revision,
            events: [{
              id: randomUUID(),
              type: o.event.type,
              data: parseEventData(o.event.type, o.event.data) as Record<string, unknown>,
              metadata: { tenantId: state.tenantId, contextId: state.contextId, accountId: o.meta.accountId, actorKeyId: null, userId: null, requestId: o.meta.requestId, occurredAt: now, schemaVersion: EVENT_SCHEMA_VERSION },
            }],
          }]);
          break;
        } catch (e) {
          if (e instanceof WrongExpectedRevisionError) continue;
          throw e;
        }
      }
    }
  }

  /** Appends outcomes in one atomic call, leaving out those already stale (record changed since) or already recorded (a replay). */
  private async appendOutcomes(list: Array<{ streamId: string; outcome: Outcome; meta: EventMetadata }>): Promise<void> {
    const requests: AppendRequest[] = [];
    const now = (this.o.now ?? (() => new Date()))().toISOString();
    for (const { streamId, outcome, meta } of list) {
      const tail = await this.store.readStream(streamId, { direction: 'backwards', maxCount: 50 });
      const contentAt = tail.findIndex((e) => e.type === 'RecordCreated' || e.type === 'RecordUpdated' || e.type === 'RecordDeleted');
      if (contentAt < 0 || tail[contentAt].revision !== outcome.data.forRevision) continue; // changed since (or gone)
      const latest = tail.slice(0, contentAt).find((e) => e.type === 'RecordIndexed' || e.type === 'RecordIndexFailed');
      if (latest && latest.type === outcome.type && latest.data.forRevision === outcome.data.forRevision && sameOutcome(latest.data, outcome.data)) continue;
      requests.push({
        streamId,
        expectedRevision: 'any',
        events: [{
          id: randomUUID(),
          type: outcome.type,
          data: parseEventData(outcome.type, outcome.data) as Record<string, unknown>,
          metadata: { tenantId: meta.tenantId, contextId: meta.contextId, accountId: meta.accountId, actorKeyId: null, userId: null, requestId: meta.requestId, occurredAt: now, schemaVersion: EVENT_SCHEMA_VERSION },
        }],
      });
    }
    if (requests.length) await this.store.appendMulti(requests);
  }
}

const sameOutcome = (a: Record<string, unknown>, b: Record<string, unknown>) => a.status === b.status && a.code === b.code;

/** The index outcome of one record (null for store-only records, which have no index status). */
export function outcomeOf(
  recordId: string,
  forRevision: number,
  mode: string,
  passages: number,
  textErr: string | null,
  vecErr: { code: 'EMBEDDING_FAILED' | 'VECTOR_LIMIT_EXCEEDED'; message: string } | null,
): Outcome | null {
  if (mode === 'NONE') return null;
  if (!passages) return { type: 'RecordIndexed', data: { recordId, status: 'SKIPPED', forRevision } };
  const failed = (code: EventData<'RecordIndexFailed'>['code'], message: string): Outcome => ({ type: 'RecordIndexFailed', data: { recordId, code, message, forRevision } });
  const usesText = mode === 'TEXT' || mode === 'HYBRID';
  const usesVectors = mode === 'SEMANTIC' || mode === 'HYBRID';
  const textBad = usesText && !!textErr;
  const vecBad = usesVectors && !!vecErr;
  if ((textBad || !usesText) && (vecBad || !usesVectors)) {
    if (vecErr?.code === 'VECTOR_LIMIT_EXCEEDED' && !usesText) return failed('VECTOR_LIMIT_EXCEEDED', `${vecErr.message}; not findable by search`);
    return failed('INDEXING_FAILED', textErr ?? vecErr?.message ?? 'indexing failed');
  }
  if (textBad) return failed('TEXT_INDEX_FAILED', textErr!);
  if (vecBad) return failed(vecErr!.code, vecErr!.message);
  return { type: 'RecordIndexed', data: { recordId, status: 'INDEXED', forRevision } };
}

/** A document's outcome: INDEXED -> DocumentIndexed, no passages -> DocumentIndexSkipped SKIPPED, failures -> DocumentFailed with the same codes as records. */
export function documentOutcome(
  documentId: string,
  textRevision: number,
  mode: string,
  passages: number,
  textErr: string | null,
  vecErr: { code: 'EMBEDDING_FAILED' | 'VECTOR_LIMIT_EXCEEDED'; message: string } | null,
): DomainEvent | null {
  const o = outcomeOf(documentId, 0, mode, passages, textErr, vecErr);
  if (!o) return null;
  if (o.type === 'RecordIndexFailed') return { type: 'DocumentFailed', data: { documentId, code: o.data.code, message: o.data.message } };
  return o.data.status === 'INDEXED'
    ? { type: 'DocumentIndexed', data: { documentId, status: 'INDEXED', textRevision } }
    : { type: 'DocumentIndexSkipped', data: { documentId, status: 'SKIPPED', textRevision } };
}
