import type { DocumentResponse, SchemaDefinition } from '@svc/contracts';
import { payloadBytes } from '../records/payload';
import { isExternalized, maskPayload, projectedPayload } from '../records/view';
import type { LiveDocument } from './document';

export type DocumentViewSource = Pick<
  LiveDocument,
  | 'id'
  | 'title'
  | 'externalId'
  | 'status'
  | 'indexFailure'
  | 'indexMode'
  | 'storeText'
  | 'folderId'
  | 'payload'
  | 'schemaId'
  | 'schemaVersion'
  | 'textBytes'
  | 'userId'
  | 'scopes'
  | 'fileType'
  | 'fileSize'
  | 'createdAt'
  | 'lastModified'
  | 'version'
>;

/**
 * The response shape of a document: exactly the spec's fields; `indexFailure` only when FAILED; sensitive values
 * masked.
 */
export function documentView(
  d: DocumentViewSource,
  def: SchemaDefinition | undefined,
  opts: { full: boolean },
): DocumentResponse {
  const bytes = payloadBytes(d.payload);
  const externalized = isExternalized(def, bytes);
  return {
    id: d.id,
    title: d.title,
    externalId: d.externalId,
    status: d.status,
    ...(d.status === 'FAILED' && d.indexFailure ? { indexFailure: d.indexFailure } : {}),
    indexMode: d.indexMode,
    storeText: d.storeText,
    folderId: d.folderId,
    payload: opts.full || !externalized ? maskPayload(def, d.payload) : projectedPayload(def, d.payload),
    payloadExternalized: externalized,
    schemaId: d.schemaId,
    schemaVersion: d.schemaVersion,
    textBytes: d.textBytes,
    userId: d.userId,
    scopes: d.scopes,
    fileType: d.fileType,
    fileSize: d.fileSize,
    createdAt: d.createdAt,
    lastModified: d.lastModified,
    version: d.version,
  };
}
