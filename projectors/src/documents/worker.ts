import { randomUUID } from 'node:crypto';
import { type DomainEvent, EVENT_SCHEMA_VERSION, type EventData, type EventMetadata, parseEventData } from '@svc/contracts';
import { blobPrefix, type BlobStore, documentBlobKeys, type DocumentState, type EventStore, isTornDown, type LiveDocument, type Sql, type StoredEvent, streams, WrongExpectedRevisionError } from '@svc/domain';
import { Reactor, type ReactorStats } from '../runtime/reactor';
import { loadDocument } from '../search/documents';
import { canExtract, extractText, ExtractionAbortedError, MAX_EXTRACT_BYTES, MAX_EXTRACTION_ATTEMPTS } from './extract';

/** Documents processed at once within a batch. */
const CONCURRENCY = 8;
/** The events the worker reacts to, one document's each. */
const reactsTo = (e: StoredEvent) => e.type === 'DocumentFileUploaded' || e.type === 'DocumentTextReady' || e.type === 'DocumentIndexed' || e.type === 'DocumentIndexSkipped';
const isTeardown = (e: StoredEvent) => e.type === 'ContextDeleted' || e.type === 'TenantTornDown';
// ContextDeleted / TenantTornDown: the context's (`<tenant>/<context>/`) or the tenant's (`<tenant>/`) blobs are deleted after each batch's reactions.

export interface DocumentWorkerStats extends ReactorStats {
  reactions: number;
}

/**
 * The document processing reactor: a catch-up subscription on the log with its
 * own checkpoint, off the request path. It turns an upload into text
 * (UPLOADED -> EXTRACTING -> PENDING_INDEX, or FAILED), settles store-only
 * documents (indexMode NONE -> STORED) and discards the text of storeText:
 * false documents once the search projector (projectors/src/search/indexer.ts)
 * has settled their outcome (DocumentIndexed / DocumentIndexSkipped); every
 * other index outcome (INDEXED, SKIPPED, FAILED) is the search projector's. Every transition is appended to the document's
 * stream at the revision it read; a reaction whose premise no longer holds
 * (deleted, re-uploaded, newer text) does nothing, so replays are harmless.
 * The document title is never logged.
 */
export class DocumentWorker extends Reactor<DocumentWorkerStats> {
  constructor(
    private readonly o: { store: EventStore; sql: Sql; blobs: BlobStore; log?: (msg: string) => void; name?: string; now?: () => Date },
  ) {
    super({ name: o.name ?? 'document-worker', position: 0, reactions: 0, errors: 0, lastError: null }, { store: o.store, sql: o.sql, log: o.log, batchSize: 200, label: 'document worker' });
  }

  /**
   * Reactions of one batch run per document in log order, up to CONCURRENCY
   * documents at a time; the checkpoint moves past the batch once all are done
   * (a failure retries the whole batch, which the reactions tolerate).
   */
  protected async handle(events: StoredEvent[]): Promise<number> {
    const byDocument = new Map<string, StoredEvent[]>();
    for (const e of events) {
      if (!reactsTo(e)) continue;
      const id = e.data.documentId;
      const list = byDocument.get(id);
      if (list) list.push(e);
      else byDocument.set(id, [e]);
    }
    const queue = [...byDocument.values()];
    const last = events[events.length - 1].position;
    if (!queue.length && !events.some(isTeardown)) return this.passed(last);
    const run = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        for (const e of next) {
          if (this.abort.signal.aborted) return;
          await this.react(e);
          this.stats.reactions += 1;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, queue.length) }, run));
    if (this.abort.signal.aborted) return this.position;
    // Teardown: after the batch's reactions (whatever they wrote under the prefix goes too). Idempotent, so a replay is harmless.
    for (const e of events) {
      if (!isTeardown(e)) continue;
      const n = await this.o.blobs.deletePrefix(blobPrefix(e.data.tenantId, e.type === 'ContextDeleted' ? e.data.contextId : undefined));
      this.stats.reactions += 1;
      if (n) this.o.log?.(`document worker: ${e.type}: deleted ${n} blob(s)`);
    }
    await this.checkpoint(this.o.sql, last);
    this.moved(last);
    return last;
  }

  private async react(e: StoredEvent): Promise<void> {
    switch (e.type) {
      case 'DocumentFileUploaded':
        return this.extract(e.data, e);
      case 'DocumentTextReady': {
        // Store-only documents are never indexed: STORED here, once. Everything else is settled by the search projector.
        const { documentId, textRevision } = e.data;
        await this.appendIf(documentId, e, (s) =>
          s.exists && s.indexMode === 'NONE' && s.status === 'PENDING_INDEX' && s.textRevision === textRevision
            ? [{ type: 'DocumentIndexSkipped', data: { documentId, status: 'STORED', textRevision } }]
            : null,
        );
        return;
      }
      case 'DocumentIndexed':
      case 'DocumentIndexSkipped':
        return this.discardText(e.data, e);
    }
  }

  private metadata(cause: StoredEvent, state: LiveDocument): EventMetadata {
    return {
      tenantId: state.tenantId, contextId: state.contextId, accountId: cause.metadata.accountId, actorKeyId: null, userId: null,
      requestId: cause.metadata.requestId, occurredAt: (this.o.now?.() ?? new Date()).toISOString(), schemaVersion: EVENT_SCHEMA_VERSION,
    };
  }

  /** Loads the document, decides, appends at the revision read; re-decides after a concurrent write. True when appended. */
  private async appendIf(documentId: string, cause: StoredEvent, decide: (s: DocumentState) => Promise<DomainEvent[] | null> | DomainEvent[] | null): Promise<boolean> {
    const streamId = streams.document(documentId);
    for (let attempt = 0; attempt < 10; attempt++) {
      const { state, revision } = await loadDocument(this.o.store, documentId);
      if (!state.exists) return false;
      const events = await decide(state);
      if (!events?.length) return false;
      try {
        await this.o.store.appendMulti([{ streamId, events: events.map((e) => ({ id: randomUUID(), type: e.type, data: parseEventData(e.type, e.data) as Record<string, unknown>, metadata: this.metadata(cause, state) })), expectedRevision: revision }]);
        return true;
      } catch (err) {
        if (err instanceof WrongExpectedRevisionError) continue;
        throw err;
      }
    }
    return false;
  }

  private async extract(up: EventData<'DocumentFileUploaded'>, cause: StoredEvent): Promise<void> {
    // An upload recorded after its context or tenant was torn down is not extracted (nothing is written under a deleted prefix).
    if (await isTornDown(this.o.store, cause.metadata.tenantId, cause.metadata.contextId)) return;
    const id = up.documentId;
    const mine = (s: DocumentState): s is LiveDocument => s.exists && s.uploadId === up.uploadId && s.fileRef === up.fileRef;
    const started = { type: 'DocumentExtractionStarted', data: { documentId: id, uploadId: up.uploadId } } as const;
    // UPLOADED -> EXTRACTING. A document found EXTRACTING was cut short (the process stopped or died mid-extraction):
    // each resume is recorded with another DocumentExtractionStarted, and after MAX_EXTRACTION_ATTEMPTS it is FAILED
    // instead of extracted again, so a file that somehow still takes the process down cannot crash-loop it.
    await this.appendIf(id, cause, async (s) => {
      if (!mine(s)) return null;
      if (s.status === 'UPLOADED') return [started];
      if (s.status !== 'EXTRACTING') return null;
      const interrupted = await this.extractionAttempts(id, up.uploadId);
      if (interrupted >= MAX_EXTRACTION_ATTEMPTS)
        return [{ type: 'DocumentFailed', data: { documentId: id, code: 'INDEXING_FAILED', message: `Text extraction was interrupted ${interrupted} times (the service stopped during it); not retried` } }];
      return [started];
    });
    const { state } = await loadDocument(this.o.store, id);
    if (!mine(state) || state.status !== 'EXTRACTING') return;
    const settle = (events: DomainEvent[]) => this.appendIf(id, cause, (s) => (mine(s) && s.status === 'EXTRACTING' ? events : null));
    // No text to be had: a store-only document is simply STORED; otherwise it failed.
    const noText = (code: string, message: string) =>
      settle(
        state.indexMode === 'NONE'
          ? [{ type: 'DocumentIndexSkipped', data: { documentId: id, status: 'STORED', textRevision: state.textRevision } }]
          : [{ type: 'DocumentFailed', data: { documentId: id, code, message } }],
      );
    if (!canExtract(up.fileType)) return void (await noText('INDEXING_FAILED', `No text extractor for ${up.fileType}`));
    if (up.fileSize > MAX_EXTRACT_BYTES) return void (await noText('INDEXING_FAILED', `The file is larger than the ${MAX_EXTRACT_BYTES / 1024 / 1024} MiB text extraction limit`));
    const data = await this.o.blobs.get(up.fileRef);
    if (!data) return void (await settle([{ type: 'DocumentFailed', data: { documentId: id, code: 'SOURCE_UNAVAILABLE', message: 'The uploaded file could not be loaded' } }]));
    let text: string;
    try {
      // Off the main thread, within the extraction limits (extract.ts); stopping the worker stops it.
      const out = await extractText(up.fileType, data, { signal: this.abort.signal });
      // Over a limit: terminal at once, like an unreadable file (a store-only document is STORED without text).
      if (out.kind === 'limit') return void (await noText('INDEXING_FAILED', out.message));
      if (out.kind !== 'text') return void (await noText('INDEXING_FAILED', out.reason));
      text = out.text;
    } catch (err) {
      // Stopped mid-way (shutdown): no outcome; the next start resumes it from EXTRACTING.
      if (err instanceof ExtractionAbortedError || this.abort.signal.aborted) return;
      const why = err instanceof Error ? err.message.slice(0, 200) : 'unknown error';
      await settle([{ type: 'DocumentFailed', data: { documentId: id, code: 'INDEXING_FAILED', message: `Text could not be extracted from the ${up.fileType} file: ${why}` } }]);
      return;
    }
    const revision = state.textRevision + 1;
    const textRef = documentBlobKeys.text(state.tenantId!, state.contextId!, id, revision, randomUUID().slice(0, 8));
    const { bytes } = await this.o.blobs.put(textRef, text, { contentType: 'text/plain; charset=utf-8' });
    const previous = state.textRetained ? state.textRef : null;
    const done = await settle([{ type: 'DocumentTextReady', data: { documentId: id, textRef, textBytes: bytes, indexMode: state.indexMode, textRevision: revision } }]);
    if (!done) await this.o.blobs.delete(textRef).catch(() => {});
    else if (previous) await this.o.blobs.delete(previous).catch(() => {});
  }

  /** DocumentExtractionStarted events of this upload on the document's stream (attempts begun). */
  private async extractionAttempts(documentId: string, uploadId: string): Promise<number> {
    const events = await this.o.store.readStream(streams.document(documentId));
    return events.filter((e) => e.type === 'DocumentExtractionStarted' && e.data.uploadId === uploadId).length;
  }

  /** storeText: false — once indexing settled, the text goes (event first, then the blob). */
  private async discardText(d: { documentId: string; textRevision: number }, cause: StoredEvent): Promise<void> {
    let ref: string | null = null;
    const done = await this.appendIf(d.documentId, cause, (s) => {
      if (!s.exists || s.storeText || !s.textRetained || s.textRevision !== d.textRevision || !s.textRef) return null;
      ref = s.textRef;
      return [{ type: 'DocumentTextDiscarded', data: { documentId: d.documentId, textRevision: d.textRevision } }];
    });
    if (done && ref) await this.o.blobs.delete(ref).catch(() => {});
  }
}
