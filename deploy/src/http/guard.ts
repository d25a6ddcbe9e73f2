import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  findInputViolation,
  forbidden,
  invalid,
  notFound,
  type Principal,
  type RouteSpec,
  ServiceError,
} from '@svc/contracts';
import { permitsRoute } from '@svc/domain';
import type { EdgeOptions, PreflightContext } from './edge';

const CONTEXT_HEADER = 'x-context-id';

/** `Authorization: Bearer <token>`; the scheme name is case-insensitive (RFC 7235 §2.1: `bearer`, `BEARER`). */
const BEARER_RE = /^bearer +(.*)$/is;

const bearer = (req: FastifyRequest): string | null => {
  const h = req.headers.authorization;
  const m = h ? BEARER_RE.exec(h) : null;
  return m?.[1].trim() || null;
};

const safeEqual = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

async function authenticate(req: FastifyRequest, spec: RouteSpec, opts: EdgeOptions): Promise<Principal> {
  const token = bearer(req);
  if (spec.auth === 'operator') {
    // Without OPERATOR_TOKEN the operator API does not exist.
    if (!opts.operatorToken) throw notFound();
    if (!token || !safeEqual(token, opts.operatorToken)) throw new ServiceError('UNAUTHORIZED');
    return {
      credentialId: 'operator',
      kind: 'operator',
      accountId: '',
      tenantId: null,
      environment: null,
      contextId: null,
      crossContext: true,
      allowedActions: ['*'],
      dataScope: null,
      userId: null,
      wireVersionPin: null,
    };
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

/**
 * The route's guard, run as its `onRequest` hook, before the body is read or
 * parsed: the spec's pre-flight order puts the caller first (authentication,
 * the permission check, the pre-flight gates: credit ceiling 402, burst limit
 * 429, inference balance), then the text rules of path and query; the body's
 * parse (malformed JSON, media type, size) and the schemas (zod-provider.ts)
 * come after, so an unauthenticated or unpermitted caller learns nothing of
 * how its body would have been judged (the erasure stub's uniform 403).
 */
export function guardOf(spec: RouteSpec, opts: EdgeOptions, now: () => Date) {
  const gates = spec.auth === 'data' ? (opts.preflight ?? []) : [];
  return async function guard(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const principal = spec.auth === 'none' ? (undefined as unknown as Principal) : await authenticate(req, spec, opts);
    req.principal = principal;
    if (spec.auth === 'data') {
      if (spec.rootOnly && principal.kind !== 'root') throw forbidden();
      if (!permitsRoute(principal.allowedActions, spec)) throw forbidden();
      if (gates.length) {
        const g: PreflightContext = { req, reply, spec, principal, now: now() };
        for (let i = 0; i < gates.length; i++) {
          if (i > 0) g.now = now();
          const waiting = gates[i](g);
          if (waiting) await waiting;
        }
      }
    }
    // Path and query text obeys the body's text rules (no NUL, no lone surrogate).
    const refused = findInputViolation(req.params) ?? findInputViolation(req.query);
    if (refused) throw invalid(refused.replace('the body', 'the path or query'));
  };
}

/** The route's `preValidation` hook: only PUT and PATCH need a body; elsewhere an absent one reads as `{}`. */
export function bodyDefaultOf(spec: RouteSpec): ((req: FastifyRequest) => Promise<void>) | undefined {
  if (!spec.body || spec.method === 'PUT' || spec.method === 'PATCH') return undefined;
  return async (req) => {
    if (req.body === undefined) req.body = {};
  };
}
