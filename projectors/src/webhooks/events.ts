import type { WebhookEventType } from '@svc/contracts';
import { documentData, type EventStore, recordData, type StoredEvent, streams } from '@svc/domain';
import { loadDocument } from '@svc/search';

/**
 * A log event as webhooks see it: its type, what it is about and its tenant (data is built only when someone
 * subscribes).
 */
export interface WebhookSource {
  type: WebhookEventType;
  /**
   * Unique per webhook event (deliveries are unique per webhook and key): the log event's id, or for an outcome of
   * RecordsIndexed the record, revision and result, so an outcome appended twice (a replay) is delivered once.
   */
  key: string;
  sourceId: string;
  sourceType: 'record' | 'document' | 'trigger';
  tenantId: string;
  /** The envelope's `data`; null when the event no longer applies (an index outcome of a revision replaced since). */
  data(): Promise<Record<string, unknown> | null>;
}

/**
 * The webhook events a log event stands for (spec "Webhook event types"):
 * each INDEXED outcome of RecordsIndexed (or RecordIndexed) -> record.indexed, each FAILED one (or
 * RecordIndexFailed) -> record.failed, DocumentIndexed -> document.indexed, DocumentFailed -> document.failed,
 * TriggerFailed -> trigger.failed (its data mirrors the trigger-failure record).
 */
export function webhookSources(e: StoredEvent, store: EventStore): WebhookSource[] {
  const tenantId = e.metadata.tenantId;
  if (!tenantId) return [];
  const one = (s: Omit<WebhookSource, 'key' | 'tenantId'>): WebhookSource[] => [{ ...s, key: e.id, tenantId }];
  switch (e.type) {
    case 'RecordsIndexed':
      // The outcomes of a batch: one webhook event each, unless the record changed again since (checked when a webhook
      // wants it).
      return e.data.outcomes.flatMap((o) => {
        if (o.status === 'SKIPPED') return [];
        const failure = o.status === 'FAILED' ? { code: o.code ?? 'INTERNAL', message: o.message ?? '' } : undefined;
        return [
          {
            type: o.status === 'FAILED' ? 'record.failed' : 'record.indexed',
            key: `record:${o.recordId}@${o.forRevision}:${o.status}:${o.code ?? ''}`,
            sourceId: o.recordId,
            sourceType: 'record',
            tenantId,
            data: () => recordDataOf(store, o.recordId, o.status, failure, o.forRevision),
          } satisfies WebhookSource,
        ];
      });
    case 'RecordIndexed':
      if (e.data.status !== 'INDEXED') return [];
      return one({
        type: 'record.indexed',
        sourceId: e.data.recordId,
        sourceType: 'record',
        data: () => recordDataOf(store, e.data.recordId, 'INDEXED'),
      });
    case 'RecordIndexFailed':
      return one({
        type: 'record.failed',
        sourceId: e.data.recordId,
        sourceType: 'record',
        data: () => recordDataOf(store, e.data.recordId, 'FAILED', { code: e.data.code, message: e.data.message }),
      });
    case 'DocumentIndexed':
      return one({
        type: 'document.indexed',
        sourceId: e.data.documentId,
        sourceType: 'document',
        data: () => documentDataOf(store, e.data.documentId, 'INDEXED'),
      });
    case 'DocumentFailed':
      return one({
        type: 'document.failed',
        sourceId: e.data.documentId,
        sourceType: 'document',
        data: () => documentDataOf(store, e.data.documentId, 'FAILED', { code: e.data.code, message: e.data.message }),
      });
    case 'TriggerFailed': {
      // The trigger-failure record (decisions §4): what GET /v1/trigger-failures lists.
      const { failureId, eventId: _, ...d } = e.data;
      return one({
        type: 'trigger.failed',
        sourceId: failureId,
        sourceType: 'trigger',
        data: async () => ({ id: failureId, ...d }),
      });
    }
  }
  return [];
}

/**
 * A record's webhook data, from its stream; null when `forRevision` is given and the record changed (or went) since.
 */
async function recordDataOf(
  store: EventStore,
  recordId: string,
  indexStatus: string,
  indexFailure?: { code: string; message: string },
  forRevision?: number,
) {
  let typeName = '';
  let userId: string | null = null;
  let scopes: string[] = [];
  let content = -1;
  for (const e of await store.readStream(streams.record(recordId))) {
    if (e.type === 'RecordCreated') ({ typeName, userId, scopes } = e.data);
    else if (e.type === 'RecordUpdated') ({ userId, scopes } = e.data);
    if (e.type === 'RecordCreated' || e.type === 'RecordUpdated' || e.type === 'RecordDeleted') content = e.revision;
  }
  if (forRevision !== undefined && content !== forRevision) return null;
  return recordData({ id: recordId, typeName, indexStatus, userId, scopes, indexFailure });
}

async function documentDataOf(
  store: EventStore,
  documentId: string,
  status: string,
  indexFailure?: { code: string; message: string },
) {
  const { state } = await loadDocument(store, documentId);
  const s = state.exists ? state : undefined;
  return documentData({
    id: documentId,
    status,
    indexMode: s?.indexMode ?? 'NONE',
    userId: s?.userId,
    scopes: s?.scopes,
    folderId: s?.folderId,
    indexFailure,
  });
}
