import { z } from 'zod';
import {
  idParam,
  limitParam,
  listEnvelope,
  notFound,
  type Paginator,
  route,
  type RouteSpec,
  schemaResponse,
  SURFACES,
} from '@svc/contracts';
import { canSeeSchema } from '@svc/domain';
import type { HistoryReads } from '../history/reads';
import { historyRoutes } from '../history/routes';
import type { SchemaReads } from './reads';

/** Version history of schemas; a live schema that records none (auditHistory: false) answers an empty list. */
export const schemaHistoryRoutes = (history: HistoryReads, schemas: SchemaReads): RouteSpec[] =>
  historyRoutes(history, 'schema', 'schemas:r', {
    tombstone: false,
    visible: canSeeSchema,
    liveOwner: (id, p) => schemas.liveOwner(p, id),
  });

export function schemaQueryRoutes(schemas: SchemaReads, pages: Paginator): RouteSpec[] {
  return [
    route({
      method: 'GET',
      url: '/v1/schemas/:id',
      operationId: 'getSchema',
      auth: 'data',
      permission: 'schemas:r',
      summary: 'Get a schema',
      params: idParam,
      response: schemaResponse,
      handler: async ({ params, principal: p }) => (await schemas.byId(p, params.id)) ?? Promise.reject(notFound()),
    }),
    route({
      method: 'GET',
      url: '/v1/schemas',
      operationId: 'listSchemas',
      auth: 'data',
      permission: 'schemas:r',
      summary:
        'List schemas of the context, newest first (surface=entity adds the tenant-wide home after the own context)',
      query: z.object({ limit: limitParam, startFrom: z.string().optional(), surface: z.enum(SURFACES).optional() }),
      response: listEnvelope(schemaResponse),
      handler: async ({ query, principal: p }) => {
        const scope = `schemas:${p.tenantId}:${p.contextId}`;
        const params = { limit: query.limit, surface: query.surface };
        const after = pages.start<[number, string, string]>(scope, params, query.startFrom);
        const rows = await schemas.list(p, query.surface, after, query.limit + 1);
        return pages.page(
          scope,
          params,
          rows,
          query.limit,
          (r) => [r.group, r.createdAt, r.doc.id] as [number, string, string],
          (r) => r.doc,
        );
      },
    }),
  ];
}
