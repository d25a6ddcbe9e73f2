import {
  contextResponse,
  idParam,
  jwtIssuersResponse,
  listEnvelope,
  notFound,
  pageQuery,
  type Paginator,
  pingResponse,
  route,
  type RouteSpec,
  tenantIdParam,
} from '@svc/contracts';
import { jwtIssuerView } from '@svc/domain';
import type { TenancyReads } from './contexts';

export function tenancyQueryRoutes(reads: TenancyReads, pages: Paginator): RouteSpec[] {
  return [
    route({
      method: 'GET',
      url: '/v1/ping',
      operationId: 'ping',
      auth: 'data',
      summary:
        'Checks a credential: 200 with its tenant, context and environment (no permission needed; logged ' +
        'as the `ping` resource)',
      response: pingResponse,
      handler: async ({ principal: p }) => ({
        status: 'ok' as const,
        tenantId: p.tenantId!,
        contextId: p.contextId ?? null,
        livemode: p.environment === 'live',
      }),
    }),
    route({
      method: 'GET',
      url: '/v1/contexts',
      auth: 'data',
      summary: 'List the app contexts of the caller tenant (a context-confined credential sees only its own)',
      query: pageQuery,
      response: listEnvelope(contextResponse),
      handler: async ({ query, principal: p }) => {
        const scope = `contexts:${p.tenantId}:${p.crossContext ? '*' : p.contextId}`;
        const params = { limit: query.limit };
        const after = pages.start<[string, string]>(scope, params, query.startFrom);
        if (!p.crossContext) {
          const own = await reads.context(p.tenantId!, p.contextId!);
          return { data: own ? [own] : [], nextCursor: null };
        }
        const rows = await reads.listContexts(p.tenantId!, after, query.limit + 1);
        return pages.page(
          scope,
          params,
          rows,
          query.limit,
          (r) => [r.createdAt, r.id] as [string, string],
          (r) => r,
        );
      },
    }),
    route({
      method: 'GET',
      url: '/operator/accounts/:id',
      auth: 'operator',
      summary: 'Read an account (plan, limits, balance, tenants)',
      params: idParam,
      handler: async ({ params }) => (await reads.account(params.id)) ?? Promise.reject(notFound()),
    }),
    route({
      method: 'GET',
      url: '/operator/tenants/:tenantId/jwt-issuers',
      operationId: 'getJwtIssuers',
      auth: 'operator',
      summary: 'The identity providers whose tokens (JWTs) are credentials of the tenant',
      params: tenantIdParam,
      response: jwtIssuersResponse,
      handler: async ({ params }) => {
        const issuers = await reads.jwtIssuers(params.tenantId);
        if (!issuers) throw notFound();
        return { issuers: issuers.map(jwtIssuerView) };
      },
    }),
  ];
}
