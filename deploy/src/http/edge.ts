import { randomUUID, timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ERROR_CATALOGUE, findInputViolation, findJsonTextViolation, forbidden, invalid, isServiceError, notFound, type Principal, type RouteSpec, ServiceError, WIRE_VERSION_TABLE, type WireVersionTable } from '@svc/contracts';
import { secondsToWindowEnd, windowOf } from '@svc/command-api';
import { grants } from '@svc/domain';
import { deprecationHeaders, fallbackVersion, servedVersion, supportedVersions } from './wire-versions';

/**
 * The HTTP edge every endpoint shares: request ids, the error body, the
 * Service-Version contract, the JSON number rules, authentication and
 * permission checks. Routes are plain `RouteSpec`s registered through it.
 */
export interface EdgeOptions {
  /** Resolves a data-plane or developer bearer credential (null when unknown, expired or revoked). */
  resolveCredential(token: string): Promise<Principal | null>;
  /** Whether `contextId` is a live context of `tenantId`. */
  contextExists(tenantId: string, contextId: string): Promise<boolean>;
  operatorToken?: string;
  logger?: boolean;
  /** Called after every response (activity log, metrics). */
  onResponse?(req: FastifyRequest, reply: FastifyReply, durationMs: number): void;
  /**
   * Gates every data-plane request passes, in this order, after authentication
   * and the permission check and before validation and the handler (the spec's
   * pre-flight order: credit ceiling 402, then burst limit 429, ...). A gate
   * throws a ServiceError to refuse; it may set response headers.
   */
  preflight?: Array<(g: PreflightContext) => Promise<void>>;
  /** The clock of the version table and the per-IP ceiling (default: the system clock). */
  now?: () => Date;
  /** Published Service-Version values with their sunset dates (default: WIRE_VERSION_TABLE). */
  wireVersions?: WireVersionTable;
  /** Edge per-IP flood ceiling, requests per IP per minute, in process (EDGE_RATE_LIMIT_PER_MINUTE); 0 or unset disables it. */
  ipRateLimitPerMinute?: number;
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
  }
}

/** Largest request body (docs/limits.md); larger is 413 PAYLOAD_TOO_LARGE. Files go through presigned uploads, not bodies. */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;

const STREAMING = /^\/v1\/(rag|chat|documents\/[^/]+\/ask)$/;
const CONTEXT_HEADER = 'x-context-id';

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

const zodMessage = (e: z.ZodError) =>
  e.issues
    .slice(0, 5)
    .map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ');

export function parseWith<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T {
  if (!schema) return value as T;
  const r = schema.safeParse(value ?? (where === 'body' ? {} : value));
  if (!r.success) throw invalid(`Invalid ${where}: ${zodMessage(r.error)}`);
  return r.data;
}

/**
 * The body of a route that declares one. JSON `null` is never a request body, and
 * PUT / PATCH need one: an absent body is not `{}` there (it would replace or
 * patch with nothing). Both are a 400 that changes nothing.
 */
function requestBody(req: FastifyRequest): unknown {
  if (req.body === null) throw invalid('The body must be a JSON object, not null');
  if (req.body === undefined && (req.method === 'PUT' || req.method === 'PATCH')) throw invalid(`A ${req.method} request needs a JSON object body`);
  return req.body;
}

const bearer = (req: FastifyRequest): string | null => {
  const h = req.headers.authorization;
  if (!h || !h.startsWith('Bearer ')) return null;
  return h.slice(7).trim() || null;
};

const safeEqual = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

export function createEdge(opts: EdgeOptions): FastifyInstance {
  const app = Fastify({
    logger: opts.logger ? { level: 'info' } : false,
    genReqId: () => randomUUID(),
    bodyLimit: MAX_BODY_BYTES,
    return503OnClosing: true,
    // Node's HTTP parser refusals (malformed requests, oversized headers) answer in our error body too.
    clientErrorHandler: (err, socket) => {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ECONNRESET' || code === 'EPIPE' || !socket.writable) return void socket.destroy();
      const e = new ServiceError(code === 'HPE_HEADER_OVERFLOW' ? 'HEADERS_TOO_LARGE' : 'BAD_HTTP');
      const body = JSON.stringify(errorBody(e, randomUUID()));
      socket.end(`HTTP/1.1 ${e.status} ${e.status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    },
    // Fastify's own refusals (a malformed URL, say) answer in our error body too.
    frameworkErrors: (err, req, reply) => {
      reply.header('x-request-id', req.id);
      return send(reply, invalid(err.message || 'Invalid request'));
    },
  });

  // RFC 7386 bodies (the spec's PATCH) are JSON: one parser, the same rules.
  app.addContentTypeParser(['application/json', 'application/merge-patch+json'], { parseAs: 'string' }, (req, body, done) => {
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
  });

  const clock = opts.now ?? (() => new Date());
  const versions = opts.wireVersions ?? WIRE_VERSION_TABLE;
  // Edge per-IP flood ceiling: one fixed one-minute window per IP, in process; its 429 has no requestId (spec).
  const ipCeiling = opts.ipRateLimitPerMinute ?? 0;
  let ipWindow = -1;
  const ipCounts = new Map<string, number>();

  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
    if (ipCeiling > 0) {
      const at = clock();
      if (windowOf(at) !== ipWindow) {
        ipWindow = windowOf(at);
        ipCounts.clear();
      }
      const n = (ipCounts.get(req.ip) ?? 0) + 1;
      ipCounts.set(req.ip, n);
      if (n > ipCeiling) {
        const e = new ServiceError('RATE_LIMITED', 'Too many requests from this address', { headers: { 'retry-after': String(secondsToWindowEnd(at)) } });
        req.errorCode = e.code;
        return reply.status(e.status).headers(e.headers!).type('application/json').send(errorBody(e, undefined));
      }
    }
    if (req.url.startsWith('/v1/') && !STREAMING.test(req.url.split('?')[0])) {
      const v = req.headers['service-version'];
      if (v !== undefined && !(typeof v === 'string' && servedVersion(versions, v, clock()))) {
        throw new ServiceError('UNSUPPORTED_WIRE_VERSION', `Service-Version '${String(v)}' is not supported. Supported versions: ${supportedVersions(versions, clock()).join(', ')}`);
      }
    }
  });

  app.addHook('onSend', async (req, reply, payload) => {
    if (req.url.startsWith('/v1/')) {
      // Streaming operations ignore the header and serve the current shape; the rest: header, else the credential's pin, else the floor.
      const at = clock();
      const v = req.headers['service-version'];
      const streaming = STREAMING.test(req.url.split('?')[0]);
      if (streaming) reply.header('service-version', versions.versions[versions.versions.length - 1]?.version ?? versions.floor);
      else {
        const entry = (typeof v === 'string' && servedVersion(versions, v, at)) || fallbackVersion(versions, req.principal?.wireVersionPin, at);
        reply.header('service-version', entry.version);
        reply.headers(deprecationHeaders(entry));
      }
    }
    return payload;
  });

  app.addHook('onResponse', async (req, reply) => {
    opts.onResponse?.(req, reply, reply.elapsedTime);
  });

  app.setErrorHandler((err: unknown, req, reply) => {
    if (isServiceError(err)) return send(reply, err);
    const e = err as { statusCode?: number; code?: string; message?: string };
    if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return send(reply, new ServiceError('PAYLOAD_TOO_LARGE'));
    if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return send(reply, new ServiceError('UNSUPPORTED_MEDIA_TYPE'));
    if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) return send(reply, invalid(e.message ?? 'Invalid request'));
    req.log.error({ err }, 'unhandled error');
    reply.request.errorCode = 'INTERNAL';
    return reply.status(500).send({ message: ERROR_CATALOGUE.INTERNAL.message, errorCode: 'INTERNAL', requestId: req.id, correlationId: req.id });
  });

  app.setNotFoundHandler((req, reply) => send(reply, notFound()));
  return app;
}

async function authenticate(req: FastifyRequest, spec: RouteSpec, opts: EdgeOptions): Promise<Principal> {
  const token = bearer(req);
  if (spec.auth === 'operator') {
    // Without OPERATOR_TOKEN the operator API does not exist.
    if (!opts.operatorToken) throw notFound();
    if (!token || !safeEqual(token, opts.operatorToken)) throw new ServiceError('UNAUTHORIZED');
    return { credentialId: 'operator', kind: 'operator', accountId: '', tenantId: null, environment: null, contextId: null, crossContext: true, allowedActions: ['*'], dataScope: null, userId: null, wireVersionPin: null };
  }
  if (!token) throw new ServiceError('UNAUTHORIZED');
  const p = await opts.resolveCredential(token);
  if (!p) throw new ServiceError('UNAUTHORIZED');
  if (spec.auth === 'developer') {
    if (p.kind !== 'developer') throw forbidden();
    return p;
  }
  if (p.kind === 'developer') throw forbidden();
  const wanted = req.headers[CONTEXT_HEADER];
  if (typeof wanted === 'string' && wanted !== p.contextId) {
    // Only cross-context credentials may choose; every other miss reads as not found.
    if (!p.crossContext || !(await opts.contextExists(p.tenantId!, wanted))) throw notFound();
    return { ...p, contextId: wanted };
  }
  return p;
}

/** Registers routes on the edge: validation, auth and permission first, then the handler. */
export function registerRoutes(app: FastifyInstance, routes: RouteSpec[], opts: EdgeOptions, now: () => Date) {
  for (const spec of routes) {
    app.route({
      method: spec.method,
      url: spec.url,
      config: { auth: spec.auth },
      handler: async (req, reply) => {
        const principal = spec.auth === 'none' ? (undefined as unknown as Principal) : await authenticate(req, spec, opts);
        req.principal = principal;
        if (spec.auth === 'data') {
          if (spec.rootOnly && principal.kind !== 'root') throw forbidden();
          if (spec.permission && !grants(principal.allowedActions, spec.permission)) throw forbidden();
          for (const gate of opts.preflight ?? []) await gate({ req, reply, spec, principal, now: now() });
        }
        // Path and query text obeys the body's text rules (no NUL, no lone surrogate).
        const refused = findInputViolation(req.params) ?? findInputViolation(req.query);
        if (refused) throw invalid(refused.replace('the body', 'the path or query'));
        const params = parseWith(spec.params, req.params, 'path');
        const query = parseWith(spec.query, req.query, 'query');
        const body = spec.body ? parseWith(spec.body, requestBody(req), 'body') : (req.body as unknown);
        // The declared status is the default; a handler may answer otherwise (e.g. 200 for an idempotent re-create).
        reply.status(spec.status ?? 200);
        const out = await spec.handler({ body, query, params, principal, meta: { requestId: req.id, principal, now: now() }, req, reply });
        if (reply.sent) return reply;
        if (reply.statusCode === 204) return reply.send();
        return out;
      },
    });
  }
}
