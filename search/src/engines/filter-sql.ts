import { dateOperand, type FilterClause, type ItemFilter, type Scalar } from '@svc/domain';

/**
 * An ItemFilter as a SQL condition over a table with the item columns
 * (tenant_id, context_id, source_type, type_name, folder_id, user_id, scopes
 * jsonb, attrs jsonb, created_at). Shared by the PostgreSQL text index and the
 * search catalogue that narrows the vector leg. Appends its parameters to `params`.
 */
export function filterSql(f: ItemFilter, alias: string, params: unknown[]): string {
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const c = (col: string) => `${alias}.${col}`;
  const out = [`${c('tenant_id')} = ${p(f.tenantId)}`, `${c('context_id')} = ${p(f.contextId)}`];
  if (f.sourceTypes?.length) out.push(`${c('source_type')} = ANY(${p(f.sourceTypes)}::text[])`);
  if (f.typeName !== undefined) out.push(`${c('type_name')} = ${p(f.typeName)}`);
  if (f.folderIds) out.push(`${c('folder_id')} = ANY(${p(f.folderIds)}::text[])`);
  for (const u of f.userIds ?? []) out.push(`${c('user_id')} = ${p(u)}`);
  if (f.scopesAll?.length) out.push(`${c('scopes')} @> ${p(JSON.stringify(f.scopesAll))}::jsonb`);
  if (f.scopesAny?.length) out.push(`${c('scopes')} ?| ${p(f.scopesAny)}::text[]`);
  if (f.createdAfter) out.push(`${c('created_at')} >= ${p(f.createdAfter)}::timestamptz`);
  if (f.createdBefore) out.push(`${c('created_at')} <= ${p(f.createdBefore)}::timestamptz`);
  for (const cl of f.clauses) out.push(clauseSql(cl, c('attrs'), p));
  return out.join(' AND ');
}

/** JSON encodings an equality operand matches: itself, and epoch ms for an ISO date. */
function eqCandidates(v: Scalar): string[] {
  const d = dateOperand(v);
  return d === null ? [JSON.stringify(v)] : [JSON.stringify(v), JSON.stringify(d)];
}

function clauseSql(cl: FilterClause, attrs: string, p: (v: unknown) => string): string {
  const key = p(cl.key);
  const val = `${attrs} -> ${key}`;
  const anyEq = (vals: Scalar[]) =>
    `EXISTS (SELECT 1 FROM jsonb_array_elements(CASE jsonb_typeof(${val}) WHEN 'array' THEN ${val} ELSE ` +
    `jsonb_build_array(${val}) END) x(v) WHERE x.v = ANY(${p(vals.flatMap(eqCandidates))}::jsonb[]))`;
  switch (cl.op) {
    case 'eq':
      return `(${attrs} ? ${key} AND ${anyEq([cl.value as Scalar])})`;
    case 'in':
      return `(${attrs} ? ${key} AND ${anyEq(cl.value as Scalar[])})`;
    case 'ne':
      return `NOT (${attrs} ? ${key} AND ${anyEq([cl.value as Scalar])})`;
    case 'nin':
      return `NOT (${attrs} ? ${key} AND ${anyEq(cl.value as Scalar[])})`;
    default: {
      const op = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[cl.op];
      const v = cl.value as Scalar;
      const parts: string[] = [];
      const num = typeof v === 'number' ? v : dateOperand(v);
      if (num !== null)
        parts.push(
          `(CASE WHEN jsonb_typeof(${val}) = 'number' THEN (${attrs} ->> ${key})::float8 ${op} ` +
            `${p(num)}::float8 ELSE false END)`,
        );
      if (typeof v === 'string')
        parts.push(
          `(CASE WHEN jsonb_typeof(${val}) = 'string' THEN (${attrs} ->> ${key}) COLLATE "C" ${op} ` +
            `${p(v)}::text COLLATE "C" ELSE false END)`,
        );
      return parts.length ? `(${parts.join(' OR ')})` : 'false';
    }
  }
}
