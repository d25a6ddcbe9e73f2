import type { RouteSpec } from '@svc/contracts';
import type { UsageCharges } from '@svc/domain';

/**
 * Charges each search once it is served (200): 1 credit, HYBRID 2 (docs/api.md "Usage"). A refused or failed search
 * charges nothing.
 */
export function meteredSearch(routes: RouteSpec[], meter: UsageCharges | undefined): RouteSpec[] {
  if (!meter) return routes;
  return routes.map((r) =>
    r.method === 'POST' && r.url === '/v1/search'
      ? {
          ...r,
          handler: async (ctx) => {
            const out = await r.handler(ctx);
            await meter.search(ctx.meta, (ctx.body as { mode?: 'TEXT' | 'SEMANTIC' | 'HYBRID' }).mode ?? 'HYBRID');
            return out;
          },
        }
      : r,
  );
}
