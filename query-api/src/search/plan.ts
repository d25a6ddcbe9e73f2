import { invalid, type Principal, type SchemaDefinition, type SearchBody } from '@svc/contracts';
import {
  BUILTIN_FILTER_KEYS,
  type ItemFilter,
  parseFilters,
  type SourceKind,
  type Sql,
  FOLDER_TABLES,
  SCHEMA_TABLES,
} from '@svc/domain';

/**
 * Turns a validated search body and the caller's credential into an
 * ItemFilter: content types, record type, folders (a root and its
 * descendants), ownership parameters, the credential's data scope, dates and
 * the attribute filters (checked against the schemas of the context when the
 * search covers records only; document payload keys pass through).
 */
export async function planFilter(sql: Sql, p: Principal, b: SearchBody): Promise<ItemFilter> {
  const clauses = parseFilters(b.filters);
  const types = new Set(b.contentTypes ?? []);
  let sourceTypes: SourceKind[] | undefined;
  if (types.size === 1) sourceTypes = types.has('records') ? ['record'] : ['document'];
  if (b.typeName !== undefined && !types.has('documents')) sourceTypes = ['record'];
  const tenantId = p.tenantId!;
  const contextId = p.contextId!;

  if (clauses.length && sourceTypes?.length === 1 && sourceTypes[0] === 'record') {
    const { rows } = await sql.query<{ doc: SchemaDefinition }>(
      `SELECT doc FROM ${SCHEMA_TABLES.schemas} WHERE tenant_id = $1 AND context_id = $2 AND NOT deleted AND ` +
        `($3::text ` +
        `IS NULL OR type_name = $3)`,
      [tenantId, contextId, b.typeName ?? null],
    );
    const known = new Set<string>(BUILTIN_FILTER_KEYS);
    for (const r of rows) for (const f of r.doc.fields ?? []) if (f.filterable && !f.sensitive) known.add(f.fieldId);
    for (const c of clauses)
      if (!known.has(c.key))
        throw invalid(
          `filters: unknown key '${c.key}' (not a filterable field of ${b.typeName ?? 'any schema in this context'})`,
        );
  }

  let folderIds: string[] | undefined;
  if (b.folderId) folderIds = [b.folderId];
  if (b.rootFolderId) {
    const { rows } = await sql.query<{ folder_id: string }>(
      `WITH RECURSIVE tree AS (
         SELECT folder_id FROM ${FOLDER_TABLES.folders} WHERE folder_id = $1 AND ` +
        `tenant_id = $2 AND context_id = $3
         UNION SELECT f.folder_id FROM ${FOLDER_TABLES.folders} f JOIN tree t ` +
        `ON f.parent_folder_id = t.folder_id WHERE f.tenant_id = $2 AND f.context_id = $3)
       SELECT ` +
        `folder_id FROM tree`,
      [b.rootFolderId, tenantId, contextId],
    );
    const tree = rows.map((r) => r.folder_id);
    folderIds = folderIds ? folderIds.filter((f) => tree.includes(f)) : tree;
  }

  const ds = p.dataScope;
  const boundUser = ds?.userId ?? p.userId ?? undefined;
  const userIds = [b.userId, boundUser].filter((u): u is string => !!u);
  const scopesAll = [b.orgId ? `org:${b.orgId}` : null, b.clientId ? `client:${b.clientId}` : null].filter(
    (s): s is string => !!s,
  );
  return {
    tenantId,
    contextId,
    sourceTypes,
    typeName: b.typeName,
    folderIds,
    userIds: userIds.length ? [...new Set(userIds)] : undefined,
    scopesAll: scopesAll.length ? scopesAll : undefined,
    scopesAny: ds?.scopes?.length ? ds.scopes : undefined,
    createdAfter: b.createdAfter ? new Date(b.createdAfter).toISOString() : undefined,
    createdBefore: b.createdBefore ? new Date(b.createdBefore).toISOString() : undefined,
    clauses,
  };
}
