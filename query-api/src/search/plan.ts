import { invalid, type Principal, type SchemaDefinition, type SearchBody } from '@svc/contracts';
import {
  BUILTIN_FILTER_KEYS,
  type ItemFilter,
  parseFilters,
  type SourceKind,
  type Sql,
  DOCUMENT_TABLES,
  FOLDER_TABLES,
  SCHEMA_TABLES,
} from '@svc/domain';

/**
 * Turns a validated search body and the caller's credential into an
 * ItemFilter: content types, record type, folders (a root and its
 * descendants), ownership parameters, the credential's data scope, dates and
 * the attribute filters (each key checked: see checkFilterKeys).
 */
export async function planFilter(sql: Sql, p: Principal, b: SearchBody): Promise<ItemFilter> {
  const clauses = parseFilters(b.filters);
  const types = new Set(b.contentTypes ?? []);
  let sourceTypes: SourceKind[] | undefined;
  if (types.size === 1) sourceTypes = types.has('records') ? ['record'] : ['document'];
  if (b.typeName !== undefined && !types.has('documents')) sourceTypes = ['record'];
  const tenantId = p.tenantId!;
  const contextId = p.contextId!;

  if (clauses.length) await checkFilterKeys(sql, tenantId, contextId, b.typeName, sourceTypes, clauses);

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

/**
 * 400 for a filter key the search's items cannot carry: not a built-in, not a filterable non-sensitive field of a
 * schema of the context (of `typeName` when given) and, when documents are searched, not a top-level payload key of
 * any document of the context (documents let undeclared keys through, and those are filterable). The documents are
 * read only for keys no schema declares, and stop at the first that has the key.
 */
async function checkFilterKeys(
  sql: Sql,
  tenantId: string,
  contextId: string,
  typeName: string | undefined,
  sourceTypes: SourceKind[] | undefined,
  clauses: ItemFilter['clauses'],
): Promise<void> {
  const { rows } = await sql.query<{ doc: SchemaDefinition }>(
    `SELECT doc FROM ${SCHEMA_TABLES.schemas} WHERE tenant_id = $1 AND context_id = $2 AND NOT deleted AND ` +
      `($3::text IS NULL OR type_name = $3)`,
    [tenantId, contextId, typeName ?? null],
  );
  const known = new Set<string>(BUILTIN_FILTER_KEYS);
  for (const r of rows) for (const f of r.doc.fields ?? []) if (f.filterable && !f.sensitive) known.add(f.fieldId);
  const documents = !sourceTypes || sourceTypes.includes('document');
  // One key at a time, stopping at the first unknown one: a request full of invented keys costs one read of the
  // context's documents, not one per key.
  for (const key of new Set(clauses.map((c) => c.key))) {
    if (known.has(key)) continue;
    if (documents) {
      const { rows: found } = await sql.query<{ found: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM ${DOCUMENT_TABLES.documents} d WHERE d.tenant_id = $1 AND d.context_id = $2 ` +
          `AND ($4::text IS NULL OR d.type_name = $4) AND d.payload ? $3) AS found`,
        [tenantId, contextId, key, typeName ?? null],
      );
      if (found[0]?.found) continue;
    }
    throw invalid(
      `filters: unknown key '${key}' (not a filterable field of ${typeName ?? 'any schema in this context'}` +
        `${documents ? ' nor a payload key of any document' : ''})`,
    );
  }
}
