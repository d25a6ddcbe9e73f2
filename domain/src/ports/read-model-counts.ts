/**
 * Counts the write path may read from the read models: the documented
 * exception to "decisions never read a projection" (ARCHITECTURE.md, rules of
 * the house), used where a rule depends on how many other entities point at
 * one, which no single stream knows. The command handler waits until the read
 * models have caught up with the event store's head before it asks, so every
 * write acknowledged before the request is counted; a write racing the
 * decision may still slip past (documented in docs/folders.md and
 * docs/identity.md). Counts include entities the caller cannot read.
 */
export interface FolderContents {
  /** Sub-folders, records and documents whose folder is `folderId`. */
  count(tenantId: string, contextId: string, folderId: string): Promise<number>;
}

export interface NamespaceUsage {
  /** Entities of `namespace` in every context of the tenant. */
  entities(tenantId: string, namespace: string): Promise<number>;
}
