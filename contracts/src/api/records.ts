import { z } from 'zod';
import { identifier } from '../common';
import { indexFailure, ownerFields, ownerFilters } from './item-fields';
import { INDEX_MODES } from './schemas';

const payload = z.record(z.string(), z.unknown());

export const createRecordBody = z
  .object({
    typeName: identifier.optional(),
    schemaId: z.string().min(1).max(128).optional(),
    payload: payload.optional(),
    status: z.string().min(1).max(64).optional(),
    folderId: z.string().min(1).max(128).optional(),
    ...ownerFields,
    externalId: z.string().min(1).max(256).optional(),
    indexMode: z.enum(INDEX_MODES).optional(),
    expectedVersion: z.number().int().optional(),
  })
  .strict();
export type CreateRecord = z.infer<typeof createRecordBody>;

/** PUT: `typeName` / `schemaId` ignored; `externalId` / `indexMode` immutable. */
export const putRecordBody = createRecordBody;

/** PATCH (RFC 7386). Immutable keys are listed so their presence is a 400 with a clear message. */
export const PATCHABLE_RECORD_KEYS = ['payload', 'status', 'folderId', 'userId', 'scopes', 'expectedVersion'] as const;
export const IMMUTABLE_RECORD_KEYS = ['typeName', 'schemaId', 'externalId', 'indexMode'] as const;
export const patchRecordBody = z
  .object({
    payload: payload.optional(),
    status: z.string().min(1).max(64).optional(),
    folderId: z.string().min(1).max(128).optional(),
    ...ownerFields,
    expectedVersion: z.number().int().optional(),
  })
  // Other keys reach the decision, which names immutable and unknown keys in its 400.
  .catchall(z.unknown());

export const recordResponse = z.object({
  id: z.string(),
  typeName: z.string(),
  schemaId: z.string(),
  schemaVersion: z.number().int(),
  payload: payload.optional(),
  status: z.string(),
  folderId: z.string().nullable(),
  userId: z.string().nullable(),
  scopes: z.array(z.string()),
  externalId: z.string().nullable(),
  indexMode: z.string().nullable(),
  indexStatus: z.string().nullable(),
  /** Only when indexStatus is FAILED (search projector). */
  indexFailure,
  payloadExternalized: z.boolean(),
  payloadBytes: z.number().int(),
  createdBy: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  version: z.number().int(),
});
export type RecordResponse = z.infer<typeof recordResponse>;

export const listRecordsQuery = z.object({
  type: identifier.optional(),
  ...ownerFilters,
  folderId: z.string().min(1).max(128).optional(),
  includePayload: z.enum(['true', 'false']).optional(),
  startFrom: z.string().optional(),
});

/** POST /v1/records/batch: one result per item, in order (HTTP 200 even when items fail). */
export const batchWriteResponse = z.object({
  results: z.array(
    z.union([
      z.object({
        index: z.number().int(),
        status: z.enum(['created', 'updated']),
        id: z.string(),
        record: recordResponse,
      }),
      // `errorCode` repeats `error.code` at the item's top level, as error bodies name it.
      z.object({
        index: z.number().int(),
        status: z.enum(['conflict', 'error']),
        errorCode: z.string(),
        error: z.object({ code: z.string(), message: z.string() }),
      }),
    ]),
  ),
});
/** POST /v1/records/batch-get: the readable records in the order asked, and the ids not found (or out of reach). */
export const batchGetResponse = z.object({ data: z.array(recordResponse), notFound: z.array(z.string()) });
