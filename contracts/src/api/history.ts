import { z } from 'zod';
import { listEnvelope } from '../common';

/**
 * Version history and tombstones (decisions §4), the same shapes for records,
 * schemas, documents and folders: GET /v1/<kind>s/{id}/versions (list envelope,
 * oldest first; `startFrom` is the last row id seen) and /tombstone.
 */
export const versionRow = z.object({
  id: z.string(),
  entityId: z.string(),
  entityKind: z.string(),
  version: z.number().int(),
  eventType: z.string(),
  recordedAt: z.string(),
  actor: z.object({ keyId: z.string().nullable(), userId: z.string().nullable() }),
  requestId: z.string().nullable(),
  /** The entity as it read after the change, sensitive fields masked; null on the delete row. */
  state: z.record(z.string(), z.unknown()).nullable(),
});
export type VersionRowView = z.infer<typeof versionRow>;
export const versionPage = listEnvelope(versionRow);

export const tombstoneResponse = z.object({
  id: z.string(),
  entityKind: z.string(),
  typeName: z.string().optional(),
  externalId: z.string().optional(),
  deletedAt: z.string(),
  deletedBy: z.string().nullable(),
  lastVersion: z.number().int(),
});
