import type { FastifyReply } from 'fastify';
import { type Principal, type RouteSpec, ServiceError } from '@svc/contracts';
import { readModelVersionOf } from '@svc/domain';
import { secondsToWindowEnd, type WindowCounter } from './window-counter';

/**
 * The per-account burst limit (spec "Rate limits"): a fixed one-minute window,
 * reset at the top of each minute, shared by every key and token of the account.
 * Writes, searches and inference count; reads (GET, POST lookups, batch-get) do not.
 */

/** Requests per minute by plan (spec); `enterprise` may carry a negotiated `rateLimitPerMinute` (decisions §2). */
export const PLAN_RATE_LIMITS = { free: 60, starter: 300, pro: 600, scale: 1200, enterprise: 1200 } as const;

type PlanName = keyof typeof PLAN_RATE_LIMITS;

/** The account's limit: its plan's, an enterprise account's negotiated one, Free for an unset or unknown plan. */
export function rateLimitOf(account: { plan?: unknown; rateLimitPerMinute?: unknown } | null | undefined): number {
  const plan: PlanName =
    typeof account?.plan === 'string' && Object.hasOwn(PLAN_RATE_LIMITS, account.plan)
      ? (account.plan as PlanName)
      : 'free';
  const negotiated = account?.rateLimitPerMinute;
  if (plan === 'enterprise' && typeof negotiated === 'number' && Number.isInteger(negotiated) && negotiated > 0)
    return negotiated;
  return PLAN_RATE_LIMITS[plan];
}

/** Does this route count toward the burst limit? Writes and routes flagged `rateLimited` (search, inference). */
export const countsTowardBurstLimit = (spec: Pick<RouteSpec, 'write' | 'rateLimited'>) =>
  spec.write === true || spec.rateLimited === true;

/**
 * Each account's limit, read from the accounts read model and kept. A plan
 * change reaches the next request: beside a projector (role all) the
 * projector calls `invalidate()` when an account changes, before the write
 * answers, with the TTL as a backstop; elsewhere (`versioned`) an entry answers
 * only a request that saw the read models' version it was read at
 * (read-model-version.ts), and a request without a version reads the database.
 */
export class AccountRateLimits {
  private readonly cache = new Map<string, { limit: number; until: number; version?: string }>();

  constructor(
    private readonly readAccount: (
      accountId: string,
    ) => Promise<{ plan?: unknown; rateLimitPerMinute?: unknown } | null>,
    private readonly ttlMs = 1000,
    private readonly maxEntries = 10_000,
    private readonly versioned = false,
  ) {}

  /** `version`: the read models' version the request saw (versioned caches only). */
  async limitOf(accountId: string, version?: string): Promise<number> {
    const hit = this.cache.get(accountId);
    if (hit && (this.versioned ? version !== undefined && hit.version === version : hit.until > Date.now()))
      return hit.limit;
    if (this.versioned && version === undefined) return rateLimitOf(await this.readAccount(accountId));
    const limit = rateLimitOf(await this.readAccount(accountId));
    if (this.cache.size >= this.maxEntries) this.cache.clear();
    this.cache.set(accountId, { limit, until: Date.now() + this.ttlMs, version });
    return limit;
  }

  /** Forgets one account's limit, or every account's. */
  invalidate(accountId?: string): void {
    if (accountId) this.cache.delete(accountId);
    else this.cache.clear();
  }
}

/** What the gate needs of the edge's pre-flight context. */
export interface BurstGateContext {
  reply: FastifyReply;
  spec: Pick<RouteSpec, 'write' | 'rateLimited'>;
  principal: Principal;
  now: Date;
}

/**
 * The pre-flight gate: counts the request in the account's window, sets
 * `X-RateLimit-Limit` / `X-RateLimit-Remaining` on every counted response and
 * refuses over the limit with 429 RATE_LIMITED and `Retry-After` (seconds to the
 * window's end). When the counter store fails the request is allowed (fail-open)
 * and the failure is logged, once per outage.
 */
export function burstLimitGate(o: {
  counters: WindowCounter;
  limits: { limitOf(accountId: string, version?: string): Promise<number> };
  log?: (message: string) => void;
}) {
  let failing = false;
  return async ({ reply, spec, principal, now }: BurstGateContext): Promise<void> => {
    if (!countsTowardBurstLimit(spec) || !principal.accountId) return;
    const limit = await o.limits.limitOf(principal.accountId, readModelVersionOf(principal));
    let used: number;
    try {
      used = await o.counters.add(`burst:${principal.accountId}`, 1, now);
      failing = false;
    } catch (e) {
      if (!failing)
        o.log?.(`rate-limit counters unavailable, allowing requests: ${e instanceof Error ? e.message : String(e)}`);
      failing = true;
      used = 0;
    }
    const remaining = Math.max(0, limit - used);
    reply.header('x-ratelimit-limit', String(limit));
    reply.header('x-ratelimit-remaining', String(remaining));
    if (used > limit) {
      const retryAfter = secondsToWindowEnd(now);
      throw new ServiceError(
        'RATE_LIMITED',
        `Rate limit exceeded: this account may make ${limit} counted requests per minute; retry after ${retryAfter} s`,
        {
          headers: {
            'retry-after': String(retryAfter),
            'x-ratelimit-limit': String(limit),
            'x-ratelimit-remaining': '0',
          },
        },
      );
    }
  };
}
