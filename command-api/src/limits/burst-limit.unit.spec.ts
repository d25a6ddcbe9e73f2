import { describe, expect, it } from 'vitest';
import { AccountRateLimits } from './burst-limit';

/** An accounts read model that counts its reads. */
function accounts() {
  const state = { account: { plan: 'enterprise', rateLimitPerMinute: 2 } as Record<string, unknown>, reads: 0 };
  return { state, read: async () => (state.reads++, state.account) };
}

describe('AccountRateLimits', () => {
  it('beside a projector: kept until invalidate() (or the TTL)', async () => {
    const { state, read } = accounts();
    const limits = new AccountRateLimits(read, 60_000);
    expect(await limits.limitOf('a1')).toBe(2);
    state.account = { plan: 'enterprise', rateLimitPerMinute: 100 };
    expect(await limits.limitOf('a1')).toBe(2);
    limits.invalidate();
    expect(await limits.limitOf('a1')).toBe(100);
    expect(state.reads).toBe(2);
  });

  it(
    "versioned: an entry answers only the read models' version it was read at; without a version, the " + 'database',
    async () => {
      const { state, read } = accounts();
      const limits = new AccountRateLimits(read, 60_000, 10_000, true);
      expect(await limits.limitOf('a1', 'v1')).toBe(2);
      expect(await limits.limitOf('a1', 'v1')).toBe(2);
      expect(state.reads).toBe(1);
      state.account = { plan: 'enterprise', rateLimitPerMinute: 100 };
      expect(await limits.limitOf('a1', 'v2')).toBe(100);
      expect(await limits.limitOf('a1')).toBe(100);
      expect(await limits.limitOf('a1')).toBe(100);
      expect(state.reads).toBe(4);
    },
  );
});
