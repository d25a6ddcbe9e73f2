// The tenancy read model's names (docs/architecture.md "Projections"): the projectors create and write these tables,
// the query API reads them; SQL elsewhere interpolates these names instead of spelling them.

/** Accounts, tenants, contexts, credentials and trusted JWT issuers. */
export const TENANCY_TABLES = Object.freeze({
  accounts: 'rm_accounts',
  tenants: 'rm_tenants',
  contexts: 'rm_contexts',
  credentials: 'rm_credentials',
  jwtIssuers: 'rm_jwt_issuers',
} as const);

/** The indexes of those tables. */
export const TENANCY_INDEXES = Object.freeze({
  contextsTenant: 'rm_contexts_tenant',
  credentialsTenant: 'rm_credentials_tenant',
  credentialsRoot: 'rm_credentials_root',
  credentialsParent: 'rm_credentials_parent',
  jwtIssuersTenant: 'rm_jwt_issuers_tenant',
} as const);
