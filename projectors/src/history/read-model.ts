import type { SchemaDefinition } from '@svc/contracts';
import {
  capabilitiesOf,
  documentView,
  folderView,
  recordView,
  schemaView,
  type SqlQueryable,
  type StoredEvent,
  DOCUMENT_TABLES,
  FOLDER_TABLES,
  HISTORY_INDEXES,
  HISTORY_TABLES,
  RECORD_TABLES,
  SCHEMA_TABLES,
} from '@svc/domain';
import type { SqlProjection } from '../runtime/runner';
import { schemaDocsOfRun } from '../records/read-model';
import { deleteRemovedRows } from '../runtime/removals';

/** The read model holding each kind of entity with a history (its id column is `<kind>_id`). */
const ENTITY_TABLES = {
  record: RECORD_TABLES.records,
  document: DOCUMENT_TABLES.documents,
  folder: FOLDER_TABLES.folders,
} as const;

/**
 * Version rows (one per state change, oldest first, sensitive values masked)
 * and tombstones. Runs before the entity projections in the same batch, so it
 * sees each entity as it was before the event.
 */
export const historyProjection = (): SqlProjection => ({
  name: 'history',
  tables: [HISTORY_TABLES.versions, HISTORY_TABLES.tombstones],
  ddl:
    `
CREATE TABLE IF NOT EXISTS ${HISTORY_TABLES.versions} (
  row_id text PRIMARY KEY, position bigint NOT NULL, ` +
    `tenant_id text NOT NULL, context_id text NOT NULL, entity_id text NOT NULL,
  entity_kind text NOT ` +
    `NULL, version int NOT NULL, event_type text NOT NULL, recorded_at timestamptz NOT NULL, actor jsonb NOT ` +
    `NULL,
  request_id text, state jsonb);
CREATE INDEX IF NOT EXISTS ${HISTORY_INDEXES.versionsEntity} ON ${HISTORY_TABLES.versions} ` +
    `(entity_id, position);
CREATE TABLE IF NOT EXISTS ${HISTORY_TABLES.tombstones} (
  entity_id text PRIMARY KEY, ` +
    `tenant_id text NOT NULL, context_id text NOT NULL, entity_kind text NOT NULL, type_name text,
  ` +
    `external_id text, deleted_at timestamptz NOT NULL, deleted_by text, last_version int NOT NULL, owner ` +
    `jsonb NOT NULL);
CREATE INDEX IF NOT EXISTS ${HISTORY_INDEXES.versionsContext} ON ${HISTORY_TABLES.versions} (tenant_id, ` +
    `context_id);
CREATE INDEX IF NOT EXISTS ${HISTORY_INDEXES.tombstonesContext} ON ${HISTORY_TABLES.tombstones} (tenant_id, ` +
    `context_id);`,
  /** A run of RecordCreated events: their first version rows in one statement. */
  async applyMany(q: SqlQueryable, events: StoredEvent[]) {
    const created = events.filter((e) => e.type === 'RecordCreated');
    if (!created.length) return;
    const defs = await schemaDocsOfRun(q, created);
    const cols: unknown[][] = Array.from({ length: 12 }, () => []);
    for (const e of created) {
      const m = e.metadata;
      const { recordId, ...rest } = e.data;
      const def = defs.get(rest.schemaId);
      if (def && capabilitiesOf(def).auditHistory === false) continue;
      const state = recordView(
        {
          id: recordId,
          ...rest,
          createdBy: m.actorKeyId,
          createdAt: m.occurredAt,
          updatedAt: m.occurredAt,
          version: 1,
        },
        def,
        { full: true },
      );
      [
        e.id,
        e.position,
        m.tenantId,
        m.contextId,
        recordId,
        'record',
        1,
        e.type,
        m.occurredAt,
        JSON.stringify({ keyId: m.actorKeyId, userId: m.userId }),
        m.requestId,
        JSON.stringify(state),
      ].forEach((v, i) => cols[i].push(v));
    }
    if (!cols[0].length) return;
    await q.query(
      `INSERT INTO ${HISTORY_TABLES.versions} SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], ` +
        `$5::text[], $6::text[], $7::int[], $8::text[], $9::timestamptz[], $10::jsonb[], $11::text[], ` +
        `$12::jsonb[])
       ON CONFLICT (row_id) DO NOTHING`,
      cols,
    );
  },
  async apply(q: SqlQueryable, e: StoredEvent) {
    const m = e.metadata;
    const row = async (entityId: string, kind: string, version: number, state: unknown) =>
      q.query(
        `INSERT INTO ${HISTORY_TABLES.versions} VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12) ON CONFLICT ` +
          `(row_id) DO NOTHING`,
        [
          e.id,
          e.position,
          m.tenantId,
          m.contextId,
          entityId,
          kind,
          version,
          e.type,
          m.occurredAt,
          JSON.stringify({ keyId: m.actorKeyId, userId: m.userId }),
          m.requestId,
          state === null ? null : JSON.stringify(state),
        ],
      );
    /** The schema as the schemas read model holds it (its response shape), before this event. */
    const schemaOf = async (schemaId: string) =>
      (
        await q.query<{ doc: ReturnType<typeof schemaView> }>(
          `SELECT doc FROM ${SCHEMA_TABLES.schemas} WHERE schema_id = $1`,
          [schemaId],
        )
      ).rows[0]?.doc;
    /**
     * The entity's row in its read model (ENTITY_TABLES) as it was before this event (this projection runs
     * first); an update reads it only while it is older than the event, so a replayed update adds no row.
     */
    const rowBefore = async (kind: 'record' | 'document' | 'folder', id: string, update: boolean) =>
      (
        await q.query<Record<string, any>>(
          `SELECT * FROM ${ENTITY_TABLES[kind]} WHERE ${kind}_id = $1${update ? ' AND revision < $2' : ''}`,
          update ? [id, e.revision] : [id],
        )
      ).rows[0];
    const audited = (def: SchemaDefinition | undefined) => !def || capabilitiesOf(def).auditHistory !== false;
    const tombstone = (
      id: string,
      kind: string,
      typeName: string | null,
      externalId: string | null,
      lastVersion: number,
      owner: { userId: string | null; scopes: string[] },
    ) =>
      q.query(
        `INSERT INTO ${HISTORY_TABLES.tombstones} VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) ON CONFLICT DO NOTHING`,
        [
          id,
          m.tenantId,
          m.contextId,
          kind,
          typeName,
          externalId,
          m.occurredAt,
          m.actorKeyId,
          lastVersion,
          JSON.stringify(owner),
        ],
      );
    /**
     * A record, document or folder deleted: its last version row (no state) where its schema keeps
     * history (a folder's always does), and its tombstone with the type name and external id `names` gives.
     */
    const deletion = async (
      kind: 'record' | 'document' | 'folder',
      id: string,
      names: (prev: Record<string, any>) => [typeName: string | null, externalId: string | null],
    ) => {
      const prev = await rowBefore(kind, id, false);
      if (!prev) return;
      const def = prev.schema_id ? await schemaOf(prev.schema_id) : undefined;
      if (audited(def)) await row(id, kind, prev.version + 1, null);
      await tombstone(id, kind, ...names(prev), prev.version, { userId: prev.user_id, scopes: prev.scopes });
    };
    switch (e.type) {
      case 'SchemaCreated':
      case 'SchemaUpdated': {
        const d = e.data;
        const version = e.type === 'SchemaUpdated' ? e.data.schemaVersion : 1;
        const prev = await schemaOf(d.schemaId);
        const createdAt = prev?.createdAt ?? m.occurredAt;
        const def = d.definition;
        if (audited(def))
          await row(
            d.schemaId,
            'schema',
            version,
            schemaView({
              exists: true,
              id: d.schemaId,
              tenantId: m.tenantId,
              contextId: m.contextId,
              definition: def,
              schemaVersion: version,
              createdAt,
              updatedAt: m.occurredAt,
            }),
          );
        return;
      }
      case 'SchemaDeleted': {
        const d = e.data;
        const prev = await schemaOf(d.schemaId);
        const last = prev?.schemaVersion ?? 0;
        if (audited(prev)) await row(d.schemaId, 'schema', last + 1, null);
        await tombstone(d.schemaId, 'schema', d.typeName, null, last, {
          userId: prev?.userId ?? null,
          scopes: prev?.scopes ?? [],
        });
        return;
      }
      case 'RecordCreated': {
        const d = e.data;
        const def = await schemaOf(d.schemaId);
        const { recordId, ...rest } = d;
        if (audited(def))
          await row(
            recordId,
            'record',
            1,
            recordView(
              {
                id: recordId,
                ...rest,
                createdBy: m.actorKeyId,
                createdAt: m.occurredAt,
                updatedAt: m.occurredAt,
                version: 1,
              },
              def,
              { full: true },
            ),
          );
        return;
      }
      case 'RecordUpdated': {
        const d = e.data;
        const prev = await rowBefore('record', d.recordId, true);
        if (!prev) return;
        const def = await schemaOf(prev.schema_id);
        const version = prev.version + 1;
        if (audited(def))
          await row(
            d.recordId,
            'record',
            version,
            recordView(
              {
                id: d.recordId,
                typeName: prev.type_name,
                schemaId: prev.schema_id,
                schemaVersion: d.schemaVersion,
                payload: d.payload,
                status: d.status,
                folderId: d.folderId,
                userId: d.userId,
                scopes: d.scopes,
                externalId: prev.external_id,
                indexMode: prev.index_mode,
                createdBy: prev.created_by,
                createdAt: new Date(prev.created_at).toISOString(),
                updatedAt: m.occurredAt,
                version,
              },
              def,
              { full: true },
            ),
          );
        return;
      }
      case 'RecordDeleted': {
        const d = e.data;
        await deletion('record', d.recordId, () => [d.typeName, d.externalId]);
        return;
      }
      // Documents: one row per revision (Created / Updated); processing events change status, not the version, and add
      // no row.
      case 'DocumentCreated': {
        const d = e.data;
        const def = d.schemaId ? await schemaOf(d.schemaId) : undefined;
        if (audited(def))
          await row(
            d.documentId,
            'document',
            1,
            documentView(
              {
                id: d.documentId,
                title: d.title,
                externalId: d.externalId,
                status: d.source === 'file' ? 'PENDING_UPLOAD' : 'PENDING_INDEX',
                indexFailure: null,
                indexMode: d.indexMode,
                storeText: d.storeText,
                folderId: d.folderId,
                payload: d.payload,
                schemaId: d.schemaId,
                schemaVersion: d.schemaVersion,
                textBytes: null,
                userId: d.userId,
                scopes: d.scopes,
                fileType: d.fileType,
                fileSize: null,
                createdAt: m.occurredAt,
                lastModified: m.occurredAt,
                version: 1,
              },
              def,
              { full: true },
            ),
          );
        return;
      }
      case 'DocumentUpdated': {
        const d = e.data;
        const prev = await rowBefore('document', d.documentId, true);
        if (!prev) return;
        const def = d.schemaId ? await schemaOf(d.schemaId) : undefined;
        const version = prev.version + 1;
        if (audited(def))
          await row(
            d.documentId,
            'document',
            version,
            documentView(
              {
                id: d.documentId,
                title: d.title,
                externalId: prev.external_id,
                status: prev.status,
                indexFailure: prev.index_failure,
                indexMode: prev.index_mode,
                storeText: prev.store_text,
                folderId: d.folderId,
                payload: d.payload,
                schemaId: d.schemaId,
                schemaVersion: d.schemaVersion,
                textBytes: prev.text_bytes === null ? null : Number(prev.text_bytes),
                userId: d.userId,
                scopes: d.scopes,
                fileType: prev.file_type,
                fileSize: prev.file_size === null ? null : Number(prev.file_size),
                createdAt: new Date(prev.created_at).toISOString(),
                lastModified: m.occurredAt,
                version,
              },
              def,
              { full: true },
            ),
          );
        return;
      }
      case 'DocumentDeleted': {
        const d = e.data;
        await deletion('document', d.documentId, (prev) => [prev.type_name, d.externalId]);
        return;
      }
      // Folders have no schema: their history is always recorded.
      case 'FolderCreated': {
        const { folderId, ...d } = e.data;
        await row(
          folderId,
          'folder',
          1,
          folderView({ id: folderId, ...d, createdAt: m.occurredAt, lastModified: m.occurredAt, version: 1 }),
        );
        return;
      }
      case 'FolderUpdated': {
        const d = e.data;
        const prev = await rowBefore('folder', d.folderId, true);
        if (!prev) return;
        const version = prev.version + 1;
        await row(
          d.folderId,
          'folder',
          version,
          folderView({
            id: d.folderId,
            name: d.name,
            description: d.description,
            parentFolderId: prev.parent_folder_id,
            slug: prev.slug,
            depth: prev.depth,
            isProtected: prev.is_protected,
            userId: d.userId,
            scopes: d.scopes,
            createdAt: new Date(prev.created_at).toISOString(),
            lastModified: m.occurredAt,
            version,
          }),
        );
        return;
      }
      case 'FolderDeleted':
        await deletion('folder', e.data.folderId, () => [null, null]);
        return;
      case 'ContextDeleted':
      case 'TenantTornDown':
        await deleteRemovedRows(q, e, [HISTORY_TABLES.versions, HISTORY_TABLES.tombstones]);
        return;
    }
  },
});
