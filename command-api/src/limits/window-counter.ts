/**
 * Fixed one-minute windows (reset at the top of each minute) counted per key.
 * The in-process adapter serves the embedded default; a Redis adapter serves
 * several processes (same interface).
 */
export interface WindowCounter {
  /** Adds `by` to the key's count in the current window and returns the new count. */
  add(key: string, by: number, now: Date): Promise<number>;
  get(key: string, now: Date): Promise<number>;
}

export const windowOf = (now: Date) => Math.floor(now.getTime() / 60_000);
export const secondsToWindowEnd = (now: Date) =>
  Math.max(1, Math.ceil(((windowOf(now) + 1) * 60_000 - now.getTime()) / 1000));

export class InProcessWindowCounter implements WindowCounter {
  private counts = new Map<string, { window: number; n: number }>();

  async add(key: string, by: number, now: Date): Promise<number> {
    const w = windowOf(now);
    const c = this.counts.get(key);
    const n = (c && c.window === w ? c.n : 0) + by;
    this.counts.set(key, { window: w, n });
    if (this.counts.size > 100_000) for (const [k, v] of this.counts) if (v.window !== w) this.counts.delete(k);
    return n;
  }

  async get(key: string, now: Date): Promise<number> {
    const c = this.counts.get(key);
    return c && c.window === windowOf(now) ? c.n : 0;
  }
}
