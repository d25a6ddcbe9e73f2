import {
  idParam,
  notFound,
  pageQuery,
  type Principal,
  route,
  type RouteSpec,
  tombstoneResponse,
  versionPage,
} from '@svc/contracts';
import { canReach, type Owned } from '@svc/domain';
import type { HistoryReads } from './reads';

/** GET /v1/<kind>s/:id/versions and /tombstone, the same for every entity kind. */
export function historyRoutes(
  history: HistoryReads,
  kind: 'record' | 'schema' | 'document' | 'folder',
  permission: string,
  opts: {
    tombstone: boolean;
    visible?: (p: Principal, owner: Owned, id: string) => boolean;
    liveOwner?: (id: string, p: Principal) => Promise<Owned | null>;
  },
): RouteSpec[] {
  const visible = opts.visible ?? canReach;
  // An entity whose history is off (auditHistory: false) has no rows: its live state says who may ask.
  const ownerOf = async (id: string, p: Principal) =>
    (await history.lastOwner(id)) ?? (await opts.liveOwner?.(id, p)) ?? null;
  /** GET /v1/<kind>s/:id/<part>, its operation id in /openapi.json getRecordVersions, getRecordTombstone, ... */
  const partOf = (part: 'versions' | 'tombstone') => ({
    method: 'GET' as const,
    url: `/v1/${kind}s/:id/${part}`,
    operationId: `get${kind[0].toUpperCase()}${kind.slice(1)}${part[0].toUpperCase()}${part.slice(1)}`,
    auth: 'data' as const,
    permission,
    params: idParam,
  });
  const routes: RouteSpec[] = [
    route({
      ...partOf('versions'),
      summary: `Version history of a ${kind} (oldest first; startFrom is the last row id seen)`,
      query: pageQuery,
      response: versionPage,
      handler: async ({ params, query, principal: p }) => {
        const owner = await ownerOf(params.id, p);
        if (!owner || !visible(p, owner, params.id)) throw notFound();
        const page = await history.versions(p.tenantId!, p.contextId!, params.id, query.startFrom, query.limit);
        return { data: page.rows, nextCursor: page.more ? page.rows[page.rows.length - 1].id : null };
      },
    }),
  ];
  if (opts.tombstone)
    routes.push(
      route({
        ...partOf('tombstone'),
        summary: `Tombstone of a deleted ${kind} (404 while it is live)`,
        response: tombstoneResponse,
        handler: async ({ params, principal: p }) => {
          const t = await history.tombstone(params.id, kind);
          if (!t || !visible(p, { tenantId: t.tenantId, contextId: t.contextId, ...t.owner }, params.id))
            throw notFound();
          return t.body;
        },
      }),
    );
  return routes;
}
