import { type IndexedItem, type ItemFilter, matchesFilters } from '@svc/domain';

/** The item columns a filter reads, as the in-memory text index keeps them (creation time as epoch ms). */
export type FilterableItem = Pick<
  IndexedItem,
  'sourceType' | 'typeName' | 'folderId' | 'userId' | 'scopes' | 'attrs'
> & { createdAt: number };

/**
 * An ItemFilter evaluated in memory: the same semantics as filterSql (the SQL
 * form used by the PostgreSQL text index and the search catalogue), with the
 * attribute clauses of domain/search/filters.ts. Tenant and context are the
 * caller's partition and are not checked here.
 */
export function itemPredicate(f: ItemFilter): (m: FilterableItem) => boolean {
  const folders = f.folderIds ? new Set(f.folderIds) : undefined;
  const after = f.createdAfter ? Date.parse(f.createdAfter) : undefined;
  const before = f.createdBefore ? Date.parse(f.createdBefore) : undefined;
  return (m) =>
    (!f.sourceTypes?.length || f.sourceTypes.includes(m.sourceType)) &&
    (f.typeName === undefined || m.typeName === f.typeName) &&
    (!folders || (m.folderId !== null && folders.has(m.folderId))) &&
    (f.userIds ?? []).every((u) => m.userId === u) &&
    (!f.scopesAll?.length || f.scopesAll.every((s) => m.scopes.includes(s))) &&
    (!f.scopesAny?.length || f.scopesAny.some((s) => m.scopes.includes(s))) &&
    (after === undefined || m.createdAt >= after) &&
    (before === undefined || m.createdAt <= before) &&
    matchesFilters(m.attrs, f.clauses);
}
