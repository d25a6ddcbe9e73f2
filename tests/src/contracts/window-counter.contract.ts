import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WindowCounter } from '@svc/command-api';

/** The contract of the per-minute counters (rate limits, collision budget); every adapter passes it. */
export function windowCounterContract(
  name: string,
  open: () => Promise<WindowCounter & { close?: () => Promise<void> }>,
) {
  describe(`window counter contract: ${name}`, () => {
    let c: WindowCounter & { close?: () => Promise<void> };
    beforeAll(async () => {
      c = await open();
    });
    afterAll(async () => {
      await c?.close?.();
    });
    const at = (iso: string) => new Date(iso);

    it('counts within a fixed one-minute window and starts again at the top of the next minute', async () => {
      const k = `k-${randomUUID()}`;
      expect(await c.get(k, at('2026-01-01T10:00:05Z'))).toBe(0);
      expect(await c.add(k, 1, at('2026-01-01T10:00:05Z'))).toBe(1);
      expect(await c.add(k, 2, at('2026-01-01T10:00:59.999Z'))).toBe(3);
      expect(await c.get(k, at('2026-01-01T10:00:30Z'))).toBe(3);
      expect(await c.get(k, at('2026-01-01T10:01:00Z'))).toBe(0);
      expect(await c.add(k, 1, at('2026-01-01T10:01:00Z'))).toBe(1);
    });

    it('keeps keys apart and counts concurrent adds exactly', async () => {
      const a = `a-${randomUUID()}`;
      const b = `b-${randomUUID()}`;
      const now = at('2026-01-01T11:00:00Z');
      await Promise.all(Array.from({ length: 50 }, () => c.add(a, 1, now)));
      await c.add(b, 7, now);
      expect(await c.get(a, now)).toBe(50);
      expect(await c.get(b, now)).toBe(7);
    });
  });
}
