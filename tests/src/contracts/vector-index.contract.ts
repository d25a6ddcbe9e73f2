import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VectorHit, VectorIndex, VectorRow } from '@svc/domain';

/**
 * The contract every vector-index adapter passes (LanceDB; the in-memory index over it, role all).
 * Vectors are random unit vectors in 32 dimensions (deterministic), so the exact answer is known:
 * each check compares with a brute-force cosine ranking of what the index should hold.
 */
export const DIMS = 32;
const rng = (seed: number) => () => (seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32;
export function unit(seed: number): number[] {
  const r = rng(seed * 7919 + 1);
  const v = Array.from({ length: DIMS }, () => r() - 0.5);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

export function vectorIndexContract(
  name: string,
  open: () => Promise<VectorIndex & { dispose?: () => Promise<void> }>,
) {
  describe(`vector index contract: ${name}`, () => {
    let ix: VectorIndex & { dispose?: () => Promise<void> };
    const T = `t-${randomUUID()}`;
    const C = `c-${randomUUID()}`;
    const OTHER = { tenantId: `t-${randomUUID()}`, contextId: C };
    /** What the index should hold for (T, C): key → row. */
    const held = new Map<string, VectorRow>();
    const rowsOf = (itemId: string, seeds: number[], scope = { tenantId: T, contextId: C }): VectorRow[] =>
      seeds.map((s, chunkNo) => ({
        itemId,
        chunkNo,
        ...scope,
        vector: unit(s),
        chunkText: `chunk ${itemId} ${chunkNo}`,
        contextText: `before. chunk ${itemId} ${chunkNo}. after`,
      }));
    const put = async (itemId: string, seeds: number[]) => {
      for (const k of [...held.keys()]) if (k.startsWith(`${itemId}#`)) held.delete(k);
      const rows = rowsOf(itemId, seeds);
      for (const r of rows) held.set(`${r.itemId}#${r.chunkNo}`, r);
      await ix.replaceItem(itemId, rows);
    };
    const truth = (q: number[], limit: number, itemIds?: string[]) =>
      [...held.values()]
        .filter((r) => !itemIds || itemIds.includes(r.itemId))
        .map((r) => ({ key: `${r.itemId}#${r.chunkNo}`, sim: r.vector.reduce((s, x, i) => s + x * q[i], 0) }))
        .sort((a, b) => b.sim - a.sim)
        .slice(0, limit);
    const keys = (hs: VectorHit[]) => hs.map((h) => `${h.itemId}#${h.chunkNo}`);

    beforeAll(async () => {
      ix = await open();
      await ix.init();
      for (let i = 0; i < 40; i++) await put(`item-${i}`, [i * 3, i * 3 + 1, i * 3 + 2]);
      // Another tenant's rows are never returned.
      await ix.replaceItem('other-0', rowsOf('other-0', [5, 6, 7], OTHER));
    });
    afterAll(async () => {
      await ix.drop();
      await ix.close();
      await ix.dispose?.();
    });

    it('ranks by cosine similarity, exact, with texts', async () => {
      for (const s of [1000, 1001, 1002]) {
        const q = unit(s);
        const hits = await ix.search({ tenantId: T, contextId: C, vector: q, limit: 10 });
        const want = truth(q, 10);
        expect(keys(hits)).toEqual(want.map((w) => w.key));
        hits.forEach((h, i) => expect(h.similarity).toBeCloseTo(Math.max(0, want[i].sim), 5));
        expect(hits[0].chunkText).toBe(`chunk ${hits[0].itemId} ${hits[0].chunkNo}`);
        expect(hits[0].contextText).toContain(hits[0].chunkText!);
      }
    });

    it('hydrates the page of hits returned without texts', async () => {
      const q = unit(2000);
      const hits = await ix.search({ tenantId: T, contextId: C, vector: q, limit: 5, text: false });
      expect(keys(hits)).toEqual(truth(q, 5).map((w) => w.key));
      // An adapter may leave the texts out; hydrate fills in those missing (and a passage it does not know gets empty
      // texts).
      const page = [...hits.slice(0, 3).map((h) => ({ ...h })), { itemId: 'gone', chunkNo: 0, similarity: 0.5 }];
      await ix.hydrate(page, { tenantId: T, contextId: C });
      for (const h of page.slice(0, 3)) {
        expect(h.chunkText).toBe(`chunk ${h.itemId} ${h.chunkNo}`);
        expect(h.contextText).toBe(`before. chunk ${h.itemId} ${h.chunkNo}. after`);
      }
      expect(page[3]).toMatchObject({ chunkText: '', contextText: '' });
      // Another tenant's passage is not read through this scope.
      const foreign = { itemId: 'other-0', chunkNo: 0, similarity: 0.5 } as VectorHit;
      await ix.hydrate([foreign], { tenantId: T, contextId: C });
      expect(foreign.chunkText).toBe('');
    });

    it('keeps tenants and contexts apart', async () => {
      const q = unit(6); // other-0's chunk 1
      const hits = await ix.search({ tenantId: T, contextId: C, vector: q, limit: 200 });
      expect(hits.some((h) => h.itemId === 'other-0')).toBe(false);
      expect(hits).toHaveLength(held.size);
      const other = await ix.search({ ...OTHER, vector: q, limit: 10 });
      expect(other.map((h) => h.itemId)).toEqual(['other-0', 'other-0', 'other-0']);
      expect(other[0]).toMatchObject({ itemId: 'other-0', chunkNo: 1 });
      expect(await ix.search({ tenantId: T, contextId: 'nowhere', vector: q, limit: 10 })).toEqual([]);
    });

    it('applies an item-id prefilter before the limit', async () => {
      const q = unit(3000);
      const ids = ['item-3', 'item-17', 'item-33', 'missing'];
      const hits = await ix.search({ tenantId: T, contextId: C, vector: q, limit: 4, itemIds: ids });
      expect(keys(hits)).toEqual(truth(q, 4, ids).map((w) => w.key));
      expect(await ix.search({ tenantId: T, contextId: C, vector: q, limit: 4, itemIds: [] })).toEqual([]);
    });

    it('replaces an item whole, and deletes items and contexts', async () => {
      const q = unit(4000);
      await put('item-5', [4000]); // one passage now, equal to the query
      let hits = await ix.search({ tenantId: T, contextId: C, vector: q, limit: 10 });
      expect(keys(hits)[0]).toBe('item-5#0');
      expect(hits[0].similarity).toBeCloseTo(1, 5);
      expect(keys(hits)).not.toContain('item-5#1');
      expect(keys(hits)).toEqual(truth(q, 10).map((w) => w.key));

      await ix.deleteItem('item-5');
      held.delete('item-5#0');
      hits = await ix.search({ tenantId: T, contextId: C, vector: q, limit: 10 });
      expect(keys(hits)).toEqual(truth(q, 10).map((w) => w.key));

      await ix.deleteContext(OTHER.tenantId, OTHER.contextId);
      expect(await ix.search({ ...OTHER, vector: q, limit: 10 })).toEqual([]);
      expect((await ix.search({ tenantId: T, contextId: C, vector: q, limit: 500 })).length).toBe(held.size);
    });
  });
}
