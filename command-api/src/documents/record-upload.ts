import { processDocument, systemMetadata, type WriteCharges, type WriteDeps } from '@svc/domain';
import { fileIngestAppend } from '../usage/meter';

/**
 * Records a received upload (DocumentFileUploaded, the processing decider's RecordUpload) with the charge of
 * its file ingest (docs/api.md "Usage") in the same append: the one place for the presigned PUT and the
 * object store's poller. False when the upload is no longer the document's pending one (used, replaced,
 * deleted): nothing was written and the caller drops the stored file.
 */
export async function recordUpload(
  deps: WriteDeps & { meter?: WriteCharges },
  o: { documentId: string; uploadId: string; fileRef: string; fileSize: number; requestId: string; now: Date },
): Promise<boolean> {
  const r = await processDocument(deps, {
    documentId: o.documentId,
    command: () => ({ type: 'RecordUpload', uploadId: o.uploadId, fileRef: o.fileRef, fileSize: o.fileSize }),
    metadata: (s) =>
      systemMetadata({
        tenantId: s.exists ? s.tenantId : null,
        contextId: s.exists ? s.contextId : null,
        requestId: o.requestId,
        occurredAt: o.now,
      }),
    also: (md, s) => (s.exists ? fileIngestAppend(deps.meter, md, o.fileSize, s) : []),
  });
  return r.events.length > 0;
}
