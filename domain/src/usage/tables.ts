// The usage read model's names (docs/architecture.md "Projections"): the projectors create and write these tables,
// the query API reads them; SQL elsewhere interpolates these names instead of spelling them.

/** Usage per tenant and account, the metered streams, and inference spend. */
export const USAGE_TABLES = Object.freeze({
  usage: 'rm_usage',
  accounts: 'rm_usage_accounts',
  streams: 'rm_usage_streams',
  inferenceSpend: 'rm_inference_spend',
} as const);

/** The indexes of those tables. */
export const USAGE_INDEXES = Object.freeze({
  usageAccount: 'rm_usage_account',
} as const);
