import type { EventStore } from '../ports/event-store';
import { streams } from '../shared/streams';

/**
 * Whether a tenant or one of its contexts has been torn down, read from the
 * log itself (the tenant's `tenant-<id>` stream exists only after
 * TenantTornDown; a context's stream ends with ContextDeleted). Work that
 * reaches a torn-down tenant or context late (an upload finishing, an
 * extraction or an index write behind the teardown in the log) checks this and
 * does nothing, so nothing of it is written again after the teardown.
 */
export async function isTornDown(
  store: EventStore,
  tenantId: string | null | undefined,
  contextId?: string | null,
): Promise<boolean> {
  if (tenantId && (await store.readStream(streams.tenant(tenantId), { maxCount: 1 })).length > 0) return true;
  if (!contextId) return false;
  const last = await store.readStream(streams.context(contextId), { direction: 'backwards', maxCount: 1 });
  return last[0]?.type === 'ContextDeleted';
}

/** The read model's live (not deleted) contexts of a tenant (tenant teardown deletes each). */
export interface TenantContexts {
  liveContexts(tenantId: string): Promise<string[]>;
}

/** Memoises isTornDown for one batch of work (a handful of tenants and contexts). */
export function tornDownCache(
  store: EventStore,
): (tenantId: string | null | undefined, contextId?: string | null) => Promise<boolean> {
  const seen = new Map<string, Promise<boolean>>();
  return (tenantId, contextId) => {
    const key = `${tenantId ?? ''}/${contextId ?? ''}`;
    let p = seen.get(key);
    if (!p) seen.set(key, (p = isTornDown(store, tenantId, contextId)));
    return p;
  };
}

/** The blob-key prefix of everything a tenant (or one of its contexts) stored: keys are `<tenant>/<context>/...`. */
export const blobPrefix = (tenantId: string, contextId?: string) =>
  contextId ? `${tenantId}/${contextId}/` : `${tenantId}/`;
