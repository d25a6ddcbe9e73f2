import { afterEach, describe, expect, it } from 'vitest';
import { LanceVectorIndex, MemoryVectorIndex } from '@svc/search';
import type { VectorIndex, VectorRow } from '@svc/domain';
import { tempDir } from '../support/engines';

// VectorIndex.replaceItems (issue 7): the search projector's one write per batch — one delete of every
// listed item, one add of all their rows — on LanceDB, and through the in-memory wrapper (role all).
const DIMS = 8;
const unit = (i: number) => Array.from({ length: DIMS }, (_, k) => (k === i % DIMS ? 1 : 0.01 * k));
const row = (itemId: string, chunkNo: number, dir: number, contextId = 'c1'): VectorRow => ({
  itemId,
  chunkNo,
  tenantId: 't1',
  contextId,
  vector: unit(dir),
  chunkText: `${itemId} chunk ${chunkNo}`,
  contextText: `${itemId} text`,
});

const cases: Array<[string, (dir: string) => VectorIndex & { dispose?: () => Promise<void> }]> = [
  ['LanceVectorIndex', (dir) => new LanceVectorIndex(dir, 'test-model', DIMS, { autoMaintain: false })],
  [
    'MemoryVectorIndex over LanceVectorIndex',
    (dir) => new MemoryVectorIndex(new LanceVectorIndex(dir, 'test-model', DIMS, { autoMaintain: false })),
  ],
];

describe.each(cases)('VectorIndex.replaceItems: %s', (_name, make) => {
  let cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const f of cleanup.reverse()) await f();
    cleanup = [];
  });
  const open = async () => {
    const tmp = tempDir();
    const v = make(tmp.dir);
    await v.init();
    cleanup.push(
      () => tmp.remove(),
      () => v.close(),
    );
    return v;
  };
  const items = async (v: VectorIndex, contextId = 'c1') => {
    const hits = await v.search({ tenantId: 't1', contextId, vector: unit(0), limit: 100 });
    return hits.map((h) => `${h.itemId}:${h.chunkNo}`).sort();
  };

  it('writes many items at once, replaces their rows, removes items listed without rows, keeps the rest', async () => {
    const v = await open();
    // a searched context is loaded into memory by the wrapper: writes must reach it too
    expect(await items(v)).toEqual([]);
    await v.replaceItems!([
      { itemId: 'a', rows: [row('a', 0, 0), row('a', 1, 1)] },
      { itemId: 'b', rows: [row('b', 0, 2)] },
      { itemId: "c'quoted", rows: [row("c'quoted", 0, 3)] },
    ]);
    await v.replaceItem('d', [row('d', 0, 4)]);
    expect(await items(v)).toEqual(['a:0', 'a:1', 'b:0', "c'quoted:0", 'd:0']);
    await v.replaceItems!([
      { itemId: 'a', rows: [row('a', 0, 5)] },
      { itemId: "c'quoted", rows: [] },
      { itemId: 'e', rows: [row('e', 0, 6), row('e', 1, 7)] },
    ]);
    expect(await items(v)).toEqual(['a:0', 'b:0', 'd:0', 'e:0', 'e:1']);
    const [top] = await v.search({ tenantId: 't1', contextId: 'c1', vector: unit(5), limit: 1 });
    expect(top).toMatchObject({ itemId: 'a', chunkNo: 0, chunkText: 'a chunk 0' });
    expect(top.similarity).toBeGreaterThan(0.99);
    await v.deleteItem('e');
    expect(await items(v)).toEqual(['a:0', 'b:0', 'd:0']);
  });

  it('keeps contexts apart, and an empty batch is a no-op', async () => {
    const v = await open();
    await v.replaceItems!([]);
    await v.replaceItems!([
      { itemId: 'x', rows: [row('x', 0, 0, 'c1')] },
      { itemId: 'y', rows: [row('y', 0, 0, 'c2')] },
    ]);
    expect(await items(v, 'c1')).toEqual(['x:0']);
    expect(await items(v, 'c2')).toEqual(['y:0']);
    await v.deleteContext('t1', 'c2');
    expect(await items(v, 'c2')).toEqual([]);
    expect(await items(v, 'c1')).toEqual(['x:0']);
  });

  it('refuses a batch with a vector of the wrong dimensions, and writes none of it', async () => {
    const v = await open();
    await v.replaceItems!([{ itemId: 'a', rows: [row('a', 0, 0)] }]);
    const bad = { ...row('b', 0, 1), vector: [1, 2, 3] };
    await expect(
      v.replaceItems!([
        { itemId: 'a', rows: [] },
        { itemId: 'b', rows: [bad] },
      ]),
    ).rejects.toThrow(/dimensions/);
    expect(await items(v)).toEqual(['a:0']);
  });
});
