import { idParam, type RequestMeta, route, type RouteSpec } from '@svc/contracts';
import { z } from 'zod';

/** How one of the two by-id change routes is named and described in `/openapi.json`. */
interface ChangeRouteDoc {
  /** The spec's operation name, where it gives one (else derived from method and path). */
  operationId?: string;
  summary: string;
  body: z.ZodTypeAny;
}

/** What every data-plane route on one aggregate by id declares alike. */
const byId = (
  method: 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  permission: string,
  doc: { operationId?: string; summary: string },
) => ({
  method,
  url,
  ...(doc.operationId ? { operationId: doc.operationId } : {}),
  auth: 'data' as const,
  permission,
  summary: doc.summary,
  params: idParam,
  write: true,
});

/**
 * PUT (replace) and PATCH (RFC 7386 merge patch) of one aggregate at `url` (`/v1/<things>/:id`):
 * both run the same change command and answer the aggregate's view.
 */
function changeByIdRoutes(spec: {
  url: string;
  permission: string;
  response: z.ZodTypeAny;
  put: ChangeRouteDoc;
  patch: ChangeRouteDoc;
  change: (id: string, kind: 'put' | 'patch', body: Record<string, unknown>, meta: RequestMeta) => Promise<unknown>;
}): RouteSpec[] {
  const { url, permission, response, change } = spec;
  return (['put', 'patch'] as const).map((kind) => {
    const doc = spec[kind];
    return route({
      ...byId(kind === 'put' ? 'PUT' : 'PATCH', url, permission, doc),
      body: doc.body,
      response,
      handler: ({ params, body, meta }) => change(params.id, kind, body as Record<string, unknown>, meta),
    });
  });
}

/**
 * DELETE of one aggregate at `url` (`/v1/<things>/:id`, with `?expectedVersion=n` unless `versioned` is false),
 * answering 204 with no body.
 */
export function deleteByIdRoute(spec: {
  url: string;
  operationId?: string;
  permission: string;
  summary: string;
  versioned?: boolean;
  remove: (id: string, expectedVersion: number | undefined, meta: RequestMeta) => Promise<unknown>;
}): RouteSpec {
  const { url, permission, remove } = spec;
  return route({
    ...byId('DELETE', url, permission, spec),
    ...(spec.versioned === false ? {} : { query: z.object({ expectedVersion: z.coerce.number().int().optional() }) }),
    status: 204,
    handler: async ({ params, query, meta }) => {
      await remove(params.id, query.expectedVersion, meta);
      return null;
    },
  });
}

/**
 * The by-id write routes of one resource (`/v1/<resource>/:id`): PUT and PATCH with `<resource>:u`, DELETE with
 * `<resource>:d` where the resource is deleted through it.
 */
export function writeByIdRoutes(spec: {
  resource: string;
  response: z.ZodTypeAny;
  put: ChangeRouteDoc;
  patch: ChangeRouteDoc;
  change: (id: string, kind: 'put' | 'patch', body: Record<string, unknown>, meta: RequestMeta) => Promise<unknown>;
  delete?: {
    operationId?: string;
    summary: string;
    remove: (id: string, expectedVersion: number | undefined, meta: RequestMeta) => Promise<unknown>;
  };
}): RouteSpec[] {
  const url = `/v1/${spec.resource}/:id`;
  const routes = changeByIdRoutes({
    url,
    permission: `${spec.resource}:u`,
    response: spec.response,
    put: spec.put,
    patch: spec.patch,
    change: spec.change,
  });
  if (spec.delete) routes.push(deleteByIdRoute({ url, permission: `${spec.resource}:d`, ...spec.delete }));
  return routes;
}
