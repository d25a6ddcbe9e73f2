import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RouteSpec } from '@svc/contracts';
import { drawsCredits } from './gates';
import type { UsageMeter } from './meter';

/**
 * Read metering (docs/api.md "Usage"): every data-plane read answered with a
 * success (GET by id, lists, lookups, history, text, POST lookups and
 * batch-get) counts one call and its response bytes (Content-Length) for the
 * caller's account, tenant and context. Writes, searches, inference and the
 * usage report itself are not reads.
 */
export const isMeteredRead = (r: RouteSpec) =>
  r.auth === 'data' && !r.write && !r.rateLimited && !drawsCredits(r) && r.url !== '/v1/usage';

/** The edge's `onResponse` listener that counts reads (routes: everything the edge serves). */
export function readMeteringListener(meter: UsageMeter, routes: () => RouteSpec[], now: () => Date) {
  let reads: Set<string> | undefined;
  return (req: FastifyRequest, reply: FastifyReply) => {
    const p = req.principal;
    if (!p || !p.tenantId || reply.statusCode >= 400) return;
    reads ??= new Set(
      routes()
        .filter(isMeteredRead)
        .map((r) => `${r.method} ${r.url}`),
    );
    if (!reads.has(`${req.method} ${req.routeOptions.url}`)) return;
    const length = Number(reply.getHeader('content-length'));
    meter.countRead(p, Number.isFinite(length) ? length : 0, now());
  };
}
