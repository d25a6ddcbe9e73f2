import { z } from 'zod';
import {
  documentResponse,
  documentTextResponse,
  downloadUrlResponse,
  idParam,
  limitParam,
  listDocumentsQuery,
  listEnvelope,
  notFound,
  type Paginator,
  type Principal,
  route,
  type RouteSpec,
} from '@svc/contracts';
import {
  baseUrlOf,
  type BlobStore,
  canReach,
  documentView,
  type PresignedBlobUrls,
  readModelVersionOf,
  type Sql,
  type StorageGrants,
  TEXT_READY_STATUSES,
} from '@svc/domain';
import type { SchemaReads } from '../schemas/reads';
import { contextListRoute, dataScopeFilter, visibleOr404 } from '../lists';
import { DOCUMENT_LOOKUPS, lookupPage, lookupParams, type LookupParams } from '../records/lookups';
import type { DocumentReads, DocumentRow } from './reads';

export function documentQueryRoutes(o: {
  sql: Sql;
  documents: DocumentReads;
  schemas: SchemaReads;
  pages: Paginator;
  blindKey: Buffer;
  blobs: BlobStore;
  grants: StorageGrants;
  presigned?: PresignedBlobUrls;
}): RouteSpec[] {
  const { documents, schemas, pages } = o;
  const view = async (d: DocumentRow, full: boolean, p: Principal) =>
    documentView(d, d.schemaId ? await schemas.definition(d.schemaId, readModelVersionOf(p)) : undefined, { full });
  const reachable = async (p: Principal, id: string) => visibleOr404(await documents.byId(id), (d) => canReach(p, d));

  const lookup = (q: LookupParams & { limit: number }, p: Principal, via: 'GET' | 'POST') =>
    lookupPage(
      o,
      { name: 'document-lookup', index: DOCUMENT_LOOKUPS, byIds: (ids) => documents.byIds(ids), view },
      q,
      p,
      via,
    );

  return [
    route({
      method: 'GET',
      url: '/v1/documents/lookup',
      operationId: 'lookupDocuments',
      auth: 'data',
      permission: 'documents:r',
      summary:
        "Look documents up by a lookup field of their schema (type = the schema's typeName): exact, range or prefix",
      query: lookupParams.extend({
        limit: limitParam,
        values: z.union([z.string(), z.array(z.string()).min(1).max(3)]).optional(),
      }),
      response: listEnvelope(documentResponse),
      handler: ({ query, principal }) => lookup(query as LookupParams & { limit: number }, principal, 'GET'),
    }),
    route({
      method: 'POST',
      url: '/v1/documents/lookup',
      operationId: 'lookupDocumentsByBody',
      auth: 'data',
      permission: 'documents:r',
      summary: 'Document lookup with the parameters in the body (required for sensitive fields)',
      body: lookupParams.extend({ limit: limitParam }),
      response: listEnvelope(documentResponse),
      handler: ({ body, principal }) => lookup(body, principal, 'POST'),
    }),
    route({
      method: 'GET',
      url: '/v1/documents/:id',
      operationId: 'getDocument',
      auth: 'data',
      permission: 'documents:r',
      summary: 'Get a document (status, payload, sizes)',
      params: idParam,
      response: documentResponse,
      handler: async ({ params, principal: p }) => view(await reachable(p, params.id), true, p),
    }),
    route({
      method: 'GET',
      url: '/v1/documents/:id/text',
      operationId: 'getDocumentText',
      auth: 'data',
      permission: 'documents:r',
      summary:
        'The retained text of a document as JSON {id, text, textBytes}; 404 when not retained or ' +
        'extraction is incomplete',
      params: idParam,
      response: documentTextResponse,
      handler: async ({ params, principal: p }) => {
        const d = await reachable(p, params.id);
        if (!d.textRetained || !d.textRef || !TEXT_READY_STATUSES.includes(d.status)) throw notFound();
        const text = await o.blobs.get(d.textRef);
        if (!text) throw notFound();
        return { id: d.id, text: text.toString('utf8'), textBytes: text.length };
      },
    }),
    route({
      method: 'GET',
      url: '/v1/documents/:id/download-url',
      operationId: 'getDocumentDownloadUrl',
      auth: 'data',
      permission: 'documents:r',
      summary: 'A presigned download URL of the uploaded file (404 for text-only documents and before the upload)',
      params: idParam,
      response: downloadUrlResponse,
      handler: async ({ params, principal: p, req, meta }) => {
        const d = await reachable(p, params.id);
        if (!d.fileRef) throw notFound();
        if (o.presigned)
          return o.presigned.download({ key: d.fileRef, contentType: d.fileType, fileName: d.fileName, now: meta.now });
        return o.grants.download(baseUrlOf(req.headers, req.protocol), d.id, d.fileRef, meta.now.getTime());
      },
    }),
    contextListRoute(pages, {
      name: 'documents',
      operationId: 'listDocuments',
      summary: 'List documents, oldest first (filters: userId, scope, folderId)',
      query: listDocumentsQuery,
      item: documentResponse,
      load: (p, filters, after, limit) =>
        documents.list(p.tenantId!, p.contextId!, { ...filters, ...dataScopeFilter(p) }, after, limit),
      view: (r, _filters, p) => view(r, false, p),
    }),
  ];
}
