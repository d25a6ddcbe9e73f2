/** Backoff after each failed attempt (spec "Delivery mechanics"): 30 s, 5 min, 30 min, 2 h, 8 h; then FAILED. */
export const RETRY_DELAYS_MS = [30_000, 300_000, 1_800_000, 7_200_000, 28_800_000] as const;
/** A first attempt plus one per retry delay. */
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;
/** Consecutive failed attempts that disable a registration. */
export const AUTO_DISABLE_AFTER = 10;
/** Retention (spec): unresolved deliveries 7 days, delivered ones 30 days. */
export const RETENTION_UNRESOLVED_MS = 7 * 24 * 3_600_000;
export const RETENTION_DELIVERED_MS = 30 * 24 * 3_600_000;

/**
 * The delay before the next attempt after `attempts` attempts have failed, or
 * null when every retry is used. `scale` (WEBHOOK_RETRY_SCALE, default 1)
 * multiplies the schedule: tests run it at 1/1000.
 */
export function retryDelayMs(attempts: number, scale = 1): number | null {
  const d = RETRY_DELAYS_MS[attempts - 1];
  return d === undefined ? null : Math.max(1, Math.round(d * scale));
}
