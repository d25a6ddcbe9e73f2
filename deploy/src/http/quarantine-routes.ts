import { z } from 'zod';
import { notFound, route, type RouteSpec } from '@svc/contracts';
import type { ProjectionRunner } from '@svc/projectors';

/**
 * The operator's commands over quarantined projection events
 * (docs/operations.md): list them, retry a stream after a fix, or skip one
 * event for good (the rest of its stream is then applied).
 */
export function quarantineRoutes(runner: ProjectionRunner): RouteSpec[] {
  return [
    route({
      method: 'GET',
      url: '/operator/projections/quarantine',
      auth: 'operator',
      summary: 'Events a projection could not apply, and the later events of their streams parked behind them',
      query: z.object({ streamId: z.string().min(1).max(200).optional() }).strict(),
      handler: async ({ query }) => ({ data: await runner.quarantined(query.streamId) }),
    }),
    route({
      method: 'POST',
      url: '/operator/projections/quarantine/retry',
      auth: 'operator',
      summary: "Re-apply a stream's quarantined events in log order; stops at the first that still fails",
      body: z.object({ streamId: z.string().min(1).max(200) }).strict(),
      handler: async ({ body }) => {
        if (!(await runner.quarantined(body.streamId)).length) throw notFound();
        return { streamId: body.streamId, remaining: await runner.retry(body.streamId) };
      },
    }),
    route({
      method: 'POST',
      url: '/operator/projections/quarantine/skip',
      auth: 'operator',
      summary: 'Drop one quarantined event for good, then re-apply the rest of its stream',
      body: z.object({ position: z.number().int().positive() }).strict(),
      handler: async ({ body }) => {
        const r = await runner.skip(body.position);
        if (!r) throw notFound();
        return r;
      },
    }),
  ];
}
