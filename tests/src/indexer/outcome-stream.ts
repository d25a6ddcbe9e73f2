import { type EventStore, streams } from '@svc/domain';

/**
 * A record's index outcomes as the search projector appended them (RecordsIndexed events in the context's outcome
 * stream), oldest first: `INDEXED@0`, `SKIPPED@2`, or the failure code for FAILED (`TEXT_INDEX_FAILED@1`).
 */
export async function recordOutcomes(
  store: EventStore,
  tenantId: string,
  contextId: string,
  recordId: string,
): Promise<string[]> {
  const out: string[] = [];
  for (const e of await store.readStream(streams.outcomes(tenantId, contextId))) {
    if (e.type !== 'RecordsIndexed') continue;
    for (const o of e.data.outcomes)
      if (o.recordId === recordId) out.push(`${o.status === 'FAILED' ? o.code : o.status}@${o.forRevision}`);
  }
  return out;
}
