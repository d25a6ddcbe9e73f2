import type { RecordResponse, SchemaDefinition } from '@svc/contracts';
import type { LiveRecord } from './record';
import { EXTERNALIZE_AT_BYTES, payloadBytes } from './payload';
import { ownValue } from './own-value';

export const MASK = '********';

/** Sensitive values never leave the service: they read back masked. */
export function maskPayload(
  def: Pick<SchemaDefinition, 'fields'> | undefined,
  payload: Record<string, unknown>,
): Record<string, unknown> {
  const sensitive = (def?.fields ?? []).filter((f) => f.sensitive).map((f) => f.fieldId);
  if (!sensitive.length) return payload;
  const out = { ...payload };
  for (const k of sensitive) if (ownValue(out, k) !== undefined && out[k] !== null) out[k] = MASK;
  return out;
}

export const isExternalized = (def: Pick<SchemaDefinition, 'storageProfile'> | undefined, bytes: number) =>
  def?.storageProfile === 'LARGE_PAYLOAD' || bytes >= EXTERNALIZE_AT_BYTES;

/** The projection a list or lookup shows for an externalised payload: inline and lookup fields only. */
export function projectedPayload(
  def: SchemaDefinition | undefined,
  payload: Record<string, unknown>,
): Record<string, unknown> {
  const keep = new Set<string>();
  for (const f of def?.fields ?? []) if (f.inline) keep.add(f.fieldId);
  for (const l of def?.lookupFields ?? []) {
    if (typeof l === 'string') keep.add(l);
    else if ('fieldName' in l) keep.add(l.fieldName);
    else l.fieldNames.forEach((n) => keep.add(n));
  }
  for (const f of def?.fields ?? []) if (f.sensitive) keep.delete(f.fieldId);
  return Object.fromEntries(Object.entries(payload).filter(([k]) => keep.has(k)));
}

export function recordView(
  r: Omit<LiveRecord, 'exists' | 'tenantId' | 'contextId'>,
  def: SchemaDefinition | undefined,
  opts: {
    full: boolean;
    indexStatus?: string | null;
    indexFailure?: { code: string; message: string } | null;
    bytes?: number;
  },
): RecordResponse {
  // `bytes` is given when `r.payload` may already be the stored projection of an out-of-line payload.
  const bytes = opts.bytes ?? payloadBytes(r.payload);
  const externalized = isExternalized(def, bytes);
  const payload = opts.full || !externalized ? maskPayload(def, r.payload) : projectedPayload(def, r.payload);
  return {
    id: r.id,
    typeName: r.typeName,
    schemaId: r.schemaId,
    schemaVersion: r.schemaVersion,
    payload,
    status: r.status,
    folderId: r.folderId,
    userId: r.userId,
    scopes: r.scopes,
    externalId: r.externalId,
    indexMode: r.indexMode,
    indexStatus: opts.indexStatus !== undefined ? opts.indexStatus : r.indexMode === 'NONE' ? null : 'PENDING_INDEX',
    ...(opts.indexFailure && opts.indexStatus === 'FAILED' ? { indexFailure: opts.indexFailure } : {}),
    payloadExternalized: externalized,
    payloadBytes: bytes,
    createdBy: r.createdBy,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    version: r.version,
  };
}
