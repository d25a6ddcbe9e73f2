import type { SchemaDefinition } from '@svc/contracts';
import { capabilitiesOf, documentView, folderView, recordView, type schemaView, type SqlQueryable, type StoredEvent } from '@svc/domain';
import type { SqlProjection } from '../runtime/runner';
import { schemaDocs } from './records';

/**
 * Version rows (one per state change, oldest first, sensitive values masked)
 * and tombstones. Runs before the entity projections in the same batch, so it
 * sees each entity as it was before the event.
 */
export const historyProjection = (): SqlProjection => ({
  name: 'history',
  tables: ['rm_versions', 'rm_tombstones'],
  ddl: `
CREATE TABLE IF NOT EXISTS rm_versions (
  row_id text PRIMARY KEY, position bigint NOT NULL, tenant_id text NOT NULL, context_id text NOT NULL, entity_id text NOT NULL,
  entity_kind text NOT NULL, version int NOT NULL, event_type text NOT NULL, recorded_at timestamptz NOT NULL, actor jsonb NOT NULL,
  request_id text, state jsonb);
CREATE INDEX IF NOT EXISTS rm_versions_entity ON rm_versions (entity_id, position);
CREATE TABLE IF NOT EXISTS rm_tombstones (
  entity_id text PRIMARY KEY, tenant_id text NOT NULL, context_id text NOT NULL, entity_kind text NOT NULL, type_name text,
  external_id text, deleted_at timestamptz NOT NULL, deleted_by text, last_version int NOT NULL, owner jsonb NOT NULL);
CREATE INDEX IF NOT EXISTS rm_versions_context ON rm_versions (tenant_id, context_id);
CREATE INDEX IF NOT EXISTS rm_tombstones_context ON rm_tombstones (tenant_id, context_id);`,
  /** A run of RecordCreated events: their first version rows in one statement. */
  async applyMany(q: SqlQueryable, events: StoredEvent[]) {
    const created = events.filter((e) => e.type === 'RecordCreated');
    if (!created.length) return;
    const defs = await schemaDocs(q, created.map((e) => e.data.schemaId));
    const cols: unknown[][] = Array.from({ length: 12 }, () => []);
    for (const e of created) {
      const m = e.metadata;
      const { recordId, ...rest } = e.data;
      const def = defs.get(rest.schemaId);
      if (def && capabilitiesOf(def).auditHistory === false) continue;
      const state = recordView({ id: recordId, ...rest, createdBy: m.actorKeyId, createdAt: m.occurredAt, updatedAt: m.occurredAt, version: 1 }, def, { full: true });
      [e.id, e.position, m.tenantId, m.contextId, recordId, 'record', 1, e.type, m.occurredAt, JSON.stringify({ keyId: m.actorKeyId, userId: m.userId }), m.requestId, JSON.stringify(state)].forEach((v, i) => cols[i].push(v));
    }
    if (!cols[0].length) return;
    await q.query(
      `INSERT INTO rm_versions SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[], $9::timestamptz[], $10::jsonb[], $11::text[], $12::jsonb[])
       ON CONFLICT (row_id) DO NOTHING`,
      cols,
    );
  },
  async apply(q: SqlQueryable, e: StoredEvent) {
    const m = e.metadata;
    const row = async (entityId: string, kind: string, version: number, state: unknown) =>
      q.query(
        `INSERT INTO rm_versions VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12) ON CONFLICT (row_id) DO NOTHING`,
        [e.id, e.position, m.tenantId, m.contextId, entityId, kind, version, e.type, m.occurredAt, JSON.stringify({ keyId: m.actorKeyId, userId: m.userId }), m.requestId, state === null ? null : JSON.stringify(state)],
      );
    /** The schema as the schemas read model holds it (its response shape), before this event. */
    const schemaOf = async (schemaId: string) =>
      (await q.query<{ doc: ReturnType<typeof schemaView> }>('SELECT doc FROM rm_schemas WHERE schema_id = $1', [schemaId])).rows[0]?.doc;
    const audited = (def: SchemaDefinition | undefined) => !def || capabilitiesOf(def).auditHistory !== false;
    switch (e.type) {
      case 'SchemaCreated':
      case 'SchemaUpdated': {
        const d = e.data;
        const version = e.type === 'SchemaUpdated' ? e.data.schemaVersion : 1;
        const prev = await schemaOf(d.schemaId);
        const createdAt = prev?.createdAt ?? m.occurredAt;
        const def = d.definition;
        if (audited(def)) await row(d.schemaId, 'schema', version, { id: d.schemaId, ...def, schemaVersion: version, capabilities: capabilitiesOf(def), createdAt, updatedAt: m.occurredAt });
        return;
      }
      case 'SchemaDeleted': {
        const d = e.data;
        const prev = await schemaOf(d.schemaId);
        const last = prev?.schemaVersion ?? 0;
        if (audited(prev)) await row(d.schemaId, 'schema', last + 1, null);
        await q.query(`INSERT INTO rm_tombstones VALUES ($1,$2,$3,'schema',$4,NULL,$5,$6,$7,$8) ON CONFLICT DO NOTHING`, [d.schemaId, m.tenantId, m.contextId, d.typeName, m.occurredAt, m.actorKeyId, last, JSON.stringify({ userId: prev?.userId ?? null, scopes: prev?.scopes ?? [] })]);
        return;
      }
      case 'RecordCreated': {
        const d = e.data;
        const def = await schemaOf(d.schemaId);
        const { recordId, ...rest } = d;
        if (audited(def)) await row(recordId, 'record', 1, recordView({ id: recordId, ...rest, createdBy: m.actorKeyId, createdAt: m.occurredAt, updatedAt: m.occurredAt, version: 1 }, def, { full: true }));
        return;
      }
      case 'RecordUpdated': {
        const d = e.data;
        const prev = (await q.query<Record<string, any>>('SELECT * FROM rm_records WHERE record_id = $1 AND revision < $2', [d.recordId, e.revision])).rows[0];
        if (!prev) return;
        const def = await schemaOf(prev.schema_id);
        const version = prev.version + 1;
        if (audited(def))
          await row(d.recordId, 'record', version, recordView({
            id: d.recordId, typeName: prev.type_name, schemaId: prev.schema_id, schemaVersion: d.schemaVersion, payload: d.payload, status: d.status, folderId: d.folderId,
            userId: d.userId, scopes: d.scopes, externalId: prev.external_id, indexMode: prev.index_mode, createdBy: prev.created_by,
            createdAt: new Date(prev.created_at).toISOString(), updatedAt: m.occurredAt, version,
          }, def, { full: true }));
        return;
      }
      case 'RecordDeleted': {
        const d = e.data;
        const prev = (await q.query<Record<string, any>>('SELECT * FROM rm_records WHERE record_id = $1', [d.recordId])).rows[0];
        if (!prev) return;
        const def = await schemaOf(prev.schema_id);
        if (audited(def)) await row(d.recordId, 'record', prev.version + 1, null);
        await q.query(`INSERT INTO rm_tombstones VALUES ($1,$2,$3,'record',$4,$5,$6,$7,$8,$9) ON CONFLICT DO NOTHING`, [d.recordId, m.tenantId, m.contextId, d.typeName, d.externalId, m.occurredAt, m.actorKeyId, prev.version, JSON.stringify({ userId: prev.user_id, scopes: prev.scopes })]);
        return;
      }
      // Documents: one row per revision (Created / Updated); processing events change status, not the version, and add no row.
      case 'DocumentCreated': {
        const d = e.data;
        const def = d.schemaId ? await schemaOf(d.schemaId) : undefined;
        if (audited(def))
          await row(d.documentId, 'document', 1, documentView({
            id: d.documentId, title: d.title, externalId: d.externalId, status: d.source === 'file' ? 'PENDING_UPLOAD' : 'PENDING_INDEX', indexFailure: null,
            indexMode: d.indexMode, storeText: d.storeText, folderId: d.folderId, payload: d.payload, schemaId: d.schemaId, schemaVersion: d.schemaVersion,
            textBytes: null, userId: d.userId, scopes: d.scopes, fileType: d.fileType, fileSize: null, createdAt: m.occurredAt, lastModified: m.occurredAt, version: 1,
          }, def, { full: true }));
        return;
      }
      case 'DocumentUpdated': {
        const d = e.data;
        const prev = (await q.query<Record<string, any>>('SELECT * FROM rm_documents WHERE document_id = $1 AND revision < $2', [d.documentId, e.revision])).rows[0];
        if (!prev) return;
        const def = d.schemaId ? await schemaOf(d.schemaId) : undefined;
        const version = prev.version + 1;
        if (audited(def))
          await row(d.documentId, 'document', version, documentView({
            id: d.documentId, title: d.title, externalId: prev.external_id, status: prev.status, indexFailure: prev.index_failure, indexMode: prev.index_mode,
            storeText: prev.store_text, folderId: d.folderId, payload: d.payload, schemaId: d.schemaId, schemaVersion: d.schemaVersion,
            textBytes: prev.text_bytes === null ? null : Number(prev.text_bytes), userId: d.userId, scopes: d.scopes, fileType: prev.file_type,
            fileSize: prev.file_size === null ? null : Number(prev.file_size), createdAt: new Date(prev.created_at).toISOString(), lastModified: m.occurredAt, version,
          }, def, { full: true }));
        return;
      }
      case 'DocumentDeleted': {
        const d = e.data;
        const prev = (await q.query<Record<string, any>>('SELECT * FROM rm_documents WHERE document_id = $1', [d.documentId])).rows[0];
        if (!prev) return;
        const def = prev.schema_id ? await schemaOf(prev.schema_id) : undefined;
        if (audited(def)) await row(d.documentId, 'document', prev.version + 1, null);
        await q.query(`INSERT INTO rm_tombstones VALUES ($1,$2,$3,'document',$4,$5,$6,$7,$8,$9) ON CONFLICT DO NOTHING`, [d.documentId, m.tenantId, m.contextId, prev.type_name, d.externalId, m.occurredAt, m.actorKeyId, prev.version, JSON.stringify({ userId: prev.user_id, scopes: prev.scopes })]);
        return;
      }
      // Folders have no schema: their history is always recorded.
      case 'FolderCreated': {
        const { folderId, ...d } = e.data;
        await row(folderId, 'folder', 1, folderView({ id: folderId, ...d, createdAt: m.occurredAt, lastModified: m.occurredAt, version: 1 }));
        return;
      }
      case 'FolderUpdated': {
        const d = e.data;
        const prev = (await q.query<Record<string, any>>('SELECT * FROM rm_folders WHERE folder_id = $1 AND revision < $2', [d.folderId, e.revision])).rows[0];
        if (!prev) return;
        const version = prev.version + 1;
        await row(d.folderId, 'folder', version, folderView({
          id: d.folderId, name: d.name, description: d.description, parentFolderId: prev.parent_folder_id, slug: prev.slug, depth: prev.depth,
          isProtected: prev.is_protected, userId: d.userId, scopes: d.scopes, createdAt: new Date(prev.created_at).toISOString(), lastModified: m.occurredAt, version,
        }));
        return;
      }
      case 'FolderDeleted': {
        const d = e.data;
        const prev = (await q.query<Record<string, any>>('SELECT * FROM rm_folders WHERE folder_id = $1', [d.folderId])).rows[0];
        if (!prev) return;
        await row(d.folderId, 'folder', prev.version + 1, null);
        await q.query(`INSERT INTO rm_tombstones VALUES ($1,$2,$3,'folder',NULL,NULL,$4,$5,$6,$7) ON CONFLICT DO NOTHING`, [d.folderId, m.tenantId, m.contextId, m.occurredAt, m.actorKeyId, prev.version, JSON.stringify({ userId: prev.user_id, scopes: prev.scopes })]);
        return;
      }
      case 'ContextDeleted': {
        const d = e.data;
        await q.query('DELETE FROM rm_versions WHERE tenant_id = $1 AND context_id = $2', [d.tenantId, d.contextId]);
        await q.query('DELETE FROM rm_tombstones WHERE tenant_id = $1 AND context_id = $2', [d.tenantId, d.contextId]);
        return;
      }
      case 'TenantTornDown': {
        const d = e.data;
        await q.query('DELETE FROM rm_versions WHERE tenant_id = $1', [d.tenantId]);
        await q.query('DELETE FROM rm_tombstones WHERE tenant_id = $1', [d.tenantId]);
        return;
      }
    }
  },
});
