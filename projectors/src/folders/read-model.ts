import {
  DOCUMENT_TABLES,
  FOLDER_INDEXES,
  FOLDER_TABLES,
  type FolderContents,
  RECORD_TABLES,
  type SqlQueryable,
  type StoredEvent,
} from '@svc/domain';
import type { SqlProjection } from '../runtime/runner';
import { deleteRemovedRows } from '../runtime/removals';

/**
 * Folders by tenant and context. Every update is guarded by the stream
 * revision, so replaying an event (or a whole log) changes nothing. A delete
 * removes the row (the tombstone lives in the history projection).
 */
export const foldersProjection = (): SqlProjection => ({
  name: 'folders',
  tables: [FOLDER_TABLES.folders],
  ddl:
    `
CREATE TABLE IF NOT EXISTS ${FOLDER_TABLES.folders} (
  folder_id text PRIMARY KEY, tenant_id text NOT NULL, ` +
    `context_id text NOT NULL, parent_folder_id text, name text NOT NULL,
  description text, slug text NOT ` +
    `NULL, depth int NOT NULL, is_protected boolean NOT NULL, user_id text, scopes jsonb NOT NULL,
  ` +
    `created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, version int NOT NULL, revision bigint ` +
    `NOT NULL);
CREATE INDEX IF NOT EXISTS ${FOLDER_INDEXES.foldersList} ON ${FOLDER_TABLES.folders} (tenant_id, context_id, ` +
    `created_at, ` +
    `folder_id);
CREATE INDEX IF NOT EXISTS ${FOLDER_INDEXES.foldersParent} ON ${FOLDER_TABLES.folders} (parent_folder_id);`,
  async apply(q: SqlQueryable, e: StoredEvent) {
    const m = e.metadata;
    switch (e.type) {
      case 'FolderCreated': {
        const d = e.data;
        await q.query(
          `INSERT INTO ${FOLDER_TABLES.folders} (folder_id, tenant_id, context_id, parent_folder_id, name, ` +
            `description, ` +
            `slug, depth, is_protected, user_id, scopes,
             created_at, updated_at, version, ` +
            `revision)
           VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$12,1,$13) ON CONFLICT ` +
            `(folder_id) DO NOTHING`,
          [
            d.folderId,
            m.tenantId,
            m.contextId,
            d.parentFolderId,
            d.name,
            d.description,
            d.slug,
            d.depth,
            d.isProtected,
            d.userId,
            JSON.stringify(d.scopes),
            m.occurredAt,
            e.revision,
          ],
        );
        return;
      }
      case 'FolderUpdated': {
        const d = e.data;
        await q.query(
          `UPDATE ${FOLDER_TABLES.folders} SET name = $2, description = $3, user_id = $4, scopes = $5, updated_at = ` +
            `$6, ` +
            `version = version + 1, revision = $7
           WHERE folder_id = $1 AND revision < $7`,
          [d.folderId, d.name, d.description, d.userId, JSON.stringify(d.scopes), m.occurredAt, e.revision],
        );
        return;
      }
      case 'FolderDeleted':
        await q.query(`DELETE FROM ${FOLDER_TABLES.folders} WHERE folder_id = $1`, [e.data.folderId]);
        return;
      case 'ContextDeleted':
      case 'TenantTornDown':
        await deleteRemovedRows(q, e, [FOLDER_TABLES.folders]);
        return;
    }
  },
});

/**
 * What a folder can hold, by read-model table and the column naming the
 * folder. A table that does not exist (a feature not deployed) counts nothing.
 */
export const FOLDER_MEMBERS: ReadonlyArray<{ table: string; column: string }> = [
  { table: FOLDER_TABLES.folders, column: 'parent_folder_id' },
  { table: RECORD_TABLES.records, column: 'folder_id' },
  { table: DOCUMENT_TABLES.documents, column: 'folder_id' },
];

/** The FolderContents port on the read models: counts every member, whoever owns it. */
export const sqlFolderContents = (q: SqlQueryable): FolderContents => ({
  async count(tenantId, contextId, folderId) {
    const { rows: present } = await q.query<{ table_name: string; column_name: string }>(
      `SELECT table_name, column_name FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = ANY($1::text[]) AND column_name = ANY($2::text[])`,
      [FOLDER_MEMBERS.map((t) => t.table), FOLDER_MEMBERS.map((t) => t.column)],
    );
    let n = 0;
    for (const { table, column } of FOLDER_MEMBERS) {
      if (!present.some((p) => p.table_name === table && p.column_name === column)) continue;
      const { rows } = await q.query<{ n: string | number }>(
        `SELECT count(*) AS n FROM ${table} WHERE tenant_id = $1 AND context_id = $2 AND ${column} = $3`,
        [tenantId, contextId, folderId],
      );
      n += Number(rows[0].n);
    }
    return n;
  },
});
