import { type SqlQueryable, type StoredEvent, WEBHOOK_INDEXES, WEBHOOK_TABLES } from '@svc/domain';
import { deleteRemovedRows } from '../runtime/removals';
import type { SqlProjection } from '../runtime/runner';

/**
 * Webhook registrations (`rm_webhooks`) and the account's webhook domains
 * (`rm_webhook_domains`), for the developer portal's reads and the
 * dispatcher's fan-out. `consecutive_failures` is the one column the
 * dispatcher writes (it counts attempts); this projection zeroes it on
 * registration and when an update re-enables. Guarded by stream revision.
 */
export const webhooksProjection = (): SqlProjection => ({
  name: 'webhooks',
  tables: [WEBHOOK_TABLES.webhooks, WEBHOOK_TABLES.domains],
  ddl:
    `
CREATE TABLE IF NOT EXISTS ${WEBHOOK_TABLES.webhooks} (
  webhook_id text PRIMARY KEY, account_id text NOT NULL, ` +
    `tenant_id text NOT NULL, livemode boolean NOT NULL, url text NOT NULL, domain text NOT NULL,
  events ` +
    `jsonb NOT NULL, api_version text NOT NULL, status text NOT NULL, disabled_reason text, ` +
    `consecutive_failures int NOT NULL DEFAULT 0,
  sealed_secret text NOT NULL, created_at bigint NOT NULL, ` +
    `registered_position bigint NOT NULL, revision bigint NOT NULL);
CREATE INDEX IF NOT EXISTS ` +
    `${WEBHOOK_INDEXES.webhooksTenant} ON ${WEBHOOK_TABLES.webhooks} (tenant_id, created_at, webhook_id);
CREATE TABLE IF NOT EXISTS ` +
    `${WEBHOOK_TABLES.domains} (
  account_id text NOT NULL, domain text NOT NULL, verification_token text NOT ` +
    `NULL, verified boolean NOT NULL, created_at timestamptz NOT NULL, verified_at timestamptz,
  PRIMARY ` +
    `KEY (account_id, domain));`,
  async apply(q: SqlQueryable, e: StoredEvent) {
    switch (e.type) {
      case 'WebhookRegistered': {
        const d = e.data;
        await q.query(
          `INSERT INTO ${WEBHOOK_TABLES.webhooks} (webhook_id, account_id, tenant_id, livemode, url, domain, events, ` +
            `api_version, status, disabled_reason, consecutive_failures, sealed_secret, created_at, ` +
            `registered_position, revision)
           VALUES ` +
            `($1,$2,$3,$4,$5,$6,$7,$8,'ACTIVE',NULL,0,$9,$10,$11,$12) ON CONFLICT (webhook_id) DO NOTHING`,
          [
            d.webhookId,
            d.accountId,
            d.tenantId,
            d.livemode,
            d.url,
            d.domain,
            JSON.stringify(d.events),
            d.apiVersion,
            d.sealedSecret,
            d.createdAt,
            e.position,
            e.revision,
          ],
        );
        return;
      }
      case 'WebhookUpdated': {
        const d = e.data;
        await q.query(
          `UPDATE ${WEBHOOK_TABLES.webhooks} SET url = $2, domain = $3, events = $4, api_version = $5, status = $6, ` +
            `disabled_reason = $7,
             consecutive_failures = CASE WHEN $8 THEN 0 ELSE ` +
            `consecutive_failures END, revision = $9
           WHERE webhook_id = $1 AND revision < $9`,
          [
            d.webhookId,
            d.url,
            d.domain,
            JSON.stringify(d.events),
            d.apiVersion,
            d.status,
            d.disabledReason,
            d.resetFailures,
            e.revision,
          ],
        );
        return;
      }
      case 'WebhookDisabled':
        await q.query(
          `UPDATE ${WEBHOOK_TABLES.webhooks} SET status = 'DISABLED', disabled_reason = $2, revision = $3 WHERE ` +
            `webhook_id = $1 AND revision < $3 AND status = 'ACTIVE'`,
          [e.data.webhookId, e.data.reason, e.revision],
        );
        return;
      case 'WebhookDeleted':
        await q.query(`DELETE FROM ${WEBHOOK_TABLES.webhooks} WHERE webhook_id = $1`, [e.data.webhookId]);
        return;
      case 'TenantTornDown':
        await deleteRemovedRows(q, e, [WEBHOOK_TABLES.webhooks]);
        return;
      case 'WebhookDomainAdded':
        await q.query(
          `INSERT INTO ${WEBHOOK_TABLES.domains} (account_id, domain, verification_token, verified, created_at) ` +
            'VALUES ($1,$2,$3,false,$4) ON CONFLICT (account_id, domain) DO NOTHING',
          [e.data.accountId, e.data.domain, e.data.verificationToken, e.metadata.occurredAt],
        );
        return;
      case 'WebhookDomainVerified':
        await q.query(
          `UPDATE ${WEBHOOK_TABLES.domains} SET verified = true, verified_at = $3 WHERE account_id = $1 AND ` +
            'domain = $2 AND NOT verified',
          [e.data.accountId, e.data.domain, e.metadata.occurredAt],
        );
        return;
    }
  },
});
