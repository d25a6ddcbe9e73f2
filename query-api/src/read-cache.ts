/**
 * A read-through cache for by-id reads, exact when the projector runs in the
 * same process: the projector invalidates the ids of each batch before any
 * write waiting on that batch is answered. A load that raced with an
 * invalidation of its own key (or a clear) does not fill the cache, so a stale
 * row is never stored; loads of other keys still do (under a steady stream of
 * writes, one global generation kept nearly every read of a record that had
 * not changed out of the cache). Without an in-process projector the service
 * does not use it.
 */
export class ReadCache<V> {
  private entries = new Map<string, V>();
  /** Loads in flight per key, and whether their key was invalidated meanwhile. */
  private loading = new Map<string, { loads: number; stale: boolean }>();
  /** Bumped by clear(): every load in flight then is stale. */
  private generation = 0;

  constructor(private readonly max = 50_000) {}

  async get(key: string, load: () => Promise<V | null>): Promise<V | null> {
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit;
    const gen = this.generation;
    let l = this.loading.get(key);
    if (!l) this.loading.set(key, (l = { loads: 0, stale: false }));
    l.loads += 1;
    let v: V | null;
    try {
      v = await load();
    } finally {
      if (--l.loads === 0) this.loading.delete(key);
    }
    if (v !== null && !l.stale && gen === this.generation) {
      if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(key, v);
    }
    return v;
  }

  invalidate(keys: Iterable<string>): void {
    for (const k of keys) {
      this.entries.delete(k);
      const l = this.loading.get(k);
      if (l) l.stale = true;
    }
  }

  clear(): void {
    this.generation += 1;
    this.entries.clear();
  }

  /** Drops the entries whose key starts with `prefix`, and keeps its loads in flight from filling the cache. */
  clearPrefix(prefix: string): void {
    for (const k of this.entries.keys()) if (k.startsWith(prefix)) this.entries.delete(k);
    for (const [k, l] of this.loading) if (k.startsWith(prefix)) l.stale = true;
  }
}

/**
 * A cached page's key: the caller's tenant and context first, so one context's pages can be dropped (pageKeyPrefix).
 */
export const pageKey = (tenantId: string | null, contextId: string | null, ...rest: unknown[]) =>
  JSON.stringify([tenantId, contextId, ...rest]);
export const pageKeyPrefix = (tenantId: string | null, contextId: string | null) =>
  `${JSON.stringify([tenantId, contextId]).slice(0, -1)},`;
