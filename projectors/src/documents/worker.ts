import { randomUUID } from 'node:crypto';
import type { EventData, EventMetadata } from '@svc/contracts';
import {
  blobPrefix,
  type BlobStore,
  documentBlobKeys,
  type DocumentProcessingCommand,
  type DocumentState,
  type EventStore,
  type ExtractionOutcome,
  isTornDown,
  type LiveDocument,
  NO_WAIT,
  processDocument,
  type Sql,
  type StoredEvent,
  streams,
  systemMetadata,
  type WriteDeps,
} from '@svc/domain';
import { Reactor, type ReactorStats } from '../runtime/reactor';
import { loadDocument } from '@svc/search';
import { canExtract, extractText, ExtractionAbortedError, MAX_EXTRACT_BYTES, MAX_EXTRACTION_ATTEMPTS } from './extract';

/** Documents processed at once within a batch. */
const CONCURRENCY = 8;
/** The events the worker reacts to, one document's each. */
const reactsTo = (e: StoredEvent) =>
  e.type === 'DocumentFileUploaded' ||
  e.type === 'DocumentTextReady' ||
  e.type === 'DocumentIndexed' ||
  e.type === 'DocumentIndexSkipped';
const isTeardown = (e: StoredEvent) => e.type === 'ContextDeleted' || e.type === 'TenantTornDown';
// ContextDeleted / TenantTornDown: the context's (`<tenant>/<context>/`) or the tenant's (`<tenant>/`) blobs are
// deleted after each batch's reactions.

export interface DocumentWorkerStats extends ReactorStats {
  reactions: number;
}

/**
 * The document processing reactor: a catch-up subscription on the log with its
 * own checkpoint, off the request path. It turns an upload into text
 * (UPLOADED -> EXTRACTING -> PENDING_INDEX, or FAILED), settles store-only
 * documents (indexMode NONE -> STORED) and discards the text of storeText:
 * false documents once the search projector (search/src/indexer/indexer.ts)
 * has settled their outcome (DocumentIndexed / DocumentIndexSkipped); every
 * other index outcome (INDEXED, SKIPPED, FAILED) is the search projector's. Every transition is a command of the
 * document processing decider (domain/src/documents/processing.ts) run by the command handler; a reaction whose
 * premise no longer holds (deleted, re-uploaded, newer text) decides nothing, so replays are harmless.
 * The document title is never logged.
 */
export class DocumentWorker extends Reactor<DocumentWorkerStats> {
  /** The command handler's dependencies: no barrier to wait on (no one is answered). */
  private readonly write: WriteDeps;

  constructor(
    private readonly o: {
      store: EventStore;
      sql: Sql;
      blobs: BlobStore;
      log?: (msg: string) => void;
      name?: string;
      now?: () => Date;
    },
  ) {
    super(
      { name: o.name ?? 'document-worker', position: 0, reactions: 0, errors: 0, lastError: null },
      { store: o.store, sql: o.sql, log: o.log, batchSize: 200, label: 'document worker' },
    );
    this.write = { store: o.store, barrier: NO_WAIT, ids: { newId: randomUUID }, log: o.log };
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
    // Teardown: after the batch's reactions (whatever they wrote under the prefix goes too). Idempotent, so a replay is
    // harmless.
    for (const e of events) {
      if (!isTeardown(e)) continue;
      const n = await this.o.blobs.deletePrefix(
        blobPrefix(e.data.tenantId, e.type === 'ContextDeleted' ? e.data.contextId : undefined),
      );
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
        // Store-only documents are never indexed: STORED here, once. Everything else is settled by the search
        // projector.
        await this.process(e.data.documentId, e, { type: 'SettleStoreOnly', textRevision: e.data.textRevision });
        return;
      }
      case 'DocumentIndexed':
      case 'DocumentIndexSkipped':
        return this.discardText(e.data, e);
    }
  }

  /** The metadata of a reaction's write: the document's tenant and context, the causing write's account and request. */
  private metadata(cause: StoredEvent) {
    return (s: DocumentState): EventMetadata =>
      systemMetadata({
        tenantId: s.exists ? s.tenantId : null,
        contextId: s.exists ? s.contextId : null,
        accountId: cause.metadata.accountId,
        requestId: cause.metadata.requestId,
        occurredAt: this.o.now?.() ?? new Date(),
      });
  }

  /** One processing command through the command handler; true when it appended (its premise held). */
  private async process(
    documentId: string,
    cause: StoredEvent,
    command: DocumentProcessingCommand | ((s: DocumentState) => Promise<DocumentProcessingCommand>),
  ): Promise<boolean> {
    const r = await processDocument(this.write, {
      documentId,
      command: typeof command === 'function' ? command : () => command,
      metadata: this.metadata(cause),
    });
    return r.events.length > 0;
  }

  private async extract(up: EventData<'DocumentFileUploaded'>, cause: StoredEvent): Promise<void> {
    // An upload recorded after its context or tenant was torn down is not extracted (nothing is written under a deleted
    // prefix).
    if (await isTornDown(this.o.store, cause.metadata.tenantId, cause.metadata.contextId)) return;
    const id = up.documentId;
    const mine = (s: DocumentState): s is LiveDocument =>
      s.exists && s.uploadId === up.uploadId && s.fileRef === up.fileRef;
    const upload = { uploadId: up.uploadId, fileRef: up.fileRef };
    // UPLOADED -> EXTRACTING, or FAILED after MAX_EXTRACTION_ATTEMPTS interrupted starts (the decider's rule).
    await this.process(id, cause, async (s) => ({
      type: 'StartExtraction',
      ...upload,
      maxAttempts: MAX_EXTRACTION_ATTEMPTS,
      interrupted: mine(s) && s.status === 'EXTRACTING' ? await this.extractionAttempts(id, up.uploadId) : 0,
    }));
    const { state } = await loadDocument(this.o.store, id);
    if (!mine(state) || state.status !== 'EXTRACTING') return;
    const settle = (outcome: ExtractionOutcome) =>
      this.process(id, cause, { type: 'SettleExtraction', ...upload, outcome });
    // No text to be had: a store-only document is simply STORED; otherwise it failed (the decider's rule).
    const noText = (code: string, message: string) => settle({ kind: 'no-text', code, message });
    if (!canExtract(up.fileType)) return void (await noText('INDEXING_FAILED', `No text extractor for ${up.fileType}`));
    if (up.fileSize > MAX_EXTRACT_BYTES)
      return void (await noText(
        'INDEXING_FAILED',
        `The file is larger than the ${MAX_EXTRACT_BYTES / 1024 / 1024} MiB text extraction limit`,
      ));
    const data = await this.o.blobs.get(up.fileRef);
    if (!data)
      return void (await settle({
        kind: 'failed',
        code: 'SOURCE_UNAVAILABLE',
        message: 'The uploaded file could not be loaded',
      }));
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
      await settle({
        kind: 'failed',
        code: 'INDEXING_FAILED',
        message: `Text could not be extracted from the ${up.fileType} file: ${why}`,
      });
      return;
    }
    const revision = state.textRevision + 1;
    const textRef = documentBlobKeys.text(state.tenantId!, state.contextId!, id, revision, randomUUID().slice(0, 8));
    const { bytes } = await this.o.blobs.put(textRef, text, { contentType: 'text/plain; charset=utf-8' });
    const previous = state.textRetained ? state.textRef : null;
    const done = await settle({ kind: 'text', textRef, textBytes: bytes, textRevision: revision });
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
    const r = await processDocument(this.write, {
      documentId: d.documentId,
      command: () => ({ type: 'DiscardText', textRevision: d.textRevision }),
      metadata: this.metadata(cause),
    });
    // The text's reference stays in the state after DocumentTextDiscarded (only textRetained changes).
    const ref = r.events.length && r.state.exists ? r.state.textRef : null;
    if (ref) await this.o.blobs.delete(ref).catch(() => {});
  }
}
