import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { route, type RouteSpec } from '@svc/contracts';
import {
  type BlobStore,
  type CommandDeps,
  documentBlobKeys,
  isTornDown,
  type StorageGrants,
  UPLOAD_HEADER,
} from '@svc/domain';
import { loadDocument } from './commands';
import { recordUpload } from './record-upload';

/**
 * The embedded object-storage endpoint behind presigned URLs (decisions §1):
 * `/storage/uploads/:id` (PUT, single use) and `/storage/downloads/:id` (GET).
 * No Authorization header: each URL carries its own grant. Refusals use the
 * storage layer's XML error shape, never the API's JSON error body. The body
 * streams to the blob store (the route must be registered where no body
 * parser consumes the request; the handler reads `req.raw`).
 */
export const MAX_UPLOAD_BYTES = 1024 * 1024 * 1024;

const xmlEscape = (s: string) =>
  s.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!);

export function storageError(req: FastifyRequest, reply: FastifyReply, status: number, code: string, message: string) {
  // Whatever the client still sends is read and dropped, so it receives this answer rather than a reset.
  if (!req.raw.readableEnded) req.raw.resume();
  return reply
    .status(status)
    .type('application/xml')
    .send(
      `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code>` +
        `<Message>${xmlEscape(message)}</Message><RequestId>${req.id}</RequestId></Error>`,
    );
}

const mediaType = (v: string | null | undefined) => (v ?? '').split(';')[0].trim().toLowerCase();
const single = (v: unknown) => (typeof v === 'string' ? v : undefined);

/** The document id in the path and the presigned-URL parameters of a storage request. */
function presignedRequest(req: FastifyRequest) {
  const q = req.query as Record<string, unknown>;
  return {
    id: (req.params as { id: string }).id,
    uploadId: single(q.upload) ?? '',
    expires: Number(single(q.expires)),
    signature: single(q.signature),
  };
}

export function storageRoutes(o: {
  deps: CommandDeps;
  blobs: BlobStore;
  grants: StorageGrants;
  now?: () => Date;
}): RouteSpec[] {
  const now = o.now ?? (() => new Date());
  return [
    route({
      method: 'PUT',
      url: '/storage/uploads/:id',
      auth: 'none',
      summary:
        'Presigned upload target (no Authorization; Content-Type and the required header must match the ' +
        'grant; single use)',
      handler: async ({ req, reply }) => {
        const { id, uploadId, expires, signature } = presignedRequest(req);
        const check = o.grants.checkUpload(id, uploadId, expires, signature, now().getTime());
        if (check === 'bad-signature')
          return storageError(req, reply, 403, 'AccessDenied', 'The request signature does not match');
        if (check === 'expired') return storageError(req, reply, 403, 'AccessDenied', 'Request has expired');
        if (!o.grants.checkHeader(id, uploadId, single(req.headers[UPLOAD_HEADER])))
          return storageError(
            req,
            reply,
            403,
            'AccessDenied',
            `The ${UPLOAD_HEADER} header is missing or does not match the grant`,
          );
        const { state } = await loadDocument(o.deps, id);
        if (
          !state.exists ||
          state.uploadId !== uploadId ||
          state.status !== 'PENDING_UPLOAD' ||
          (await isTornDown(o.deps.store, state.tenantId, state.contextId))
        )
          return storageError(
            req,
            reply,
            403,
            'AccessDenied',
            'The upload URL has already been used or is no longer valid',
          );
        if (mediaType(single(req.headers['content-type'])) !== mediaType(state.fileType))
          return storageError(req, reply, 403, 'AccessDenied', 'Content-Type does not match the signed upload');
        const key = documentBlobKeys.file(state.tenantId!, state.contextId!, id, uploadId, randomUUID().slice(0, 8));
        let bytes: number;
        try {
          ({ bytes } = await o.blobs.put(key, req.raw, {
            contentType: state.fileType ?? undefined,
            maxBytes: MAX_UPLOAD_BYTES,
          }));
        } catch (e) {
          await o.blobs.delete(key).catch(() => {});
          if ((e as Error).name === 'BlobTooLargeError')
            return storageError(req, reply, 400, 'EntityTooLarge', `The file exceeds ${MAX_UPLOAD_BYTES} bytes`);
          throw e;
        }
        let recorded: boolean;
        try {
          recorded = await recordUpload(o.deps, {
            documentId: id,
            uploadId,
            fileRef: key,
            fileSize: bytes,
            requestId: req.id,
            now: now(),
          });
        } catch (e) {
          await o.blobs.delete(key).catch(() => {});
          throw e;
        }
        if (!recorded) {
          await o.blobs.delete(key).catch(() => {});
          return storageError(
            req,
            reply,
            403,
            'AccessDenied',
            'The upload URL has already been used or is no longer valid',
          );
        }
        // The previous file of a re-upload goes once the new one is recorded.
        if (state.fileRef && state.fileRef !== key) await o.blobs.delete(state.fileRef).catch(() => {});
        return reply.status(200).header('etag', `"${uploadId}"`).send();
      },
    }),
    route({
      method: 'GET',
      url: '/storage/downloads/:id',
      auth: 'none',
      summary: 'Presigned download of a document file',
      handler: async ({ req, reply }) => {
        const { id, expires, signature } = presignedRequest(req);
        const { state } = await loadDocument(o.deps, id);
        const fileRef = state.exists ? state.fileRef : null;
        const check = o.grants.checkDownload(id, fileRef ?? '', expires, signature, now().getTime());
        if (!fileRef || check === 'bad-signature')
          return storageError(req, reply, 403, 'AccessDenied', 'The request signature does not match');
        if (check === 'expired') return storageError(req, reply, 403, 'AccessDenied', 'Request has expired');
        // A torn-down context or tenant has no files, even while its blobs are still being deleted.
        const body =
          state.exists && !(await isTornDown(o.deps.store, state.tenantId, state.contextId))
            ? await o.blobs.stream(fileRef)
            : null;
        if (!body || !state.exists) return storageError(req, reply, 404, 'NoSuchKey', 'The file does not exist');
        reply.status(200).type(state.fileType ?? 'application/octet-stream');
        if (state.fileSize !== null) reply.header('content-length', String(state.fileSize));
        if (state.fileName)
          reply.header('content-disposition', `attachment; filename*=UTF-8''${encodeURIComponent(state.fileName)}`);
        return reply.send(body);
      },
    }),
  ];
}
