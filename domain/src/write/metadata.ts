import { EVENT_SCHEMA_VERSION, type EventMetadata, type RequestMeta } from '@svc/contracts';

/** The metadata of a write made for a request: its principal, request id and time. */
export function metadataFor(
  meta: RequestMeta,
  tenantId = meta.principal.tenantId,
  contextId = meta.principal.contextId,
): EventMetadata {
  const p = meta.principal;
  return {
    tenantId,
    contextId,
    accountId: p.accountId || null,
    actorKeyId: p.kind === 'operator' ? null : p.credentialId,
    userId: p.userId,
    requestId: meta.requestId,
    occurredAt: meta.now.toISOString(),
    schemaVersion: EVENT_SCHEMA_VERSION,
  };
}

/**
 * The metadata of a write no request made (a reactor, a worker, the meter's flush): the tenant and context it
 * is about, the account and causing request when known, no actor. The one place such metadata is built.
 */
export function systemMetadata(o: {
  tenantId: string | null;
  contextId: string | null;
  occurredAt: string | Date;
  accountId?: string | null;
  userId?: string | null;
  requestId?: string | null;
  triggerDepth?: number;
}): EventMetadata {
  return {
    tenantId: o.tenantId,
    contextId: o.contextId,
    accountId: o.accountId ?? null,
    actorKeyId: null,
    userId: o.userId ?? null,
    requestId: o.requestId ?? null,
    occurredAt: typeof o.occurredAt === 'string' ? o.occurredAt : o.occurredAt.toISOString(),
    schemaVersion: EVENT_SCHEMA_VERSION,
    ...(o.triggerDepth !== undefined ? { triggerDepth: o.triggerDepth } : {}),
  };
}
