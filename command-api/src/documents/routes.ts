import {
  documentResponse,
  ingestDocumentBody,
  patchDocumentBody,
  putDocumentBody,
  route,
  type RouteSpec,
  uploadDocumentBody,
  uploadDocumentResponse,
} from '@svc/contracts';
import { baseUrlOf, documentBlobKeys, documentView } from '@svc/domain';
import { writeByIdRoutes } from '../by-id-routes';
import { changeDocument, createDocument, deleteDocument, type DocumentDeps } from './commands';

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
      statuses: [200],
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
      statuses: [200],
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
        return {
          ...view,
          ...d.grants.upload(
            baseUrlOf(req.headers, req.protocol),
            out.document.id,
            out.document.uploadId,
            meta.now.getTime(),
          ),
        };
      },
    }),
    ...writeByIdRoutes({
      resource: 'documents',
      response: documentResponse,
      put: {
        operationId: 'updateDocument',
        summary: 'Replace a document (title, payload, ownership, folder; text re-ingests)',
        body: putDocumentBody,
      },
      patch: {
        operationId: 'patchDocument',
        summary: 'Patch a document (RFC 7386 merge patch; text re-ingests)',
        body: patchDocumentBody,
      },
      change: (id, kind, body, meta) => changeDocument(d, id, kind, body, meta),
      delete: {
        operationId: 'deleteDocument',
        summary: 'Delete a document (hard delete plus tombstone; its file and text are removed)',
        remove: (id, expectedVersion, meta) => deleteDocument(d, id, expectedVersion, meta),
      },
    }),
  ];
}
