import {
  ownerKeyOf,
  schemaView,
  type SqlQueryable,
  type StoredEvent,
  SCHEMA_INDEXES,
  SCHEMA_TABLES,
} from '@svc/domain';
import type { SqlProjection } from '../runtime/runner';
import { deleteRemovedRows } from '../runtime/removals';

/** Schemas by tenant and context; `doc` is the response shape. Guarded by stream revision. */
export const schemasProjection = (): SqlProjection => ({
  name: 'schemas',
  tables: [SCHEMA_TABLES.schemas],
  ddl:
    `
CREATE TABLE IF NOT EXISTS ${SCHEMA_TABLES.schemas} (
  schema_id text PRIMARY KEY, tenant_id text NOT NULL, ` +
    `context_id text NOT NULL, type_name text NOT NULL,
  owner_key text NOT NULL, doc jsonb NOT NULL, ` +
    `revision bigint NOT NULL, created_at timestamptz NOT NULL, deleted boolean NOT NULL DEFAULT ` +
    `false);
CREATE INDEX IF NOT EXISTS ${SCHEMA_INDEXES.schemasList} ON ${SCHEMA_TABLES.schemas} (tenant_id, context_id, ` +
    `created_at, ` +
    `schema_id);`,
  async apply(q: SqlQueryable, e: StoredEvent) {
    const m = e.metadata;
    switch (e.type) {
      case 'SchemaCreated': {
        const d = e.data;
        const def = d.definition;
        const doc = schemaView({
          exists: true,
          id: d.schemaId,
          tenantId: m.tenantId,
          contextId: m.contextId,
          definition: def,
          schemaVersion: 1,
          createdAt: m.occurredAt,
          updatedAt: m.occurredAt,
        });
        await q.query(
          `INSERT INTO ${SCHEMA_TABLES.schemas} (schema_id, tenant_id, context_id, type_name, owner_key, doc, ` +
            `revision, created_at)
           VALUES ($1,$2,$3,$4,$5,$6,$7,$8) ON CONFLICT (schema_id) DO NOTHING`,
          [
            d.schemaId,
            m.tenantId,
            m.contextId,
            d.typeName,
            ownerKeyOf(def),
            JSON.stringify(doc),
            e.revision,
            m.occurredAt,
          ],
        );
        return;
      }
      case 'SchemaUpdated': {
        const d = e.data;
        const { rows } = await q.query<{ doc: { createdAt: string } }>(
          `SELECT doc FROM ${SCHEMA_TABLES.schemas} WHERE schema_id = $1 AND revision < $2`,
          [d.schemaId, e.revision],
        );
        if (!rows.length) return;
        const doc = schemaView({
          exists: true,
          id: d.schemaId,
          tenantId: m.tenantId,
          contextId: m.contextId,
          definition: d.definition,
          schemaVersion: d.schemaVersion,
          createdAt: rows[0].doc.createdAt,
          updatedAt: m.occurredAt,
        });
        await q.query(`UPDATE ${SCHEMA_TABLES.schemas} SET doc = $2, revision = $3 WHERE schema_id = $1`, [
          d.schemaId,
          JSON.stringify(doc),
          e.revision,
        ]);
        return;
      }
      case 'SchemaDeleted':
        await q.query(
          `UPDATE ${SCHEMA_TABLES.schemas} SET deleted = true, revision = $2 WHERE schema_id = $1 AND revision < $2`,
          [e.data.schemaId, e.revision],
        );
        return;
      case 'ContextDeleted':
      case 'TenantTornDown':
        await deleteRemovedRows(q, e, [SCHEMA_TABLES.schemas]);
        return;
    }
  },
});
