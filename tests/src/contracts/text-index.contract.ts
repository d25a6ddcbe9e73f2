import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkText, type IndexedItem, type ItemFilter, parseFilters, type TextIndex, type TextMode } from '@svc/domain';

/**
 * The one contract every text-index adapter passes (PostgreSQL full-text
 * search, Elasticsearch). Each adapter's spec file calls it with a factory.
 * Assertions avoid stemming differences between engines: query words appear in
 * the passages in the same form.
 */
export function textIndexContract(name: string, open: () => Promise<TextIndex & { dispose?: () => Promise<void> }>) {
  describe(`text index contract: ${name}`, () => {
    let ix: TextIndex & { dispose?: () => Promise<void> };
    const T = `t-${randomUUID()}`;
    const C = `c-${randomUUID()}`;
    const OTHER_T = `t-${randomUUID()}`;
    const ids: Record<string, string> = {};

    const item = (key: string, text: string, over: Partial<IndexedItem> = {}): IndexedItem => {
      ids[key] ??= randomUUID();
      return {
        itemId: ids[key],
        tenantId: T,
        contextId: C,
        sourceType: 'record',
        typeName: 'note',
        folderId: null,
        userId: null,
        scopes: [],
        attrs: {},
        createdAt: '2026-01-10T00:00:00.000Z',
        metadata: { key },
        passages: chunkText(text),
        ...over,
      };
    };
    const base = (over: Partial<ItemFilter> = {}): ItemFilter => ({ tenantId: T, contextId: C, clauses: [], ...over });
    const search = async (
      query: string,
      o: { mode?: TextMode; slop?: number; filter?: Partial<ItemFilter>; limit?: number } = {},
    ) => {
      const q = { filter: base(o.filter), query, textMode: o.mode ?? 'OR', slop: o.slop ?? 0, limit: o.limit ?? 50 };
      const r = await ix.search(q);
      await ix.hydrate?.(r.hits, q);
      return { ...r, keys: r.hits.map((h) => Object.entries(ids).find(([, v]) => v === h.itemId)?.[0]) };
    };

    beforeAll(async () => {
      ix = await open();
      await ix.init();
      const docs: IndexedItem[] = [
        item('volcano', 'The volcano erupted with glowing lava flowing down the northern slope.', {
          attrs: {
            category: 'geology',
            rating: 5,
            due: Date.parse('2026-03-01'),
            tags: ['hot', 'red'],
            typeName: 'note',
          },
        }),
        item('lava', 'Lava lamps contain wax that rises and falls; no volcano involved.', {
          attrs: { category: 'home', rating: 2, tags: ['retro'] },
        }),
        item('glacier', 'A glacier carves valleys slowly over thousands of years.', {
          attrs: { category: 'geology', rating: 4, due: Date.parse('2026-01-01') },
          userId: 'u1',
          scopes: ['org:acme'],
        }),
        item('phrase', 'quick brown fox jumps over the lazy dog', {
          attrs: { category: 'language', rating: 3 },
          folderId: 'f1',
          createdAt: '2026-02-01T00:00:00.000Z',
        }),
        item('gap', 'quick red brown fox', {
          attrs: { category: 'language' },
          folderId: 'f2',
          createdAt: '2026-03-01T00:00:00.000Z',
        }),
        item('doc', 'volcano survey report for the island', { sourceType: 'document', typeName: null }),
        item('many', 'volcano volcano volcano volcano island ash ash ash', {}),
      ];
      for (const d of docs) await ix.replaceItem(d);
      await ix.replaceItem({ ...item('foreign', 'volcano in another tenant'), tenantId: OTHER_T });
    }, 60_000);
    afterAll(async () => {
      await ix?.close();
      await ix?.dispose?.();
    });

    it('OR finds any term and ranks with term statistics (more occurrences, shorter passage first)', async () => {
      const r = await search('volcano');
      expect([...r.keys].sort()).toEqual(['doc', 'lava', 'many', 'volcano']);
      expect(r.total).toBe(4);
      expect(r.keys[0]).toBe('many');
      for (let i = 1; i < r.hits.length; i++) expect(r.hits[i - 1].score).toBeGreaterThanOrEqual(r.hits[i].score);
      expect(r.hits.every((h) => h.score > 0)).toBe(true);
    });

    it('countUpTo: the best `limit` hits, and matches counted exactly up to the cap', async () => {
      const q = { filter: base(), query: 'volcano', textMode: 'OR' as const, slop: 0 };
      const all = await ix.search({ ...q, limit: 50 });
      expect(all.total).toBe(4);
      for (const [limit, cap, total] of [
        [1, 3, 3],
        [2, 4, 4],
        [2, 10, 4],
        [1, 1, 1],
      ]) {
        const r = await ix.search({ ...q, limit, trackTotal: false, countUpTo: cap });
        expect(
          r.hits.map((h) => h.itemId),
          `limit ${limit} countUpTo ${cap}`,
        ).toEqual(all.hits.slice(0, limit).map((h) => h.itemId));
        expect(r.total, `limit ${limit} countUpTo ${cap}`).toBe(total);
      }
      // With a filter: only the admitted matches count.
      const geology = await ix.search({
        ...q,
        filter: base({ clauses: parseFilters({ category: 'geology' }) }),
        limit: 1,
        trackTotal: false,
        countUpTo: 3,
      });
      expect(geology.total).toBe(1);
    });

    it('rare terms weigh more than common ones (idf)', async () => {
      const r = await search('volcano glacier');
      expect(r.keys[0]).toBe('glacier');
    });

    it('AND needs every term', async () => {
      expect((await search('volcano island', { mode: 'AND' })).keys.sort()).toEqual(['doc', 'many']);
      expect((await search('volcano glacier', { mode: 'AND' })).keys).toEqual([]);
    });

    it('PHRASE needs the words contiguous and in order; slop allows gaps', async () => {
      expect((await search('quick brown fox', { mode: 'PHRASE' })).keys).toEqual(['phrase']);
      expect((await search('brown quick', { mode: 'PHRASE' })).keys).toEqual([]);
      expect((await search('quick brown', { mode: 'PHRASE', slop: 1 })).keys.sort()).toEqual(['gap', 'phrase']);
      expect((await search('quick fox', { mode: 'PHRASE', slop: 0 })).keys).toEqual([]);
      expect((await search('quick fox', { mode: 'PHRASE', slop: 2 })).keys.sort()).toEqual(['gap', 'phrase']);
    });

    it('COMPLEX: quoted phrases, exclusion, AND / OR and parentheses', async () => {
      expect((await search('"brown fox" -lazy', { mode: 'COMPLEX' })).keys).toEqual(['gap']);
      expect((await search('volcano -island', { mode: 'COMPLEX' })).keys.sort()).toEqual(['lava', 'volcano']);
      expect((await search('glacier OR lamps', { mode: 'COMPLEX' })).keys.sort()).toEqual(['glacier', 'lava']);
      expect((await search('(glacier OR lamps) AND wax', { mode: 'COMPLEX' })).keys).toEqual(['lava']);
      expect((await search('volcano AND (island OR slope) -ash', { mode: 'COMPLEX' })).keys.sort()).toEqual([
        'doc',
        'volcano',
      ]);
    });

    it('marks matched terms in the snippet and returns chunk and context text', async () => {
      const r = await search('glacier');
      expect(r.hits[0].snippet).toMatch(/<mark>glacier<\/mark>/i);
      expect(r.hits[0].chunkText).toContain('glacier carves');
      expect(r.hits[0].contextText).toContain(r.hits[0].chunkText);
    });

    it('isolates tenants and contexts', async () => {
      const r = await search('tenant');
      expect(r.keys).toEqual([]);
      const other = await ix.search({
        filter: { tenantId: OTHER_T, contextId: C, clauses: [] },
        query: 'volcano',
        textMode: 'OR',
        slop: 0,
        limit: 10,
      });
      expect(other.hits.map((h) => h.itemId)).toEqual([ids.foreign]);
      const otherCtx = await ix.search({
        filter: { tenantId: T, contextId: 'nope', clauses: [] },
        query: 'volcano',
        textMode: 'OR',
        slop: 0,
        limit: 10,
      });
      expect(otherCtx.hits).toEqual([]);
    });

    it('applies every filter before the limit', async () => {
      const f = (raw: unknown) => ({ clauses: parseFilters(raw) });
      const q = 'volcano glacier lava quick fox';
      expect((await search(q, { filter: f({ category: 'geology' }) })).keys.sort()).toEqual(['glacier', 'volcano']);
      expect((await search(q, { filter: f({ category: ['home', 'language'] }) })).keys.sort()).toEqual([
        'gap',
        'lava',
        'phrase',
      ]);
      expect((await search(q, { filter: f({ rating: { $gte: 4 } }) })).keys.sort()).toEqual(['glacier', 'volcano']);
      expect((await search(q, { filter: f({ rating: { $gt: 2, $lt: 5 } }) })).keys.sort()).toEqual([
        'glacier',
        'phrase',
      ]);
      expect((await search(q, { filter: f({ rating: { $lte: 2 } }) })).keys).toEqual(['lava']);
      expect((await search(q, { filter: f({ category: { $ne: 'geology' } }) })).keys.sort()).toEqual(
        ['gap', 'lava', 'many', 'phrase', 'doc'].sort(),
      );
      expect((await search(q, { filter: f({ category: { $nin: ['geology', 'language'] } }) })).keys.sort()).toEqual([
        'doc',
        'lava',
        'many',
      ]);
      expect((await search(q, { filter: f({ category: { $in: ['home'] } }) })).keys).toEqual(['lava']);
      expect((await search(q, { filter: f({ tags: 'red' }) })).keys).toEqual(['volcano']);
      expect((await search(q, { filter: f({ due: { $gt: '2026-02-01' } }) })).keys).toEqual(['volcano']);
      expect((await search(q, { filter: f({ due: '2026-01-01' }) })).keys).toEqual(['glacier']);
      expect((await search(q, { filter: f({ category: { $eq: 'geology' }, rating: 5 }) })).keys).toEqual(['volcano']);
      expect((await search(q, { filter: { sourceTypes: ['document'] } })).keys).toEqual(['doc']);
      expect((await search(q, { filter: { typeName: 'note', sourceTypes: ['record'] } })).keys).not.toContain('doc');
      expect((await search(q, { filter: { folderIds: ['f1', 'f2'] } })).keys.sort()).toEqual(['gap', 'phrase']);
      expect((await search(q, { filter: { userIds: ['u1'] } })).keys).toEqual(['glacier']);
      expect((await search(q, { filter: { scopesAll: ['org:acme'] } })).keys).toEqual(['glacier']);
      expect((await search(q, { filter: { scopesAny: ['org:acme', 'client:x'] } })).keys).toEqual(['glacier']);
      expect((await search(q, { filter: { createdAfter: '2026-02-01T00:00:00.000Z' } })).keys.sort()).toEqual([
        'gap',
        'phrase',
      ]);
      expect(
        (
          await search(q, {
            filter: { createdAfter: '2026-02-01T00:00:00.000Z', createdBefore: '2026-02-01T00:00:00.000Z' },
          })
        ).keys,
      ).toEqual(['phrase']);
      const limited = await search(q, { limit: 2 });
      expect(limited.hits).toHaveLength(2);
      expect(limited.total).toBeGreaterThan(2);
    });

    it('replaces an item on change and removes it on delete', async () => {
      await ix.replaceItem(item('lava', 'Bubbling mud pots near geysers.', { attrs: { category: 'home' } }));
      expect((await search('lamps')).keys).toEqual([]);
      expect((await search('geysers')).keys).toEqual(['lava']);
      await ix.deleteItem(ids.lava);
      expect((await search('geysers')).keys).toEqual([]);
      const r = await search('volcano');
      expect(r.keys.sort()).toEqual(['doc', 'many', 'volcano']);
    });

    it(
      'replaceItems writes a batch as replaceItem would each: new items findable, changed ones lose their ' +
        'old text, emptied ones leave',
      async () => {
        expect(ix.replaceItems).toBeDefined();
        await ix.replaceItem(item('b-old', 'Quokkas smile at marsupial tourists.'));
        await ix.replaceItem(item('b-gone', 'Axolotl regrowth of lost limbs.'));
        expect((await search('quokkas')).keys).toEqual(['b-old']);
        await ix.replaceItems!([
          item('b-old', 'Numbats eat termites in the woodland.'),
          item('b-new', 'Quolls hunt at night while numbats sleep.'),
          { ...item('b-gone', ''), passages: [] },
        ]);
        expect((await search('quokkas')).keys).toEqual([]);
        expect((await search('numbats')).keys.sort()).toEqual(['b-new', 'b-old']);
        expect((await search('axolotl')).keys).toEqual([]);
        // The term statistics count each passage once: a rare term of one passage outranks one of two.
        const r = await search('quolls numbats');
        expect(r.keys[0]).toBe('b-new');
        for (const k of ['b-old', 'b-new']) await ix.deleteItem(ids[k]);
      },
    );

    it('updateItemMeta changes filters and attributes without touching the passages', async () => {
      const it = item('meta', 'Ptarmigan feathers turn white in winter.', {
        attrs: { category: 'birds' },
        folderId: 'f1',
      });
      await ix.replaceItem(it);
      expect((await search('ptarmigan', { filter: { folderIds: ['f1'] } })).keys).toEqual(['meta']);
      const { passages: _, metadata: __, ...rest } = it;
      await ix.updateItemMeta({
        ...rest,
        folderId: 'f9',
        userId: 'u9',
        scopes: ['org:x'],
        attrs: { category: 'snow', rank: 7 },
      });
      expect((await search('ptarmigan', { filter: { folderIds: ['f1'] } })).keys).toEqual([]);
      expect(
        (
          await search('ptarmigan', {
            filter: {
              folderIds: ['f9'],
              userIds: ['u9'],
              scopesAll: ['org:x'],
              clauses: parseFilters({ category: 'snow', rank: { $gte: 7 } }),
            },
          })
        ).keys,
      ).toEqual(['meta']);
      expect((await search('ptarmigan', { filter: { clauses: parseFilters({ category: 'birds' }) } })).keys).toEqual(
        [],
      );
      await ix.deleteItem(ids.meta);
      await ix.updateItemMeta({ ...rest, itemId: randomUUID() }); // unknown item: nothing happens
      expect((await search('ptarmigan')).keys).toEqual([]);
    });

    it('long text becomes several passages, each findable', async () => {
      const long = Array.from(
        { length: 40 },
        (_, i) => `Sentence number ${i} talks about ${i === 33 ? 'zirconium' : 'ordinary'} matters in some detail.`,
      ).join(' ');
      const it = item('long', long);
      expect(it.passages.length).toBeGreaterThan(1);
      await ix.replaceItem(it);
      const r = await search('zirconium');
      expect(r.keys).toEqual(['long']);
      expect(r.hits[0].chunkNo).toBeGreaterThan(0);
      expect(r.hits[0].chunkText).toContain('zirconium');
    });

    it('deletes a whole context', async () => {
      await ix.deleteContext(T, C);
      expect((await search('volcano')).keys).toEqual([]);
      const other = await ix.search({
        filter: { tenantId: OTHER_T, contextId: C, clauses: [] },
        query: 'volcano',
        textMode: 'OR',
        slop: 0,
        limit: 10,
      });
      expect(other.hits).toHaveLength(1);
    });
  });
}
