import {
  conflict,
  jwtIssuersResponse,
  notFound,
  putJwtIssuersBody,
  route,
  type RouteSpec,
  tenantIdParam,
} from '@svc/contracts';
import {
  claim,
  type CommandDeps,
  type DomainAppend,
  handleCommand,
  isTornDown,
  jwtIssuerPairChanges,
  jwtIssuerReservation,
  jwtIssuersDecider,
  jwtIssuerView,
  metadataFor,
  readReservation,
  release,
  streams,
  type TenantDirectory,
} from '@svc/domain';

const HELD = 'This issuer and audience are registered to another tenant';

/**
 * The identity providers whose tokens a tenant accepts (docs/identity.md "Sign in with your identity provider").
 * One stream per tenant holds its whole list; each (issuer, audience) pair is a reservation claimed in the same
 * append, so a pair belongs to one tenant (a torn-down tenant's pairs may be taken over).
 */
export function jwtIssuerCommandRoutes(deps: CommandDeps, tenants: TenantDirectory): RouteSpec[] {
  return [
    route({
      method: 'PUT',
      url: '/operator/tenants/:tenantId/jwt-issuers',
      operationId: 'putJwtIssuers',
      auth: 'operator',
      summary:
        'Set the identity providers whose tokens (JWTs) are credentials of the tenant: the whole list, ' +
        'replacing the previous one (409 when another tenant registered the same issuer and audience)',
      params: tenantIdParam,
      body: putJwtIssuersBody,
      response: jwtIssuersResponse,
      write: true,
      handler: async ({ params, body, meta }) => {
        const { tenantId } = params;
        const accountId = await tenants.accountOf(tenantId);
        if (!accountId || (await isTornDown(deps.store, tenantId))) throw notFound();
        const { state } = await handleCommand(deps, {
          streamId: streams.jwtIssuers(tenantId),
          aggregate: jwtIssuersDecider,
          metadata: { ...metadataFor(meta, tenantId, null), accountId },
          decide: (s) => ({
            events: jwtIssuersDecider.decide({ type: 'SetJwtIssuers', tenantId, accountId, issuers: body.issuers }, s),
          }),
          beforeAppend: async ({ state: before, next }) => {
            const { released, claimed } = jwtIssuerPairChanges(before.issuers, next.issuers);
            const appends: DomainAppend[] = [];
            for (const i of released) {
              const r = await readReservation(deps.store, ...jwtIssuerReservation(i));
              if (r.holder === tenantId) appends.push(release(r));
            }
            for (const i of claimed) {
              const r = await readReservation(deps.store, ...jwtIssuerReservation(i));
              if (r.holder === tenantId) continue;
              if (r.holder && !(await isTornDown(deps.store, r.holder))) throw conflict(HELD);
              // A pair held by a torn-down tenant is free: taken over.
              appends.push(claim(r, tenantId, { takeOver: true }));
            }
            return appends;
          },
          // Another tenant claimed or released a pair meanwhile: decide again from what it holds now.
          onConflict: () => 'retry',
        });
        return { issuers: state.issuers.map(jwtIssuerView) };
      },
    }),
  ];
}
