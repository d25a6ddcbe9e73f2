// The history read model's names (docs/architecture.md "Projections"): the projectors create and write these tables,
// the query API reads them; SQL elsewhere interpolates these names instead of spelling them.

/** Every version of a record, document or folder, and the tombstones of deleted ones. */
export const HISTORY_TABLES = Object.freeze({
  versions: 'rm_versions',
  tombstones: 'rm_tombstones',
} as const);

/** The indexes of those tables. */
export const HISTORY_INDEXES = Object.freeze({
  versionsEntity: 'rm_versions_entity',
  versionsContext: 'rm_versions_context',
  tombstonesContext: 'rm_tombstones_context',
} as const);
