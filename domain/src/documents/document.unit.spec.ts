import { describe, expect, it } from 'vitest';
import { type DomainEvent, type EventMetadata, ServiceError } from '@svc/contracts';
import { decideChangeDocument, decideCreateDocument, decideDeleteDocument, documentAggregate, type DocumentState, type LiveDocument } from './document';
import { documentView } from './view';

const md = (at: string): EventMetadata => ({ tenantId: 't', contextId: 'c', accountId: 'a', actorKeyId: 'k', userId: null, requestId: 'r', occurredAt: at, schemaVersion: 1 });
const given = (events: DomainEvent[]) => events.reduce<DocumentState>((s, e, i) => documentAggregate.evolve(s, e, md(`2026-01-01T00:00:0${i}.000Z`)), documentAggregate.initialState());
const live = (s: DocumentState) => s as LiveDocument;
const codeOf = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e instanceof ServiceError ? e.code : String(e);
  }
  return null;
};

const base = { documentId: 'd1', title: 'T', storeText: true, folderId: 'root', payload: {}, userId: null, scopes: [] };

describe('document decider', () => {
  it('inline ingest: Created + TextReady(revision 1) -> PENDING_INDEX, version 1, storeText always true', () => {
    const events = decideCreateDocument({ ...base, source: 'text', indexMode: 'HYBRID', storeText: false, text: { textRef: 'k', textBytes: 3 } }, { exists: false });
    expect(events.map((e) => e.type)).toEqual(['DocumentCreated', 'DocumentTextReady']);
    const s = live(given(events));
    expect(s).toMatchObject({ status: 'PENDING_INDEX', version: 1, textRevision: 1, textBytes: 3, storeText: true, textRetained: true });
  });

  it('indexMode: required without a schema default', () => {
    expect(codeOf(() => decideCreateDocument({ ...base, source: 'text' }, { exists: false }))).toBe('VALIDATION_ERROR');
  });

  it('upload flow: status follows processing events; version does not move; stale revisions are ignored', () => {
    const created = decideCreateDocument({ ...base, source: 'file', indexMode: 'TEXT', storeText: false, file: { fileName: 'a.pdf', fileType: 'application/pdf', uploadId: 'u1' } }, { exists: false });
    const flow: DomainEvent[] = [
      ...created,
      { type: 'DocumentFileUploaded', data: { documentId: 'd1', uploadId: 'u1', fileRef: 'f', fileSize: 10, fileType: 'application/pdf' } },
      { type: 'DocumentExtractionStarted', data: { documentId: 'd1', uploadId: 'u1' } },
      { type: 'DocumentTextReady', data: { documentId: 'd1', textRef: 't1', textBytes: 5, indexMode: 'TEXT', textRevision: 1 } },
    ];
    expect(live(given(created)).status).toBe('PENDING_UPLOAD');
    expect(live(given(flow.slice(0, 2))).status).toBe('UPLOADED');
    expect(live(given(flow.slice(0, 3))).status).toBe('EXTRACTING');
    const ready = given(flow);
    expect(live(ready).status).toBe('PENDING_INDEX');
    const stale = given([...flow, { type: 'DocumentIndexed', data: { documentId: 'd1', status: 'INDEXED', textRevision: 0 } }]);
    expect(live(stale).status).toBe('PENDING_INDEX');
    const done = live(given([...flow, { type: 'DocumentIndexed', data: { documentId: 'd1', status: 'INDEXED', textRevision: 1 } }, { type: 'DocumentTextDiscarded', data: { documentId: 'd1', textRevision: 1 } }]));
    expect(done).toMatchObject({ status: 'INDEXED', version: 1, textRetained: false, storeText: false });
    const failed = documentView(live(given([...flow.slice(0, 3), { type: 'DocumentFailed', data: { documentId: 'd1', code: 'INDEXING_FAILED', message: 'm' } }])), undefined, { full: true });
    expect(failed.indexFailure).toEqual({ code: 'INDEXING_FAILED', message: 'm' });
    expect(documentView(done, undefined, { full: true })).not.toHaveProperty('indexFailure');
  });

  it('PATCH: immutable keys, nulls and unknown keys are 400; expectedVersion 409; text re-ingests at the next revision', () => {
    const s = given(decideCreateDocument({ ...base, source: 'text', indexMode: 'TEXT', text: { textRef: 'k', textBytes: 1 } }, { exists: false }));
    for (const body of [{ indexMode: 'NONE' }, { externalId: 'x' }, { storeText: false }, { title: null }, { nope: 1 }])
      expect(codeOf(() => decideChangeDocument({ kind: 'patch', body }, s))).toBe('VALIDATION_ERROR');
    expect(codeOf(() => decideChangeDocument({ kind: 'patch', body: { title: 'x', expectedVersion: 7 } }, s))).toBe('VERSION_CONFLICT');
    const events = decideChangeDocument({ kind: 'patch', body: { text: 'new' }, text: { textRef: 'k2', textBytes: 3 } }, s);
    expect(events.map((e) => e.type)).toEqual(['DocumentUpdated', 'DocumentTextReady']);
    expect((events[1].data as { textRevision: number }).textRevision).toBe(2);
    expect(live(events.reduce<DocumentState>((x, e) => documentAggregate.evolve(x, e), s)).version).toBe(2);
  });

  it('delete: tombstone event; on a deleted document 404', () => {
    const s = given(decideCreateDocument({ ...base, source: 'text', indexMode: 'TEXT', externalId: 'e', text: { textRef: 'k', textBytes: 1 } }, { exists: false }));
    const events = decideDeleteDocument(s);
    expect(events).toEqual([{ type: 'DocumentDeleted', data: { documentId: 'd1', externalId: 'e' } }]);
    expect(codeOf(() => decideDeleteDocument(documentAggregate.evolve(s, events[0])))).toBe('NOT_FOUND');
  });
});
