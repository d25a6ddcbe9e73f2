import { notImplemented, route, type RouteSpec } from '@svc/contracts';

/**
 * Erasure (spec "Erasure (reserved)"): the read half of a frozen contract stub
 * (the write half: command-api/src/erasure/routes.ts). Root key only; answers
 * 501 with exactly `{error: "not_implemented"}`.
 */
const reserved = async (): Promise<never> => {
  throw notImplemented('Erasure is reserved and not implemented');
};

/** GET /v1/erasure-requests/{id} (served by the query role). */
export const erasureStatusRoute = (): RouteSpec =>
  route({
    method: 'GET',
    url: '/v1/erasure-requests/:id',
    operationId: 'getErasureRequest',
    auth: 'data',
    rootOnly: true,
    summary: 'Reserved: erasure request status (501 {error: "not_implemented"}; root key only)',
    status: 501,
    handler: reserved,
  });
