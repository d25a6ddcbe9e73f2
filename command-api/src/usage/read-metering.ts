import type { FastifyReply, FastifyRequest } from 'fastify';
import { pipeline, Readable, Transform } from 'node:stream';
import type { RouteSpec } from '@svc/contracts';
import { drawsCredits } from './gates';
import type { UsageMeter } from './meter';

/**
 * Read metering (docs/api.md "Usage"): every data-plane read answered with a
 * success (GET by id, lists, lookups, history, text, POST lookups and
 * batch-get, the audit export) counts one call and its response bytes (its
 * Content-Length, or the bytes a streamed answer sent) for the caller's account,
 * tenant and context. Writes, searches, inference and the
 * usage report itself are not reads.
 */
export const isMeteredRead = (r: RouteSpec) =>
  r.auth === 'data' && !r.write && !r.rateLimited && !drawsCredits(r) && r.url !== '/v1/usage';

/** Bytes of each streamed answer, counted as they are sent. */
const streamed = new WeakMap<FastifyReply, { bytes: number }>();

/**
 * The edge's read metering (routes: everything the edge serves): `onResponse` counts a read once its answer has
 * ended; `onSend` counts the bytes of a read answered as a stream (no Content-Length: the audit export) as they are
 * sent. Other answers pass through `onSend` untouched.
 */
export function readMetering(meter: UsageMeter, routes: () => RouteSpec[], now: () => Date) {
  let reads: Set<string> | undefined;
  const isRead = (req: FastifyRequest) => {
    reads ??= new Set(
      routes()
        .filter(isMeteredRead)
        .map((r) => `${r.method} ${r.url}`),
    );
    return reads.has(`${req.method} ${req.routeOptions.url}`);
  };
  return {
    onResponse(req: FastifyRequest, reply: FastifyReply) {
      const p = req.principal;
      if (!p || !p.tenantId || reply.statusCode >= 400 || !isRead(req)) return;
      const length = Number(reply.getHeader('content-length'));
      meter.countRead(p, Number.isFinite(length) ? length : (streamed.get(reply)?.bytes ?? 0), now());
    },
    async onSend(req: FastifyRequest, reply: FastifyReply, payload: unknown) {
      if (!(payload instanceof Readable) || reply.hasHeader('content-length') || !isRead(req)) return payload;
      const sent = { bytes: 0 };
      streamed.set(reply, sent);
      const counter = new Transform({
        transform(chunk: Buffer | string, _enc, done) {
          sent.bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
          done(null, chunk);
        },
      });
      // An error of the source ends the counter with it, which ends the answer as the source alone would have.
      return pipeline(payload, counter, () => undefined);
    },
  };
}
