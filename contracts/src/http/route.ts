import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { Principal, RequestMeta } from './principal';

/**
 * The one way an endpoint is declared: its schemas validate the request and
 * also generate `/openapi.json`. Handlers return the response body; the edge
 * sends it with `status` (204 sends no body).
 */
export type AuthKind = 'none' | 'data' | 'developer' | 'operator';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller, set by the edge before a handler or listener sees the request. */
    principal?: Principal;
  }
}

export interface HandlerContext<B, Q, P> {
  body: B;
  query: Q;
  params: P;
  principal: Principal;
  meta: RequestMeta;
  req: FastifyRequest;
  reply: FastifyReply;
}

export interface RouteSpec<B = any, Q = any, P = any> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  auth: AuthKind;
  summary: string;
  /** Required permission for data-plane credentials (checked before the handler; uniform 403). */
  permission?: string;
  /** Only the root key (or another credential kind listed) may call it. */
  rootOnly?: boolean;
  body?: z.ZodType<B>;
  query?: z.ZodType<Q>;
  params?: z.ZodType<P>;
  status?: number;
  response?: z.ZodTypeAny;
  /** Does this request count as a write for rate limits and read-your-writes? */
  write?: boolean;
  /**
   * Counts toward the per-account burst limit though it writes nothing (search,
   * inference). Writes always count; reads (GET, POST lookups, batch-get) do not.
   */
  rateLimited?: boolean;
  handler(ctx: HandlerContext<B, Q, P>): Promise<unknown>;
}

export const route = <B, Q, P>(spec: RouteSpec<B, Q, P>): RouteSpec<B, Q, P> => spec;
