import { randomUUID } from 'node:crypto';
import {
  conflict,
  type DomainEvent,
  InternalError,
  type IngestDocument,
  invalid,
  notFound,
  type RequestMeta,
  type UploadDocument,
} from '@svc/contracts';
import {
  type BlobStore,
  type BoundSchema,
  canReach,
  checkChangeBody,
  checkTextSize,
  claim,
  type CommandDeps,
  type Decision,
  documentAggregate,
  documentBlobKeys,
  documentDecider,
  documentIndexMode,
  type DocumentState,
  documentView,
  handleCommand,
  type LiveDocument,
  loadAggregate,
  metadataFor,
  type PayloadSealing,
  type PresignedBlobUrls,
  readReservation,
  release,
  rootFolderId,
  stampOwnership,
  type StorageGrants,
  streams,
} from '@svc/domain';
import { loadSchema } from '../schemas/routes';
import { requireFolder } from '../folders/load';
import { assertScopeNamespaces } from '../identity/namespaces';
import { documentWriteAppend } from '../usage/meter';

export interface DocumentDeps {
  deps: CommandDeps;
  sealer: PayloadSealing;
  blobs: BlobStore;
  grants: StorageGrants;
  /**
   * Set when an object store serves the presigned URLs (OBJECT_STORE_URL); else the service's own /storage routes do.
   */
  presigned?: PresignedBlobUrls;
  /** Makes sure the context root folder exists (a document's default folder). */
  ensureRoot: (meta: RequestMeta) => Promise<void>;
}

const nonce = () => randomUUID().slice(0, 8);

export const loadDocument = async (deps: CommandDeps, id: string) =>
  loadAggregate(deps.store, streams.document(id), documentAggregate);

const extReservation = (d: DocumentDeps, tenantId: string, contextId: string, externalId: string) =>
  readReservation(d.deps.store, tenantId, contextId, 'document-external-id', externalId);

/** A schema a document may bind to: visible to the caller, active, allowing the document surface. */
async function bindSchema(d: DocumentDeps, meta: RequestMeta, schemaId: string): Promise<BoundSchema> {
  const s = await loadSchema(d.deps.store, meta.principal, schemaId);
  if (s.definition.active === false) throw invalid('The schema is inactive: new documents are rejected');
  if (!s.definition.allowedSurfaces.includes('document'))
    throw invalid('The schema does not allow the document surface');
  return { schemaId: s.id, schemaVersion: s.schemaVersion, definition: s.definition };
}

/** The stored (sealed) payload and blind index a decision wrote. */
function written(events: DomainEvent[]): { payload: Record<string, unknown>; blind: Record<string, string> } {
  for (const e of events)
    if (e.type === 'DocumentCreated' || e.type === 'DocumentUpdated')
      return { payload: e.data.payload, blind: e.data.blindIndex ?? {} };
  throw new InternalError('the decision wrote no document content');
}

/** What a document write indexes (lookups of the bound schema, automatic lookups), for its charge. */
const indexedWrite = (
  doc: Pick<LiveDocument, 'externalId' | 'userId' | 'scopes'>,
  content: { payload: Record<string, unknown>; blind: Record<string, string> },
  schema: BoundSchema | undefined,
) => ({
  definition: schema?.definition,
  payload: content.payload,
  blind: content.blind,
  externalId: doc.externalId,
  userId: doc.userId,
  scopes: doc.scopes,
});

/** The response shows the payload as the caller wrote it (masked where sensitive), not its sealed form. */
const plainView = (d: DocumentDeps, doc: LiveDocument, schema: BoundSchema | undefined) =>
  documentView({ ...doc, payload: d.sealer.unseal(doc.payload) }, schema?.definition, { full: true });

export type CreateDocumentOutcome = {
  status: 'created' | 'existing' | 'reupload';
  document: LiveDocument;
  schema?: BoundSchema;
};

/**
 * Creates a document from inline text or as a pending upload. `externalId`
 * makes it idempotent (unique per tenant and context, claimed atomically with
 * the document): sending it again returns the existing document to a caller
 * that can read it; for an upload of an existing file document it issues a
 * fresh upload grant (re-upload; storeText is kept).
 */
export async function createDocument(
  d: DocumentDeps,
  body: IngestDocument | UploadDocument,
  source: 'text' | 'file',
  meta: RequestMeta,
): Promise<CreateDocumentOutcome> {
  const p = meta.principal;
  const own = stampOwnership(p, { userId: body.userId, scopes: body.scopes });
  await assertScopeNamespaces(d.deps.store, p.tenantId!, body.scopes);
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
  const decider = documentDecider(d.sealer);
  const documentId = d.deps.ids.newId();
  const textBlob =
    text !== undefined
      ? {
          textRef: documentBlobKeys.text(p.tenantId!, p.contextId!, documentId, 1, nonce()),
          textBytes: Buffer.byteLength(text, 'utf8'),
        }
      : undefined;
  const md = metadataFor(meta);
  const out = await handleCommand(d.deps, {
    streamId: streams.document(documentId),
    aggregate: decider,
    metadata: md,
    fresh: true,
    prepare: async () => {
      const ext = body.externalId ? await extReservation(d, p.tenantId!, p.contextId!, body.externalId) : undefined;
      return { ext, holder: ext?.holder ? await loadDocument(d.deps, ext.holder) : undefined };
    },
    decide: (state, { ext, holder }): Decision<Omit<CreateDocumentOutcome, 'schema'>> => {
      if (holder) {
        const { state: existing, revision } = holder;
        if (!existing.exists || !canReach(p, existing))
          throw conflict('externalId is already used by another document');
        if (!(source === 'file' && existing.source === 'file' && file))
          return { events: [], answer: { status: 'existing', document: existing } };
        // Re-upload: a fresh grant on the existing document, charged as a document write.
        const events = decider.decide(
          { type: 'RequestUpload', uploadId: randomUUID(), fileName: file.fileName, fileType: file.fileType },
          existing,
        );
        const document = events.reduce<DocumentState>((s, e) => decider.evolve(s, e, md), existing) as LiveDocument;
        const charge = documentWriteAppend(
          d.deps.meter,
          md,
          indexedWrite(
            existing,
            { payload: d.sealer.unseal(existing.payload), blind: existingBlind(d, existing, schema) },
            schema,
          ),
        );
        return {
          events: [],
          also: [{ streamId: streams.document(existing.id), events, expectedRevision: revision }, ...charge],
          answer: { status: 'reupload', document },
        };
      }
      const events = decider.decide(
        {
          type: 'CreateDocument',
          documentId,
          tenantId: p.tenantId!,
          contextId: p.contextId!,
          title: body.title,
          source,
          indexMode: body.indexMode,
          storeText: file?.storeText ?? true,
          folderId,
          payload: body.payload ?? {},
          schema,
          userId: own.userId,
          scopes: own.scopes ?? [],
          externalId: body.externalId,
          file: file ? { fileName: file.fileName, fileType: file.fileType, uploadId: randomUUID() } : undefined,
          text: textBlob,
        },
        state,
      );
      return { events, also: ext ? [claim(ext, documentId)] : [] };
    },
    beforeAppend: async ({ events }) => {
      if (textBlob) await d.blobs.put(textBlob.textRef, text!, { contentType: 'text/plain; charset=utf-8' });
      // Metering: the write (and its text ingest) is charged in the same append.
      const created = { externalId: body.externalId ?? null, userId: own.userId, scopes: own.scopes ?? [] };
      return documentWriteAppend(d.deps.meter, md, indexedWrite(created, written(events), schema), textBlob?.textBytes);
    },
    undo: async () => {
      if (textBlob) await d.blobs.delete(textBlob.textRef).catch(() => {});
    },
    // a concurrent create with this externalId won (or the re-upload raced): the next attempt answers
    onConflict: () => 'retry',
  });
  if (out.answer) return { ...out.answer, schema };
  return {
    status: 'created',
    document: { ...(out.state as LiveDocument), payload: d.sealer.unseal((out.state as LiveDocument).payload) },
    schema,
  };
}

/** The blind index of an existing document's payload under the request's schema (for the re-upload's charge). */
function existingBlind(d: DocumentDeps, doc: LiveDocument, schema: BoundSchema | undefined): Record<string, string> {
  const def = schema?.definition;
  return def ? d.sealer.blind([doc.tenantId!, doc.contextId!, def.typeName], def, d.sealer.unseal(doc.payload)) : {};
}

/** PUT / PATCH. A `text` re-ingests: the new text is stored under the next revision and the old text blob removed. */
export async function changeDocument(
  d: DocumentDeps,
  id: string,
  kind: 'put' | 'patch',
  body: Record<string, unknown>,
  meta: RequestMeta,
) {
  const p = meta.principal;
  const decider = documentDecider(d.sealer);
  const md = metadataFor(meta);
  const text = typeof body.text === 'string' ? body.text : undefined;
  const out = await handleCommand(d.deps, {
    streamId: streams.document(id),
    aggregate: decider,
    metadata: md,
    // The schema, folder and text checks come before any blob is touched; re-run on every attempt.
    prepare: async (cur) => {
      if (!cur.exists || !canReach(p, cur)) throw notFound();
      checkChangeBody(kind, body, cur);
      const schemaId = typeof body.schemaId === 'string' ? body.schemaId : cur.schemaId;
      const schema = schemaId
        ? await bindSchema(d, meta, schemaId).catch((e) => (schemaId === cur.schemaId ? undefined : Promise.reject(e)))
        : undefined;
      if (schemaId && !schema) throw invalid('The document schema no longer exists');
      if (Array.isArray(body.scopes) && body.scopes.length > 2) throw invalid('scopes: at most 2');
      const own =
        'userId' in body || 'scopes' in body
          ? stampOwnership(p, {
              userId: body.userId as string | undefined,
              scopes: body.scopes as string[] | undefined,
            })
          : undefined;
      await assertScopeNamespaces(d.deps.store, p.tenantId!, body.scopes);
      if (typeof body.folderId === 'string' && body.folderId !== cur.folderId)
        await requireFolder(d.deps.store, p, body.folderId);
      if (text !== undefined) checkTextSize(text);
      const textBlob =
        text !== undefined
          ? {
              textRef: documentBlobKeys.text(cur.tenantId!, cur.contextId!, id, cur.textRevision + 1, nonce()),
              textBytes: Buffer.byteLength(text, 'utf8'),
            }
          : undefined;
      return { cur, schema, own, textBlob };
    },
    decide: (state, { schema, own, textBlob }) => ({
      events: decider.decide(
        {
          type: 'ChangeDocument',
          kind,
          body,
          schema,
          userId: 'userId' in body ? own?.userId : undefined,
          scopes: 'scopes' in body ? ((body.scopes as string[]) ?? []) : undefined,
          text: textBlob,
        },
        state,
      ),
    }),
    beforeAppend: async ({ next, events }, { schema, textBlob }) => {
      if (textBlob) await d.blobs.put(textBlob.textRef, text!, { contentType: 'text/plain; charset=utf-8' });
      return documentWriteAppend(
        d.deps.meter,
        md,
        indexedWrite(next as LiveDocument, written(events), schema),
        textBlob?.textBytes,
      );
    },
    undo: async ({ textBlob }) => {
      if (textBlob) await d.blobs.delete(textBlob.textRef).catch(() => {});
    },
  });
  const { cur, schema, textBlob } = out.prepared;
  if (textBlob && cur.exists && cur.textRef && cur.textRetained) await d.blobs.delete(cur.textRef).catch(() => {});
  return plainView(d, out.state as LiveDocument, schema);
}

/** Deletes a document (hard delete plus tombstone), releases its externalId, then removes its blobs. */
export async function deleteDocument(
  d: DocumentDeps,
  id: string,
  expectedVersion: number | undefined,
  meta: RequestMeta,
): Promise<void> {
  const p = meta.principal;
  const decider = documentDecider(d.sealer);
  const out = await handleCommand(d.deps, {
    streamId: streams.document(id),
    aggregate: decider,
    metadata: metadataFor(meta),
    prepare: async (cur) => {
      if (!cur.exists || !canReach(p, cur)) throw notFound();
      return cur;
    },
    decide: (state) => ({ events: decider.decide({ type: 'DeleteDocument', expectedVersion }, state) }),
    beforeAppend: async (_, cur) => {
      const ext = cur.externalId ? await extReservation(d, cur.tenantId!, cur.contextId!, cur.externalId) : undefined;
      return ext && ext.holder === id ? [release(ext)] : [];
    },
    onConflict: () => 'retry',
  });
  // The blobs go with the document (the tombstone keeps no content).
  for (const key of [out.prepared.fileRef, out.prepared.textRef]) if (key) await d.blobs.delete(key).catch(() => {});
}
