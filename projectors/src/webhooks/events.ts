import type { WebhookEventType } from '@svc/contracts';
import { documentData, type EventStore, recordData, type StoredEvent, streams } from '@svc/domain';
import { loadDocument } from '../search/documents';

/** A log event as webhooks see it: its type, what it is about and its tenant (data is built only when someone subscribes). */
export interface WebhookSource {
  type: WebhookEventType;
  sourceId: string;
  sourceType: 'record' | 'document' | 'trigger';
  tenantId: string;
  /** The envelope's `data`. */
  data(): Promise<Record<string, unknown>>;
}

/**
 * The log events that are webhook events (spec "Webhook event types"):
 * RecordIndexed (INDEXED) -> record.indexed, RecordIndexFailed -> record.failed,
 * DocumentIndexed -> document.indexed, DocumentFailed -> document.failed,
 * TriggerFailed -> trigger.failed (its data mirrors the trigger-failure record).
 */
export function webhookSource(e: StoredEvent, store: EventStore): WebhookSource | null {
  const tenantId = e.metadata.tenantId;
  if (!tenantId) return null;
  switch (e.type) {
    case 'RecordIndexed':
      if (e.data.status !== 'INDEXED') return null;
      return { type: 'record.indexed', sourceId: e.data.recordId, sourceType: 'record', tenantId, data: () => recordDataOf(store, e.data.recordId, 'INDEXED') };
    case 'RecordIndexFailed':
      return {
        type: 'record.failed', sourceId: e.data.recordId, sourceType: 'record', tenantId,
        data: () => recordDataOf(store, e.data.recordId, 'FAILED', { code: e.data.code, message: e.data.message }),
      };
    case 'DocumentIndexed':
      return { type: 'document.indexed', sourceId: e.data.documentId, sourceType: 'document', tenantId, data: () => documentDataOf(store, e.data.documentId, 'INDEXED') };
    case 'DocumentFailed':
      return {
        type: 'document.failed', sourceId: e.data.documentId, sourceType: 'document', tenantId,
        data: () => documentDataOf(store, e.data.documentId, 'FAILED', { code: e.data.code, message: e.data.message }),
      };
    case 'TriggerFailed': {
      // The trigger-failure record (decisions §4): what GET /v1/trigger-failures lists.
      const { failureId, eventId: _, ...d } = e.data;
      return { type: 'trigger.failed', sourceId: failureId, sourceType: 'trigger', tenantId, data: async () => ({ id: failureId, ...d }) };
    }
  }
  return null;
}

async function recordDataOf(store: EventStore, recordId: string, indexStatus: string, indexFailure?: { code: string; message: string }) {
  let typeName = '';
  let userId: string | null = null;
  let scopes: string[] = [];
  for (const e of await store.readStream(streams.record(recordId))) {
    if (e.type === 'RecordCreated') ({ typeName, userId, scopes } = e.data);
    else if (e.type === 'RecordUpdated') ({ userId, scopes } = e.data);
  }
  return recordData({ id: recordId, typeName, indexStatus, userId, scopes, indexFailure });
}

async function documentDataOf(store: EventStore, documentId: string, status: string, indexFailure?: { code: string; message: string }) {
  const { state } = await loadDocument(store, documentId);
  const s = state.exists ? state : undefined;
  return documentData({ id: documentId, status, indexMode: s?.indexMode ?? 'NONE', userId: s?.userId, scopes: s?.scopes, folderId: s?.folderId, indexFailure });
}
