import type { EventMetadata } from '@svc/contracts';
import { assertNever, type Decider } from '../shared/decider';
import { documentAggregate, type DocumentEvent, type DocumentState, type LiveDocument } from './document';

/**
 * Document processing: what happens to a document after its writer answered (the upload recorded, text
 * extracted, the store-only settled, retained text discarded). Its commands come from the upload routes and
 * poller and from the document worker; each states its premise, and a command whose premise no longer holds
 * (deleted, re-uploaded, newer text, already settled) decides nothing, so a replayed reaction is harmless.
 * The index outcomes (INDEXED, SKIPPED, FAILED) come from the search projector (SettleIndexing).
 */
export type DocumentProcessingCommand =
  /** The uploaded object was received and stored under `fileRef` (the presigned PUT, or the object store's poller). */
  | { type: 'RecordUpload'; uploadId: string; fileRef: string; fileSize: number }
  /**
   * UPLOADED -> EXTRACTING. A document found EXTRACTING was cut short (the process stopped mid-extraction): it is
   * started again, unless `interrupted` (DocumentExtractionStarted events of this upload) reached `maxAttempts`,
   * when it FAILS instead, so a file that takes the process down cannot crash-loop it.
   */
  | { type: 'StartExtraction'; uploadId: string; fileRef: string; interrupted: number; maxAttempts: number }
  /** The extraction's outcome: text stored under `textRef` as `textRevision`, no text to be had, or a failure. */
  | { type: 'SettleExtraction'; uploadId: string; fileRef: string; outcome: ExtractionOutcome }
  /** A store-only document (indexMode NONE) whose text is ready is STORED: it is never indexed. */
  | { type: 'SettleStoreOnly'; textRevision: number }
  /** storeText: false — once indexing settled `textRevision`, its retained text goes. */
  | { type: 'DiscardText'; textRevision: number }
  /** The search projector's outcome for `textRevision`: INDEXED, SKIPPED (no passages) or FAILED with a code. */
  | { type: 'SettleIndexing'; textRevision: number; outcome: IndexingOutcome };

export type IndexingOutcome = { status: 'INDEXED' | 'SKIPPED' } | { status: 'FAILED'; code: string; message: string };

export type ExtractionOutcome =
  | { kind: 'text'; textRef: string; textBytes: number; textRevision: number }
  /** No text can be had (no extractor, too large, unreadable): STORED for a store-only document, else FAILED. */
  | { kind: 'no-text'; code: string; message: string }
  /** FAILED whatever the index mode (the file could not be loaded, the extractor threw). */
  | { kind: 'failed'; code: string; message: string };

/** The upload this command is about is still the document's current one. */
const current = (s: DocumentState, c: { uploadId: string; fileRef: string }): s is LiveDocument =>
  s.exists && s.uploadId === c.uploadId && s.fileRef === c.fileRef;

function decide(cmd: DocumentProcessingCommand, s: DocumentState): DocumentEvent[] {
  if (!s.exists) return [];
  const documentId = s.id;
  switch (cmd.type) {
    case 'RecordUpload':
      if (s.status !== 'PENDING_UPLOAD' || s.uploadId !== cmd.uploadId) return [];
      return [
        {
          type: 'DocumentFileUploaded',
          data: {
            documentId,
            uploadId: cmd.uploadId,
            fileRef: cmd.fileRef,
            fileSize: cmd.fileSize,
            fileType: s.fileType!,
          },
        },
      ];
    case 'StartExtraction': {
      if (!current(s, cmd)) return [];
      const started: DocumentEvent = {
        type: 'DocumentExtractionStarted',
        data: { documentId, uploadId: cmd.uploadId },
      };
      if (s.status === 'UPLOADED') return [started];
      if (s.status !== 'EXTRACTING') return [];
      if (cmd.interrupted >= cmd.maxAttempts)
        return [
          {
            type: 'DocumentFailed',
            data: {
              documentId,
              code: 'INDEXING_FAILED',
              message:
                `Text extraction was interrupted ${cmd.interrupted} times (the service stopped during it); ` +
                `not retried`,
            },
          },
        ];
      return [started];
    }
    case 'SettleExtraction': {
      if (!current(s, cmd) || s.status !== 'EXTRACTING') return [];
      const o = cmd.outcome;
      if (o.kind === 'text')
        return [
          {
            type: 'DocumentTextReady',
            data: {
              documentId,
              textRef: o.textRef,
              textBytes: o.textBytes,
              indexMode: s.indexMode,
              textRevision: o.textRevision,
            },
          },
        ];
      if (o.kind === 'no-text' && s.indexMode === 'NONE')
        return [{ type: 'DocumentIndexSkipped', data: { documentId, status: 'STORED', textRevision: s.textRevision } }];
      return [{ type: 'DocumentFailed', data: { documentId, code: o.code, message: o.message } }];
    }
    case 'SettleStoreOnly':
      if (s.indexMode !== 'NONE' || s.status !== 'PENDING_INDEX' || s.textRevision !== cmd.textRevision) return [];
      return [{ type: 'DocumentIndexSkipped', data: { documentId, status: 'STORED', textRevision: cmd.textRevision } }];
    case 'DiscardText':
      if (s.storeText || !s.textRetained || s.textRevision !== cmd.textRevision || !s.textRef) return [];
      return [{ type: 'DocumentTextDiscarded', data: { documentId, textRevision: cmd.textRevision } }];
    case 'SettleIndexing': {
      // Only a document still waiting for this text's outcome: a newer text, a settled outcome (replays, rebuilds) or a
      // delete leave it out.
      if (s.status !== 'PENDING_INDEX' || s.textRevision !== cmd.textRevision) return [];
      const o = cmd.outcome;
      if (o.status === 'FAILED')
        return [{ type: 'DocumentFailed', data: { documentId, code: o.code, message: o.message } }];
      return [
        o.status === 'INDEXED'
          ? { type: 'DocumentIndexed', data: { documentId, status: 'INDEXED', textRevision: cmd.textRevision } }
          : { type: 'DocumentIndexSkipped', data: { documentId, status: 'SKIPPED', textRevision: cmd.textRevision } },
      ];
    }
    default:
      return assertNever(cmd);
  }
}

/** The document processing decider: the document's own state (its evolve), the processing commands. */
export const documentProcessingDecider: Decider<DocumentState, DocumentProcessingCommand, DocumentEvent> = {
  initialState: documentAggregate.initialState,
  evolve: documentAggregate.evolve as (s: DocumentState, e: DocumentEvent, m?: EventMetadata) => DocumentState,
  decide,
};
