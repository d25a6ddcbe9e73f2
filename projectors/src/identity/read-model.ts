import {
  IDENTITY_INDEXES,
  IDENTITY_TABLES,
  type NamespaceUsage,
  type SqlQueryable,
  type StoredEvent,
} from '@svc/domain';
import type { SqlProjection } from '../runtime/runner';
import { deleteRemovedRows } from '../runtime/removals';

/**
 * Namespaces (per tenant: they outlive the context that registered them),
 * users and entities (per tenant and context). Updates are guarded by the
 * stream revision, so replays change nothing.
 */
export const identityProjection = (): SqlProjection => ({
  name: 'identity',
  tables: [IDENTITY_TABLES.namespaces, IDENTITY_TABLES.users, IDENTITY_TABLES.entities],
  ddl:
    `
CREATE TABLE IF NOT EXISTS ${IDENTITY_TABLES.namespaces} (
  tenant_id text NOT NULL, name text NOT NULL, description ` +
    `text, created_at timestamptz NOT NULL, revision bigint NOT NULL,
  PRIMARY KEY (tenant_id, ` +
    `name));
CREATE TABLE IF NOT EXISTS ${IDENTITY_TABLES.users} (
  user_id text PRIMARY KEY, tenant_id text NOT NULL, ` +
    `context_id text NOT NULL, email text, email_key text, display_name text,
  payload jsonb NOT NULL, ` +
    `schema_id text, scopes jsonb NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT ` +
    `NULL,
  version int NOT NULL, revision bigint NOT NULL);
CREATE INDEX IF NOT EXISTS ${IDENTITY_INDEXES.usersList} ON ` +
    `${IDENTITY_TABLES.users} (tenant_id, context_id, created_at, user_id);
CREATE TABLE IF NOT EXISTS ${IDENTITY_TABLES.entities} (
  ` +
    `entity_id text PRIMARY KEY, tenant_id text NOT NULL, context_id text NOT NULL, namespace text NOT NULL, ` +
    `key text NOT NULL,
  payload jsonb NOT NULL, schema_id text, created_at timestamptz NOT NULL, ` +
    `updated_at timestamptz NOT NULL, version int NOT NULL, revision bigint NOT NULL);
CREATE INDEX IF NOT ` +
    `EXISTS ${IDENTITY_INDEXES.entitiesList} ON ${IDENTITY_TABLES.entities} (tenant_id, context_id, created_at, ` +
    `entity_id);
CREATE INDEX IF ` +
    `NOT EXISTS ${IDENTITY_INDEXES.entitiesNamespace} ON ${IDENTITY_TABLES.entities} (tenant_id, namespace);`,
  async apply(q: SqlQueryable, e: StoredEvent) {
    const m = e.metadata;
    switch (e.type) {
      case 'NamespaceCreated': {
        const d = e.data;
        await q.query(
          `INSERT INTO ${IDENTITY_TABLES.namespaces} (tenant_id, name, description, created_at, revision) VALUES ` +
            `($1,$2,$3,$4,$5)
           ON CONFLICT (tenant_id, name) DO UPDATE SET description = ` +
            `excluded.description, created_at = excluded.created_at, revision = excluded.revision
           ` +
            `WHERE ${IDENTITY_TABLES.namespaces}.revision < excluded.revision`,
          [m.tenantId, d.name, d.description, m.occurredAt, e.revision],
        );
        return;
      }
      case 'NamespaceDeleted':
        await q.query(
          `DELETE FROM ${IDENTITY_TABLES.namespaces} WHERE tenant_id = $1 AND name = $2 AND revision < $3`,
          [m.tenantId, e.data.name, e.revision],
        );
        return;
      case 'UserCreated': {
        const d = e.data;
        await q.query(
          `INSERT INTO ${IDENTITY_TABLES.users} (user_id, tenant_id, context_id, email, email_key, display_name, ` +
            `payload, ` +
            `schema_id, scopes, created_at, updated_at, version, revision)
           VALUES ` +
            `($1,$2,$3,$4,lower(trim($4)),$5,$6,$7,$8,$9,$9,1,$10) ON CONFLICT (user_id) DO NOTHING`,
          [
            d.userId,
            m.tenantId,
            m.contextId,
            d.email,
            d.displayName,
            JSON.stringify(d.payload),
            d.schemaId,
            JSON.stringify(d.scopes),
            m.occurredAt,
            e.revision,
          ],
        );
        return;
      }
      case 'UserUpdated': {
        const d = e.data;
        await q.query(
          `UPDATE ${IDENTITY_TABLES.users} SET email = $2, email_key = lower(trim($2)), display_name = $3, payload ` +
            `= $4, ` +
            `scopes = $5, updated_at = $6, version = version + 1, revision = $7
           WHERE user_id = ` +
            `$1 AND revision < $7`,
          [
            d.userId,
            d.email,
            d.displayName,
            JSON.stringify(d.payload),
            JSON.stringify(d.scopes),
            m.occurredAt,
            e.revision,
          ],
        );
        return;
      }
      case 'UserDeleted':
        await q.query(`DELETE FROM ${IDENTITY_TABLES.users} WHERE user_id = $1`, [e.data.userId]);
        return;
      case 'EntityCreated': {
        const d = e.data;
        await q.query(
          `INSERT INTO ${IDENTITY_TABLES.entities} (entity_id, tenant_id, context_id, namespace, key, payload, ` +
            `schema_id, ` +
            `created_at, updated_at, version, revision)
           VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$8,1,$9) ` +
            `ON CONFLICT (entity_id) DO NOTHING`,
          [
            d.entityId,
            m.tenantId,
            m.contextId,
            d.namespace,
            d.key,
            JSON.stringify(d.payload),
            d.schemaId,
            m.occurredAt,
            e.revision,
          ],
        );
        return;
      }
      case 'EntityUpdated': {
        const d = e.data;
        await q.query(
          `UPDATE ${IDENTITY_TABLES.entities} SET payload = $2, updated_at = $3, version = version + 1, revision = ` +
            `$4 ` +
            'WHERE entity_id = $1 AND revision < $4',
          [d.entityId, JSON.stringify(d.payload), m.occurredAt, e.revision],
        );
        return;
      }
      case 'EntityDeleted':
        await q.query(`DELETE FROM ${IDENTITY_TABLES.entities} WHERE entity_id = $1`, [e.data.entityId]);
        return;
      // Namespaces are the tenant's: they outlive a context and go with the tenant.
      case 'ContextDeleted':
        await deleteRemovedRows(q, e, [IDENTITY_TABLES.users, IDENTITY_TABLES.entities]);
        return;
      case 'TenantTornDown':
        await deleteRemovedRows(q, e, [IDENTITY_TABLES.namespaces, IDENTITY_TABLES.users, IDENTITY_TABLES.entities]);
        return;
    }
  },
});

/** The NamespaceUsage port on the read models. */
export const sqlNamespaceUsage = (q: SqlQueryable): NamespaceUsage => ({
  async entities(tenantId, namespace) {
    const { rows } = await q.query<{ n: string | number }>(
      `SELECT count(*) AS n FROM ${IDENTITY_TABLES.entities} WHERE tenant_id = $1 AND namespace = $2`,
      [tenantId, namespace],
    );
    return Number(rows[0].n);
  },
});
