import { z } from 'zod';
import { notFound, route, type RouteSpec } from '@svc/contracts';
import { ONLINE_REBUILD_TARGETS, type OnlineRebuilds } from '../service/rebuilds';

/**
 * Rebuilding the read models without downtime (docs/operations.md "Rebuilding the read models"): start one,
 * follow its progress. Served beside the projection runner (roles projector and all).
 */
export function rebuildRoutes(rebuilds: OnlineRebuilds): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: '/operator/rebuilds',
      auth: 'operator',
      status: 202,
      errors: [409],
      summary:
        'Rebuild the read models from the event log beside the serving ones and switch over when caught ' +
        'up; reads go on meanwhile',
      // Only the read models are rebuilt online; the search index is rebuilt offline (npm run rebuild -- search-index).
      body: z.object({ target: z.enum(ONLINE_REBUILD_TARGETS) }).strict(),
      handler: async ({ body }) => rebuilds.start(body.target),
    }),
    route({
      method: 'GET',
      url: '/operator/rebuilds',
      auth: 'operator',
      summary: 'The online rebuilds of this projector process, newest first',
      handler: async () => ({ data: rebuilds.list() }),
    }),
    route({
      method: 'GET',
      url: '/operator/rebuilds/:id',
      auth: 'operator',
      summary: "An online rebuild's progress: state, position, head, events/s",
      params: z.object({ id: z.string().min(1).max(100) }).strict(),
      handler: async ({ params }) => {
        const r = rebuilds.get(params.id);
        if (!r) throw notFound();
        return r;
      },
    }),
  ];
}
