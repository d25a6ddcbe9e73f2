import { DOCUMENT_INDEXES, DOCUMENT_TABLES, type SqlQueryable, type StoredEvent } from '@svc/domain';
import type { SqlProjection } from '../runtime/runner';
import { replaceLookupRows, schemaDocs } from '../records/read-model';
import { deleteRemovedRows, deleteRows } from '../runtime/removals';

/**
 * Documents by tenant and context (status, text and file references, the
 * payload) and the lookup index of schema-bound documents. Every change is
 * guarded by the stream revision, so a replay changes nothing. Processing
 * events move `status` only; `version` counts DocumentCreated / DocumentUpdated.
 */
const DOCUMENT_LOOKUPS = { table: DOCUMENT_TABLES.lookups, idColumn: 'document_id' };

export const documentsProjection = (): SqlProjection => ({
  name: 'documents',
  tables: [DOCUMENT_TABLES.documents, DOCUMENT_TABLES.lookups],
  ddl:
    `
CREATE TABLE IF NOT EXISTS ${DOCUMENT_TABLES.documents} (
  document_id text PRIMARY KEY, tenant_id text NOT NULL, ` +
    `context_id text NOT NULL, title text NOT NULL, source text NOT NULL,
  status text NOT NULL, ` +
    `index_failure jsonb, index_mode text NOT NULL, store_text boolean NOT NULL, folder_id text NOT NULL,
  ` +
    `payload jsonb NOT NULL, schema_id text, schema_version int, type_name text, user_id text, scopes jsonb ` +
    `NOT NULL, external_id text,
  file_name text, file_type text, file_size bigint, file_ref text, ` +
    `upload_id text,
  text_ref text, text_bytes bigint, text_revision int NOT NULL, text_retained boolean ` +
    `NOT NULL,
  created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, version int NOT NULL, ` +
    `revision bigint NOT NULL);
CREATE INDEX IF NOT EXISTS ${DOCUMENT_INDEXES.documentsList} ON ${DOCUMENT_TABLES.documents} (tenant_id, ` +
    `context_id, created_at, document_id);
CREATE INDEX IF NOT EXISTS ${DOCUMENT_INDEXES.documentsFolder} ON ${DOCUMENT_TABLES.documents} ` +
    `(folder_id);
CREATE TABLE IF NOT EXISTS ${DOCUMENT_TABLES.lookups} (
  tenant_id text NOT NULL, context_id ` +
    `text NOT NULL, type_name text NOT NULL, field text NOT NULL,
  k1 text COLLATE "C" NOT NULL, k2 text ` +
    `COLLATE "C" NOT NULL, k3 text COLLATE "C" NOT NULL, sort_key text COLLATE "C" NOT NULL,
  document_id ` +
    `text NOT NULL);
CREATE INDEX IF NOT EXISTS ${DOCUMENT_INDEXES.documentLookupsKey} ON ${DOCUMENT_TABLES.lookups} (tenant_id, ` +
    `context_id, type_name, field, k1, k2, k3, sort_key, document_id);
CREATE INDEX IF NOT EXISTS ` +
    `${DOCUMENT_INDEXES.documentLookupsDoc} ON ${DOCUMENT_TABLES.lookups} (document_id);`,
  async apply(q: SqlQueryable, e: StoredEvent) {
    const m = e.metadata;
    /** Schema-bound documents (a schema and its typeName) are in the lookup index. */
    const index = async (
      documentId: string,
      typeName: string | null,
      schemaId: string | null,
      payload: Record<string, unknown>,
      blindIndex: Record<string, string> | undefined,
      createdAt: string,
      updatedAt: string,
    ) => {
      const def = schemaId && typeName ? (await schemaDocs(q, [schemaId])).get(schemaId) : undefined;
      await replaceLookupRows(
        q,
        DOCUMENT_LOOKUPS,
        {
          id: documentId,
          tenantId: m.tenantId,
          contextId: m.contextId,
          typeName: typeName ?? '',
          payload,
          blindIndex,
          createdAt,
          updatedAt,
        },
        def,
      );
    };
    /** A processing event: `set` applies when the row is older than this event (and `cond` holds). */
    const step = (documentId: string, set: string, args: unknown[], cond = 'TRUE') =>
      q.query(
        `UPDATE ${DOCUMENT_TABLES.documents} SET ${set}, revision = $2 WHERE document_id = $1 AND revision < $2 AND ` +
          `(${cond})`,
        [documentId, e.revision, ...args],
      );
    switch (e.type) {
      case 'DocumentCreated': {
        const d = e.data;
        const inserted = await q.query(
          `INSERT INTO ${DOCUMENT_TABLES.documents} (document_id, tenant_id, context_id, title, source, status, ` +
            `index_failure,
             index_mode, store_text, folder_id, payload, schema_id, schema_version, type_name, user_id, scopes,
             external_id, file_name, file_type, file_size, file_ref, upload_id, text_ref, text_bytes, text_revision,
             text_retained, created_at, updated_at, version, revision)
           VALUES ($1,$2,$3,$4,$5,$6,NULL,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,NULL,NULL,$19,
             NULL,NULL,0,false,$20,$20,1,$21)
           ON CONFLICT (document_id) DO NOTHING RETURNING document_id`,
          [
            d.documentId,
            m.tenantId,
            m.contextId,
            d.title,
            d.source,
            d.source === 'file' ? 'PENDING_UPLOAD' : 'PENDING_INDEX',
            d.indexMode,
            d.storeText,
            d.folderId,
            JSON.stringify(d.payload),
            d.schemaId,
            d.schemaVersion,
            d.typeName,
            d.userId,
            JSON.stringify(d.scopes),
            d.externalId,
            d.fileName,
            d.fileType,
            d.uploadId,
            m.occurredAt,
            e.revision,
          ],
        );
        if (inserted.rows.length)
          await index(d.documentId, d.typeName, d.schemaId, d.payload, d.blindIndex, m.occurredAt, m.occurredAt);
        return;
      }
      case 'DocumentUpdated': {
        const d = e.data;
        const prev = (
          await q.query<{ created_at: Date | string }>(
            `SELECT created_at FROM ${DOCUMENT_TABLES.documents} WHERE document_id = $1 AND revision < $2`,
            [d.documentId, e.revision],
          )
        ).rows[0];
        if (!prev) return;
        await step(
          d.documentId,
          'title = $3, folder_id = $4, payload = $5, schema_id = $6, schema_version = $7, type_name = $8, ' +
            'user_id = $9, scopes = $10, updated_at = $11, version = version + 1',
          [
            d.title,
            d.folderId,
            JSON.stringify(d.payload),
            d.schemaId,
            d.schemaVersion,
            d.typeName,
            d.userId,
            JSON.stringify(d.scopes),
            m.occurredAt,
          ],
        );
        await index(
          d.documentId,
          d.typeName,
          d.schemaId,
          d.payload,
          d.blindIndex,
          new Date(prev.created_at).toISOString(),
          m.occurredAt,
        );
        return;
      }
      case 'DocumentUploadRequested': {
        const d = e.data;
        await step(
          d.documentId,
          `status = 'PENDING_UPLOAD', index_failure = NULL, upload_id = $3, file_name = $4, file_type = $5`,
          [d.uploadId, d.fileName, d.fileType],
        );
        return;
      }
      case 'DocumentFileUploaded': {
        const d = e.data;
        await step(
          d.documentId,
          `status = 'UPLOADED', file_ref = $4, file_size = $5, file_type = $6, updated_at = $7`,
          [d.uploadId, d.fileRef, d.fileSize, d.fileType, m.occurredAt],
          'upload_id = $3',
        );
        return;
      }
      case 'DocumentExtractionStarted': {
        const d = e.data;
        await step(d.documentId, `status = 'EXTRACTING'`, [d.uploadId], 'upload_id = $3');
        return;
      }
      case 'DocumentTextReady': {
        const d = e.data;
        await step(
          d.documentId,
          `status = 'PENDING_INDEX', index_failure = NULL, text_ref = $3, text_bytes = $4, text_revision ` +
            `= $5, text_retained = true`,
          [d.textRef, d.textBytes, d.textRevision],
        );
        return;
      }
      case 'DocumentIndexed':
      case 'DocumentIndexSkipped': {
        const d = e.data;
        await step(d.documentId, 'status = $4', [d.textRevision, d.status], 'text_revision = $3');
        return;
      }
      case 'DocumentFailed': {
        const d = e.data;
        await step(d.documentId, `status = 'FAILED', index_failure = $3`, [
          JSON.stringify({ code: d.code, message: d.message }),
        ]);
        return;
      }
      case 'DocumentTextDiscarded': {
        const d = e.data;
        await step(d.documentId, 'text_retained = false', [d.textRevision], 'text_revision = $3');
        return;
      }
      case 'DocumentDeleted':
        await deleteRows(q, [DOCUMENT_TABLES.documents, DOCUMENT_TABLES.lookups], 'document_id', e.data.documentId);
        return;
      case 'ContextDeleted':
      case 'TenantTornDown':
        await deleteRemovedRows(q, e, [DOCUMENT_TABLES.lookups, DOCUMENT_TABLES.documents]);
        return;
    }
  },
});
