import { Readable } from 'node:stream';
import { exportQuery, forbidden, route, type RouteSpec } from '@svc/contracts';
import type { EventStore } from '@svc/domain';
import { exportChunks, selectionOf } from './export';

/** Bytes of export text buffered ahead of the socket (the stream reads the next page of the log only below it). */
const AHEAD_BYTES = 64 * 1024;

/**
 * GET /v1/export (decisions §1, §4, §10; docs/api.md "Export"). Root key or
 * `logs:r`; the tenant (and, for a context-confined credential, the context)
 * comes from the credential. A credential confined to a data scope (a user or
 * scopes) gets the uniform 403: the log cannot be narrowed to what it may read.
 *
 * The body is a stream that reads the log one page at a time only as the
 * socket drains (Node's pipe into `reply.raw` pauses on `write()` returning
 * false and resumes on 'drain'), so the export runs in constant memory, and the
 * edge's response hooks (Service-Version, rate-limit headers, activity log)
 * run as for any other response.
 */
export function exportRoutes(store: EventStore): RouteSpec[] {
  return [
    route({
      method: 'GET',
      url: '/v1/export',
      operationId: 'exportEvents',
      contentType: 'application/x-ndjson',
      auth: 'data',
      permission: 'logs:r',
      summary:
        "Audit export: the tenant's stored events in commit order as application/x-ndjson, one {position, " +
        'streamId, type, version, recordedAt, tenantId, contextId, actor, data} a line, sensitive values ' +
        'masked; resumable with startFrom=<position>',
      query: exportQuery,
      handler: async ({ query, principal: p, reply }) => {
        if (p.userId || p.dataScope?.userId || p.dataScope?.scopes?.length) throw forbidden();
        const scope = { tenantId: p.tenantId!, ...(p.crossContext ? {} : { contextId: p.contextId! }) };
        const selection = selectionOf(query, scope, await store.headPosition());
        const body = Readable.from(exportChunks(store, selection), { objectMode: false, highWaterMark: AHEAD_BYTES });
        reply.type('application/x-ndjson').header('cache-control', 'no-store');
        return reply.send(body);
      },
    }),
  ];
}
