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
  /**
   * Required permission for data-plane credentials (checked before the pre-flight gates and the body; uniform 403).
   * A name of `*` (`scripts:x:*`): the action on at least one name; the handler then checks the name it addresses.
   */
  permission?: string;
  /**
   * At least one of these permissions, checked where `permission` is (a route whose handler then narrows by what each
   * one reads: the change stream's kinds).
   */
  anyPermission?: readonly string[];
  /** Only the root key (or another credential kind listed) may call it. */
  rootOnly?: boolean;
  body?: z.ZodType<B>;
  query?: z.ZodType<Q>;
  params?: z.ZodType<P>;
  status?: number;
  response?: z.ZodTypeAny;
  /**
   * The operation's name in `/openapi.json` (and so in the generated client): the spec's
   * operation name where it gives one (`createSchema`, `patchRecord`, `ingestDocument`, ...).
   * Omitted, it is derived from the method and path (deploy/src/http/openapi.ts, `operationIdOf`).
   */
  operationId?: string;
  /**
   * Error statuses this route answers beyond those `/openapi.json` derives from the
   * route itself (400 for input, 401/403 for credentials, 404 for ids, 409 for
   * `expectedVersion`, 402/429 for metered and rate-limited routes): e.g. 409 for a
   * conflict the handler raises, 413, 501.
   */
  errors?: number[];
  /** Other success statuses answering the same body as `status` (a repeated create answers 200, not 201). */
  statuses?: number[];
  /**
   * The success body is not JSON: its media type (e.g. `text/plain`, `application/x-ndjson`); `response`, when set,
   * describes it.
   */
  contentType?: string;
  /**
   * The success body is a Server-Sent Events stream (`text/event-stream`, `event: <name>`
   * and `data: <json>` frames): the `data` schema of each event name it may carry.
   */
  stream?: Record<string, z.ZodTypeAny>;
  /**
   * How the stream's frames come, for `/openapi.json` (default: the inference streams' fixed order, ended by `done` or
   * `error`).
   */
  streamDescription?: string;
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

/**
 * One area of the API (records, documents, folders, search, ...): its routes, registered by the edge as one fastify
 * plugin. The write side lists its areas in command-api (`commandAreas`), the read side in query-api (`queryAreas`).
 */
export interface Area {
  name: string;
  routes: RouteSpec[];
  /** Its routes read the raw request stream (the embedded storage endpoint): no body parser runs in its scope. */
  rawBody?: boolean;
}
