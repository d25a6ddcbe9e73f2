import { randomUUID } from 'node:crypto';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import {
  ERROR_CATALOGUE,
  findInputViolation,
  findJsonTextViolation,
  invalid,
  isServiceError,
  notFound,
  type Principal,
  type RouteSpec,
  ServiceError,
  WIRE_VERSION_TABLE,
  type WireVersionTable,
} from '@svc/contracts';
import { secondsToWindowEnd, windowOf } from '@svc/command-api';
import { applyCors, type CorsOrigins } from './cors';
import { requestIdOf } from './request-id';
import { traceRequests } from '../tracing';
import { deprecationHeaders, fallbackVersion, servedVersion, supportedVersions } from './wire-versions';
import { validationRefusal, zodValidatorCompiler } from './zod-provider';

export { parseWith } from './zod-provider';

/**
 * The HTTP edge every endpoint shares: request ids, the error body, the
 * Service-Version contract, the JSON number rules, the zod validator compiler.
 * Routes are plain `RouteSpec`s, registered by area (areas.ts) with their
 * guard (guard.ts: authentication, permission, pre-flight gates).
 */
export interface EdgeOptions {
  /** Resolves a data-plane or developer bearer credential (null when unknown, expired or revoked). */
  resolveCredential(token: string): Promise<Principal | null>;
  /** Whether `contextId` is a live context of `tenantId`. */
  contextExists(tenantId: string, contextId: string): Promise<boolean>;
  operatorToken?: string;
  /** The process's logger (log.ts); without one the edge logs nothing. */
  logger?: FastifyBaseLogger;
  /**
   * One line per answered request (LOG_REQUESTS, default on): method, route, path, status, duration, tenant, context.
   */
  logRequests?: boolean;
  /** Called after every response (activity log, metrics). */
  onResponse?(req: FastifyRequest, reply: FastifyReply, durationMs: number): void;
  /**
   * Gates every data-plane request passes, in this order, after authentication
   * and the permission check and before validation and the handler (the spec's
   * pre-flight order: credit ceiling 402, then burst limit 429, ...). A gate
   * throws a ServiceError to refuse; it may set response headers.
   */
  /** A gate answers at once (nothing returned, or a throw) when it can decide without waiting, else with a promise. */
  preflight?: Array<(g: PreflightContext) => Promise<void> | void>;
  /** The clock of the version table and the per-IP ceiling (default: the system clock). */
  now?: () => Date;
  /** Published Service-Version values with their sunset dates (default: WIRE_VERSION_TABLE). */
  wireVersions?: WireVersionTable;
  /**
   * Edge per-IP flood ceiling, requests per IP per minute, in process (EDGE_RATE_LIMIT_PER_MINUTE); 0 or unset disables
   * it.
   */
  ipRateLimitPerMinute?: number;
  /**
   * Reverse-proxy hops trusted for the client address (TRUST_PROXY_HOPS; default 0). With N > 0, `req.ip` (the per-IP
   * ceiling's key, and the logged remoteAddress) is the address N entries from the right of X-Forwarded-For plus the
   * TCP peer (proxy-addr's hop count, see `trustHops`): the entries each trusted proxy appended, never one the client
   * wrote further left. With 0, X-Forwarded-For is ignored and the TCP peer is the client. Hops are trusted without
   * checking the peer's address: a process with N > 0 must be reachable only through its N proxies.
   */
  trustProxyHops?: number;
  /**
   * CORS_ORIGINS (cors.ts): the origins whose pages may call the API; unset, no CORS header is sent and OPTIONS is 404.
   */
  corsOrigins?: CorsOrigins;
  /** A span per request (OTEL_EXPORTER_OTLP_ENDPOINT set; tracing.ts); off, no hook is installed. */
  traceRequests?: boolean;
  /** Hears each request a client sent, probes and scrapes aside (the embedding pool's pacing counts them). */
  noteRequest?: () => void;
}

export interface PreflightContext {
  req: FastifyRequest;
  reply: FastifyReply;
  spec: RouteSpec;
  principal: Principal;
  now: Date;
}

// `principal` on the request is declared with the routes (contracts/src/http/route.ts).
declare module 'fastify' {
  interface FastifyRequest {
    errorCode?: string;
  }
  interface FastifyContextConfig {
    auth?: string;
    /** The route's declaration (its query schema decides which validation refusal is answered). */
    spec?: RouteSpec;
  }
}

/**
 * Largest request body (docs/limits.md); larger is 413 PAYLOAD_TOO_LARGE. Files go through presigned uploads, not
 * bodies.
 */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;

const STREAMING = /^\/v1\/(rag|chat|changes|documents\/[^/]+\/ask)$/;
/** Liveness and readiness probes and metrics scrapes: not a client's request. */
const PROBES = /^\/(healthz|readyz|metrics)(\?|$)/;

export function errorBody(err: ServiceError, requestId: string | undefined) {
  return { message: err.message, errorCode: err.code, ...(requestId ? { requestId } : {}), ...(err.details ?? {}) };
}

function send(reply: FastifyReply, err: ServiceError) {
  reply.request.errorCode = err.code;
  if (err.headers) reply.headers(err.headers);
  // The spec fixes the reserved stubs' body (erasure): exactly {error: "not_implemented"}.
  const body = err.code === 'NOT_IMPLEMENTED' ? { error: 'not_implemented' } : errorBody(err, reply.request.id);
  return reply.status(err.status).type('application/json').send(body);
}

/**
 * Fastify's trustProxy for `hops` trusted reverse proxies (proxy-addr's hop-count semantics): the TCP peer and the
 * X-Forwarded-For entries appended by the first `hops - 1` proxies are proxies; the next entry from the right is the
 * client. 0: false, X-Forwarded-For is not read at all.
 */
export function trustHops(hops: number): false | ((address: string, hop: number) => boolean) {
  return hops > 0 ? (_address, hop) => hop < hops : false;
}

export function createEdge(opts: EdgeOptions): FastifyInstance {
  const app = Fastify({
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: false }),
    // Fastify's two lines per request (with the URL, query string included) give way to the one line of onResponse.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    // The client's valid X-Request-Id, else a new one: the id of the request's log lines and of its error body.
    genReqId: requestIdOf,
    bodyLimit: MAX_BODY_BYTES,
    // Exactly the configured hops, never `true` (which would believe whatever left-most address a client writes). A
    // function, not the number: Fastify 5.12.1 and later ignore a numeric trustProxy (it fails closed, so req.ip would
    // stay the proxy's). proxy-addr calls it with hop 0 for the TCP peer, 1 for the right-most X-Forwarded-For entry,
    // ...
    trustProxy: trustHops(opts.trustProxyHops ?? 0),
    // While closing, requests that arrive on a kept-alive connection are served, not refused with fastify's own 503
    // (no Retry-After, not our body): each answer then says `Connection: close` (onSend below), so a router moves to
    // another replica without a failed request and the connections end, letting close() finish at once.
    return503OnClosing: false,
    // Node's HTTP parser refusals (malformed requests, oversized headers) answer in our error body too.
    clientErrorHandler: (err, socket) => {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ECONNRESET' || code === 'EPIPE' || !socket.writable) return void socket.destroy();
      const e = new ServiceError(code === 'HPE_HEADER_OVERFLOW' ? 'HEADERS_TOO_LARGE' : 'BAD_HTTP');
      const id = randomUUID();
      const body = JSON.stringify(errorBody(e, id));
      socket.end(
        `HTTP/1.1 ${e.status} ` +
          `${e.status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\ncontent-type: ` +
          `application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-request-id: ` +
          `${id}\r\nconnection: close\r\n\r\n${body}`,
      );
    },
    // Fastify's own refusals (a malformed URL, say) answer in our error body too.
    frameworkErrors: (err, req, reply) => {
      reply.header('x-request-id', req.id);
      return send(reply, invalid(err.message || 'Invalid request'));
    },
  });

  // Bodies are JSON only (docs/api.md "Errors"): fastify's default text/plain parser goes, so any other media type is
  // 415 UNSUPPORTED_MEDIA_TYPE. The storage area (presigned local uploads) takes raw bytes through its own parser
  // (areas.ts).
  app.removeContentTypeParser('text/plain');
  // RFC 7386 bodies (the spec's PATCH) are JSON: one parser, the same rules.
  app.addContentTypeParser(
    ['application/json', 'application/merge-patch+json'],
    { parseAs: 'string' },
    (req, body, done) => {
      const text = body as string;
      if (text.trim() === '') return done(null, undefined);
      const violation = findJsonTextViolation(text);
      if (violation) return done(invalid(violation), undefined);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        return done(invalid('The body is not valid JSON'), undefined);
      }
      const refused = findInputViolation(parsed);
      if (refused) return done(invalid(refused), undefined);
      done(null, parsed);
    },
  );

  const clock = opts.now ?? (() => new Date());
  const versions = opts.wireVersions ?? WIRE_VERSION_TABLE;
  // Edge per-IP flood ceiling: one fixed one-minute window per IP, in process; its 429 has no requestId (spec).
  const ipCeiling = opts.ipRateLimitPerMinute ?? 0;
  let ipWindow = -1;
  const ipCounts = new Map<string, number>();

  const cors = opts.corsOrigins;
  // First, so every later hook and the handler run inside the request's span.
  if (opts.traceRequests) traceRequests(app);
  const noteRequest = opts.noteRequest;
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
    if (noteRequest && !PROBES.test(req.url)) noteRequest();
    // A preflight is answered before the flood ceiling: it reads nothing and costs no more than the ceiling's refusal.
    if (cors && applyCors(cors, req, reply)) return reply.status(204).send();
    if (ipCeiling > 0) {
      const at = clock();
      if (windowOf(at) !== ipWindow) {
        ipWindow = windowOf(at);
        ipCounts.clear();
      }
      // The client address: the TCP peer, or with trusted proxy hops the entry the outermost trusted proxy appended.
      const ip = req.ip;
      const n = (ipCounts.get(ip) ?? 0) + 1;
      ipCounts.set(ip, n);
      if (n > ipCeiling) {
        const e = new ServiceError('RATE_LIMITED', 'Too many requests from this address', {
          headers: { 'retry-after': String(secondsToWindowEnd(at)) },
        });
        req.errorCode = e.code;
        return reply.status(e.status).headers(e.headers!).type('application/json').send(errorBody(e, undefined));
      }
    }
    if (req.url.startsWith('/v1/') && !STREAMING.test(req.url.split('?')[0])) {
      const v = req.headers['service-version'];
      if (v !== undefined && !(typeof v === 'string' && servedVersion(versions, v, clock()))) {
        throw new ServiceError(
          'UNSUPPORTED_WIRE_VERSION',
          `Service-Version '${String(v)}' is not supported. Supported versions: ` +
            `${supportedVersions(versions, clock()).join(', ')}`,
        );
      }
    }
  });

  let draining = false;
  app.addHook('preClose', async () => {
    draining = true;
  });

  app.addHook('onSend', async (req, reply, payload) => {
    if (draining) reply.header('connection', 'close');
    // Every RATE_LIMITED answer of an authenticated request (burst limit, script concurrency, batch collision budget)
    // says X-RateLimit-Remaining: 0 (spec "Rate limits"), whatever the burst gate counted before; X-RateLimit-Limit
    // stays. The edge per-IP ceiling refuses before authentication and keeps its own shape.
    if (reply.statusCode === 429 && req.errorCode === 'RATE_LIMITED' && req.principal)
      reply.header('x-ratelimit-remaining', '0');
    if (req.url.startsWith('/v1/')) {
      // Streaming operations ignore the header and serve the current shape; the rest: header, else the credential's
      // pin, else the floor.
      const at = clock();
      const v = req.headers['service-version'];
      const streaming = STREAMING.test(req.url.split('?')[0]);
      if (streaming)
        reply.header('service-version', versions.versions[versions.versions.length - 1]?.version ?? versions.floor);
      else {
        const entry =
          (typeof v === 'string' && servedVersion(versions, v, at)) ||
          fallbackVersion(versions, req.principal?.wireVersionPin, at);
        reply.header('service-version', entry.version);
        reply.headers(deprecationHeaders(entry));
      }
    }
    return payload;
  });

  app.addHook('onResponse', async (req, reply) => {
    opts.onResponse?.(req, reply, reply.elapsedTime);
    if (opts.logRequests && opts.logger) logRequest(req, reply);
  });

  // Request schemas go through the zod type provider (zod-provider.ts).
  app.setValidatorCompiler(zodValidatorCompiler);

  app.setErrorHandler((thrown: unknown, req, reply) => {
    const err = (thrown as { validationContext?: string }).validationContext
      ? validationRefusal(req, thrown as Error, req.routeOptions.config.spec)
      : thrown;
    if (isServiceError(err)) return send(reply, err);
    const e = err as { statusCode?: number; code?: string; message?: string };
    if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return send(reply, new ServiceError('PAYLOAD_TOO_LARGE'));
    if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return send(reply, new ServiceError('UNSUPPORTED_MEDIA_TYPE'));
    if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500)
      return send(reply, invalid(e.message ?? 'Invalid request'));
    req.log.error({ err }, 'unhandled error');
    reply.request.errorCode = 'INTERNAL';
    return reply.status(500).send({
      message: ERROR_CATALOGUE.INTERNAL.message,
      errorCode: 'INTERNAL',
      requestId: req.id,
      correlationId: req.id,
    });
  });

  app.setNotFoundHandler((req, reply) => send(reply, notFound()));
  return app;
}

/**
 * The request's one log line (its child logger adds `requestId`): the route template and the path without the query
 * string (presigned URLs carry their signature there), never headers or bodies; 5xx at error level (the stack of an
 * unhandled error is its own line, from the error handler).
 */
function logRequest(req: FastifyRequest, reply: FastifyReply): void {
  const p = req.principal as Principal | undefined;
  const q = req.url.indexOf('?');
  const line = {
    method: req.method,
    route: (req.routeOptions.url as string | undefined) ?? null,
    path: q < 0 ? req.url : req.url.slice(0, q),
    status: reply.statusCode,
    durationMs: Math.round(reply.elapsedTime * 100) / 100,
    ...(p?.tenantId ? { tenantId: p.tenantId, contextId: p.contextId } : {}),
    ...(req.errorCode ? { errorCode: req.errorCode } : {}),
    remoteAddress: req.ip,
  };
  if (reply.statusCode >= 500) req.log.error(line, 'request');
  else req.log.info(line, 'request');
}
