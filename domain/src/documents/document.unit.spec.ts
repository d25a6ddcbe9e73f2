import { describe, expect, it } from 'vitest';
import type { SchemaDefinition } from '@svc/contracts';
import { given, TEST_METADATA, testSealing } from '../shared/given-when-then.test-support';
import {
  type BoundSchema,
  type DocumentCommand,
  documentDecider,
  type DocumentEvent,
  type LiveDocument,
} from './document';
import { documentView } from './view';

const decider = documentDecider(testSealing);
type Create = Extract<DocumentCommand, { type: 'CreateDocument' }>;
type Created = Extract<DocumentEvent, { type: 'DocumentCreated' }>['data'];

const definition: SchemaDefinition = {
  typeName: 'memo',
  displayName: 'Memo',
  allowedSurfaces: ['document'],
  indexMode: 'TEXT',
  fields: [
    { fieldId: 'author', fieldType: 'string', required: true },
    { fieldId: 'secret', fieldType: 'string', sensitive: true },
  ],
};
const schema: BoundSchema = { schemaId: 's1', schemaVersion: 1, definition };

const create = (over: Partial<Create> = {}): Create => ({
  type: 'CreateDocument',
  documentId: 'd1',
  tenantId: 't1',
  contextId: 'c1',
  title: 'T',
  source: 'text',
  indexMode: 'TEXT',
  storeText: true,
  folderId: 'root',
  payload: {},
  userId: null,
  scopes: [],
  ...over,
});
const created = (over: Partial<Created> = {}): DocumentEvent => ({
  type: 'DocumentCreated',
  data: {
    documentId: 'd1',
    title: 'T',
    source: 'text',
    indexMode: 'TEXT',
    storeText: true,
    folderId: 'root',
    payload: {},
    schemaId: null,
    schemaVersion: null,
    typeName: null,
    userId: null,
    scopes: [],
    externalId: null,
    fileName: null,
    fileType: null,
    uploadId: null,
    ...over,
  },
});
const textReady = (textRevision = 1, textRef = 'k'): DocumentEvent => ({
  type: 'DocumentTextReady',
  data: { documentId: 'd1', textRef, textBytes: 3, indexMode: 'TEXT', textRevision },
});
const fileCreated = created({
  source: 'file',
  storeText: false,
  fileName: 'a.pdf',
  fileType: 'application/pdf',
  uploadId: 'u1',
});
const change = (
  kind: 'put' | 'patch',
  body: Record<string, unknown>,
  over: Partial<Extract<DocumentCommand, { type: 'ChangeDocument' }>> = {},
): DocumentCommand => ({ type: 'ChangeDocument', kind, body, ...over });
const deleted: DocumentEvent = { type: 'DocumentDeleted', data: { documentId: 'd1', externalId: null } };
const live = (s: unknown) => s as LiveDocument;

describe('document decider: CreateDocument', () => {
  it('inline ingest: Created + TextReady(revision 1); storeText is always true for text', () => {
    given(decider)
      .when(create({ storeText: false, text: { textRef: 'k', textBytes: 3 } }))
      .then([created(), textReady()]);
    expect(
      live(
        given(decider)
          .when(create({ text: { textRef: 'k', textBytes: 3 } }))
          .state(),
      ),
    ).toMatchObject({ status: 'PENDING_INDEX', version: 1, textRevision: 1, textBytes: 3, textRetained: true });
  });

  it('file upload: Created with the grant; PENDING_UPLOAD', () => {
    const cmd = create({
      source: 'file',
      storeText: false,
      file: { fileName: 'a.pdf', fileType: 'application/pdf', uploadId: 'u1' },
    });
    given(decider).when(cmd).then([fileCreated]);
    expect(live(given(decider).when(cmd).state()).status).toBe('PENDING_UPLOAD');
  });

  it('indexMode: the request, else the schema default, else VALIDATION_ERROR', () => {
    given(decider)
      .when(create({ indexMode: undefined }))
      .thenThrows('VALIDATION_ERROR');
    expect(
      given(decider)
        .when(create({ indexMode: undefined, schema, payload: { author: 'a' } }))
        .events()[0].data,
    ).toMatchObject({ indexMode: 'TEXT' });
  });

  it('a bound schema: payload validated, sensitive values sealed and blind-indexed in the decision', () => {
    given(decider)
      .when(create({ schema, payload: { author: 'a', secret: 's' } }))
      .then([
        created({
          schemaId: 's1',
          schemaVersion: 1,
          typeName: 'memo',
          payload: { author: 'a', secret: { $sealed: 'sealed:"s"' } },
          blindIndex: { secret: 'blind:t1/c1/memo/secret="s"' },
        }),
      ]);
    given(decider)
      .when(create({ schema, payload: {} }))
      .thenThrows('VALIDATION_ERROR');
  });

  it('without a schema only the generic payload rules apply', () => {
    given(decider)
      .when(create({ payload: { any: 1 } }))
      .then([created({ payload: { any: 1 } })]);
    given(decider)
      .when(create({ payload: { userId: 'x' } }))
      .thenThrows('VALIDATION_ERROR');
    given(decider)
      .when(create({ payload: { big: 'x'.repeat(1024 * 1024 + 1) } }))
      .thenThrows('PAYLOAD_TOO_LARGE');
  });

  it('refuses an inactive schema and a schema without the document surface', () => {
    given(decider)
      .when(create({ schema: { ...schema, definition: { ...definition, active: false } }, payload: { author: 'a' } }))
      .thenThrows('VALIDATION_ERROR');
    given(decider)
      .when(
        create({
          schema: { ...schema, definition: { ...definition, allowedSurfaces: ['record'] } },
          payload: { author: 'a' },
        }),
      )
      .thenThrows('VALIDATION_ERROR');
  });

  it('never reuses an id', () => {
    given(decider, [created()]).when(create()).thenThrows('INTERNAL');
    given(decider, [created(), deleted]).when(create()).thenThrows('INTERNAL');
  });
});

describe('document decider: RequestUpload (re-upload)', () => {
  it('a fresh grant on a file document: back to PENDING_UPLOAD, no new version', () => {
    const history = [
      fileCreated,
      {
        type: 'DocumentFileUploaded',
        data: { documentId: 'd1', uploadId: 'u1', fileRef: 'f', fileSize: 10, fileType: 'application/pdf' },
      } as DocumentEvent,
    ];
    const when = given(decider, history).when({
      type: 'RequestUpload',
      uploadId: 'u2',
      fileName: 'b.pdf',
      fileType: 'application/pdf',
    });
    when.then([
      {
        type: 'DocumentUploadRequested',
        data: { documentId: 'd1', uploadId: 'u2', fileName: 'b.pdf', fileType: 'application/pdf' },
      },
    ]);
    expect(live(when.state())).toMatchObject({
      status: 'PENDING_UPLOAD',
      uploadId: 'u2',
      fileName: 'b.pdf',
      version: 1,
    });
  });

  it('refused on a text document and on a missing one', () => {
    given(decider, [created()])
      .when({ type: 'RequestUpload', uploadId: 'u2', fileName: 'b', fileType: 'text/plain' })
      .thenThrows('VALIDATION_ERROR');
    given(decider)
      .when({ type: 'RequestUpload', uploadId: 'u2', fileName: 'b', fileType: 'text/plain' })
      .thenThrows('NOT_FOUND');
  });
});

describe('document decider: ChangeDocument', () => {
  const updated = (over: Partial<Extract<DocumentEvent, { type: 'DocumentUpdated' }>['data']> = {}): DocumentEvent => ({
    type: 'DocumentUpdated',
    data: {
      documentId: 'd1',
      title: 'T',
      folderId: 'root',
      payload: {},
      schemaId: null,
      schemaVersion: null,
      typeName: null,
      userId: null,
      scopes: [],
      change: 'patch',
      ...over,
    },
  });

  it('PATCH: title, folder, ownership and merged payload; version + 1', () => {
    const when = given(decider, [created({ payload: { a: 1, b: 2 } }), textReady()]).when(
      change('patch', { title: 'U', folderId: 'f2', payload: { b: null, c: 3 } }, { userId: 'u1', scopes: ['s'] }),
    );
    when.then([updated({ title: 'U', folderId: 'f2', payload: { a: 1, c: 3 }, userId: 'u1', scopes: ['s'] })]);
    expect(live(when.state()).version).toBe(2);
  });

  it('PUT replaces the payload in full; binding a schema validates and seals against it', () => {
    given(decider, [created({ payload: { a: 1 } })])
      .when(change('put', { title: 'T' }))
      .then([updated({ change: 'put' })]);
    given(decider, [created()])
      .when(change('put', { title: 'T', payload: { author: 'a', secret: 'z' } }, { schema }))
      .then([
        updated({
          change: 'put',
          schemaId: 's1',
          schemaVersion: 1,
          typeName: 'memo',
          payload: { author: 'a', secret: { $sealed: 'sealed:"z"' } },
          blindIndex: { secret: 'blind:t1/c1/memo/secret="z"' },
        }),
      ]);
    given(decider, [created()])
      .when(change('put', { title: 'T', payload: { author: 5 } }, { schema }))
      .thenThrows('VALIDATION_ERROR');
  });

  it(
    'required is enforced on create only: a PUT without a required field, or a PATCH null deleting it, is ' +
      'accepted',
    () => {
      const bound = created({
        schemaId: 's1',
        schemaVersion: 1,
        typeName: 'memo',
        payload: { author: 'a', note: 'n' },
      });
      const boundUpdate = (change: 'put' | 'patch', payload: Record<string, unknown>) =>
        updated({ change, schemaId: 's1', schemaVersion: 1, typeName: 'memo', payload });
      given(decider, [bound])
        .when(change('put', { title: 'T', payload: { note: 'm' } }, { schema }))
        .then([boundUpdate('put', { note: 'm' })]);
      given(decider, [bound])
        .when(change('patch', { payload: { author: null } }, { schema }))
        .then([boundUpdate('patch', { note: 'n' })]);
      given(decider, [bound])
        .when(change('patch', { payload: { author: 7 } }, { schema }))
        .thenThrows('VALIDATION_ERROR');
    },
  );

  it('text re-ingests at the next revision', () => {
    given(decider, [created(), textReady()])
      .when(change('patch', { text: 'new' }, { text: { textRef: 'k2', textBytes: 3 } }))
      .then([updated(), textReady(2, 'k2')]);
  });

  it('PATCH refuses immutable keys, unknown keys, nulls and a non-object payload', () => {
    for (const body of [
      { indexMode: 'NONE' },
      { externalId: 'x' },
      { storeText: false },
      { title: null },
      { nope: 1 },
      { payload: 'x' },
    ])
      given(decider, [created()]).when(change('patch', body)).thenThrows('VALIDATION_ERROR');
  });

  it('PUT refuses a different externalId, indexMode or storeText', () => {
    for (const body of [
      { title: 'T', externalId: 'x' },
      { title: 'T', indexMode: 'NONE' },
      { title: 'T', storeText: false },
    ])
      given(decider, [created()]).when(change('put', body)).thenThrows('VALIDATION_ERROR');
  });

  it('refuses clearing the folder and more than 2 scopes', () => {
    given(decider, [created()])
      .when(change('patch', { folderId: '' }))
      .thenThrows('VALIDATION_ERROR');
    given(decider, [created()])
      .when(change('patch', { scopes: ['a', 'b', 'c'] }))
      .thenThrows('VALIDATION_ERROR');
  });

  it('expectedVersion: the current version passes, another is VERSION_CONFLICT', () => {
    expect(
      given(decider, [created()])
        .when(change('patch', { title: 'x', expectedVersion: 1 }))
        .events(),
    ).toHaveLength(1);
    given(decider, [created()])
      .when(change('patch', { title: 'x', expectedVersion: 7 }))
      .thenThrows('VERSION_CONFLICT');
  });

  it('a missing or deleted document is NOT_FOUND', () => {
    given(decider)
      .when(change('patch', { title: 'x' }))
      .thenThrows('NOT_FOUND');
    given(decider, [created(), deleted])
      .when(change('patch', { title: 'x' }))
      .thenThrows('NOT_FOUND');
  });
});

describe('document decider: DeleteDocument', () => {
  it('decides the tombstone with the externalId it frees; then NOT_FOUND', () => {
    given(decider, [created({ externalId: 'e' })])
      .when({ type: 'DeleteDocument' })
      .then([{ type: 'DocumentDeleted', data: { documentId: 'd1', externalId: 'e' } }]);
    given(decider, [created(), deleted]).when({ type: 'DeleteDocument' }).thenThrows('NOT_FOUND');
    given(decider).when({ type: 'DeleteDocument' }).thenThrows('NOT_FOUND');
  });

  it('expectedVersion: the current version passes, another is VERSION_CONFLICT', () => {
    given(decider, [created()]).when({ type: 'DeleteDocument', expectedVersion: 1 }).then([deleted]);
    given(decider, [created()]).when({ type: 'DeleteDocument', expectedVersion: 2 }).thenThrows('VERSION_CONFLICT');
  });
});

describe('document state: processing events', () => {
  const at = (i: number) => ({ metadata: { ...TEST_METADATA, occurredAt: `2026-01-01T00:00:0${i}.000Z` } });
  it('status follows upload, extraction and indexing; version does not move; stale revisions are ignored', () => {
    const flow: DocumentEvent[] = [
      fileCreated,
      {
        type: 'DocumentFileUploaded',
        data: { documentId: 'd1', uploadId: 'u1', fileRef: 'f', fileSize: 10, fileType: 'application/pdf' },
      },
      { type: 'DocumentExtractionStarted', data: { documentId: 'd1', uploadId: 'u1' } },
      {
        type: 'DocumentTextReady',
        data: { documentId: 'd1', textRef: 't1', textBytes: 5, indexMode: 'TEXT', textRevision: 1 },
      },
    ];
    expect(live(given(decider, flow.slice(0, 2), at(1)).state()).status).toBe('UPLOADED');
    expect(live(given(decider, flow.slice(0, 3)).state()).status).toBe('EXTRACTING');
    expect(live(given(decider, flow).state()).status).toBe('PENDING_INDEX');
    const stale = given(decider, [
      ...flow,
      { type: 'DocumentIndexed', data: { documentId: 'd1', status: 'INDEXED', textRevision: 0 } },
    ]).state();
    expect(live(stale).status).toBe('PENDING_INDEX');
    const done = live(
      given(decider, [
        ...flow,
        { type: 'DocumentIndexed', data: { documentId: 'd1', status: 'INDEXED', textRevision: 1 } },
        { type: 'DocumentTextDiscarded', data: { documentId: 'd1', textRevision: 1 } },
      ]).state(),
    );
    expect(done).toMatchObject({ status: 'INDEXED', version: 1, textRetained: false, storeText: false });
    const failed = documentView(
      live(
        given(decider, [
          ...flow.slice(0, 3),
          { type: 'DocumentFailed', data: { documentId: 'd1', code: 'INDEXING_FAILED', message: 'm' } },
        ]).state(),
      ),
      undefined,
      { full: true },
    );
    expect(failed.indexFailure).toEqual({ code: 'INDEXING_FAILED', message: 'm' });
    expect(documentView(done, undefined, { full: true })).not.toHaveProperty('indexFailure');
    expect(
      live(
        given(decider, [
          ...flow,
          { type: 'DocumentIndexSkipped', data: { documentId: 'd1', status: 'SKIPPED', textRevision: 1 } },
        ]).state(),
      ).status,
    ).toBe('SKIPPED');
  });
});
