import {
  ACTIVITY_DEFAULT_WINDOW_MS,
  activityLogQuery,
  activityLogResponse,
  invalid,
  LEGACY_ACTIVITY_RESOURCES,
  route,
  type RouteSpec,
} from '@svc/contracts';
import type { ActivityLogStore } from './store';

/**
 * GET /v1/admin/logs (spec "Activity log"; docs/api.md "Activity log"): the
 * caller's tenant, narrowed to its context for a context-confined credential.
 */
export function activityLogRoutes(store: ActivityLogStore): RouteSpec[] {
  return [
    route({
      method: 'GET',
      url: '/v1/admin/logs',
      auth: 'data',
      permission: 'logs:r',
      summary: "The tenant's activity log: one entry per /v1 request, newest first (bodies are never logged)",
      query: activityLogQuery,
      response: activityLogResponse,
      handler: async ({ query, principal: p, meta }) => {
        // No startTime: the 24 hours before endTime (before now without one). No endTime: open-ended.
        if (query.startTime !== undefined && query.endTime !== undefined && query.endTime < query.startTime)
          throw invalid('endTime is earlier than startTime');
        const fromMs = query.startTime ?? (query.endTime ?? meta.now.getTime()) - ACTIVITY_DEFAULT_WINDOW_MS;
        const toMs = query.endTime;
        const tenantId = p.tenantId!;
        const started = performance.now();
        const out = (LEGACY_ACTIVITY_RESOURCES as readonly string[]).includes(query.resource ?? '')
          ? { entries: [], truncated: false }
          : await store.query({
              tenantId,
              contextId: p.crossContext ? undefined : (p.contextId ?? undefined),
              fromMs,
              toMs,
              limit: query.limit,
              errorsOnly: query.errorsOnly,
              resource: query.resource,
              method: query.method,
              keyId: query.keyId,
            });
        const queryDurationMs = Math.round((performance.now() - started) * 100) / 100;
        return { entries: out.entries, truncated: out.truncated, queryDurationMs, tenantId };
      },
    }),
  ];
}
