import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signDelivery, verifyDelivery } from './signature';
import { afterAttempt, decideManualRetry } from './delivery';
import { MAX_ATTEMPTS, retryDelayMs } from './backoff';

const secret = 'ab'.repeat(32);

describe('webhook signature', () => {
  it('is HMAC-SHA256 over <timestamp>.<body> keyed with the hex-decoded secret', () => {
    const body = '{"id":"d1","type":"record.indexed"}';
    const want =
      'sha256=' + createHmac('sha256', Buffer.from(secret, 'hex')).update(`1700000000.${body}`).digest('hex');
    expect(signDelivery(secret, 1700000000, body)).toBe(want);
    expect(signDelivery(secret, '1700000000', Buffer.from(body))).toBe(want);
  });

  it('verifies in constant time within the 300 s window', () => {
    const body = '{"a":1}';
    const sig = signDelivery(secret, 1000, body);
    expect(verifyDelivery({ secretHex: secret, timestamp: '1000', body, signature: sig, nowSeconds: 1200 })).toBe(true);
    expect(verifyDelivery({ secretHex: secret, timestamp: '1000', body, signature: sig, nowSeconds: 1301 })).toBe(
      false,
    );
    expect(
      verifyDelivery({ secretHex: secret, timestamp: '1000', body: '{"a":2}', signature: sig, nowSeconds: 1000 }),
    ).toBe(false);
    expect(
      verifyDelivery({ secretHex: 'cd'.repeat(32), timestamp: '1000', body, signature: sig, nowSeconds: 1000 }),
    ).toBe(false);
  });
});

describe('webhook backoff and delivery states', () => {
  it('retries at 30 s, 5 min, 30 min, 2 h, 8 h, then FAILED', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(n))).toEqual([
      30_000,
      300_000,
      1_800_000,
      7_200_000,
      28_800_000,
      null,
    ]);
    expect(retryDelayMs(1, 0.001)).toBe(30);
    let d = { status: 'PENDING' as const, attempts: 0, nextAttemptAt: 0 } as Parameters<typeof afterAttempt>[0];
    const due: number[] = [];
    for (let i = 0; i < MAX_ATTEMPTS; i++) {
      d = afterAttempt(d, { ok: false }, 0);
      if (d.nextAttemptAt !== null) due.push(d.nextAttemptAt);
    }
    expect(due).toEqual([30_000, 300_000, 1_800_000, 7_200_000, 28_800_000]);
    expect(d).toEqual({ status: 'FAILED', attempts: 6, nextAttemptAt: null });
  });

  it('a 2xx is DELIVERED; only FAILED can be retried by hand', () => {
    expect(afterAttempt({ status: 'PENDING', attempts: 2, nextAttemptAt: 5 }, { ok: true }, 10)).toEqual({
      status: 'DELIVERED',
      attempts: 3,
      nextAttemptAt: null,
    });
    expect(decideManualRetry({ status: 'FAILED', attempts: 6, nextAttemptAt: null }, 7)).toEqual({
      status: 'PENDING',
      attempts: 6,
      nextAttemptAt: 7,
    });
    expect(() => decideManualRetry({ status: 'PENDING', attempts: 1, nextAttemptAt: 7 }, 7)).toThrow(/FAILED/);
    expect(() => decideManualRetry({ status: 'DELIVERED', attempts: 1, nextAttemptAt: null }, 7)).toThrow(/FAILED/);
  });
});
