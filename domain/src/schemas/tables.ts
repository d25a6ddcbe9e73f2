// The schemas read model's names (docs/architecture.md "Projections"): the projectors create and write these tables,
// the query API reads them; SQL elsewhere interpolates these names instead of spelling them.

/** Schema documents by id. */
export const SCHEMA_TABLES = Object.freeze({
  schemas: 'rm_schemas',
} as const);

/** The indexes of those tables. */
export const SCHEMA_INDEXES = Object.freeze({
  schemasList: 'rm_schemas_list',
} as const);
