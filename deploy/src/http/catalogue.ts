import type { RouteSpec } from '@svc/contracts';
import { commandAreas } from '@svc/command-api';
import type { ProjectionRunner } from '@svc/projectors';
import { queryAreas } from '@svc/query-api';
import { storageRouteSpecs } from '../features';
import { quarantineRoutes } from './quarantine-routes';
import { rebuildRoutes } from './rebuild-routes';
import type { OnlineRebuilds } from '../service/rebuilds';
import { systemRoutes, type SystemStatus } from './system-routes';

/** A role of the split deployment that the router sends requests to. */
export type RoutedRole = 'command' | 'query' | 'projector';

export interface CataloguedRoute {
  method: RouteSpec['method'];
  url: string;
  /** The role whose process serves it in the split deployment (role `all` serves every route). */
  role: RoutedRole;
  spec: RouteSpec;
  /** In the API description (/openapi.json): every route but the storage endpoint behind presigned URLs. */
  described: boolean;
}

/**
 * Route declarations are built by the same functions that build the live routes, with dependencies that are
 * never called: a handler only reaches its dependencies when a request runs it, and nothing here runs one.
 */
const inert = new Proxy(() => inert, {
  get: (_t, key) => (key === 'then' ? undefined : inert),
  apply: () => inert,
}) as any;

/**
 * The routes the API description of a split role lists: its own, then the described routes the other roles
 * serve, so /openapi.json describes the one API a client reaches through the router, whichever role answers.
 */
export function deploymentRoutes(own: RouteSpec[]): RouteSpec[] {
  const served = new Set(own.map((r) => `${r.method} ${r.url}`));
  return [
    ...own,
    ...routeCatalogue()
      .filter((r) => r.described && !served.has(`${r.method} ${r.url}`))
      .map((r) => r.spec),
  ];
}

/**
 * Every route of the deployment and the role that serves it: the write areas (and the embedded storage
 * endpoint) on `command`, the read areas on `query`, the quarantine commands and online rebuilds beside the projection
 * runner on `projector`. The health, readiness and metrics routes are answered by every process; through the router the
 * query role answers them. The one list the router (router-config.ts) and the split roles' API description are built
 * from.
 */
export function routeCatalogue(): CataloguedRoute[] {
  const secret = Buffer.alloc(32);
  const of = (role: RoutedRole, specs: RouteSpec[], described = true) =>
    specs.map((spec) => ({ method: spec.method, url: spec.url, role, spec, described }));
  const command = commandAreas({
    deps: inert,
    counters: inert,
    secret,
    pages: inert,
    ports: inert,
    sql: inert,
    blobs: inert,
    scripts: inert,
    webhooks: inert,
  }).flatMap((a) => a.routes);
  const query = queryAreas({
    sql: inert,
    store: inert,
    secret,
    pages: inert,
    tenancy: inert,
    deps: inert,
    blobs: inert,
    search: inert,
    models: inert,
    changes: inert,
  }).flatMap((a) => a.routes);
  return [
    ...of('command', command),
    ...of('command', storageRouteSpecs({ deps: inert, secret, blobs: inert }), false),
    ...of('query', query),
    ...of('query', systemRoutes(inert as SystemStatus)),
    ...of('projector', quarantineRoutes(inert as ProjectionRunner)),
    ...of('projector', rebuildRoutes(inert as OnlineRebuilds)),
  ];
}
