import { z } from 'zod';
import { indexFailure, modifiedStamp, ownerFields, ownerFilters } from './item-fields';
import { INDEX_MODES } from './schemas';

const payload = z.record(z.string(), z.unknown());
const id = z.string().min(1).max(128);

export const DOCUMENT_STATUSES = [
  'PENDING_UPLOAD',
  'UPLOADED',
  'EXTRACTING',
  'PENDING_INDEX',
  'INDEXED',
  'SKIPPED',
  'STORED',
  'FAILED',
] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];

const common = {
  title: z.string().min(1).max(1024),
  indexMode: z.enum(INDEX_MODES).optional(),
  folderId: id.optional(),
  payload: payload.optional(),
  schemaId: id.optional(),
  ...ownerFields,
  externalId: z.string().min(1).max(256).optional(),
  expectedVersion: z.number().int().optional(),
};

/** Inline ingest (DocumentRequest). Text-ingested documents always retain their body. */
export const ingestDocumentBody = z.object({ ...common, text: z.string() }).strict();
export type IngestDocument = z.infer<typeof ingestDocumentBody>;

/** Presigned upload: DocumentRequest without `text`, plus the file fields. */
export const uploadDocumentBody = z
  .object({
    ...common,
    fileName: z.string().min(1).max(512),
    fileType: z
      .string()
      .min(3)
      .max(255)
      .regex(/^[\w.+-]+\/[\w.+-]+$/, 'must be a MIME type such as application/pdf'),
    storeText: z.boolean().optional(),
  })
  .strict();
export type UploadDocument = z.infer<typeof uploadDocumentBody>;

/**
 * PUT: full replace of the mutable fields; `text` re-ingests; `indexMode` / `externalId` / `storeText` only when
 * unchanged.
 */
export const putDocumentBody = z
  .object({ ...common, text: z.string().optional(), storeText: z.boolean().optional() })
  .strict();

export const PATCHABLE_DOCUMENT_KEYS = [
  'title',
  'text',
  'folderId',
  'schemaId',
  'userId',
  'scopes',
  'payload',
  'expectedVersion',
] as const;
export const IMMUTABLE_DOCUMENT_KEYS = ['indexMode', 'externalId', 'storeText'] as const;
/** PATCH (RFC 7386): other keys reach the decision, which names immutable and unknown keys in its 400. */
export const patchDocumentBody = z
  .object({
    title: common.title.optional(),
    text: z.string().optional(),
    folderId: id.optional(),
    schemaId: id.optional(),
    ...ownerFields,
    payload: payload.optional(),
    expectedVersion: z.number().int().optional(),
  })
  .catchall(z.unknown());

export const documentResponse = z.object({
  id: z.string(),
  title: z.string(),
  externalId: z.string().nullable(),
  status: z.enum(DOCUMENT_STATUSES),
  indexFailure,
  indexMode: z.string(),
  storeText: z.boolean(),
  folderId: z.string(),
  payload: payload,
  payloadExternalized: z.boolean(),
  schemaId: z.string().nullable(),
  schemaVersion: z.number().int().nullable(),
  textBytes: z.number().int().nullable(),
  userId: z.string().nullable(),
  scopes: z.array(z.string()),
  fileType: z.string().nullable(),
  fileSize: z.number().int().nullable(),
  ...modifiedStamp,
});
export type DocumentResponse = z.infer<typeof documentResponse>;

export const uploadDocumentResponse = documentResponse.extend({
  uploadUrl: z.string(),
  expiresAt: z.string(),
  requiredHeaderName: z.string(),
  requiredHeaderValue: z.string(),
});

export const documentTextResponse = z.object({ id: z.string(), text: z.string(), textBytes: z.number().int() });
export const downloadUrlResponse = z.object({ downloadUrl: z.string(), expiresAt: z.string() });

export const listDocumentsQuery = z.object({
  ...ownerFilters,
  folderId: id.optional(),
  startFrom: z.string().optional(),
});
