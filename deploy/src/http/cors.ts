import type { FastifyReply, FastifyRequest } from 'fastify';

/** CORS_ORIGINS: `*`, or the exact origins (scheme, host, port) browsers may call the API from. */
export type CorsOrigins = '*' | readonly string[];

/** Methods of the API's routes (HEAD: fastify answers it for every GET). */
export const CORS_ALLOWED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
/** Request headers a browser may send: the credential, the body's type and the API's own headers. */
export const CORS_ALLOWED_HEADERS = [
  'authorization',
  'content-type',
  'idempotency-key',
  'service-version',
  'x-context-id',
  'x-request-id',
  'last-event-id',
];
/** Response headers a page may read beyond the CORS-safelisted ones (the rate-limit pair is the burst limit's). */
export const CORS_EXPOSED_HEADERS = [
  'x-request-id',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'retry-after',
  'deprecation',
  'sunset',
];
/** How long a browser may reuse a preflight answer (Chromium caps it at 2 hours). */
export const CORS_MAX_AGE_SECONDS = 600;

/**
 * The CORS headers of every answer, set in the first onRequest hook so that every reply carries them: successes,
 * every refusal (the edge's flood ceiling too) and the SSE streams. Credentials are bearer tokens, so
 * Access-Control-Allow-Credentials is never sent and a page cannot send cookies. Returns true when the request is
 * a preflight, which the caller answers at once with 204.
 */
export function applyCors(origins: CorsOrigins, req: FastifyRequest, reply: FastifyReply): boolean {
  const origin = req.headers.origin;
  // The answer depends on Origin unless every origin gets the same one: caches must key on it.
  if (origins !== '*') addVary(reply, 'Origin');
  const allowed = typeof origin === 'string' && (origins === '*' || origins.includes(origin));
  if (allowed) {
    reply.header('access-control-allow-origin', origins === '*' ? '*' : origin);
    reply.header('access-control-expose-headers', CORS_EXPOSED_HEADERS.join(', '));
  }
  const preflight = req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
  if (preflight && allowed) {
    reply.header('access-control-allow-methods', CORS_ALLOWED_METHODS.join(', '));
    reply.header('access-control-allow-headers', CORS_ALLOWED_HEADERS.join(', '));
    reply.header('access-control-max-age', String(CORS_MAX_AGE_SECONDS));
  }
  return preflight;
}

/** Adds a field to the answer's Vary header, keeping those already named (CORS's Origin, a gzip answer's). */
export function addVary(reply: FastifyReply, field: string): void {
  const had = reply.getHeader('vary');
  const fields =
    had === undefined
      ? []
      : String(had)
          .split(',')
          .map((f) => f.trim())
          .filter(Boolean);
  if (!fields.some((f) => f.toLowerCase() === field.toLowerCase())) fields.push(field);
  reply.header('vary', fields.join(', '));
}
