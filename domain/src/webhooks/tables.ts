// The webhooks read model's names (docs/architecture.md "Projections"): the projectors create and write these tables,
// the query API reads them; SQL elsewhere interpolates these names instead of spelling them.

/** Webhook registrations and their allowed domains. */
export const WEBHOOK_TABLES = Object.freeze({
  webhooks: 'rm_webhooks',
  domains: 'rm_webhook_domains',
} as const);

/** The indexes of those tables. */
export const WEBHOOK_INDEXES = Object.freeze({
  webhooksTenant: 'rm_webhooks_tenant',
} as const);
