import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type IndexedItem, parseFilters, TextIndexError, type TextMode } from '@svc/domain';
import { loadElasticsearch } from '@svc/search';
import { serverUrl } from '../support/engines';
import { textIndexContract } from './text-index.contract';

const { ElasticsearchTextIndex } = await loadElasticsearch();
const url = serverUrl('elasticsearch');
const base = url?.replace(/\/$/, '');
const dropIndex = (index: string) =>
  fetch(`${base}/${index}`, { method: 'DELETE' }).then(
    () => {},
    () => {},
  );

if (!url)
  describe.skip(
    'text index contract: Elasticsearch (ELASTICSEARCH_URL not set; start one with ' +
      'deploy/engines/elasticsearch.sh)',
    () => {},
  );
else {
  textIndexContract('Elasticsearch', async () => {
    const index = `test-passages-${randomUUID()}`;
    const ix = new ElasticsearchTextIndex({ url, index });
    return Object.assign(ix, { dispose: () => dropIndex(index) });
  });

  /** What the contract leaves to the adapter: analysis, large items, attribute storage, index creation, errors. */
  describe('Elasticsearch text index: adapter specifics', () => {
    const index = `test-passages-${randomUUID()}`;
    const ix = new ElasticsearchTextIndex({ url, index });
    const T = `t-${randomUUID()}`;
    const C = `c-${randomUUID()}`;
    const item = (itemId: string, texts: string[], over: Partial<IndexedItem> = {}): IndexedItem => ({
      itemId,
      tenantId: T,
      contextId: C,
      sourceType: 'record',
      typeName: 'note',
      folderId: null,
      userId: null,
      scopes: [],
      attrs: {},
      createdAt: '2026-01-10T00:00:00.000Z',
      metadata: {},
      passages: texts.map((t, i) => ({ chunkNo: i, chunkText: t, contextText: t })),
      ...over,
    });
    const search = async (query: string, textMode: TextMode = 'OR', clauses: unknown = undefined, limit = 50) =>
      ix.search({
        filter: { tenantId: T, contextId: C, clauses: parseFilters(clauses) },
        query,
        textMode,
        slop: 0,
        limit,
      });
    const ids = async (query: string, textMode: TextMode = 'OR', clauses: unknown = undefined) =>
      [...new Set((await search(query, textMode, clauses)).hits.map((h) => h.itemId))].sort();

    beforeAll(async () => {
      await ix.init();
      await ix.replaceItem(item('erupt', ['The volcanoes erupted twice; the villagers were running to the boats.']));
      await ix.replaceItem(
        item('arrays', ['ptarmigan census'], {
          attrs: { scores: [3, 9], name: 'solo', 'dotted.key': 'x', 'bad key': 1 },
        }),
      );
      await ix.replaceItem(item('scalar', ['ptarmigan sighting'], { attrs: { scores: 5, name: 'mono' } }));
    }, 60_000);
    afterAll(async () => {
      await ix.close();
      await dropIndex(index);
    });

    it('stems with the Snowball English stemmer and drops PostgreSQL English stop words', async () => {
      expect(
        ['snowball', 'svc_english_stem'],
        'no English stemmer on this server: run deploy/engines/elasticsearch.sh (it adds the ' +
          'svc-english-stem plugin) or a distribution with analysis-common',
      ).toContain(ix.stemmer);
      // volcanoes → volcano; erupted, erupting, eruption → erupt: AND holds only because both words stem
      expect(await ids('volcano eruption', 'AND')).toEqual(['erupt']);
      expect(await ids('volcano erupting', 'AND')).toEqual(['erupt']);
      expect(await ids('villager runs', 'AND')).toEqual(['erupt']);
      expect(await ids('volcanoes erupt', 'PHRASE')).toEqual(['erupt']);
      // stop words: a query of stop words only matches nothing, in every mode (PostgreSQL's behaviour)
      for (const mode of ['OR', 'AND', 'PHRASE', 'COMPLEX'] as const)
        expect(await ids('the were to', mode), mode).toEqual([]);
      expect(await ids('-the', 'COMPLEX')).toEqual([]);
      expect(await ids('(the OR were) volcano', 'COMPLEX')).toEqual(['erupt']);
      // a stop word keeps its place in a phrase
      expect(await ids('running to the boats', 'PHRASE')).toEqual(['erupt']);
      expect(await ids('running into a boat', 'PHRASE')).toEqual(['erupt']);
      expect(await ids('running boats', 'PHRASE')).toEqual([]);
    });

    it('snippets mark stemmed matches; hydrate fills text only for the hits it is given', async () => {
      const s = {
        filter: { tenantId: T, contextId: C, clauses: [] },
        query: 'eruptions volcano',
        textMode: 'OR' as const,
        slop: 0,
        limit: 10,
      };
      const r = await ix.search(s);
      expect(r.hits[0].chunkText).toBeUndefined();
      await ix.hydrate(r.hits, s);
      expect(r.hits[0].snippet).toBe(
        'The <mark>volcanoes</mark> <mark>erupted</mark> twice; the villagers were running to the boats.',
      );
      expect(r.hits[0].contextText).toBe(r.hits[0].chunkText);
    });

    it(
      'ranges never match an array attribute; equality matches any element; keys a filter cannot name are ' +
        'not stored',
      async () => {
        expect(await ids('ptarmigan', 'OR', { scores: { $gte: 1 } })).toEqual(['scalar']);
        expect(await ids('ptarmigan', 'OR', { scores: 9 })).toEqual(['arrays']);
        expect(await ids('ptarmigan', 'OR', { scores: { $in: [3, 5] } })).toEqual(['arrays', 'scalar']);
        expect(await ids('ptarmigan', 'OR', { name: { $gt: 'n' } })).toEqual(['arrays']);
        expect(await ids('ptarmigan', 'OR', { scores: { $ne: 9 } })).toEqual(['scalar']);
        const m = await (await fetch(`${base}/${index}/_mapping`)).json();
        expect(JSON.stringify(m)).not.toMatch(/dotted|bad key/);
      },
    );

    it('an item of more than one bulk request of passages is written, shrunk and deleted whole', async () => {
      const many = Array.from({ length: 1_250 }, (_, i) => `Passage ${i} about quokka number ${i}.`);
      await ix.replaceItem(item('big', many));
      expect((await search('quokka', 'OR', undefined, 1000)).total).toBe(1_250);
      await ix.replaceItem(item('big', ['one quokka left', 'and a wombat']));
      const r = await search('quokka wombat');
      expect(r.total).toBe(2);
      expect(r.hits.map((h) => h.chunkNo).sort()).toEqual([0, 1]);
      await ix.replaceItem(item('big', []));
      expect((await search('quokka wombat')).total).toBe(0);
    }, 120_000);

    it('deleteContext removes more than one page of passages', async () => {
      const C2 = `c-${randomUUID()}`;
      for (let k = 0; k < 3; k++)
        await ix.replaceItem(
          item(
            `ctx-${k}`,
            Array.from({ length: 2_000 }, (_, i) => `kiwi ${k} ${i}`),
            { contextId: C2 },
          ),
        );
      const count = async () =>
        (
          await ix.search({
            filter: { tenantId: T, contextId: C2, clauses: [] },
            query: 'kiwi',
            textMode: 'OR',
            slop: 0,
            limit: 1,
          })
        ).total;
      expect(await count()).toBe(6_000);
      await ix.deleteContext(T, C2);
      expect(await count()).toBe(0);
      expect(await ids('ptarmigan')).toEqual(['arrays', 'scalar']);
    }, 120_000);

    it('init is safe to race and to repeat; an existing index keeps its analysis', async () => {
      const fresh = `test-passages-${randomUUID()}`;
      const a = new ElasticsearchTextIndex({ url, index: fresh });
      const b = new ElasticsearchTextIndex({ url, index: fresh });
      try {
        await Promise.all([a.init(), b.init(), a.init()]);
        expect(a.stemmer).toBe(ix.stemmer);
        expect(b.stemmer).toBe(ix.stemmer);
      } finally {
        await a.close();
        await b.close();
        await dropIndex(fresh);
      }
    });

    it('an unreachable server is a TextIndexError (the search degrades instead of crashing)', async () => {
      const down = new ElasticsearchTextIndex({ url: 'http://127.0.0.1:1', index: 'nope' });
      try {
        await expect(
          down.search({
            filter: { tenantId: T, contextId: C, clauses: [] },
            query: 'x',
            textMode: 'OR',
            slop: 0,
            limit: 1,
          }),
        ).rejects.toBeInstanceOf(TextIndexError);
        await expect(down.replaceItem(item('x', ['x']))).rejects.toBeInstanceOf(TextIndexError);
      } finally {
        await down.close();
      }
    });
  });
}
