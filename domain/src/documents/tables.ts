// The documents read model's names (docs/architecture.md "Projections"): the projectors create and write these tables,
// the query API reads them; SQL elsewhere interpolates these names instead of spelling them.

/** Documents by tenant and context, and their lookup index. */
export const DOCUMENT_TABLES = Object.freeze({
  documents: 'rm_documents',
  lookups: 'rm_document_lookups',
} as const);

/** The indexes of those tables. */
export const DOCUMENT_INDEXES = Object.freeze({
  documentsList: 'rm_documents_list',
  documentsFolder: 'rm_documents_folder',
  documentLookupsKey: 'rm_document_lookups_key',
  documentLookupsDoc: 'rm_document_lookups_doc',
} as const);
