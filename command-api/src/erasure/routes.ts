import { notImplemented, route, type RouteSpec } from '@svc/contracts';

/**
 * Erasure (spec "Erasure (reserved)"): a frozen contract stub, written here and read
 * in query-api/src/erasure/routes.ts. Both operations
 * need the root key (scoped keys `ssk_` and tokens `st_` get the uniform 403
 * before the stub runs) and answer 501 with exactly `{error: "not_implemented"}`
 * (the edge's body for NOT_IMPLEMENTED). Request and response shapes are not
 * shown by the spec, so nothing is validated.
 */
const reserved = async (): Promise<never> => {
  throw notImplemented('Erasure is reserved and not implemented');
};

/** POST /v1/erasure-requests (served by the command role). */
export const erasureRequestRoute = (): RouteSpec =>
  route({
    method: 'POST',
    url: '/v1/erasure-requests',
    operationId: 'createErasureRequest',
    auth: 'data',
    rootOnly: true,
    summary: 'Reserved: request erasure (501 {error: "not_implemented"}; root key only)',
    status: 501,
    handler: reserved,
  });
