import { batchGetResponse, blindIndex, idParam, invalid, limitParam, listEnvelope, listRecordsQuery, notFound, type Paginator, type Principal, recordResponse, route, type RouteSpec } from '@svc/contracts';
import { canReach, ownerKeyOf, recordView, type Sql } from '@svc/domain';
import { z } from 'zod';
import type { ReadCache } from '../read-cache';
import { schemaForType, type SchemaReads } from '../schemas/reads';
import type { RecordReads, RecordRow } from './reads';
import { lookupParams, planLookup, runLookup, type LookupParams } from './lookups';

const AUTOMATIC_LOOKUPS = ['userId', 'scopes'];
export const BATCH_GET_MAX = 100;

export function recordQueryRoutes(sql: Sql, records: RecordReads, schemas: SchemaReads, pages: Paginator, blindKey: Buffer, pageCache?: ReadCache<unknown>): RouteSpec[] {
  /** A page is a pure function of caller scope and parameters until records or schemas change (then the cache is dropped). */
  const cachedPage = <T,>(p: Principal, what: string, params: unknown, load: () => Promise<T>): Promise<T> =>
    pageCache
      ? (pageCache.get(JSON.stringify([what, p.tenantId, p.contextId, p.dataScope, p.userId, params]), load) as Promise<T>)
      : load();
  const view = async (r: RecordRow, full: boolean) => recordView(r, await schemas.definition(r.schemaId), { full, indexStatus: r.indexStatus, indexFailure: r.indexFailure, bytes: r.payloadBytes });

  async function lookup(q: LookupParams & { limit: number }, p: Principal, via: 'GET' | 'POST') {
    const limit = q.limit;
    const full = q.includePayload === true || q.includePayload === 'true';
    const { startFrom, limit: _l, ...bound } = q;
    const scope = `lookup:${p.tenantId}:${p.contextId}:${via}`;
    const params = { ...bound, limit };
    if (AUTOMATIC_LOOKUPS.includes(q.field)) {
      // userId and scopes are looked up automatically on every record: exact match only.
      if (q.value === undefined || q.values !== undefined || q.from !== undefined || q.to !== undefined || q.prefix !== undefined) throw invalid(`'${q.field}' supports exact lookups with value only`);
      const after = pages.start<[string, string]>(scope, params, startFrom);
      const ds = p.dataScope;
      const filter = { type: q.type, ...(q.field === 'userId' ? { userId: String(q.value) } : { scope: String(q.value) }), scopeUserId: ds?.userId ?? p.userId ?? undefined, scopeAnyOf: ds?.scopes };
      const rows = await records.list(p.tenantId!, p.contextId!, filter, after, limit + 1, full);
      const page = pages.page(scope, params, rows, limit, (r) => [r.createdAt, r.id] as [string, string], (r) => r);
      return { data: await Promise.all(page.data.map((r) => view(r, full))), nextCursor: page.nextCursor };
    }
    const def = await schemaForType(sql, p.tenantId!, p.contextId!, q.type, ownerKeyOf({ userId: p.dataScope?.userId ?? p.userId ?? undefined, scopes: p.dataScope?.scopes }));
    if (!def) throw invalid(`No schema with typeName '${q.type}' in this context`);
    const plan = planLookup(def, q, via, (field, value) => blindIndex(blindKey, [p.tenantId!, p.contextId!, q.type, field], value));
    const after = pages.start<string[]>(scope, params, startFrom);
    const hits = await runLookup(sql, p, q.type, plan, after, limit + 1);
    const page = pages.page(scope, params, hits, limit, (h) => h.cursor, (h) => h.record_id);
    const byId = new Map((await records.byIds(page.data)).map((r) => [r.id, r]));
    const data = await Promise.all(page.data.map((id) => byId.get(id)).filter((r): r is RecordRow => !!r).map((r) => view(r, full)));
    return { data, nextCursor: page.nextCursor };
  }

  return [
    route({
      method: 'GET',
      url: '/v1/records/lookup',
      operationId: 'lookupRecords',
      auth: 'data',
      permission: 'records:r',
      summary: 'Look records up by a lookup field: exact (value / values), range (from + to) or prefix',
      query: lookupParams.extend({ limit: limitParam, values: z.union([z.string(), z.array(z.string()).min(1).max(3)]).optional() }),
      response: listEnvelope(recordResponse),
      handler: ({ query, principal }) => cachedPage(principal, 'lookup:GET', query, () => lookup(query as LookupParams & { limit: number }, principal, 'GET')),
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
      handler: ({ body, principal }) => cachedPage(principal, 'lookup:POST', body, () => lookup(body, principal, 'POST')),
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
        return { error: 'not_implemented', errorCode: 'not_implemented', message: 'Batch lookup is reserved and not implemented', requestId: reply.request.id };
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
        const rows = new Map((await records.byIds([...new Set(body.ids)])).filter((r) => canReach(p, r)).map((r) => [r.id, r]));
        const data = await Promise.all(body.ids.filter((id) => rows.has(id)).map((id) => view(rows.get(id)!, true)));
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
      handler: async ({ params, principal: p }) => {
        const r = await records.byId(params.id);
        if (!r || !canReach(p, r)) throw notFound();
        return view(r, true);
      },
    }),
    route({
      method: 'GET',
      url: '/v1/records',
      operationId: 'listRecords',
      auth: 'data',
      permission: 'records:r',
      summary: 'List records, oldest first (filters: type, userId, scope, folderId)',
      query: listRecordsQuery.extend({ limit: limitParam }),
      response: listEnvelope(recordResponse),
      handler: ({ query, principal: p }) =>
        cachedPage(p, 'list', query, async () => {
          const { startFrom, limit, includePayload, ...filters } = query;
          const scope = `records:${p.tenantId}:${p.contextId}`;
          const params = { ...filters, includePayload, limit };
          const after = pages.start<[string, string]>(scope, params, startFrom);
          const ds = p.dataScope;
          const rows = await records.list(p.tenantId!, p.contextId!, { ...filters, scopeUserId: ds?.userId ?? p.userId ?? undefined, scopeAnyOf: ds?.scopes }, after, limit + 1, includePayload === 'true');
          const page = pages.page(scope, params, rows, limit, (r) => [r.createdAt, r.id] as [string, string], (r) => r);
          return { data: await Promise.all(page.data.map((r) => view(r, includePayload === 'true'))), nextCursor: page.nextCursor };
        }),
    }),
  ];
}
