import type { SqlQueryable, StoredEvent } from '@svc/domain';

/**
 * Deletes the rows of each table, in the order given, whose `column` holds `value` (one entity's rows across its
 * tables).
 */
export async function deleteRows(
  q: SqlQueryable,
  tables: readonly string[],
  column: string,
  value: unknown,
): Promise<void> {
  for (const table of tables) await q.query(`DELETE FROM ${table} WHERE ${column} = $1`, [value]);
}

/**
 * What a context's deletion or a tenant's teardown takes from a read model: the
 * rows of that context, or of that tenant, in each table in the order given. A
 * context's rows are matched by tenant and context (the leading columns of the
 * read models' list indexes).
 */
export async function deleteRemovedRows(
  q: SqlQueryable,
  e: StoredEvent<'ContextDeleted' | 'TenantTornDown'>,
  tables: readonly string[],
): Promise<void> {
  for (const table of tables) {
    if (e.type === 'ContextDeleted')
      await q.query(`DELETE FROM ${table} WHERE tenant_id = $1 AND context_id = $2`, [
        e.data.tenantId,
        e.data.contextId,
      ]);
    else await q.query(`DELETE FROM ${table} WHERE tenant_id = $1`, [e.data.tenantId]);
  }
}
