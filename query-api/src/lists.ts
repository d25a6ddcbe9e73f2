import type { z } from 'zod';
import {
  limitParam,
  listEnvelope,
  notFound,
  type Page,
  type Paginator,
  type Principal,
  route,
  type RouteSpec,
} from '@svc/contracts';

/**
 * The context lists (records, documents, folders, users, entities): their
 * route, their page by (createdAt, id) and the SQL their reads share.
 */

/** A list's filters: its query but the cursor (and the page size). */
type Filters<S extends z.ZodRawShape> = Omit<z.output<z.ZodObject<S>>, 'startFrom' | 'limit'>;

/** The key of the oldest-first lists: (createdAt, id). */
export type CreatedKey = [createdAt: string, id: string];

/** A credential's data scope among a list's filters: its user and any of its scopes. */
export interface DataScopeFilter {
  scopeUserId?: string;
  scopeAnyOf?: string[];
}

/** The owner filters of the context lists (a user id, one scope) beside the caller's data scope. */
export interface OwnerFilter extends DataScopeFilter {
  userId?: string;
  scope?: string;
}

/** A credential's data scope as list filters: its bound user (or the caller's own) and any of its scopes. */
export const dataScopeFilter = (p: Principal): DataScopeFilter => ({
  scopeUserId: p.dataScope?.userId ?? p.userId ?? undefined,
  scopeAnyOf: p.dataScope?.scopes,
});

/** The row when the caller may see it: a missing row and one out of reach are the same 404. */
export function visibleOr404<R>(row: R | null | undefined, visible: (row: R) => boolean): R {
  if (!row || !visible(row)) throw notFound();
  return row;
}

/**
 * GET /v1/<name>: an oldest-first list of the caller's context, by (createdAt, id),
 * `limit` per page; its cursors are bound to the filters. `load` fetches rows
 * after the key with the filters (and the caller's data scope) applied before
 * the limit; `view` shows each row.
 */
export function contextListRoute<S extends z.ZodRawShape, R extends { createdAt: string; id: string }>(
  pages: Paginator,
  list: {
    /** Its path, its read permission `<name>:r` and the scope of its cursors. */
    name: string;
    operationId?: string;
    summary: string;
    /** The filters and `startFrom`. */
    query: z.ZodObject<S>;
    item: z.ZodTypeAny;
    load(p: Principal, filters: Filters<S>, after: CreatedKey | undefined, limit: number): Promise<R[]>;
    /** `p`: the caller (its request's read-model version keys the caches a view reads). */
    view(row: R, filters: Filters<S>, p: Principal): unknown;
  },
): RouteSpec {
  return route({
    method: 'GET',
    url: `/v1/${list.name}`,
    ...(list.operationId ? { operationId: list.operationId } : {}),
    auth: 'data',
    permission: `${list.name}:r`,
    summary: list.summary,
    query: list.query.extend({ limit: limitParam }),
    response: listEnvelope(list.item),
    handler: async ({ query, principal: p }): Promise<Page<unknown>> => {
      const { startFrom, limit, ...rest } = query as { startFrom?: string; limit: number };
      const filters = rest as Filters<S>;
      const scope = `${list.name}:${p.tenantId}:${p.contextId}`;
      const params = { ...filters, limit };
      const after = pages.start<CreatedKey>(scope, params, startFrom);
      const rows = await list.load(p, filters, after, limit + 1);
      const page = pages.page(
        scope,
        params,
        rows,
        limit,
        (r): CreatedKey => [r.createdAt, r.id],
        (r) => r,
      );
      return { data: await Promise.all(page.data.map((r) => list.view(r, filters, p))), nextCursor: page.nextCursor };
    },
  });
}

/**
 * SQL: the rows within a data scope, its user in parameter `$n` and its scopes in `$n+1` (the values of
 * `dataScopeArgs`).
 */
export const inDataScope = (n: number) =>
  `($${n}::text IS NULL OR user_id = $${n}) AND ($${n + 1}::jsonb IS NULL OR scopes ?| ARRAY(SELECT ` +
  `jsonb_array_elements_text($${n + 1}::jsonb)))`;
export const dataScopeArgs = (f: DataScopeFilter) => [
  f.scopeUserId ?? null,
  f.scopeAnyOf?.length ? JSON.stringify(f.scopeAnyOf) : null,
];

/**
 * SQL: the rows after the (created_at, id) key in parameters `$n`, `$n+1`, oldest first, at most `$n+2` of them (the
 * values of `pageArgs`).
 */
export const oldestFirstAfter = (idColumn: string, n: number) =>
  `($${n}::timestamptz IS NULL OR (created_at, ${idColumn}) > ($${n}::timestamptz, $${n + 1}::text)) ` +
  `ORDER BY created_at, ${idColumn} LIMIT $${n + 2}`;
export const pageArgs = (after: CreatedKey | undefined, limit: number) => [
  after?.[0] ?? null,
  after?.[1] ?? null,
  limit,
];
