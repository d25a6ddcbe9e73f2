// The folders read model's names (docs/architecture.md "Projections"): the projectors create and write these tables,
// the query API reads them; SQL elsewhere interpolates these names instead of spelling them.

/** Folders by tenant and context. */
export const FOLDER_TABLES = Object.freeze({
  folders: 'rm_folders',
} as const);

/** The indexes of those tables. */
export const FOLDER_INDEXES = Object.freeze({
  foldersList: 'rm_folders_list',
  foldersParent: 'rm_folders_parent',
} as const);
