import { describe, expect, it } from 'vitest';
import { batchLoads } from './batch-loads';

/**
 * A table read by queries that take `ms`; each query's keys are kept, and what it saw is what the table held when it
 * started.
 */
function table(ms = 20) {
  const rows = new Map<string, number>();
  const queries: string[][] = [];
  let running = 0;
  let mostAtOnce = 0;
  const loadMany = async (keys: readonly string[]) => {
    queries.push([...keys]);
    const seen = new Map([...keys].filter((k) => rows.has(k)).map((k) => [k, rows.get(k)!]));
    running += 1;
    mostAtOnce = Math.max(mostAtOnce, running);
    await new Promise((r) => setTimeout(r, ms));
    running -= 1;
    return seen;
  };
  return { rows, queries, loadMany, mostAtOnce: () => mostAtOnce };
}

describe('batchLoads', () => {
  it(
    'a load on an idle loader runs at once, alone; the loads asked while it runs go together in the next ' + 'query',
    async () => {
      const t = table();
      for (let i = 0; i < 50; i++) t.rows.set(`k${i}`, i);
      const load = batchLoads(t.loadMany, { concurrency: 1 });
      const first = load('k0');
      await new Promise((r) => setImmediate(r));
      const rest = Array.from({ length: 49 }, (_, i) => load(`k${i + 1}`));
      expect(await Promise.all([first, ...rest])).toEqual(Array.from({ length: 50 }, (_, i) => i));
      expect(t.queries).toEqual([['k0'], Array.from({ length: 49 }, (_, i) => `k${i + 1}`)]);
    },
  );

  it('a missing key is null; the same key asked twice in one batch is read once', async () => {
    const t = table();
    t.rows.set('a', 1);
    const load = batchLoads(t.loadMany, { concurrency: 1 });
    expect(await Promise.all([load('a'), load('nope'), load('a')])).toEqual([1, null, 1]);
    expect(t.queries.flat().filter((k) => k === 'a')).toHaveLength(1);
  });

  it('a load asked after a write sees it: it never joins a query that started before it was asked', async () => {
    const t = table(30);
    t.rows.set('r', 1);
    const load = batchLoads(t.loadMany, { concurrency: 1 });
    const before = load('r');
    await new Promise((r) => setTimeout(r, 5)); // the query for `before` is running
    t.rows.set('r', 2); // a write is applied and answered
    const after = load('r');
    expect(await before).toBe(1);
    expect(await after).toBe(2);
  });

  it('runs at most `concurrency` queries at once, and at most maxBatch keys in one', async () => {
    const t = table(10);
    for (let i = 0; i < 1000; i++) t.rows.set(`k${i}`, i);
    const load = batchLoads(t.loadMany, { concurrency: 2, maxBatch: 100 });
    const got = await Promise.all(Array.from({ length: 1000 }, (_, i) => load(`k${i}`)));
    expect(got).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(t.mostAtOnce()).toBeLessThanOrEqual(2);
    expect(Math.max(...t.queries.map((q) => q.length))).toBeLessThanOrEqual(100);
    expect(t.queries.length).toBe(10);
  });

  it('a failed query fails the loads it carried, and the next loads run', async () => {
    let fail = true;
    const load = batchLoads(
      async (keys) => {
        if (fail) throw new Error('connection lost');
        return new Map(keys.map((k) => [k, k.length]));
      },
      { concurrency: 1 },
    );
    await expect(load('abc')).rejects.toThrow('connection lost');
    fail = false;
    expect(await load('abcd')).toBe(4);
  });
});
