// The identity read model's names (docs/architecture.md "Projections"): the projectors create and write these tables,
// the query API reads them; SQL elsewhere interpolates these names instead of spelling them.

/** Namespaces, users and entities. */
export const IDENTITY_TABLES = Object.freeze({
  namespaces: 'rm_namespaces',
  users: 'rm_users',
  entities: 'rm_entities',
} as const);

/** The indexes of those tables. */
export const IDENTITY_INDEXES = Object.freeze({
  usersList: 'rm_users_list',
  entitiesList: 'rm_entities_list',
  entitiesNamespace: 'rm_entities_namespace',
} as const);
