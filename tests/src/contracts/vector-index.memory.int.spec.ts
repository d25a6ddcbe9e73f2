import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LanceVectorIndex, MemoryVectorIndex } from '@svc/search';
import type { VectorRow } from '@svc/domain';
import { tempDir } from '../support/engines';
import { DIMS, unit, vectorIndexContract } from './vector-index.contract';

// The embedded default as the service runs it (SERVICE_ROLE=all): LanceDB as the store, queries from memory.
vectorIndexContract('in-memory over LanceDB (role all)', async () => {
  const tmp = tempDir('svc-vec-');
  return Object.assign(new MemoryVectorIndex(new LanceVectorIndex(tmp.dir, 'contract', DIMS), { waitForLoad: true }), {
    dispose: async () => tmp.remove(),
  });
});
// The same with IVF partitions from 20 rows on, every partition probed: answers must still be exact.
vectorIndexContract('in-memory over LanceDB, partitioned, all partitions probed', async () => {
  const tmp = tempDir('svc-vec-');
  return Object.assign(
    new MemoryVectorIndex(new LanceVectorIndex(tmp.dir, 'contract', DIMS), {
      exactBelow: 20,
      nprobes: 10_000,
      minCandidates: 1,
      waitForLoad: true,
    }),
    {
      dispose: async () => tmp.remove(),
    },
  );
});

// refine 1: the int8 pass keeps only 2 × limit candidates for the exact scores (the default keeps 300); with
// retrainGrowth 1,000 the partitions trained on the first 31 rows take every later row (their int8 slots grow and
// move).
describe.each([
  { refine: 300, retrainGrowth: 2 },
  { refine: 1, retrainGrowth: 1000 },
])(
  'in-memory vector index: writes after the context is loaded (partitioned, refine $refine, retrainGrowth ' +
    '$retrainGrowth)',
  ({ refine, retrainGrowth }) => {
    const tmp = tempDir('svc-vec-');
    const lance = new LanceVectorIndex(tmp.dir, 'parity', DIMS);
    const mem = new MemoryVectorIndex(lance, {
      exactBelow: 30,
      nprobes: 10_000,
      minCandidates: 1,
      retrainGrowth,
      waitForLoad: false,
      refine,
    });
    const S = { tenantId: 't', contextId: 'c' };
    const rows = (itemId: string, seed: number, n: number): VectorRow[] =>
      Array.from({ length: n }, (_, k) => ({
        itemId,
        chunkNo: k,
        ...S,
        vector: unit(seed * 100 + k),
        chunkText: `${itemId}/${k}`,
        contextText: `${itemId}/${k}`,
      }));
    beforeAll(async () => {
      for (let i = 0; i < 20; i++) await mem.replaceItem(`i${i}`, rows(`i${i}`, i, 3));
    });
    afterAll(async () => {
      await mem.close();
      tmp.remove();
    });

    it('answers as LanceDB exact search does, through growth (retraining), replaces and deletes', async () => {
      const check = async () => {
        for (const s of [7001, 7002, 7003, 7004]) {
          const q = { ...S, vector: unit(s), limit: 25 };
          const a = await mem.search(q);
          const b = await lance.search({ ...q, exact: true });
          expect(a.map((h) => `${h.itemId}#${h.chunkNo}`)).toEqual(b.map((h) => `${h.itemId}#${h.chunkNo}`));
          a.forEach((h, i) => expect(h.similarity).toBeCloseTo(b[i].similarity, 5));
          expect(a.map((h) => h.chunkText)).toEqual(b.map((h) => h.chunkText));
        }
      };
      await check(); // LanceDB answers while the context loads
      expect(await mem.load(S)).toBe(true);
      expect(mem.stats.rows).toBe(60);
      await check(); // from memory (60 rows: partitioned)
      // grows past 2× (retrains; over 1,000 rows: centroids shortlisted by code)
      for (let i = 20; i < 80; i++) await mem.replaceItem(`i${i}`, rows(`i${i}`, i, 15 + (i % 10)));
      await check();
      for (let i = 0; i < 80; i += 3) await mem.deleteItem(`i${i}`);
      for (let i = 1; i < 80; i += 5) await mem.replaceItem(`i${i}`, rows(`i${i}`, 500 + i, 1 + (i % 4)));
      await check();
      mem.unload(); // reload from LanceDB: the same answers
      await mem.load(S);
      await check();
      expect(mem.stats.rows).toBe(await lance.countRows(S));
    });
  },
);

describe('in-memory vector index: passage texts', () => {
  const tmp = tempDir('svc-vec-');
  const lance = new LanceVectorIndex(tmp.dir, 'texts', DIMS);
  const mem = new MemoryVectorIndex(lance, { waitForLoad: true });
  const S = { tenantId: 't', contextId: 'texts' };
  // ~3 KB of UTF-8 each, of characters of every width; every other chunk is not a substring of its context.
  const para = (i: number) =>
    `Row ${i}: the façade of Zürich’s café — naïve “quotes”, 東京タワー, 🎉🚀 (ß, Ω, é). `.repeat(24);
  const row = (i: number): VectorRow => ({
    itemId: `u${i}`,
    chunkNo: 0,
    ...S,
    vector: unit(i + 1),
    chunkText: i % 2 ? `chunk ${i} 🎉 not in the context` : para(i).slice(0, 200),
    contextText: `…${para(i)}…`,
  });
  afterAll(async () => {
    await mem.close();
    tmp.remove();
  });

  it('come back exactly (any characters), before and after deletes compact them', async () => {
    for (let i = 0; i < 600; i += 50)
      await mem.replaceItems(
        Array.from({ length: 50 }, (_, k) => i + k).map((j) => ({ itemId: `u${j}`, rows: [row(j)] })),
      );
    expect(await mem.load(S)).toBe(true);
    const check = async (alive: number[]) => {
      for (const i of alive.filter((_, k) => k % 7 === 0)) {
        const [hit] = await mem.search({ ...S, vector: unit(i + 1), limit: 1 });
        expect(hit.itemId).toBe(`u${i}`);
        expect([hit.chunkText, hit.contextText]).toEqual([row(i).chunkText, row(i).contextText]);
      }
    };
    const all = Array.from({ length: 600 }, (_, i) => i);
    await check(all);
    const before = mem.stats.textBytes;
    expect(before).toBeGreaterThan(600 * 2000);
    for (const i of all) if (i % 4) await mem.deleteItem(`u${i}`);
    // Three quarters freed: the texts were compacted (only the kept rows' bytes remain, give or take the last free).
    expect(mem.stats.textBytes).toBeLessThan(before / 2);
    await check(all.filter((i) => i % 4 === 0));
  }, 120_000);
});
