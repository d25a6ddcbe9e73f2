import { route, type RouteSpec, usageQuery, usageReport } from '@svc/contracts';
import type { UsageReads } from './report';

/** GET /v1/usage (spec "Usage"): `billing:r` on scoped credentials (the root key always passes). */
export function usageRoutes(reads: UsageReads): RouteSpec[] {
  return [
    route({
      method: 'GET',
      url: '/v1/usage',
      auth: 'data',
      permission: 'billing:r',
      summary:
        'Usage report of the period (year, month; default the current one): credits in exact ' +
        'milli-credits, per environment and per app context (docs/api.md "Usage")',
      query: usageQuery,
      response: usageReport,
      handler: ({ query, principal, meta }) => reads.report(principal, query, meta.now),
    }),
  ];
}
