import { describe, it } from 'vitest';
import { given } from '../shared/given-when-then.test-support';
import type { DocumentEvent } from './document';
import { documentProcessingDecider as decider } from './processing';

const created = (over: { source?: 'text' | 'file'; indexMode?: string; storeText?: boolean } = {}): DocumentEvent => ({
  type: 'DocumentCreated',
  data: {
    documentId: 'd1',
    title: 'T',
    source: over.source ?? 'file',
    indexMode: over.indexMode ?? 'TEXT',
    storeText: over.storeText ?? false,
    folderId: 'root',
    payload: {},
    schemaId: null,
    schemaVersion: null,
    typeName: null,
    userId: null,
    scopes: [],
    externalId: null,
    fileName: 'a.pdf',
    fileType: 'application/pdf',
    uploadId: 'u1',
  },
});
const uploaded: DocumentEvent = {
  type: 'DocumentFileUploaded',
  data: { documentId: 'd1', uploadId: 'u1', fileRef: 'f1', fileSize: 10, fileType: 'application/pdf' },
};
const started: DocumentEvent = { type: 'DocumentExtractionStarted', data: { documentId: 'd1', uploadId: 'u1' } };
const textReady = (textRevision = 1): DocumentEvent => ({
  type: 'DocumentTextReady',
  data: { documentId: 'd1', textRef: `t${textRevision}`, textBytes: 3, indexMode: 'TEXT', textRevision },
});
const deleted: DocumentEvent = { type: 'DocumentDeleted', data: { documentId: 'd1', externalId: null } };
const reupload: DocumentEvent = {
  type: 'DocumentUploadRequested',
  data: { documentId: 'd1', uploadId: 'u2', fileName: 'b.pdf', fileType: 'application/pdf' },
};
const upload = { uploadId: 'u1', fileRef: 'f1' };

describe('document processing decider: RecordUpload', () => {
  it('the pending upload is recorded with the file type the grant was made for', () => {
    given(decider, [created()])
      .when({ type: 'RecordUpload', uploadId: 'u1', fileRef: 'f1', fileSize: 10 })
      .then([uploaded]);
  });
  it(
    'an upload already recorded, replaced by a newer grant, or of a deleted document records nothing (the ' +
      'URL is used up)',
    () => {
      given(decider, [created(), uploaded])
        .when({ type: 'RecordUpload', uploadId: 'u1', fileRef: 'f2', fileSize: 10 })
        .then([]);
      given(decider, [created(), reupload])
        .when({ type: 'RecordUpload', uploadId: 'u1', fileRef: 'f1', fileSize: 10 })
        .then([]);
      given(decider, [created(), deleted])
        .when({ type: 'RecordUpload', uploadId: 'u1', fileRef: 'f1', fileSize: 10 })
        .then([]);
      given(decider, []).when({ type: 'RecordUpload', uploadId: 'u1', fileRef: 'f1', fileSize: 10 }).then([]);
    },
  );
});

describe('document processing decider: StartExtraction', () => {
  it('UPLOADED -> EXTRACTING', () => {
    given(decider, [created(), uploaded])
      .when({ type: 'StartExtraction', ...upload, interrupted: 0, maxAttempts: 3 })
      .then([started]);
  });
  it('an interrupted extraction is started again until the attempts are used, then FAILED (no crash loop)', () => {
    given(decider, [created(), uploaded, started])
      .when({ type: 'StartExtraction', ...upload, interrupted: 2, maxAttempts: 3 })
      .then([started]);
    given(decider, [created(), uploaded, started])
      .when({ type: 'StartExtraction', ...upload, interrupted: 3, maxAttempts: 3 })
      .then([
        {
          type: 'DocumentFailed',
          data: {
            documentId: 'd1',
            code: 'INDEXING_FAILED',
            message: 'Text extraction was interrupted 3 times (the service stopped during it); not retried',
          },
        },
      ]);
  });
  it('another upload, a settled extraction or a deleted document starts nothing', () => {
    given(decider, [created(), uploaded])
      .when({ type: 'StartExtraction', uploadId: 'u1', fileRef: 'other', interrupted: 0, maxAttempts: 3 })
      .then([]);
    given(decider, [created(), uploaded, started, textReady()])
      .when({ type: 'StartExtraction', ...upload, interrupted: 0, maxAttempts: 3 })
      .then([]);
    given(decider, [created(), uploaded, deleted])
      .when({ type: 'StartExtraction', ...upload, interrupted: 0, maxAttempts: 3 })
      .then([]);
  });
});

describe('document processing decider: SettleExtraction', () => {
  const extracting = [created(), uploaded, started];
  it('text: TextReady at the revision the text was stored under, in the document index mode', () => {
    given(decider, extracting)
      .when({
        type: 'SettleExtraction',
        ...upload,
        outcome: { kind: 'text', textRef: 't1', textBytes: 3, textRevision: 1 },
      })
      .then([textReady(1)]);
  });
  it('no text: a store-only document is STORED, any other FAILED', () => {
    const noText = {
      type: 'SettleExtraction',
      ...upload,
      outcome: { kind: 'no-text', code: 'INDEXING_FAILED', message: 'No text extractor' },
    } as const;
    given(decider, [created({ indexMode: 'NONE' }), uploaded, started])
      .when(noText)
      .then([{ type: 'DocumentIndexSkipped', data: { documentId: 'd1', status: 'STORED', textRevision: 0 } }]);
    given(decider, extracting)
      .when(noText)
      .then([
        { type: 'DocumentFailed', data: { documentId: 'd1', code: 'INDEXING_FAILED', message: 'No text extractor' } },
      ]);
  });
  it('a failure is FAILED whatever the index mode', () => {
    given(decider, [created({ indexMode: 'NONE' }), uploaded, started])
      .when({
        type: 'SettleExtraction',
        ...upload,
        outcome: { kind: 'failed', code: 'SOURCE_UNAVAILABLE', message: 'gone' },
      })
      .then([{ type: 'DocumentFailed', data: { documentId: 'd1', code: 'SOURCE_UNAVAILABLE', message: 'gone' } }]);
  });
  it('settles only an extraction in progress of the current upload', () => {
    const text = { kind: 'text', textRef: 't1', textBytes: 3, textRevision: 1 } as const;
    given(decider, [created(), uploaded])
      .when({ type: 'SettleExtraction', ...upload, outcome: text })
      .then([]);
    given(decider, [...extracting, textReady()])
      .when({ type: 'SettleExtraction', ...upload, outcome: text })
      .then([]);
    given(decider, [...extracting, reupload])
      .when({ type: 'SettleExtraction', ...upload, outcome: text })
      .then([]);
  });
});

describe('document processing decider: SettleStoreOnly and DiscardText', () => {
  it('a store-only document with its text ready is STORED, once, for the current text only', () => {
    const base = [created({ source: 'text', indexMode: 'NONE' }), textReady(1)];
    given(decider, base)
      .when({ type: 'SettleStoreOnly', textRevision: 1 })
      .then([{ type: 'DocumentIndexSkipped', data: { documentId: 'd1', status: 'STORED', textRevision: 1 } }]);
    given(decider, [
      ...base,
      { type: 'DocumentIndexSkipped', data: { documentId: 'd1', status: 'STORED', textRevision: 1 } },
    ])
      .when({ type: 'SettleStoreOnly', textRevision: 1 })
      .then([]);
    given(decider, [...base, textReady(2)])
      .when({ type: 'SettleStoreOnly', textRevision: 1 })
      .then([]);
    given(decider, [created({ source: 'text' }), textReady(1)])
      .when({ type: 'SettleStoreOnly', textRevision: 1 })
      .then([]);
  });
  it('storeText: false drops the retained text of the settled revision, once; storeText: true keeps it', () => {
    const indexed: DocumentEvent = {
      type: 'DocumentIndexed',
      data: { documentId: 'd1', status: 'INDEXED', textRevision: 1 },
    };
    const base = [created(), uploaded, started, textReady(1), indexed];
    const discarded: DocumentEvent = { type: 'DocumentTextDiscarded', data: { documentId: 'd1', textRevision: 1 } };
    given(decider, base).when({ type: 'DiscardText', textRevision: 1 }).then([discarded]);
    given(decider, [...base, discarded])
      .when({ type: 'DiscardText', textRevision: 1 })
      .then([]);
    given(decider, base).when({ type: 'DiscardText', textRevision: 2 }).then([]);
    given(decider, [created({ storeText: true }), uploaded, started, textReady(1), indexed])
      .when({ type: 'DiscardText', textRevision: 1 })
      .then([]);
  });
});

describe('document processing decider: SettleIndexing (the search projector)', () => {
  const pending = [created({ source: 'text' }), textReady(1)];
  it('the outcome of the text waiting for it: INDEXED, SKIPPED or FAILED with its code', () => {
    given(decider, pending)
      .when({ type: 'SettleIndexing', textRevision: 1, outcome: { status: 'INDEXED' } })
      .then([{ type: 'DocumentIndexed', data: { documentId: 'd1', status: 'INDEXED', textRevision: 1 } }]);
    given(decider, pending)
      .when({ type: 'SettleIndexing', textRevision: 1, outcome: { status: 'SKIPPED' } })
      .then([{ type: 'DocumentIndexSkipped', data: { documentId: 'd1', status: 'SKIPPED', textRevision: 1 } }]);
    given(decider, pending)
      .when({
        type: 'SettleIndexing',
        textRevision: 1,
        outcome: { status: 'FAILED', code: 'TEXT_INDEX_FAILED', message: 'x' },
      })
      .then([{ type: 'DocumentFailed', data: { documentId: 'd1', code: 'TEXT_INDEX_FAILED', message: 'x' } }]);
  });
  it('an older text, an outcome already settled (a replay, a rebuild) or a deleted document is left out', () => {
    const indexed: DocumentEvent = {
      type: 'DocumentIndexed',
      data: { documentId: 'd1', status: 'INDEXED', textRevision: 1 },
    };
    given(decider, [...pending, textReady(2)])
      .when({ type: 'SettleIndexing', textRevision: 1, outcome: { status: 'INDEXED' } })
      .then([]);
    given(decider, [...pending, indexed])
      .when({ type: 'SettleIndexing', textRevision: 1, outcome: { status: 'SKIPPED' } })
      .then([]);
    given(decider, [...pending, deleted])
      .when({ type: 'SettleIndexing', textRevision: 1, outcome: { status: 'INDEXED' } })
      .then([]);
  });
});
