import {
  batchGetResponse,
  idParam,
  invalid,
  limitParam,
  listEnvelope,
  listRecordsQuery,
  type Paginator,
  type Principal,
  recordResponse,
  route,
  type RouteSpec,
} from '@svc/contracts';
import { canReach, readModelVersionOf, recordView, type Sql } from '@svc/domain';
import { z } from 'zod';
import { contextListRoute, type CreatedKey, dataScopeFilter, visibleOr404 } from '../lists';
import { pageKey, type ReadCache } from '../read-cache';
import type { SchemaReads } from '../schemas/reads';
import type { RecordReads, RecordRow } from './reads';
import { lookupPage, lookupParams, RECORD_LOOKUPS, type LookupParams, wantsPayload } from './lookups';

const AUTOMATIC_LOOKUPS = ['userId', 'scopes'];
export const BATCH_GET_MAX = 100;

export function recordQueryRoutes(
  sql: Sql,
  records: RecordReads,
  schemas: SchemaReads,
  pages: Paginator,
  blindKey: Buffer,
  pageCache?: ReadCache<unknown>,
): RouteSpec[] {
  /**
   * A page is a pure function of caller scope and parameters until records or schemas change (then the cache is
   * dropped; on index outcomes, the context's pages).
   */
  const cachedPage = <T>(p: Principal, what: string, params: unknown, load: () => Promise<T>): Promise<T> =>
    pageCache
      ? (pageCache.get(pageKey(p.tenantId, p.contextId, what, p.dataScope, p.userId, params), load) as Promise<T>)
      : load();
  const view = async (r: RecordRow, full: boolean, p: Principal) =>
    recordView(r, await schemas.definition(r.schemaId, readModelVersionOf(p)), {
      full,
      indexStatus: r.indexStatus,
      indexFailure: r.indexFailure,
      bytes: r.payloadBytes,
    });

  async function lookup(q: LookupParams & { limit: number }, p: Principal, via: 'GET' | 'POST') {
    if (!AUTOMATIC_LOOKUPS.includes(q.field))
      return lookupPage(
        { sql, pages, blindKey },
        { name: 'lookup', index: RECORD_LOOKUPS, byIds: (ids) => records.byIds(ids), view },
        q,
        p,
        via,
      );
    // userId and scopes are looked up automatically on every record: exact match only.
    if (
      q.value === undefined ||
      q.values !== undefined ||
      q.from !== undefined ||
      q.to !== undefined ||
      q.prefix !== undefined
    )
      throw invalid(`'${q.field}' supports exact lookups with value only`);
    const full = wantsPayload(q);
    const { startFrom, limit, ...bound } = q;
    const scope = `lookup:${p.tenantId}:${p.contextId}:${via}`;
    const params = { ...bound, limit };
    const after = pages.start<CreatedKey>(scope, params, startFrom);
    const filter = {
      type: q.type,
      ...(q.field === 'userId' ? { userId: String(q.value) } : { scope: String(q.value) }),
      ...dataScopeFilter(p),
    };
    const rows = await records.list(p.tenantId!, p.contextId!, filter, after, limit + 1, full);
    const page = pages.page(
      scope,
      params,
      rows,
      limit,
      (r): CreatedKey => [r.createdAt, r.id],
      (r) => r,
    );
    return { data: await Promise.all(page.data.map((r) => view(r, full, p))), nextCursor: page.nextCursor };
  }
  const list = contextListRoute(pages, {
    name: 'records',
    operationId: 'listRecords',
    summary: 'List records, oldest first (filters: type, userId, scope, folderId)',
    query: listRecordsQuery,
    item: recordResponse,
    load: (p, filters, after, limit) =>
      records.list(
        p.tenantId!,
        p.contextId!,
        { ...filters, ...dataScopeFilter(p) },
        after,
        limit,
        filters.includePayload === 'true',
      ),
    view: (r, filters, p) => view(r, filters.includePayload === 'true', p),
  });

  return [
    route({
      method: 'GET',
      url: '/v1/records/lookup',
      operationId: 'lookupRecords',
      auth: 'data',
      permission: 'records:r',
      summary: 'Look records up by a lookup field: exact (value / values), range (from + to) or prefix',
      query: lookupParams.extend({
        limit: limitParam,
        values: z.union([z.string(), z.array(z.string()).min(1).max(3)]).optional(),
      }),
      response: listEnvelope(recordResponse),
      handler: ({ query, principal }) =>
        cachedPage(principal, 'lookup:GET', query, () =>
          lookup(query as LookupParams & { limit: number }, principal, 'GET'),
        ),
    }),
    route({
      method: 'POST',
      url: '/v1/records/lookup',
      operationId: 'lookupRecordsByBody',
      auth: 'data',
      permission: 'records:r',
      summary: 'Lookup with the parameters in the body (required for sensitive fields: blind-indexed exact match)',
      body: lookupParams.extend({ limit: limitParam }),
      response: listEnvelope(recordResponse),
      handler: ({ body, principal }) =>
        cachedPage(principal, 'lookup:POST', body, () => lookup(body, principal, 'POST')),
    }),
    route({
      method: 'POST',
      url: '/v1/records/lookup/batch',
      operationId: 'lookupRecordsBatch',
      status: 501,
      auth: 'data',
      permission: 'records:r',
      summary: 'Reserved: batch lookup is not implemented (501)',
      handler: async ({ reply }) => {
        reply.status(501);
        return {
          error: 'not_implemented',
          errorCode: 'not_implemented',
          message: 'Batch lookup is reserved and not implemented',
          requestId: reply.request.id,
        };
      },
    }),
    route({
      method: 'POST',
      url: '/v1/records/batch-get',
      operationId: 'batchGetRecords',
      auth: 'data',
      permission: 'records:r',
      summary: 'Get up to 100 records by id; ids the caller cannot read are listed in notFound',
      body: z.object({ ids: z.array(z.string().min(1).max(128)).min(1).max(BATCH_GET_MAX) }).strict(),
      response: batchGetResponse,
      handler: async ({ body, principal: p }) => {
        const rows = new Map(
          (await records.byIds([...new Set(body.ids)])).filter((r) => canReach(p, r)).map((r) => [r.id, r]),
        );
        const data = await Promise.all(body.ids.filter((id) => rows.has(id)).map((id) => view(rows.get(id)!, true, p)));
        return { data, notFound: body.ids.filter((id) => !rows.has(id)) };
      },
    }),
    route({
      method: 'GET',
      url: '/v1/records/:id',
      operationId: 'getRecord',
      auth: 'data',
      permission: 'records:r',
      summary: 'Get a record with its full payload (sensitive values masked)',
      params: idParam,
      response: recordResponse,
      handler: async ({ params, principal: p }) =>
        view(
          visibleOr404(await records.byId(params.id), (r) => canReach(p, r)),
          true,
          p,
        ),
    }),
    { ...list, handler: (ctx) => cachedPage(ctx.principal, 'list', ctx.query, () => list.handler(ctx)) },
  ];
}
