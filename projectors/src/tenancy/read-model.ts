import {
  accountDecider,
  CREDENTIAL_CHANGE_CHANNEL,
  type RootKeyIndex,
  type SqlQueryable,
  type StoredEvent,
  type TenantContexts,
  type TenantDirectory,
  TENANCY_INDEXES,
  TENANCY_TABLES,
} from '@svc/domain';
import type { EventData } from '@svc/contracts';
import type { SqlProjection } from '../runtime/runner';

/** Revokes a credential and every credential minted from it, transitively (children never outlive their parent). */
const REVOKE_WITH_DESCENDANTS = `
WITH RECURSIVE doomed(id) AS (
  SELECT $1::text
  UNION
  SELECT c.credential_id FROM ${TENANCY_TABLES.credentials} c JOIN doomed d ON c.parent_id = d.id
)
UPDATE ${TENANCY_TABLES.credentials} SET revoked = true WHERE credential_id IN (SELECT id FROM doomed) AND NOT revoked`;

/**
 * This process's credential cache around a revocation: `revoking` as it is applied (inside the transaction),
 * `revoked` once that transaction has committed (query-api CredentialResolver hold / release).
 */
export interface RevocationHooks {
  revoking(): void;
  revoked(): void;
}

/** Accounts, their tenants and contexts, credentials (by secret hash) and the identity providers tenants accept. */
export const tenancyProjection = (hooks?: RevocationHooks): SqlProjection => {
  /**
   * A revocation was applied and its commit not yet heard (a rolled-back batch is retried, so the next commit ends it).
   */
  let pending = false;
  /**
   * Revokes credentials, then tells other processes' credential caches to forget (delivered when the projection's
   * transaction commits).
   */
  const revoke = async (q: SqlQueryable, statement: string, args: unknown[]) => {
    pending = true;
    hooks?.revoking();
    await q.query(statement, args);
    await q.query('SELECT pg_notify($1, $2)', [CREDENTIAL_CHANGE_CHANNEL, '']);
  };
  return {
    name: 'tenancy',
    tables: [
      TENANCY_TABLES.accounts,
      TENANCY_TABLES.tenants,
      TENANCY_TABLES.contexts,
      TENANCY_TABLES.credentials,
      TENANCY_TABLES.jwtIssuers,
    ],
    ddl:
      `
CREATE TABLE IF NOT EXISTS ${TENANCY_TABLES.accounts} (
  account_id text PRIMARY KEY, doc jsonb NOT NULL, created_at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS ${TENANCY_TABLES.tenants} (
  tenant_id text PRIMARY KEY, account_id text NOT NULL, environment text NOT NULL, default_context_id text NOT NULL);
CREATE TABLE IF NOT EXISTS ${TENANCY_TABLES.contexts} (
  context_id text PRIMARY KEY, tenant_id text NOT NULL, account_id text NOT NULL, name text NOT NULL,
  is_default boolean NOT NULL, created_at timestamptz NOT NULL, deleted_at timestamptz);
CREATE INDEX IF NOT EXISTS ${TENANCY_INDEXES.contextsTenant} ON ${TENANCY_TABLES.contexts} (tenant_id, created_at, ` +
      `context_id);
CREATE TABLE IF NOT EXISTS ${TENANCY_TABLES.credentials} (
  credential_id text PRIMARY KEY, secret_hash text NOT NULL UNIQUE, account_id text NOT NULL, kind text NOT NULL,
  tenant_id text, environment text, context_id text, cross_context boolean NOT NULL, allowed_actions jsonb NOT NULL,
  data_scope jsonb, user_id text, expires_at timestamptz, wire_version_pin text, revoked boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL, parent_id text);
ALTER TABLE ${TENANCY_TABLES.credentials} ADD COLUMN IF NOT EXISTS parent_id text;
ALTER TABLE ${TENANCY_TABLES.tenants} ADD COLUMN IF NOT EXISTS torn_down_at timestamptz;
CREATE INDEX IF NOT EXISTS ${TENANCY_INDEXES.credentialsTenant} ON ${TENANCY_TABLES.credentials} (tenant_id);
CREATE INDEX IF NOT EXISTS ${TENANCY_INDEXES.credentialsParent} ON ${TENANCY_TABLES.credentials} (parent_id) WHERE ` +
      `parent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS ${TENANCY_INDEXES.credentialsRoot} ON ${TENANCY_TABLES.credentials} (tenant_id) WHERE ` +
      `kind = 'root' AND NOT revoked;
CREATE TABLE IF NOT EXISTS ${TENANCY_TABLES.jwtIssuers} (
  issuer text NOT NULL, audience text NOT NULL, tenant_id text NOT NULL, ord int NOT NULL, doc jsonb NOT NULL,
  PRIMARY KEY (issuer, audience));
CREATE INDEX IF NOT EXISTS ${TENANCY_INDEXES.jwtIssuersTenant} ON ${TENANCY_TABLES.jwtIssuers} (tenant_id, ord);`,
    async apply(q: SqlQueryable, e: StoredEvent) {
      const at = e.metadata.occurredAt;
      switch (e.type) {
        case 'AccountOpened': {
          const d = e.data;
          await q.query(
            `INSERT INTO ${TENANCY_TABLES.accounts} (account_id, doc, created_at) VALUES ($1, $2, $3) ON CONFLICT ` +
              `DO NOTHING`,
            [d.accountId, JSON.stringify(d), at],
          );
          for (const env of ['live', 'test'] as const) {
            await q.query(`INSERT INTO ${TENANCY_TABLES.tenants} VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [
              d.tenants[env].tenantId,
              d.accountId,
              env,
              d.tenants[env].contextId,
            ]);
          }
          return;
        }
        case 'AccountChanged': {
          const d = e.data;
          const { rows } = await q.query<{ doc: EventData<'AccountOpened'> }>(
            `SELECT doc FROM ${TENANCY_TABLES.accounts} WHERE account_id = $1`,
            [d.accountId],
          );
          if (!rows.length) return;
          // The account's own fold, so the read model and the write side never disagree on a change.
          const next = accountDecider.evolve({ exists: true, ...rows[0].doc }, e);
          if (!next.exists) return;
          const { exists: _, ...doc } = next;
          await q.query(`UPDATE ${TENANCY_TABLES.accounts} SET doc = $2 WHERE account_id = $1`, [
            d.accountId,
            JSON.stringify(doc),
          ]);
          return;
        }
        case 'ContextCreated': {
          const d = e.data;
          await q.query(
            `INSERT INTO ${TENANCY_TABLES.contexts} VALUES ($1, $2, $3, $4, $5, $6, NULL) ON CONFLICT DO NOTHING`,
            [d.contextId, d.tenantId, d.accountId, d.name, d.isDefault, at],
          );
          return;
        }
        case 'ContextDeleted': {
          const d = e.data;
          await q.query(`UPDATE ${TENANCY_TABLES.contexts} SET deleted_at = $2 WHERE context_id = $1`, [
            d.contextId,
            at,
          ]);
          await revoke(
            q,
            `UPDATE ${TENANCY_TABLES.credentials} SET revoked = true WHERE context_id = $1 AND NOT cross_context`,
            [d.contextId],
          );
          return;
        }
        case 'TenantTornDown': {
          // Every credential of the tenant (root, scoped, minted) stops working; its contexts are gone. The developer
          // token is the account's and stays.
          const d = e.data;
          await q.query(`UPDATE ${TENANCY_TABLES.tenants} SET torn_down_at = $2 WHERE tenant_id = $1`, [
            d.tenantId,
            at,
          ]);
          await q.query(
            `UPDATE ${TENANCY_TABLES.contexts} SET deleted_at = $2 WHERE tenant_id = $1 AND deleted_at IS NULL`,
            [d.tenantId, at],
          );
          await revoke(
            q,
            `UPDATE ${TENANCY_TABLES.credentials} SET revoked = true WHERE tenant_id = $1 AND NOT revoked`,
            [d.tenantId],
          );
          await q.query(`DELETE FROM ${TENANCY_TABLES.jwtIssuers} WHERE tenant_id = $1`, [d.tenantId]);
          return;
        }
        case 'JwtIssuersSet': {
          // The whole list replaces the tenant's rows; the pairs' reservations keep any other tenant's rows from
          // clashing.
          const d = e.data;
          await q.query(`DELETE FROM ${TENANCY_TABLES.jwtIssuers} WHERE tenant_id = $1`, [d.tenantId]);
          for (const [ord, i] of d.issuers.entries()) {
            await q.query(
              `INSERT INTO ${TENANCY_TABLES.jwtIssuers} (issuer, audience, tenant_id, ord, doc) VALUES ($1, $2, $3, ` +
                `$4, ` +
                '$5) ON CONFLICT (issuer, audience) DO UPDATE SET tenant_id = $3, ord = $4, doc = $5',
              [i.issuer, i.audience, d.tenantId, ord, JSON.stringify(i)],
            );
          }
          return;
        }
        case 'CredentialIssued': {
          const d = e.data;
          // A child minted by a parent revoked in the meantime is born revoked.
          await q.query(
            `INSERT INTO ${TENANCY_TABLES.credentials} (credential_id, secret_hash, account_id, kind, tenant_id, ` +
              `environment, context_id, cross_context,
               allowed_actions, data_scope, user_id, ` +
              `expires_at, wire_version_pin, created_at, parent_id, revoked)
             VALUES ` +
              `($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,
               COALESCE((SELECT ` +
              `p.revoked FROM ${TENANCY_TABLES.credentials} p WHERE p.credential_id = $15), false)) ON CONFLICT DO ` +
              `NOTHING`,
            [
              d.credentialId,
              d.secretHash,
              d.accountId,
              d.kind,
              d.tenantId,
              d.environment,
              d.contextId,
              d.crossContext,
              JSON.stringify(d.allowedActions),
              d.dataScope ? JSON.stringify(d.dataScope) : null,
              d.userId,
              d.expiresAt,
              d.wireVersionPin,
              at,
              d.parentCredentialId ?? null,
            ],
          );
          return;
        }
        case 'CredentialRevoked':
          await revoke(q, REVOKE_WITH_DESCENDANTS, [e.data.credentialId]);
          return;
      }
    },
    afterCommit() {
      if (!pending) return;
      pending = false;
      hooks?.revoked();
    },
  };
};

/** The live contexts of a tenant, from the read model (tenant teardown waits for it to reach the head first). */
export const sqlTenantContexts = (q: SqlQueryable): TenantContexts => ({
  async liveContexts(tenantId) {
    const { rows } = await q.query<{ context_id: string }>(
      `SELECT context_id FROM ${TENANCY_TABLES.contexts} WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY ` +
        `created_at, context_id`,
      [tenantId],
    );
    return rows.map((r) => r.context_id);
  },
});

/** The live root keys of a tenant, from the read model (the write path waits for it to reach the head first). */
export const sqlRootKeyIndex = (q: SqlQueryable): RootKeyIndex => ({
  async activeRootKeys(tenantId) {
    const { rows } = await q.query<{ credential_id: string }>(
      `SELECT credential_id FROM ${TENANCY_TABLES.credentials} WHERE tenant_id = $1 AND kind = 'root' AND NOT ` +
        `revoked ` +
        `ORDER BY created_at, credential_id`,
      [tenantId],
    );
    return rows.map((r) => r.credential_id);
  },
});

/**
 * Tenants by id, from the read model (a tenant is there from its account's opening, which answers after the read models
 * have it).
 */
export const sqlTenantDirectory = (q: SqlQueryable): TenantDirectory => ({
  async accountOf(tenantId) {
    const { rows } = await q.query<{ account_id: string }>(
      `SELECT account_id FROM ${TENANCY_TABLES.tenants} WHERE tenant_id = $1`,
      [tenantId],
    );
    return rows[0]?.account_id ?? null;
  },
});
