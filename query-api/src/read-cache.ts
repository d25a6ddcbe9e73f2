/**
 * A read-through cache for by-id reads, exact when the projector runs in the
 * same process: the projector invalidates the ids of each batch before any
 * write waiting on that batch is answered. A read that raced with an
 * invalidation does not fill the cache (generation check), so a stale row is
 * never stored. Without an in-process projector the service does not use it.
 */
export class ReadCache<V> {
  private entries = new Map<string, V>();
  private generation = 0;

  constructor(private readonly max = 50_000) {}

  async get(key: string, load: () => Promise<V | null>): Promise<V | null> {
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit;
    const gen = this.generation;
    const v = await load();
    if (v !== null && gen === this.generation) {
      if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(key, v);
    }
    return v;
  }

  invalidate(keys: Iterable<string>): void {
    this.generation += 1;
    for (const k of keys) this.entries.delete(k);
  }

  clear(): void {
    this.generation += 1;
    this.entries.clear();
  }

  /** Drops the entries whose key starts with `prefix` (a load in flight anywhere is not kept either). */
  clearPrefix(prefix: string): void {
    this.generation += 1;
    for (const k of this.entries.keys()) if (k.startsWith(prefix)) this.entries.delete(k);
  }
}

/** A cached page's key: the caller's tenant and context first, so one context's pages can be dropped (pageKeyPrefix). */
export const pageKey = (tenantId: string | null, contextId: string | null, ...rest: unknown[]) => JSON.stringify([tenantId, contextId, ...rest]);
export const pageKeyPrefix = (tenantId: string | null, contextId: string | null) => `${JSON.stringify([tenantId, contextId]).slice(0, -1)},`;
