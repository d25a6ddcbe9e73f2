import { randomUUID } from 'node:crypto';
import type { DomainEvent, EventData, EventMetadata, SchemaDefinition } from '@svc/contracts';
import {
  type BlobStore,
  type CatalogueItem,
  chunkText,
  type Embedder,
  ensureCheckpoints,
  type EventFeed,
  type EventStore,
  filterAttributes,
  type IndexedItem,
  type IndexingOutcome,
  NO_WAIT,
  type Passage,
  processDocument,
  readCheckpoint,
  recordPassages,
  resetCheckpoint,
  type Sql,
  type StoredEvent,
  streams,
  systemMetadata,
  type TextIndex,
  tornDownCache,
  type VectorIndex,
  writeCheckpoint,
} from '@svc/domain';
import { CATALOGUE_TABLES, SearchCatalogue } from '../engines/catalogue';
import { TextIndexUnavailable } from '../engines/text-unavailable';
import { documentCatalogueItem, loadDocument } from './documents';
import { OutcomeLog, type RecordOutcome } from './outcomes';
import {
  FairQueue,
  ROUND_PASSAGES,
  VectorJobStore,
  newJob,
  type Slice,
  type VecErr,
  type VectorJob,
  type VectorJobSpec,
} from './vector-queue';

/**
 * The search projector ('search-index'): follows the event log with its own
 * checkpoint (not part of the read-your-writes barrier), keeps the text index
 * and the vector index in step with records and documents, and appends each
 * item's index outcome: for records, RecordsIndexed events to the context's
 * outcome stream (./outcomes.ts); to the document's stream DocumentIndexed (INDEXED), DocumentIndexSkipped (SKIPPED) or
 * DocumentFailed for documents (STORED, indexMode NONE, stays with the
 * document worker).
 *
 * Per batch: the final state of every touched record and document is indexed once. The text
 * leg is written in log order, in the batch; the embeddings and vectors of items that need
 * them become vector jobs (./vector-queue.ts), stored before the batch's checkpoint and
 * served per tenant, round-robin, with a passage budget per round, so one tenant's bulk
 * work cannot hold up another tenant's items (docs/search.md, "Fairness"). The outcome
 * of an item is appended only when both of its legs are written, so an INDEXED record is
 * findable by keyword and by meaning. A failing text leg retries the batch (bounded); a
 * failing embedding or vector write retries its job (bounded); after the last attempt the
 * record is marked FAILED with its indexFailure code and the work moves on.
 *
 * `current` (and `waitFor`, `stats.position`) is the position up to which every event is
 * fully indexed: the checkpoint, or just before the oldest queued vector job.
 *
 * The keyword index may live on a server that can fail or lose it (Elasticsearch). While it
 * does not answer, batches are retried without counting attempts (TextIndexUnavailable:
 * nothing is marked FAILED for it). When it was lost (created again at start while the
 * checkpoint is past 0, gone on a write, or gone at a probe every TEXT_PROBE_MS), it is
 * rebuilt from the log up to the checkpoint before the next batch: the text leg only, the
 * catalogue, vectors, vector jobs and outcomes were not lost (restoreText).
 */
export const SEARCH_INDEX = 'search-index';
/**
 * The checkpoint row of a keyword-index rebuild under way (the position it rebuilds up to): a crash resumes it at the
 * next start.
 */
export const SEARCH_TEXT_REBUILD = 'search-index:text-rebuild';
/** How often the projector checks that a keyword index that can be lost (its adapter's `lost`) is still there. */
export const TEXT_PROBE_MS = 5000;

/**
 * What a keyword index on a server that can lose it tells the projector (the Elasticsearch adapter): whether its
 * last init() had to create it, and whether it is gone now (false when the server does not answer).
 */
type LosableTextIndex = TextIndex & { created?: boolean; lost?: () => Promise<boolean> };

/** The engines the search projector writes (ports: domain/src/ports/search.ts), and its catalogue. */
export interface IndexerEngines {
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
  /**
   * Where events come from: the store's catch-up feed (projectors' `catchUpFeed`) unless Kafka is configured
   * (`KafkaFeed`). The feeds are the projectors' runtime, which search does not import.
   */
  feed: EventFeed;
  /**
   * Attempts of a batch whose text leg fails (and of a vector job whose embedding or write fails) before items are
   * marked FAILED.
   */
  attempts?: number;
  /**
   * Passages embedded per round of the vector queue, over all tenants (default: the embedder's passageBatch, else
   * ROUND_PASSAGES).
   */
  roundPassages?: number;
  log?: (msg: string, err?: unknown) => void;
  now?: () => Date;
}

type Pending =
  | {
      kind: 'upsert';
      item: CatalogueItem;
      payload: Record<string, unknown>;
      status: string;
      meta: EventMetadata;
      position: number;
    }
  /** A document whose current text (textRevision) is to be indexed. */
  | {
      kind: 'document';
      item: CatalogueItem;
      passages: Passage[];
      textRevision: number;
      meta: EventMetadata;
      position: number;
    }
  /**
   * A document whose filters changed (folder, payload, ownership, schema): passages stay, filter columns are rewritten.
   */
  | { kind: 'documentMeta'; item: CatalogueItem }
  | { kind: 'delete'; itemId: string };

/** A document's outcome, appended only while the document is still PENDING_INDEX at that text revision. */
type DocOutcome = { documentId: string; textRevision: number; event: DomainEvent; meta: EventMetadata };
/** Document events seen in a batch: the newest text revision, and whether filters changed. */
type DocTouch = { textRevision: number | null; meta: boolean; m: EventMetadata; position: number };
type Flushed = { records: Array<{ outcome: RecordOutcome; meta: EventMetadata }>; documents: DocOutcome[] };

class LegFailure extends Error {}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));
/** The retry delay of a job after `n` failures (as the feed's for batches: 50 ms doubling, at most 5 s). */
const backoff = (n: number) => Math.min(5000, 50 * 2 ** Math.min(n, 7));

export class SearchIndexer {
  /** The checkpoint: every event up to here has been applied (text leg written, vector work queued and stored). */
  private position = 0;
  private abort = new AbortController();
  private loop: Promise<void> | undefined;
  private attempt = { position: -1, n: 0 };
  readonly stats = {
    name: SEARCH_INDEX,
    position: 0,
    batches: 0,
    events: 0,
    errors: 0,
    lastError: null as string | null,
    vectorJobs: 0,
  };
  private waiters: Array<{ position: number; resolve: () => void }> = [];
  /** Semantic work: per-tenant queues in memory, rows in si_vector_jobs. */
  private readonly queue = new FairQueue();
  private readonly jobs: VectorJobStore;
  /** Records' outcomes, appended in batches, and what was appended (a replay appends none again). */
  private readonly outcomes: OutcomeLog;
  /** Batches and vector commits take turns (the slow embedding runs outside it). */
  private lockTail: Promise<void> = Promise.resolve();
  private worker: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private halted = false;
  private halt = deferred();
  /** The keyword index was lost: rebuilt from the log before the next batch (restoreText). */
  private textLost = false;
  /** That rebuild while it runs: its progress, the position it goes up to, and the schemas as of its progress. */
  private textReplay: { at: number; upTo: number; schemas: Map<string, SchemaDefinition> } | null = null;
  private probe: ReturnType<typeof setInterval> | undefined;
  private probing = false;
  /** Where events come from (IndexerOptions.feed; may be replaced before start). */
  feed: EventFeed;

  /**
   * One write for the whole batch where the adapter offers it; should it fail (or be absent, or the batch hold one
   * item), each item is written on its own, so only the items whose own write fails are marked.
   */
  private async batchThenEach<T>(
    leg: string,
    items: T[],
    batch: ((xs: T[]) => Promise<void>) | undefined,
    each: (x: T) => Promise<void>,
  ) {
    if (batch && items.length > 1) {
      try {
        return await batch(items);
      } catch (e) {
        if (e instanceof TextIndexUnavailable) throw e; // the engine's failure: item by item would fail the same way
        this.o.log?.(
          `projection ${SEARCH_INDEX}: batched ${leg} write of ${items.length} items failed, writing them one by one`,
          e,
        );
      }
    }
    for (const x of items) await each(x);
  }

  constructor(
    private readonly sql: Sql,
    private readonly store: EventStore,
    readonly engines: IndexerEngines,
    private readonly o: IndexerOptions,
  ) {
    this.jobs = new VectorJobStore(sql);
    this.outcomes = new OutcomeLog(sql, store, o.now);
    this.feed = o.feed;
  }

  /** The last checkpoint write, in flight (applyBatchNow does not wait for it). */
  private checkpointing: Promise<unknown> = Promise.resolve();

  get name() {
    return SEARCH_INDEX;
  }
  /**
   * Every event up to this position is fully indexed (both legs, outcome appended): the checkpoint, or just before the
   * oldest queued vector job.
   */
  get current() {
    const oldest = this.queue.minPosition();
    return oldest === Infinity ? this.position : Math.min(this.position, oldest - 1);
  }

  async init(): Promise<void> {
    await ensureCheckpoints(this.sql);
    await this.engines.catalogue.init();
    await this.outcomes.init();
    await this.engines.text.init();
    await this.engines.vectors.init();
    this.position = await readCheckpoint(this.sql, SEARCH_INDEX);
    // A keyword index created just now while the checkpoint says events were indexed was lost (or is new to this
    // deployment: ELASTICSEARCH_URL set on an existing one); a rebuild cut short by a stop or a crash goes on.
    if (
      ((this.engines.text as LosableTextIndex).created && this.position > 0) ||
      (await readCheckpoint(this.sql, SEARCH_TEXT_REBUILD)) > 0
    )
      this.textLost = true;
    // Vector jobs queued before a stop or a crash are served again (from their first passage). Without a model
    // (BUILTIN_EMBEDDINGS_MODEL=none) they stay stored for when one is configured again: served now, each would fail
    // and mark its item FAILED for good.
    this.queue.clear();
    if (this.engines.embedder.unavailable === undefined)
      for (const spec of await this.jobs.all()) this.queue.put(newJob(spec));
    this.settle();
  }

  start(): void {
    this.resume();
    if (this.loop) return;
    this.abort = new AbortController();
    if ((this.engines.text as LosableTextIndex).lost) {
      this.probe = setInterval(() => void this.checkText(), TEXT_PROBE_MS);
      this.probe.unref?.();
    }
    if (this.textLost) void this.checkText();
    this.loop = this.feed.follow(SEARCH_INDEX, {
      from: this.position,
      // Events per batch: one text write, one vector write and one outcome round (appended, then applied by the read
      // models) per batch. 500 gave batches of ~170 documents in a bulk ingest, but under 32 connections of TEXT
      // creates each batch's outcome round held the API thread long enough to double the create's p99: 100 took it from
      // 90-105 to 53-61 ms and the TEXT/NONE create ratio from 0.81-0.82 to 0.91-1.08 (BENCH_ONLY=searchable,
      // alternating runs, 2026-11-27). A quiet log gives small batches anyway. Below it (10-40) the creates looked
      // faster only because indexing fell behind: each batch waits ~50 ms in round trips whatever its size, so at 200
      // writes/s batches of 10 indexed ~145 events/s and write -> INDEXED grew to seconds (profile-index.ts,
      // 2026-11-27).
      batchSize: 100,
      signal: this.abort.signal,
      handle: (events) => this.applyBatch(events),
      onError: (e, attempt) => {
        this.stats.errors += 1;
        this.stats.lastError = e instanceof Error ? e.message : String(e);
        this.o.log?.(`projection ${SEARCH_INDEX}: batch failed (attempt ${attempt}), retrying`, e);
      },
    });
  }

  /**
   * Stops following the log and serving vector jobs (a model call under way is abandoned; its job is served again after
   * a start).
   */
  async stop(): Promise<void> {
    this.abort.abort();
    clearInterval(this.probe);
    this.probe = undefined;
    await this.loop;
    await this.checkpointing;
    this.loop = undefined;
    this.halted = true;
    this.halt.resolve();
    this.wake?.();
    await this.worker;
  }

  /** Resolves once every event up to `position` is fully indexed (false after `timeoutMs`). */
  waitFor(position: number, timeoutMs: number): Promise<boolean> {
    if (this.current >= position) return Promise.resolve(true);
    return new Promise((resolve) => {
      const w = { position, resolve: () => (clearTimeout(t), resolve(true)) };
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        resolve(false);
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  /** Resolves once every event applied so far is fully indexed: no vector job left. */
  settled(): Promise<void> {
    if (!this.queue.size) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ position: this.position, resolve }));
  }

  /**
   * Empties both indexes, the catalogue and the vector queue, then replays the log from position 0 (and waits for its
   * vector jobs).
   */
  async rebuild(): Promise<number> {
    await this.stop();
    for (const t of CATALOGUE_TABLES) await this.sql.exec(`DROP TABLE IF EXISTS ${t} CASCADE`);
    await this.engines.text.drop();
    await this.engines.vectors.drop();
    await ensureCheckpoints(this.sql);
    await resetCheckpoint(this.sql, SEARCH_INDEX);
    await resetCheckpoint(this.sql, SEARCH_TEXT_REBUILD);
    this.textLost = false;
    this.textReplay = null;
    await this.init();
    this.position = 0;
    this.resume();
    const head = await this.store.headPosition();
    while (this.position < head) {
      const events = await this.store.readAll(this.position, 500);
      if (!events.length) break;
      await this.applyBatch(events);
    }
    await this.settled();
    return this.position;
  }

  /**
   * Queues re-embedding work that is not in the log's order (a context rebuilt for a new embedding model,
   * vector-model-rebuild.ts): in-memory jobs in their own lane, not stored (a restart plans them again) and not holding
   * back `current`. An item with queued work keeps it (its own job writes the current model's vectors anyway).
   * Returns the item ids queued.
   */
  reembed(jobs: Array<{ spec: Omit<VectorJobSpec, 'position'>; passages: Passage[]; lane: string }>): string[] {
    const queued: string[] = [];
    for (const { spec, passages, lane } of jobs) {
      if (this.queue.current(spec.itemId) || !passages.length) continue;
      const job = newJob({ ...spec, position: Number.MAX_SAFE_INTEGER, n: passages.length });
      job.passages = passages;
      job.lane = lane;
      this.queue.put(job);
      queued.push(spec.itemId);
    }
    this.settle();
    this.kick();
    return queued;
  }

  /** Batches and vector commits take turns. */
  private async exclusive<T>(f: () => Promise<T>): Promise<T> {
    const before = this.lockTail;
    let release!: () => void;
    this.lockTail = new Promise<void>((r) => (release = r));
    await before;
    try {
      return await f();
    } finally {
      release();
    }
  }

  /** Publishes the fully-indexed position and resolves the waiters it has passed. */
  private settle() {
    const at = this.current;
    this.stats.position = at;
    this.stats.vectorJobs = this.queue.size;
    this.waiters = this.waiters.filter((w) => (w.position <= at ? (w.resolve(), false) : true));
  }

  private applyBatch(events: StoredEvent[]): Promise<number> {
    return this.exclusive(() => this.applyBatchNow(events));
  }

  private async applyBatchNow(events: StoredEvent[]): Promise<number> {
    // A lost keyword index is rebuilt first (up to the checkpoint), then this batch is applied; never the batch first
    // (a stop cut the rebuild short): the rebuild's older states would then overwrite its newer ones.
    if (this.textLost) await this.restoreText();
    if (this.textLost)
      throw new Error('stopped while the keyword index was being rebuilt (it goes on at the next start)');
    const first = events[0].position;
    if (this.attempt.position !== first) this.attempt = { position: first, n: 0 };
    this.attempt.n += 1;
    try {
      return await this.applyEvents(events, this.attempt.n >= (this.o.attempts ?? 3));
    } catch (e) {
      // The keyword engine's failure, not the batch's: no attempt is counted (nothing is marked FAILED for it), the
      // feed retries the batch until the engine answers again. A lost index is rebuilt before the retry.
      if (e instanceof TextIndexUnavailable) {
        this.attempt.n -= 1;
        if (e.missing) this.textLost = true;
      }
      throw e;
    }
  }

  /**
   * Rebuilds a lost keyword index from the log: creates it again, then writes the text leg of every event up to the
   * checkpoint, as `rebuild` would, leaving the catalogue, the vectors, the vector jobs and the outcomes as they are
   * (they were not lost; nothing is appended). Runs between batches; after a failure it goes on where it stopped,
   * after a crash from the start (SEARCH_TEXT_REBUILD), and when the index is lost again meanwhile it starts over.
   */
  private async restoreText(): Promise<void> {
    if (!this.textLost) return;
    const started = Date.now();
    if (!this.textReplay) {
      await this.engines.text.init();
      await writeCheckpoint(this.sql, SEARCH_TEXT_REBUILD, Math.max(1, this.position));
      this.textReplay = { at: 0, upTo: this.position, schemas: new Map() };
      this.o.log?.(
        `projection ${SEARCH_INDEX}: the keyword index was lost; rebuilding it from the log up to ` +
          `position ${this.position}`,
      );
    }
    const r = this.textReplay;
    let events = 0;
    try {
      while (r.at < r.upTo && !this.abort.signal.aborted) {
        const batch = (await this.store.readAll(r.at, 500)).filter((e) => e.position <= r.upTo);
        if (!batch.length) break;
        await this.applyEvents(batch, true);
        r.at = batch[batch.length - 1].position;
        events += batch.length;
      }
    } catch (e) {
      if (e instanceof TextIndexUnavailable && e.missing) this.textReplay = null;
      throw e;
    }
    if (r.at < r.upTo && this.abort.signal.aborted) return;
    await resetCheckpoint(this.sql, SEARCH_TEXT_REBUILD);
    this.textReplay = null;
    this.textLost = false;
    this.o.log?.(
      `projection ${SEARCH_INDEX}: keyword index rebuilt from the log up to position ${r.upTo} (${events} ` +
        `events) in ${Date.now() - started} ms`,
    );
  }

  /** Between batches: rebuilds the keyword index when it was lost, or when the adapter's probe finds it gone. */
  private async checkText(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      if (!this.textLost && (await (this.engines.text as LosableTextIndex).lost?.())) {
        this.o.log?.(`projection ${SEARCH_INDEX}: the keyword index is gone (its server lost it)`);
        this.textLost = true;
      }
      if (this.textLost) await this.exclusive(() => this.restoreText());
    } catch (e) {
      this.stats.errors += 1;
      this.stats.lastError = message(e);
      this.o.log?.(`projection ${SEARCH_INDEX}: the keyword index could not be rebuilt yet, retrying`, e);
    } finally {
      this.probing = false;
    }
  }

  /**
   * Schema definitions for indexing: the catalogue's, or while the keyword index is rebuilt, the log's as of the
   * rebuild's progress.
   */
  private async schemasOf(ids: string[]): Promise<Map<string, SchemaDefinition>> {
    const replay = this.textReplay;
    if (!replay) return this.engines.catalogue.schemas(ids);
    const out = new Map<string, SchemaDefinition>();
    const rest = ids.filter((id) => !replay.schemas.has(id));
    for (const id of ids) if (replay.schemas.has(id)) out.set(id, replay.schemas.get(id)!);
    if (rest.length) for (const [id, d] of await this.engines.catalogue.schemas(rest)) out.set(id, d);
    return out;
  }

  /** Applies a batch of events (while the keyword index is rebuilt, `textReplay`: its text leg only). */
  private async applyEvents(events: StoredEvent[], lastAttempt: boolean): Promise<number> {
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
          if (this.textReplay) this.textReplay.schemas.set(d.schemaId, d.definition as SchemaDefinition);
          else await cat.putSchema(d.schemaId, d.definition as SchemaDefinition);
          break;
        }
        case 'RecordCreated': {
          const d = e.data as EventData<'RecordCreated'>;
          pending.set(d.recordId, {
            kind: 'upsert',
            payload: d.payload,
            status: d.status,
            meta: m,
            position: e.position,
            item: {
              itemId: d.recordId,
              tenantId: m.tenantId!,
              contextId: m.contextId!,
              accountId: m.accountId,
              sourceType: 'record',
              typeName: d.typeName,
              schemaId: d.schemaId,
              externalId: d.externalId,
              indexMode: d.indexMode,
              folderId: d.folderId,
              userId: d.userId,
              scopes: d.scopes,
              attrs: {},
              createdAt: m.occurredAt,
              metadata: {},
              revision: e.revision,
              vectors: 0,
            },
          });
          break;
        }
        case 'RecordUpdated': {
          const d = e.data as EventData<'RecordUpdated'>;
          const prev = pending.get(d.recordId);
          const base =
            prev?.kind === 'upsert' ? prev.item : prev ? undefined : (await cat.items([d.recordId])).get(d.recordId);
          if (!base) break; // created before this projector existed and never seen: a rebuild covers it
          pending.set(d.recordId, {
            kind: 'upsert',
            payload: d.payload,
            status: d.status,
            meta: m,
            position: e.position,
            item: { ...base, folderId: d.folderId, userId: d.userId, scopes: d.scopes, revision: e.revision },
          });
          break;
        }
        case 'RecordDeleted':
          pending.set((e.data as EventData<'RecordDeleted'>).recordId, {
            kind: 'delete',
            itemId: (e.data as EventData<'RecordDeleted'>).recordId,
          });
          break;
        case 'ContextDeleted': {
          const d = e.data as EventData<'ContextDeleted'>;
          await flushAll();
          await this.dropContext(d.tenantId, d.contextId);
          break;
        }
        case 'TenantTornDown': {
          // Each context also has its ContextDeleted in the same append; dropping again is a no-op, and covers a replay
          // that starts between them.
          const d = e.data as EventData<'TenantTornDown'>;
          await flushAll();
          for (const contextId of d.contextIds) await this.dropContext(d.tenantId, contextId);
          break;
        }
        case 'DocumentTextReady':
        case 'DocumentUpdated': {
          const id = (e.data as { documentId: string }).documentId;
          const t = docs.get(id) ?? { textRevision: null, meta: false, m, position: e.position };
          if (e.type === 'DocumentTextReady')
            t.textRevision = Math.max(t.textRevision ?? 0, (e.data as EventData<'DocumentTextReady'>).textRevision);
          else t.meta = true;
          t.m = m;
          t.position = e.position;
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
    if (this.textReplay) return events[events.length - 1].position;
    await this.outcomes.append(outcomes.records);
    await this.appendDocumentOutcomes(outcomes.documents);

    const last = events[events.length - 1].position;
    // Not awaited: the next statements to this database queue behind it in order, and a checkpoint that does not
    // land only means a replay from the one before (every write above is idempotent). stop() waits for it.
    // Chained, so on a pool of connections an older position never lands after a newer one.
    this.checkpointing = this.checkpointing
      .then(() => writeCheckpoint(this.sql, SEARCH_INDEX, last))
      .catch((e) => this.o.log?.(`projection ${SEARCH_INDEX}: checkpoint ${last} not written`, e));
    this.position = last;
    this.stats.batches += 1;
    this.stats.events += events.length;
    this.settle();
    this.kick();
    return last;
  }

  /** Removes a context from both indexes, the catalogue and the vector queue (its queued work is cancelled). */
  private async dropContext(tenantId: string, contextId: string): Promise<void> {
    if (this.textReplay) return this.engines.text.deleteContext(tenantId, contextId);
    this.queue.removeContext(tenantId, contextId);
    await this.jobs.deleteContext(tenantId, contextId);
    await this.engines.text.deleteContext(tenantId, contextId);
    await this.engines.vectors.deleteContext(tenantId, contextId);
    await this.engines.catalogue.removeContext(tenantId, contextId);
    await this.outcomes.forgetContext(tenantId, contextId);
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
  private async resolveDocuments(
    docs: Map<string, DocTouch>,
    pending: Map<string, Pending>,
    lastAttempt: boolean,
  ): Promise<DocOutcome[]> {
    const failures: DocOutcome[] = [];
    const gone = docs.size ? tornDownCache(this.store) : undefined;
    for (const [id, t] of docs) {
      const { state, revision } = await loadDocument(this.store, id);
      if (!state.exists) {
        pending.set(id, { kind: 'delete', itemId: id });
        continue;
      }
      if (state.indexMode === 'NONE' || !state.tenantId || !state.contextId) continue;
      // A document of a torn-down context or tenant (its blobs are gone): nothing to index, no outcome to record.
      if (await gone!(state.tenantId, state.contextId)) continue;
      const def = state.schemaId ? (await this.schemasOf([state.schemaId])).get(state.schemaId) : undefined;
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
          failures.push({
            documentId: id,
            textRevision: state.textRevision,
            event: { type: 'DocumentFailed', data: { documentId: id, code: 'SOURCE_UNAVAILABLE', message } },
            meta: t.m,
          });
          continue;
        }
        pending.set(id, {
          kind: 'document',
          item,
          passages: chunkText(text.toString('utf8')),
          textRevision: state.textRevision,
          meta: t.m,
          position: t.position,
        });
      } else {
        // Filters changed, a stale text event, or a text already discarded (storeText: false; a rebuild cannot restore
        // it).
        pending.set(id, { kind: 'documentMeta', item });
      }
    }
    return failures;
  }

  /** Indexes the final state of each pending record and document; returns the outcomes to append. */
  private async flush(pending: Map<string, Pending>, lastAttempt: boolean): Promise<Flushed> {
    const { text, vectors, embedder, catalogue } = this.engines;
    const out: Flushed = { records: [], documents: [] };
    const deleted = [...pending.values()].filter((p) => p.kind === 'delete').map((p) => p.itemId);
    // Queued vector work of deleted items is cancelled (the stored rows too, whatever the queue in memory holds).
    if (!this.textReplay) for (const id of deleted) this.queue.remove(id);
    if (!this.textReplay) await this.jobs.delete(deleted);
    for (const id of deleted) {
      await text.deleteItem(id);
      if (this.textReplay) continue;
      await vectors.deleteItem(id);
      await catalogue.remove(id);
    }
    // Work of a torn-down context or tenant that reaches the log after its teardown (an extraction finishing late) is
    // not indexed.
    const gone = tornDownCache(this.store);
    const live = async <P extends { item: CatalogueItem }>(ps: P[]) => {
      const keep: P[] = [];
      for (const p of ps) if (!(await gone(p.item.tenantId, p.item.contextId))) keep.push(p);
      return keep;
    };
    const metaOnly = await live(
      [...pending.values()].filter((p): p is Extract<Pending, { kind: 'documentMeta' }> => p.kind === 'documentMeta'),
    );
    const ups = await live(
      [...pending.values()].filter(
        (p): p is Extract<Pending, { kind: 'upsert' | 'document' }> => p.kind === 'upsert' || p.kind === 'document',
      ),
    );
    if (!ups.length && !metaOnly.length) return out;
    // Independent reads (and writes, below) are sent together: with the search database in another thread, each
    // round trip waits for this thread's turn, so overlapping them shortens a batch.
    const [defs, before] = await Promise.all([
      this.schemasOf(ups.map((u) => u.item.schemaId!).filter(Boolean)),
      catalogue.items([...ups, ...metaOnly].map((u) => u.item.itemId)),
    ]);

    // 0. filter changes of documents already indexed (their passages stay)
    for (const p of metaOnly) {
      const known = before.get(p.item.itemId);
      if (!known) continue; // not indexed (yet): its text event indexes it with these filters
      try {
        await text.updateItemMeta(p.item);
      } catch (e) {
        if (e instanceof TextIndexUnavailable) throw e;
        if (!lastAttempt) throw new LegFailure(`index legs failed: ${(e as Error).message}`);
        this.o.log?.(`projection ${SEARCH_INDEX}: filters of a document could not be updated`, e);
      }
      if (!this.textReplay) await catalogue.put({ ...p.item, vectors: known.vectors });
    }
    if (!ups.length) return out;
    const tenantVectors = new Map<string, number>();

    // 1. the text leg. Without an embedding model (BUILTIN_EMBEDDINGS_MODEL=none) SEMANTIC and HYBRID items are indexed
    //    as TEXT ones: for keywords, no vector work, their outcome that of the keyword index.
    const noVectors = embedder.unavailable !== undefined;
    const work = ups
      .map((u) => {
        const declared = u.item.indexMode ?? 'NONE';
        const mode = noVectors && (declared === 'SEMANTIC' || declared === 'HYBRID') ? 'TEXT' : declared;
        if (u.kind === 'document') {
          return {
            u,
            item: { ...u.item, vectors: 0 },
            mode,
            passages: mode === 'NONE' ? [] : u.passages,
            textErr: null as string | null,
            vecErr: null as VecErr | null,
            job: null as VectorJobSpec | null,
          };
        }
        const def = defs.get(u.item.schemaId!);
        const passages = mode === 'NONE' ? [] : recordPassages(def, u.payload);
        const attrs = filterAttributes(def, u.payload, {
          typeName: u.item.typeName,
          status: u.status,
          externalId: u.item.externalId,
          schemaId: u.item.schemaId,
          indexMode: u.item.indexMode,
        });
        const metadata = {
          typeName: u.item.typeName,
          schemaId: u.item.schemaId,
          externalId: u.item.externalId,
          status: u.status,
          folderId: u.item.folderId,
          userId: u.item.userId,
          scopes: u.item.scopes,
          attributes: attrs,
        };
        const item: CatalogueItem = { ...u.item, attrs, metadata, vectors: 0 };
        return {
          u,
          item,
          mode,
          passages,
          textErr: null as string | null,
          vecErr: null as VecErr | null,
          job: null as VectorJobSpec | null,
        };
      })
      // Store-only items (indexMode NONE) that were never indexed cost nothing here: no passages, no catalogue row, no
      // outcome.
      .filter((w) => w.mode !== 'NONE' || before.has(w.item.itemId));
    const indexedOf = (w: (typeof work)[number]): IndexedItem => ({
      ...w.item,
      passages: w.mode === 'TEXT' || w.mode === 'HYBRID' ? w.passages : [],
    });
    // Elasticsearch: one bulk and one refresh for the batch.
    await this.batchThenEach(
      'text',
      work,
      text.replaceItems && ((ws) => text.replaceItems!(ws.map(indexedOf))),
      async (w) => {
        try {
          await text.replaceItem(indexedOf(w));
        } catch (e) {
          if (e instanceof TextIndexUnavailable) throw e;
          w.textErr = (e as Error).message;
        }
      },
    );

    if (!lastAttempt && work.some((w) => w.textErr))
      throw new LegFailure(`index legs failed: ${work.map((w) => w.textErr).filter(Boolean)[0]}`);
    if (this.textReplay) {
      // Rebuilding the keyword index: nothing else was lost. An item its engine refuses stays out of it (as it was).
      for (const w of work)
        if (w.textErr)
          this.o.log?.(
            `projection ${SEARCH_INDEX}: ${w.item.itemId} could not be written again to the keyword index`,
            new Error(w.textErr),
          );
      return out;
    }

    // 2. vectors, within the per-tenant capacity: queued as vector jobs, embedded and written by the vector queue
    //    (fairly across tenants, below). An item's earlier job is replaced by its new one, or cancelled when the new
    //    state needs none.
    const wantVectors = work.filter((w) => (w.mode === 'SEMANTIC' || w.mode === 'HYBRID') && w.passages.length);
    const cancelled: string[] = [];
    for (const w of work) {
      if (wantVectors.includes(w)) continue;
      this.queue.remove(w.item.itemId);
      cancelled.push(w.item.itemId);
      if ((before.get(w.item.itemId)?.vectors ?? 0) > 0) await vectors.deleteItem(w.item.itemId);
    }
    for (const w of wantVectors) {
      const t = w.item.tenantId;
      if (!tenantVectors.has(t)) tenantVectors.set(t, await catalogue.vectorCount(t));
      const old = before.get(w.item.itemId)?.vectors ?? 0;
      const next = tenantVectors.get(t)! - old + w.passages.length;
      if (next > this.o.vectorCapacity) {
        w.vecErr = {
          code: 'VECTOR_LIMIT_EXCEEDED',
          message: `Per-tenant vector capacity of ${this.o.vectorCapacity} reached; semantic indexing skipped`,
        };
        this.queue.remove(w.item.itemId);
        cancelled.push(w.item.itemId);
        if (old) await vectors.deleteItem(w.item.itemId);
        tenantVectors.set(t, tenantVectors.get(t)! - old);
        continue;
      }
      tenantVectors.set(t, next);
      // The catalogue counts the vectors the item will have (capacity); the job's commit sets what was written.
      w.item.vectors = w.passages.length;
      const u = w.u;
      w.job = {
        itemId: w.item.itemId,
        tenantId: t,
        contextId: w.item.contextId,
        position: u.position,
        kind: u.kind === 'document' ? 'document' : 'record',
        revision: u.kind === 'document' ? u.textRevision : w.item.revision,
        mode: w.mode,
        n: w.passages.length,
        textErr: w.textErr,
        meta: u.meta,
      };
    }
    // A replayed batch whose job is still queued as it was (same event, same passages) keeps that job and its progress.
    const queued = work.filter((w) => w.job !== null);
    const fresh = queued.filter((w) => {
      const q = this.queue.current(w.item.itemId);
      const j = w.job!;
      return !(
        q &&
        q.position === j.position &&
        q.kind === j.kind &&
        q.revision === j.revision &&
        q.n === j.n &&
        q.textErr === j.textErr
      );
    });
    // 3. the catalogue (with the vector jobs), then the outcome of each record and document that needs no vectors (the
    //    vector queue appends the others')
    await Promise.all([
      this.jobs.replace(
        cancelled,
        fresh.map((w) => ({ spec: w.job!, passages: w.passages })),
      ),
      catalogue.putMany(work.map((w) => w.item)),
    ]);
    for (const w of work) {
      if (w.job) continue;
      if (w.u.kind === 'document') {
        const o = documentOutcome(w.item.itemId, w.u.textRevision, w.mode, w.passages.length, w.textErr, w.vecErr);
        if (o)
          out.documents.push({ documentId: w.item.itemId, textRevision: w.u.textRevision, event: o, meta: w.u.meta });
        continue;
      }
      const o = outcomeOf(w.item.itemId, w.item.revision, w.mode, w.passages.length, w.textErr, w.vecErr);
      if (o) out.records.push({ outcome: o, meta: w.u.meta });
    }
    for (const w of fresh) this.queue.put(newJob(w.job!));
    return out;
  }

  // --- the vector queue: embeddings and vector writes, per tenant, round-robin (./vector-queue.ts)
  // --------------------

  /** Lets the vector queue be served (again). */
  private resume() {
    if (this.halted) {
      this.halted = false;
      this.halt = deferred();
    }
    this.kick();
  }

  /** Starts serving the vector queue when it has work, or wakes it. */
  private kick() {
    this.wake?.();
    if (this.worker || this.halted || !this.queue.size) return;
    this.worker = this.serve()
      .catch((e) => this.o.log?.(`projection ${SEARCH_INDEX}: the vector queue stopped on an error, restarting it`, e))
      .finally(() => {
        this.worker = undefined;
        if (!this.halted && this.queue.size) setTimeout(() => this.kick(), 50).unref?.();
      });
  }

  private async serve(): Promise<void> {
    let committing: Promise<void> = Promise.resolve();
    let inCommit = false;
    const budget = this.o.roundPassages ?? this.engines.embedder.passageBatch ?? ROUND_PASSAGES;
    while (!this.halted && this.queue.size) {
      const slices = this.queue.round(budget, Date.now());
      if (!slices.length) {
        // What is left is being committed, or waits for a retry.
        if (inCommit) await committing;
        else await this.pause(this.queue.nextRetryAt() - Date.now());
        continue;
      }
      let r: { done: VectorJob[]; failed: Map<VectorJob, string> } | null;
      try {
        r = await this.embedRound(slices);
      } catch (e) {
        this.stalled(
          slices.map((s) => s.job),
          e,
        );
        continue;
      }
      if (!r) break; // stopped
      // The previous round's commit first (one at a time, in order); this round's runs while the next round embeds.
      await committing;
      const { done, failed } = r;
      if (!done.length && !failed.size) continue;
      const mine = [...done, ...failed.keys()];
      for (const j of mine) j.committing = true;
      inCommit = true;
      committing = this.exclusive(() => this.commit(done, failed))
        .catch((e) => this.stalled(mine, e))
        .finally(() => {
          for (const j of mine) j.committing = false;
          inCommit = false;
          this.wake?.();
        });
    }
    await committing;
  }

  /** Work that failed outside the model and the vector index (SQL, the event store): served again after a pause. */
  private stalled(jobs: VectorJob[], e: unknown) {
    this.stats.errors += 1;
    this.stats.lastError = message(e);
    this.o.log?.(`projection ${SEARCH_INDEX}: vector jobs could not be completed, retrying`, e);
    for (const j of jobs) j.notBefore = Date.now() + backoff(++j.stalls);
  }

  /** Waits up to `ms` (at most 5 s) or until woken. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        if (this.wake === done) this.wake = undefined;
        resolve();
      };
      const t = setTimeout(done, Math.max(1, Math.min(5000, ms)));
      t.unref?.();
      this.wake = done;
    });
  }

  /**
   * Embeds one round's passages: one call (each job's slice on its own if that fails, so a passage the model refuses
   * fails only its own job). Returns the jobs it completed and those that failed, or null when stopped meanwhile.
   */
  private async embedRound(slices: Slice[]): Promise<{ done: VectorJob[]; failed: Map<VectorJob, string> } | null> {
    const first = [...new Set(slices.map((s) => s.job))].filter((j) => !j.passages);
    if (first.length) {
      const stored = await this.jobs.passages(first.map((j) => j.itemId));
      for (const j of first) {
        const r = stored.get(j.itemId);
        if (r && r.position === j.position && r.passages.length === j.n) j.passages = r.passages;
        // Its stored row is gone or newer: a batch cancelled or replaced it (and puts the new job in the queue itself).
        else if (this.queue.current(j.itemId) === j) this.queue.remove(j.itemId);
      }
      this.settle();
    }
    const live = slices.filter(
      (s) => s.job.passages && this.queue.current(s.job.itemId) === s.job && s.job.vectors.length === s.from,
    );
    const failed = new Map<VectorJob, string>();
    const embed = async (ss: Slice[]): Promise<boolean> => {
      const texts = ss.flatMap((s) => s.job.passages!.slice(s.from, s.to).map((p) => p.chunkText));
      if (!texts.length) return true;
      const call = this.engines.embedder.embed(texts, { purpose: 'passage' });
      call.catch(() => {}); // abandoned on stop
      const vecs = await Promise.race([call, this.halt.promise]);
      if (!vecs) return false;
      let k = 0;
      for (const s of ss) {
        const part = vecs.slice(k, k + s.to - s.from);
        k += s.to - s.from;
        if (s.job.vectors.length === s.from) s.job.vectors.push(...part);
      }
      return true;
    };
    try {
      if (!(await embed(live))) return null;
    } catch (e) {
      const work = live.filter((s) => s.to > s.from);
      if (work.length > 1) {
        for (const s of work) {
          try {
            if (!(await embed([s]))) return null;
          } catch (e1) {
            failed.set(s.job, message(e1));
          }
        }
      } else for (const s of work) failed.set(s.job, message(e));
    }
    if (this.halted) return null;
    return {
      done: [...new Set(live.map((s) => s.job))].filter((j) => !failed.has(j) && j.vectors.length === j.n),
      failed,
    };
  }

  /**
   * Writes the vectors of completed jobs (one batched write; item by item if that fails), then, for each job that is
   * over (written, or failed for good), sets its vector count, appends its outcome and removes the job. Jobs replaced
   * or cancelled while they were embedded are dropped. Runs between batches (exclusive).
   */
  private async commit(done: VectorJob[], failed: Map<VectorJob, string>): Promise<void> {
    const { vectors, catalogue } = this.engines;
    const attempts = this.o.attempts ?? 3;
    const final: Array<{ job: VectorJob; vecErr: VecErr | null; written: number }> = [];
    const retryOrFail = (j: VectorJob, msg: string) => {
      j.attempts += 1;
      if (j.attempts >= attempts)
        final.push({ job: j, vecErr: { code: 'EMBEDDING_FAILED', message: msg }, written: 0 });
      else {
        j.notBefore = Date.now() + backoff(j.attempts);
        this.o.log?.(
          `projection ${SEARCH_INDEX}: vector job of ${j.itemId} failed (attempt ${j.attempts}), retrying`,
          new Error(msg),
        );
      }
    };
    for (const [j, msg] of failed) if (this.queue.current(j.itemId) === j) retryOrFail(j, msg);
    const writes = done
      .filter((j) => this.queue.current(j.itemId) === j)
      .map((j) => ({
        j,
        err: null as string | null,
        rows: j.passages!.map((p, i) => ({
          itemId: j.itemId,
          chunkNo: p.chunkNo,
          tenantId: j.tenantId,
          contextId: j.contextId,
          vector: j.vectors[i],
          chunkText: p.chunkText,
          contextText: p.contextText,
        })),
      }));
    // LanceDB: one delete + one add, so one version and fragment per round, not per item.
    await this.batchThenEach(
      'vector',
      writes,
      vectors.replaceItems && ((xs) => vectors.replaceItems!(xs.map((x) => ({ itemId: x.j.itemId, rows: x.rows })))),
      async (x) => {
        try {
          await vectors.replaceItem(x.j.itemId, x.rows);
        } catch (e) {
          x.err = `vector index write failed: ${message(e)}`;
        }
      },
    );
    for (const x of writes) {
      if (x.err) retryOrFail(x.j, x.err);
      else final.push({ job: x.j, vecErr: null, written: x.rows.length });
    }
    if (!final.length) return;
    const records: Flushed['records'] = [];
    const documents: DocOutcome[] = [];
    for (const { job: j, vecErr, written } of final) {
      // Vectors of an earlier revision must not outlive a failed one (the catalogue then counts none).
      if (!written)
        await vectors
          .deleteItem(j.itemId)
          .catch((e) =>
            this.o.log?.(`projection ${SEARCH_INDEX}: stale vectors of ${j.itemId} could not be deleted`, e),
          );
      await catalogue.setVectors(j.itemId, written);
      if (j.kind === 'document') {
        const o = documentOutcome(j.itemId, j.revision, j.mode, j.n, j.textErr, vecErr);
        if (o) documents.push({ documentId: j.itemId, textRevision: j.revision, event: o, meta: j.meta });
      } else {
        const o = outcomeOf(j.itemId, j.revision, j.mode, j.n, j.textErr, vecErr);
        if (o) records.push({ outcome: o, meta: j.meta });
      }
    }
    await this.outcomes.append(records);
    await this.appendDocumentOutcomes(documents);
    await this.jobs.delete(final.map((f) => f.job.itemId));
    for (const f of final) if (this.queue.current(f.job.itemId) === f.job) this.queue.remove(f.job.itemId);
    this.settle();
  }

  /**
   * Appends each document outcome at the stream revision it was checked
   * against, only while the document is PENDING_INDEX at that text revision
   * (a newer text, a settled outcome — replays, rebuilds — or a delete leave
   * it out). A concurrent write re-checks.
   */
  private async appendDocumentOutcomes(list: DocOutcome[]): Promise<void> {
    const now = (this.o.now ?? (() => new Date()))();
    const deps = { store: this.store, barrier: NO_WAIT, ids: { newId: randomUUID } };
    for (const o of list) {
      const outcome = indexingOutcomeOf(o.event);
      if (!outcome) continue;
      // The processing decider's SettleIndexing: only while the document is PENDING_INDEX at that text revision.
      await processDocument(deps, {
        documentId: o.documentId,
        command: () => ({ type: 'SettleIndexing', textRevision: o.textRevision, outcome }),
        metadata: (s) =>
          systemMetadata({
            tenantId: s.exists ? s.tenantId : null,
            contextId: s.exists ? s.contextId : null,
            accountId: o.meta.accountId,
            requestId: o.meta.requestId,
            occurredAt: now,
          }),
      });
    }
  }
}

/** A document outcome event (documentOutcome) as the processing decider's indexing outcome. */
function indexingOutcomeOf(e: DomainEvent): IndexingOutcome | null {
  if (e.type === 'DocumentIndexed') return { status: 'INDEXED' };
  if (e.type === 'DocumentIndexSkipped') return { status: 'SKIPPED' };
  if (e.type === 'DocumentFailed') return { status: 'FAILED', code: e.data.code, message: e.data.message };
  return null;
}

function deferred(): { promise: Promise<undefined>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<undefined>((r) => (resolve = () => r(undefined)));
  return { promise, resolve };
}

/**
 * The index outcome of one record, as RecordsIndexed carries it (null for store-only records, which have no index
 * status).
 */
export function outcomeOf(
  recordId: string,
  forRevision: number,
  mode: string,
  passages: number,
  textErr: string | null,
  vecErr: VecErr | null,
): RecordOutcome | null {
  if (mode === 'NONE') return null;
  if (!passages) return { recordId, forRevision, status: 'SKIPPED', code: null, message: null };
  const failed = (code: NonNullable<RecordOutcome['code']>, message: string): RecordOutcome => ({
    recordId,
    forRevision,
    status: 'FAILED',
    code,
    message,
  });
  const usesText = mode === 'TEXT' || mode === 'HYBRID';
  const usesVectors = mode === 'SEMANTIC' || mode === 'HYBRID';
  const textBad = usesText && !!textErr;
  const vecBad = usesVectors && !!vecErr;
  if ((textBad || !usesText) && (vecBad || !usesVectors)) {
    if (vecErr?.code === 'VECTOR_LIMIT_EXCEEDED' && !usesText)
      return failed('VECTOR_LIMIT_EXCEEDED', `${vecErr.message}; not findable by search`);
    return failed('INDEXING_FAILED', textErr ?? vecErr?.message ?? 'indexing failed');
  }
  if (textBad) return failed('TEXT_INDEX_FAILED', textErr!);
  if (vecBad) return failed(vecErr!.code, vecErr!.message);
  return { recordId, forRevision, status: 'INDEXED', code: null, message: null };
}

/**
 * A document's outcome: INDEXED -> DocumentIndexed, no passages -> DocumentIndexSkipped SKIPPED, failures ->
 * DocumentFailed with the same codes as records.
 */
export function documentOutcome(
  documentId: string,
  textRevision: number,
  mode: string,
  passages: number,
  textErr: string | null,
  vecErr: VecErr | null,
): DomainEvent | null {
  const o = outcomeOf(documentId, 0, mode, passages, textErr, vecErr);
  if (!o) return null;
  if (o.status === 'FAILED')
    return { type: 'DocumentFailed', data: { documentId, code: o.code!, message: o.message! } };
  return o.status === 'INDEXED'
    ? { type: 'DocumentIndexed', data: { documentId, status: 'INDEXED', textRevision } }
    : { type: 'DocumentIndexSkipped', data: { documentId, status: 'SKIPPED', textRevision } };
}
