import { describe, expect, it } from 'vitest';
import { ServiceError } from '@svc/contracts';
import { allowanceOf, loadPrices, stampReadModelVersion } from '@svc/domain';
import { CachedStanding, creditCeilingGate, requireCredits, type AccountStanding } from './gates';

/** A read model that counts its queries and answers what the test says the account has used. */
function readModel(plan = 'free') {
  const state = { usedMilli: 0, queries: 0 };
  const inner: AccountStanding = {
    async standing() {
      state.queries++;
      return { account: { plan }, usedMilli: state.usedMilli };
    },
  };
  return { state, inner };
}

describe('CachedStanding', () => {
  it('takes a moved total in place: a busy account is not read again after each batch of its writes', async () => {
    const { state, inner } = readModel();
    const cache = new CachedStanding(inner, 60_000);
    expect((await cache.standing('a1', '2026-11')).usedMilli).toBe(0);
    for (let i = 1; i <= 50; i++) {
      state.usedMilli = i * 1000;
      cache.moved('a1', '2026-11', i * 1000);
      expect((await cache.standing('a1', '2026-11')).usedMilli).toBe(i * 1000);
    }
    expect(state.queries).toBe(1);
  });

  it('the credit gate refuses once a moved total reaches the allowance, without a query', async () => {
    const prices = loadPrices(undefined);
    const { state, inner } = readModel('free');
    const cache = new CachedStanding(inner, 60_000);
    const now = new Date('2026-11-15T00:00:00Z');
    await requireCredits(cache, prices, 'a1', now);
    const allowance = allowanceOf(prices, { plan: 'free' })!;
    cache.moved('a1', '2026-11', allowance * 1000);
    const refused = await requireCredits(cache, prices, 'a1', now).then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ServiceError);
    expect((refused as ServiceError).code).toBe('PAYMENT_REQUIRED');
    expect(state.queries).toBe(1);
  });

  it('a total for a period or account not cached is ignored; invalidate() still drops everything', async () => {
    const { state, inner } = readModel();
    const cache = new CachedStanding(inner, 60_000);
    cache.moved('a1', '2026-11', 5000);
    expect((await cache.standing('a1', '2026-11')).usedMilli).toBe(0);
    cache.moved('a2', '2026-11', 7000);
    cache.moved('a1', '2026-10', 7000);
    expect((await cache.standing('a1', '2026-11')).usedMilli).toBe(0);
    state.usedMilli = 9000;
    cache.invalidate();
    expect((await cache.standing('a1', '2026-11')).usedMilli).toBe(9000);
    expect(state.queries).toBe(2);
  });
});

describe('creditCeilingGate', () => {
  it('decides without waiting once the standing is cached, and refuses at the allowance the same way', async () => {
    const prices = loadPrices(undefined);
    const { state, inner } = readModel('free');
    const cache = new CachedStanding(inner, 60_000);
    const gate = creditCeilingGate({ standing: cache, prices });
    const g = {
      spec: { method: 'POST' as const, url: '/v1/records' },
      principal: { accountId: 'a1' } as never,
      now: new Date('2026-11-15T00:00:00Z'),
    };
    const first = gate(g);
    expect(first).toBeInstanceOf(Promise);
    await first;
    expect(gate(g)).toBeUndefined();
    cache.moved('a1', '2026-11', allowanceOf(prices, { plan: 'free' })! * 1000);
    expect(() => gate(g)).toThrow(ServiceError);
    expect(state.queries).toBe(1);
    // Not metered (a read): no decision at all.
    expect(gate({ ...g, spec: { method: 'GET', url: '/v1/records/:id' } })).toBeUndefined();
  });
});

describe('CachedStanding, versioned (a process without a projector)', () => {
  it(
    "answers from an entry only for the read models' version it was read at; without a version it reads the " +
      'database',
    async () => {
      const { state, inner } = readModel('free');
      const cache = new CachedStanding(inner, 60_000, 10_000, true);
      expect((await cache.standing('a1', '2026-11', 'v1')).usedMilli).toBe(0);
      expect((await cache.standing('a1', '2026-11', 'v1')).usedMilli).toBe(0);
      expect(cache.peek('a1', '2026-11', 'v1')?.usedMilli).toBe(0);
      expect(state.queries).toBe(1);
      // Another process's projector applied usage: the next request sees a new version, whatever the TTL says.
      state.usedMilli = 5000;
      expect(cache.peek('a1', '2026-11', 'v2')).toBeUndefined();
      expect((await cache.standing('a1', '2026-11', 'v2')).usedMilli).toBe(5000);
      expect(state.queries).toBe(2);
      await cache.standing('a1', '2026-11');
      await cache.standing('a1', '2026-11');
      expect(cache.peek('a1', '2026-11')).toBeUndefined();
      expect(state.queries).toBe(4);
    },
  );

  it('the credit gate reads the version stamped on the principal', async () => {
    const prices = loadPrices(undefined);
    const { state, inner } = readModel('free');
    const cache = new CachedStanding(inner, 60_000, 10_000, true);
    const gate = creditCeilingGate({ standing: cache, prices });
    const at = (version: string) => ({
      spec: { method: 'POST' as const, url: '/v1/records' },
      principal: stampReadModelVersion({ accountId: 'a1' }, version) as never,
      now: new Date('2026-11-15T00:00:00Z'),
    });
    await gate(at('v1'));
    expect(gate(at('v1'))).toBeUndefined();
    state.usedMilli = allowanceOf(prices, { plan: 'free' })! * 1000;
    await expect(gate(at('v2'))).rejects.toThrow(ServiceError);
    expect(state.queries).toBe(2);
  });
});
