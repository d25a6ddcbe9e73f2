import { contended } from '../contention';
import { randomUUID } from 'node:crypto';
import { conflict, documentResponse, type DomainEvent, idParam, type IngestDocument, ingestDocumentBody, invalid, notFound, patchDocumentBody, putDocumentBody, type RequestMeta, route, type RouteSpec, type UploadDocument, uploadDocumentBody, uploadDocumentResponse } from '@svc/contracts';
import { baseUrlOf, type BlobStore, type BoundSchema, canReach, checkChangeBody, checkTextSize, decideChangeDocument, decideCreateDocument, decideDeleteDocument, documentAggregate, documentBlobKeys, documentIndexMode, type DocumentState, documentView, type LiveDocument, type PresignedBlobUrls, rootFolderId, stampOwnership, type StorageGrants, streams, WrongExpectedRevisionError } from '@svc/domain';
import { z } from 'zod';
import { commit, loadAggregate, metadataFor, type CommandDeps, type DomainAppend } from '../handle-command';
import { claim, readReservation, release } from '../reservations';
import type { PayloadSealer } from '../records/sealing';
import { loadSchema } from '../schemas/routes';
import { requireFolder } from '../folders/load';
import { documentWriteAppend } from '../usage/meter';

export interface DocumentDeps {
  deps: CommandDeps;
  sealer: PayloadSealer;
  blobs: BlobStore;
  grants: StorageGrants;
  /** Set when an object store serves the presigned URLs (OBJECT_STORE_URL); else the service's own /storage routes do. */
  presigned?: PresignedBlobUrls;
  /** Makes sure the context root folder exists (a document's default folder). */
  ensureRoot: (meta: RequestMeta) => Promise<void>;
}

const nonce = () => randomUUID().slice(0, 8);

export const loadDocument = async (deps: CommandDeps, id: string) => loadAggregate(deps.store, streams.document(id), documentAggregate);

const extReservation = (d: DocumentDeps, tenantId: string, contextId: string, externalId: string) =>
  readReservation(d.deps.store, tenantId, contextId, 'document-external-id', externalId);

/** A schema a document may bind to: visible to the caller, active, allowing the document surface. */
async function bindSchema(d: DocumentDeps, meta: RequestMeta, schemaId: string): Promise<BoundSchema> {
  const s = await loadSchema(d.deps.store, meta.principal, schemaId);
  if (s.definition.active === false) throw invalid('The schema is inactive: new documents are rejected');
  if (!s.definition.allowedSurfaces.includes('document')) throw invalid('The schema does not allow the document surface');
  return { schemaId: s.id, schemaVersion: s.schemaVersion, definition: s.definition };
}

/** Seals sensitive payload values and adds their blind index (as records do). */
function seal(d: DocumentDeps, p: RequestMeta['principal'], schema: BoundSchema | undefined, events: DomainEvent[]): DomainEvent[] {
  if (!schema) return events;
  const def = schema.definition;
  return events.map((e) => {
    if (e.type !== 'DocumentCreated' && e.type !== 'DocumentUpdated') return e;
    const blind = d.sealer.blind([p.tenantId!, p.contextId!, def.typeName], def, e.data.payload);
    return { ...e, data: { ...e.data, payload: d.sealer.seal(def, e.data.payload), ...(Object.keys(blind).length ? { blindIndex: blind } : {}) } } as DomainEvent;
  });
}

/** What a document write indexes (lookups of the bound schema, automatic lookups), for its charge. */
function indexedWrite(d: DocumentDeps, doc: Pick<LiveDocument, 'tenantId' | 'contextId' | 'payload' | 'externalId' | 'userId' | 'scopes'>, schema: BoundSchema | undefined) {
  const def = schema?.definition;
  const blind = def ? d.sealer.blind([doc.tenantId!, doc.contextId!, def.typeName], def, doc.payload) : {};
  return { definition: def, payload: doc.payload, blind, externalId: doc.externalId, userId: doc.userId, scopes: doc.scopes };
}

export type CreateDocumentOutcome = { status: 'created' | 'existing' | 'reupload'; document: LiveDocument; schema?: BoundSchema };

/**
 * Creates a document from inline text or as a pending upload. `externalId`
 * makes it idempotent (unique per tenant and context, claimed atomically with
 * the document): sending it again returns the existing document to a caller
 * that can read it; for an upload of an existing file document it issues a
 * fresh upload grant (re-upload; storeText is kept).
 */
export async function createDocument(d: DocumentDeps, body: IngestDocument | UploadDocument, source: 'text' | 'file', meta: RequestMeta): Promise<CreateDocumentOutcome> {
  const p = meta.principal;
  const own = stampOwnership(p, { userId: body.userId, scopes: body.scopes });
  const schema = body.schemaId ? await bindSchema(d, meta, body.schemaId) : undefined;
  documentIndexMode(body.indexMode, schema?.definition);
  let folderId: string;
  if (body.folderId) folderId = (await requireFolder(d.deps.store, p, body.folderId)).id;
  else {
    await d.ensureRoot(meta);
    folderId = rootFolderId(p.tenantId!, p.contextId!);
  }
  const text = 'text' in body ? body.text : undefined;
  if (text !== undefined) checkTextSize(text);
  const file = 'fileName' in body ? body : undefined;
  for (let attempt = 0; attempt < 5; attempt++) {
    const ext = body.externalId ? await extReservation(d, p.tenantId!, p.contextId!, body.externalId) : undefined;
    if (ext?.holder) {
      const { state: existing, revision } = await loadDocument(d.deps, ext.holder);
      if (!existing.exists || !canReach(p, existing)) throw conflict('externalId is already used by another document');
      if (source === 'file' && existing.source === 'file' && file) {
        const uploadId = randomUUID();
        const md = metadataFor(meta);
        const events: DomainEvent[] = [{ type: 'DocumentUploadRequested', data: { documentId: existing.id, uploadId, fileName: file.fileName, fileType: file.fileType } }];
        try {
          await commit(d.deps, md, [
            { streamId: streams.document(existing.id), events, expectedRevision: revision },
            ...documentWriteAppend(d.deps.meter, md, indexedWrite(d, { ...existing, payload: d.sealer.unseal(existing.payload) }, schema)),
          ]);
        } catch (e) {
          if (e instanceof WrongExpectedRevisionError) continue;
          throw e;
        }
        const document = events.reduce<DocumentState>((s, e) => documentAggregate.evolve(s, e, md), existing) as LiveDocument;
        return { status: 'reupload', document, schema };
      }
      return { status: 'existing', document: existing, schema };
    }
    const documentId = d.deps.ids.newId();
    const textBlob = text !== undefined ? { textRef: documentBlobKeys.text(p.tenantId!, p.contextId!, documentId, 1, nonce()), textBytes: Buffer.byteLength(text, 'utf8') } : undefined;
    const events = decideCreateDocument(
      {
        documentId, title: body.title, source, indexMode: body.indexMode, storeText: file?.storeText ?? true, folderId, payload: body.payload ?? {}, schema,
        userId: own.userId, scopes: own.scopes ?? [], externalId: body.externalId, file: file ? { fileName: file.fileName, fileType: file.fileType, uploadId: randomUUID() } : undefined,
        text: textBlob,
      },
      { exists: false },
    );
    if (textBlob) await d.blobs.put(textBlob.textRef, text!, { contentType: 'text/plain; charset=utf-8' });
    const md = metadataFor(meta);
    const appends: DomainAppend[] = [{ streamId: streams.document(documentId), events: seal(d, p, schema, events), expectedRevision: 'no_stream' }];
    if (ext) appends.push(claim(ext, documentId));
    // Metering: the write (and its text ingest) is charged in the same append.
    const created = { tenantId: p.tenantId, contextId: p.contextId, payload: body.payload ?? {}, externalId: body.externalId ?? null, userId: own.userId, scopes: own.scopes ?? [] };
    appends.push(...documentWriteAppend(d.deps.meter, md, indexedWrite(d, created, schema), textBlob?.textBytes));
    try {
      await commit(d.deps, md, appends);
    } catch (e) {
      if (textBlob) await d.blobs.delete(textBlob.textRef).catch(() => {});
      if (e instanceof WrongExpectedRevisionError && ext && e.streamId === ext.streamId) continue; // a concurrent create with this externalId won
      throw e;
    }
    const document = events.reduce<DocumentState>((s, e) => documentAggregate.evolve(s, e, md), { exists: false }) as LiveDocument;
    return { status: 'created', document, schema };
  }
  throw conflict('The document could not be created because of concurrent writes; retry');
}

/** PUT / PATCH. A `text` re-ingests: the new text is stored under the next revision and the old text blob removed. */
export async function changeDocument(d: DocumentDeps, id: string, kind: 'put' | 'patch', body: Record<string, unknown>, meta: RequestMeta) {
  const p = meta.principal;
  for await (const _attempt of contended()) {
    const { state: stored, revision } = await loadDocument(d.deps, id);
    if (!stored.exists || !canReach(p, stored)) throw notFound();
    const cur: LiveDocument = { ...stored, payload: d.sealer.unseal(stored.payload) };
    checkChangeBody(kind, body, cur);
    const schemaId = typeof body.schemaId === 'string' ? body.schemaId : cur.schemaId;
    const schema = schemaId ? await bindSchema(d, meta, schemaId).catch((e) => (schemaId === cur.schemaId ? undefined : Promise.reject(e))) : undefined;
    if (schemaId && !schema) throw invalid('The document schema no longer exists');
    if (Array.isArray(body.scopes) && body.scopes.length > 2) throw invalid('scopes: at most 2');
    const own =
      'userId' in body || 'scopes' in body
        ? stampOwnership(p, { userId: body.userId as string | undefined, scopes: body.scopes as string[] | undefined })
        : { userId: undefined, scopes: undefined };
    if (typeof body.folderId === 'string' && body.folderId !== cur.folderId) await requireFolder(d.deps.store, p, body.folderId);
    const text = typeof body.text === 'string' ? body.text : undefined;
    if (text !== undefined) checkTextSize(text);
    const textBlob = text !== undefined ? { textRef: documentBlobKeys.text(cur.tenantId!, cur.contextId!, id, cur.textRevision + 1, nonce()), textBytes: Buffer.byteLength(text, 'utf8') } : undefined;
    const events = decideChangeDocument(
      { kind, body, schema, userId: 'userId' in body ? own.userId : undefined, scopes: 'scopes' in body ? ((body.scopes as string[]) ?? []) : undefined, text: textBlob },
      cur,
    );
    if (textBlob) await d.blobs.put(textBlob.textRef, text!, { contentType: 'text/plain; charset=utf-8' });
    const md = metadataFor(meta);
    const next = events.reduce<DocumentState>((s, e) => documentAggregate.evolve(s, e, md), cur) as LiveDocument;
    try {
      await commit(d.deps, md, [
        { streamId: streams.document(id), events: seal(d, p, schema, events), expectedRevision: revision },
        ...(events.length ? documentWriteAppend(d.deps.meter, md, indexedWrite(d, next, schema), textBlob?.textBytes) : []),
      ]);
    } catch (e) {
      if (textBlob) await d.blobs.delete(textBlob.textRef).catch(() => {});
      if (e instanceof WrongExpectedRevisionError && e.streamId === streams.document(id)) continue;
      throw e;
    }
    if (textBlob && cur.textRef && cur.textRetained) await d.blobs.delete(cur.textRef).catch(() => {});
    return documentView(next, schema?.definition, { full: true });
  }
  throw conflict('The document changed concurrently; retry');
}

export async function deleteDocument(d: DocumentDeps, id: string, expectedVersion: number | undefined, meta: RequestMeta): Promise<void> {
  const p = meta.principal;
  for await (const _attempt of contended()) {
    const { state: cur, revision } = await loadDocument(d.deps, id);
    if (!cur.exists || !canReach(p, cur)) throw notFound();
    const events = decideDeleteDocument(cur, expectedVersion);
    const ext = cur.externalId ? await extReservation(d, cur.tenantId!, cur.contextId!, cur.externalId) : undefined;
    try {
      await commit(d.deps, metadataFor(meta), [{ streamId: streams.document(id), events, expectedRevision: revision }, ...(ext && ext.holder === id ? [release(ext)] : [])]);
    } catch (e) {
      if (e instanceof WrongExpectedRevisionError) continue;
      throw e;
    }
    // The blobs go with the document (the tombstone keeps no content).
    for (const key of [cur.fileRef, cur.textRef]) if (key) await d.blobs.delete(key).catch(() => {});
    return;
  }
  throw conflict('The document changed concurrently; retry');
}

export function documentCommandRoutes(d: DocumentDeps): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: '/v1/documents',
      operationId: 'ingestDocument',
      auth: 'data',
      permission: 'documents:c',
      summary: 'Ingest a document from inline text (idempotent by externalId)',
      body: ingestDocumentBody,
      response: documentResponse,
      status: 201,
      write: true,
      handler: async ({ body, meta, reply }) => {
        const out = await createDocument(d, body, 'text', meta);
        if (out.status !== 'created') reply.status(200);
        return documentView(out.document, out.schema?.definition, { full: true });
      },
    }),
    route({
      method: 'POST',
      url: '/v1/documents/upload',
      operationId: 'uploadDocument',
      auth: 'data',
      permission: 'documents:c',
      summary: 'Create a document for a file upload: returns a presigned, single-use upload URL',
      body: uploadDocumentBody,
      response: uploadDocumentResponse,
      status: 201,
      write: true,
      handler: async ({ body, meta, reply, req }) => {
        const out = await createDocument(d, body, 'file', meta);
        if (out.status !== 'created') reply.status(200);
        const view = documentView(out.document, out.schema?.definition, { full: true });
        if (out.status === 'existing' || !out.document.uploadId) return view;
        const doc = out.document;
        if (d.presigned) {
          const key = documentBlobKeys.pendingUpload(doc.tenantId!, doc.contextId!, doc.id, doc.uploadId!);
          return { ...view, ...(await d.presigned.upload({ key, contentType: doc.fileType!, now: meta.now })) };
        }
        return { ...view, ...d.grants.upload(baseUrlOf(req.headers, req.protocol), out.document.id, out.document.uploadId, meta.now.getTime()) };
      },
    }),
    route({
      method: 'PUT',
      url: '/v1/documents/:id',
      operationId: 'updateDocument',
      auth: 'data',
      permission: 'documents:u',
      summary: 'Replace a document (title, payload, ownership, folder; text re-ingests)',
      params: idParam,
      body: putDocumentBody,
      response: documentResponse,
      write: true,
      handler: ({ params, body, meta }) => changeDocument(d, params.id, 'put', body as Record<string, unknown>, meta),
    }),
    route({
      method: 'PATCH',
      url: '/v1/documents/:id',
      operationId: 'patchDocument',
      auth: 'data',
      permission: 'documents:u',
      summary: 'Patch a document (RFC 7386 merge patch; text re-ingests)',
      params: idParam,
      body: patchDocumentBody,
      response: documentResponse,
      write: true,
      handler: ({ params, body, meta }) => changeDocument(d, params.id, 'patch', body, meta),
    }),
    route({
      method: 'DELETE',
      url: '/v1/documents/:id',
      operationId: 'deleteDocument',
      auth: 'data',
      permission: 'documents:d',
      summary: 'Delete a document (hard delete plus tombstone; its file and text are removed)',
      params: idParam,
      query: z.object({ expectedVersion: z.coerce.number().int().optional() }),
      status: 204,
      write: true,
      handler: async ({ params, query, meta }) => {
        await deleteDocument(d, params.id, query.expectedVersion, meta);
        return null;
      },
    }),
  ];
}
