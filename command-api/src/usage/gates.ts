import { type Principal, type RouteSpec, ServiceError } from '@svc/contracts';
import { allowanceOf, periodOf, type PriceTable, readModelVersionOf } from '@svc/domain';

/**
 * Billing gates of the edge's pre-flight list (spec "Pre-flight order for
 * inference": permission 403, credit ceiling 402, burst limit 429, billing gate 402).
 */
export interface AccountStanding {
  /** `version`: the read models' version the request saw (read-model-version.ts), for a cache in front. */
  standing(
    accountId: string,
    period: string,
    version?: string,
  ): Promise<{
    account: { plan?: unknown; creditLimit?: unknown; inferenceBalanceCents?: unknown } | null;
    usedMilli: number;
  }>;
}

/**
 * Operations that draw credits: metered writes, searches, script executions and inference. Deletes, schemas, folders,
 * identity and reads do not.
 */
export const CREDIT_METERED_ROUTES = new Set([
  'POST /v1/records',
  'PUT /v1/records/:id',
  'PATCH /v1/records/:id',
  'POST /v1/records/batch',
  'POST /v1/documents',
  'POST /v1/documents/upload',
  'PUT /v1/documents/:id',
  'PATCH /v1/documents/:id',
  'POST /v1/search',
  'POST /v1/scripts/execute',
  'POST /v1/rag',
  'POST /v1/chat',
  'POST /v1/documents/:id/ask',
]);
/** The inference surfaces (billing gate: the pre-paid balance). */
export const INFERENCE_ROUTES = new Set(['POST /v1/rag', 'POST /v1/chat', 'POST /v1/documents/:id/ask']);

/**
 * The standing of each account, kept briefly and shared by concurrent requests
 * (one read-model query per account at a time). The process's own projector
 * calls `invalidate(accountId)` when it applies usage of that account and
 * `invalidate()` when an account changes, before the writes waiting on that
 * batch answer; so in one process the gate is exact. Where no projector runs
 * beside it (`versioned`) an entry answers only a request that saw the read
 * models' version it was read at (read-model-version.ts), and a request without
 * a version reads the database: exact too, across processes.
 */
export class CachedStanding implements AccountStanding {
  private readonly cache = new Map<
    string,
    { until: number; version?: string; value: ReturnType<AccountStanding['standing']>; resolved?: Standing }
  >();

  constructor(
    private readonly inner: AccountStanding,
    private readonly ttlMs = 1000,
    private readonly maxEntries = 10_000,
    private readonly versioned = false,
  ) {}

  private fresh(hit: { until: number; version?: string } | undefined, version: string | undefined): boolean {
    if (!hit) return false;
    return this.versioned ? version !== undefined && hit.version === version : hit.until > Date.now();
  }

  standing(accountId: string, period: string, version?: string): ReturnType<AccountStanding['standing']> {
    const key = `${accountId}\u0000${period}`;
    const hit = this.cache.get(key);
    if (hit && this.fresh(hit, version)) return hit.value;
    const value = this.inner.standing(accountId, period);
    if (this.versioned && version === undefined) return value;
    if (this.cache.size >= this.maxEntries) this.cache.clear();
    const entry: { until: number; version?: string; value: typeof value; resolved?: Standing } = {
      until: Date.now() + this.ttlMs,
      version,
      value,
    };
    this.cache.set(key, entry);
    value.then(
      (s) => (entry.resolved = s),
      () => this.cache.get(key) === entry && this.cache.delete(key),
    );
    return value;
  }

  /** The standing when it is cached, fresh and already read (the gate then decides without waiting); else undefined. */
  peek(accountId: string, period: string, version?: string): Standing | undefined {
    const hit = this.cache.get(`${accountId}\u0000${period}`);
    return hit && this.fresh(hit, version) ? hit.resolved : undefined;
  }

  /**
   * The account's usage in `period` moved to `usedMilli` (its projector just committed that total): a cached
   * standing takes the new figure in place. Dropping it instead would send the next request of a busy account
   * to the database after every batch of writes; one still being read is dropped.
   */
  moved(accountId: string, period: string, usedMilli: number): void {
    const key = `${accountId}\u0000${period}`;
    const hit = this.cache.get(key);
    if (!hit) return;
    if (!hit.resolved) return void this.cache.delete(key);
    hit.resolved = { ...hit.resolved, usedMilli };
    hit.value = Promise.resolve(hit.resolved);
  }

  /** Forgets one account's standing (its usage moved), or every account's (an account changed). */
  invalidate(accountId?: string): void {
    if (!accountId) return this.cache.clear();
    for (const key of this.cache.keys()) if (key.startsWith(`${accountId}\u0000`)) this.cache.delete(key);
  }
}

type Standing = Awaited<ReturnType<AccountStanding['standing']>>;

const routeKey = (spec: Pick<RouteSpec, 'method' | 'url'>) => `${spec.method} ${spec.url}`;
export const drawsCredits = (spec: Pick<RouteSpec, 'method' | 'url'>) => CREDIT_METERED_ROUTES.has(routeKey(spec));
export const isInference = (spec: Pick<RouteSpec, 'method' | 'url'>) => INFERENCE_ROUTES.has(routeKey(spec));

interface GateContext {
  spec: Pick<RouteSpec, 'method' | 'url'>;
  principal: Principal;
  now: Date;
}

/** Refuses with 402 PAYMENT_REQUIRED when the account's usage in the current period has reached its allowance. */
export function requireCredits(
  standing: AccountStanding,
  prices: PriceTable,
  accountId: string,
  now: Date,
  version?: string,
): Promise<void> {
  return requireCreditsIn(standing, prices, accountId, periodOf(now), version);
}

const requireCreditsIn = async (
  standing: AccountStanding,
  prices: PriceTable,
  accountId: string,
  period: string,
  version?: string,
): Promise<void> => checkCeiling(prices, await standing.standing(accountId, period, version), period);

function checkCeiling(prices: PriceTable, s: Standing, period: string): void {
  const allowance = allowanceOf(prices, s.account);
  if (allowance === null || s.usedMilli < allowance * 1000) return;
  throw new ServiceError(
    'PAYMENT_REQUIRED',
    `The monthly credit allowance (${allowance} credits) is used up for ${period}: upgrade the plan or ` +
      `wait for the next period (GET /v1/usage)`,
    { details: { period, limit: allowance, used: Math.floor(s.usedMilli / 1000) } },
  );
}

/**
 * Pre-flight gate 1: the monthly credit ceiling (402) on operations that draw
 * credits. Reads the account's running total from the usage read model, which a
 * write's own response already waited for, so the request after the one that
 * reached the allowance is refused, before validation, with nothing written.
 */
export function creditCeilingGate(o: {
  standing: AccountStanding & { peek?: CachedStanding['peek'] };
  prices: PriceTable;
  enabled?: () => boolean;
}) {
  return ({ spec, principal, now }: GateContext): Promise<void> | void => {
    if (!principal.accountId || !drawsCredits(spec) || o.enabled?.() === false) return;
    // A cached standing decides at once: no promise per write on the hot path.
    const period = periodOf(now);
    const version = readModelVersionOf(principal);
    const cached = o.standing.peek?.(principal.accountId, period, version);
    if (cached) return checkCeiling(o.prices, cached, period);
    return requireCreditsIn(o.standing, o.prices, principal.accountId, period, version);
  };
}

/**
 * Refuses with 402 INSUFFICIENT_BALANCE when the account's pre-paid inference balance is not positive (balance mode).
 */
export async function requireInferenceBalance(
  standing: AccountStanding,
  accountId: string,
  now: Date,
  version?: string,
): Promise<void> {
  const s = await standing.standing(accountId, periodOf(now), version);
  const balance = Number(s.account?.inferenceBalanceCents ?? 0);
  if (!(balance > 0))
    throw new ServiceError(
      'INSUFFICIENT_BALANCE',
      'The inference balance is exhausted: top up the account to continue',
      { details: { balanceCents: Math.max(0, balance) } },
    );
}

/** Pre-flight gate 4 (inference only): the billing gate, after the burst limit. */
export function inferenceBalanceGate(o: { standing: AccountStanding }) {
  return async ({ spec, principal, now }: GateContext): Promise<void> => {
    if (!principal.accountId || !isInference(spec)) return;
    await requireInferenceBalance(o.standing, principal.accountId, now, readModelVersionOf(principal));
  };
}
