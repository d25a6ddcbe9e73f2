import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eventually,
  startService,
  THROUGH_ROUTER,
  type Api,
  type Bootstrap,
  type TestService,
} from '../support/service';
import { expectStatus, unwrap, type Answer, type Body } from '../support/typed';
import type { SearchE2eEngine } from './search-engine';

/** Through the router indexing crosses Kafka and three processes on a busy machine: waits are longer there. */
const SLOW = THROUGH_ROUTER ? 3 : 1;

/**
 * Content search (spec "Content search", "Record indexStatus", indexFailure
 * codes, Limits: search limit and per-tenant vector capacity; decisions §1
 * POST /v1/search; docs/search.md). Black-box over HTTP on the embedded
 * engines (PostgreSQL FTS on PGlite, LanceDB, the built-in embedding model),
 * or with its keyword leg on `engine`. A function, so that each spec file
 * that runs it registers the tests again: test processes keep their modules
 * from file to file.
 */
export function searchSuite(engine: SearchE2eEngine): void {
  let svc: TestService;
  let api: Api;
  let acct: Bootstrap;
  let root: string;
  let typeName: string;
  const ids: Record<string, string> = {};
  const latencies: number[] = [];
  let folderTop: string;
  let folderChild: string;
  const SECRET_WORD = `zyqxwv${randomUUID().slice(0, 6)}`;

  const enterprise = () =>
    api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 });
  const ALL = [
    'schemas:c',
    'schemas:r',
    'records:c',
    'records:r',
    'records:u',
    'records:d',
    'folders:c',
    'folders:r',
    'search:r',
  ];

  // Typed calls (@svc/client): the answers are the generated types, so a renamed field fails the typecheck.
  async function mint(by: string, allowedActions: string[], dataScope?: Body<'mintToken'>['scope']['dataScope']) {
    return (
      await expectStatus(
        svc.client(by).POST('/v1/tokens', { body: { scope: { allowedActions, ...(dataScope ? { dataScope } : {}) } } }),
        201,
      )
    ).token;
  }

  async function schema(token: string, over: Partial<Body<'createSchema'>> = {}) {
    const r = await expectStatus(
      svc.client(token).POST('/v1/schemas', {
        body: {
          typeName: `Note_${randomUUID().slice(0, 8)}`,
          displayName: 'Notes',
          allowedSurfaces: ['record'],
          fields: [
            { fieldId: 'title', fieldType: 'string', searchable: true },
            { fieldId: 'body', fieldType: 'string', searchable: true },
            { fieldId: 'category', fieldType: 'string', filterable: true },
            { fieldId: 'rating', fieldType: 'number', filterable: true },
            { fieldId: 'due', fieldType: 'date', filterable: true },
            { fieldId: 'secret', fieldType: 'string', sensitive: true, searchable: true },
          ],
          ...over,
        },
      }),
      201,
    );
    return r.typeName;
  }

  /** Creates a record and waits until it is INDEXED (or another terminal status); records the latency. */
  async function indexed(token: string, body: Body<'createRecord'>, want = 'INDEXED') {
    const t0 = Date.now();
    const client = svc.client(token);
    const r = await expectStatus(client.POST('/v1/records', { body }), 201);
    const rec = (await eventually(
      async () => {
        const g = await unwrap(client.GET('/v1/records/{id}', { params: { path: { id: r.id } } }));
        return g.indexStatus !== 'PENDING_INDEX' ? g : null;
      },
      20_000 * SLOW,
      20,
    ))!;
    latencies.push(Date.now() - t0);
    expect(rec.indexStatus, JSON.stringify({ indexStatus: rec.indexStatus, indexFailure: rec.indexFailure })).toBe(
      want,
    );
    return rec;
  }

  const search = (body: Record<string, unknown>, token = root) => api.post('/v1/search', token, body);
  /** `body` as the tests write it (modes as plain strings); the answer is typed. */
  const hits = (body: Record<string, unknown>, token = root): Promise<Answer<'searchContent'>> =>
    unwrap(svc.client(token).POST('/v1/search', { body: body as Body<'searchContent'> }));
  const found = async (body: Record<string, unknown>, token = root) =>
    (await hits(body, token)).results.map(
      (x) => Object.entries(ids).find(([, v]) => v === x.documentId)?.[0] ?? x.documentId,
    );

  beforeAll(
    async () => {
      svc = await startService({ env: { VECTOR_CAPACITY_PER_TENANT: '30', ...engine.env } });
      api = svc.api;
      acct = await enterprise();
      root = acct.tenants.live.rootKey;
      typeName = await schema(root);
      const f1 = await api.post('/v1/folders', root, { name: 'Top' });
      expect(f1.status, f1.text).toBe(201);
      folderTop = f1.body.id;
      const f2 = await api.post('/v1/folders', root, { name: 'Child', parentFolderId: folderTop });
      expect(f2.status, f2.text).toBe(201);
      folderChild = f2.body.id;
      const docs: Array<[string, Record<string, unknown>, Record<string, unknown>?]> = [
        [
          'volcano',
          {
            title: 'Volcano eruption',
            body: 'Glowing lava flowed down the northern slope of the volcano after the eruption.',
            category: 'geology',
            rating: 5,
            due: '2026-03-01',
          },
          { folderId: folderTop },
        ],
        [
          'glacier',
          {
            title: 'Glacier retreat',
            body: 'The glacier carved a deep valley and is now retreating because of warmer summers.',
            category: 'geology',
            rating: 4,
            due: '2026-01-15',
          },
          { folderId: folderChild },
        ],
        [
          'bread',
          {
            title: 'Sourdough baking',
            body: 'Knead the dough, let it rise overnight, then bake the loaf in a hot oven until the crust is brown.',
            category: 'cooking',
            rating: 3,
          },
        ],
        [
          'kitten',
          {
            title: 'Adopting a kitten',
            body: 'A young cat needs a litter box, toys and regular visits to the veterinarian.',
            category: 'pets',
            rating: 2,
          },
        ],
        [
          'secret',
          {
            title: 'Quarterly memo',
            body: 'Routine planning notes for the next quarter.',
            category: 'office',
            rating: 1,
            secret: `the password is ${SECRET_WORD}`,
          },
        ],
      ];
      for (const [k, payload, over] of docs) ids[k] = (await indexed(root, { typeName, payload, ...(over ?? {}) })).id;
    },
    THROUGH_ROUTER ? 300_000 : 120_000,
  );

  afterAll(async () => {
    await svc?.stop();
  });

  describe('indexing', () => {
    it('moves records PENDING_INDEX → INDEXED, and reports write → findable latency', async () => {
      const sorted = [...latencies].sort((a, b) => a - b);
      console.log(
        `write → INDEXED latency over ${sorted.length} records: median ` +
          `${sorted[Math.floor(sorted.length / 2)]} ms, max ${sorted[sorted.length - 1]} ms`,
      );
      const t0 = Date.now();
      const word = `quokka${randomUUID().slice(0, 6)}`;
      const r = await api.post('/v1/records', root, {
        typeName,
        payload: { title: `A ${word} sighting`, body: 'Seen on an island beach.' },
      });
      expect(r.status).toBe(201);
      expect(r.body.indexStatus).toBe('PENDING_INDEX');
      await eventually(async () => (await found({ query: word, mode: 'TEXT' })).includes(r.body.id), 20_000 * SLOW, 10);
      console.log(`write → findable by keyword: ${Date.now() - t0} ms`);
      // The keyword leg is written in log order; INDEXED follows once the vectors are written too (docs/search.md,
      // "Fairness").
      const g = (await eventually(
        async () => {
          const x = await api.get(`/v1/records/${r.body.id}`, root);
          return x.body.indexStatus === 'INDEXED' ? x : null;
        },
        20_000 * SLOW,
        10,
      ))!;
      expect(g.body.indexStatus).toBe('INDEXED');
      expect(g.body.version).toBe(1); // outcome events do not change the version
      const v = await api.get(`/v1/records/${r.body.id}/versions`, root);
      expect(v.body.data).toHaveLength(1);
    });

    it('a record without searchable text is SKIPPED; a store-only record has no index status', async () => {
      await indexed(root, { typeName, payload: { category: 'empty' } }, 'SKIPPED');
      const r = await api.post('/v1/records', root, { typeName, payload: { title: 'store only' }, indexMode: 'NONE' });
      expect(r.body.indexStatus).toBeNull();
    });

    it('re-indexes on update and forgets on delete', async () => {
      const rec = await indexed(root, {
        typeName,
        payload: { title: 'Marmalade recipe', body: 'Seville oranges and sugar.' },
      });
      const u = await api.put(`/v1/records/${rec.id}`, root, {
        payload: { title: 'Chutney recipe', body: 'Mango and vinegar.' },
      });
      expect(u.status, u.text).toBe(200);
      await eventually(async () => (await api.get(`/v1/records/${rec.id}`, root)).body.indexStatus === 'INDEXED');
      expect(await found({ query: 'marmalade', mode: 'TEXT' })).not.toContain(rec.id);
      expect(await found({ query: 'chutney', mode: 'TEXT' })).toContain(rec.id);
      expect((await api.del(`/v1/records/${rec.id}`, root)).status).toBe(204);
      await eventually(async () => !(await found({ query: 'chutney', mode: 'TEXT' })).includes(rec.id));
      await eventually(
        async () => !(await found({ query: 'mango chutney vinegar', mode: 'SEMANTIC' })).includes(rec.id),
      );
    });

    it(
      'per-tenant vector capacity: beyond it semantic indexing is skipped (VECTOR_LIMIT_EXCEEDED), keyword ' +
        'search still serves it',
      async () => {
        const other = await enterprise();
        const k = other.tenants.live.rootKey;
        const t = await schema(k);
        const long = Array.from(
          { length: 800 },
          (_, i) => `Paragraph ${i} describes the lighthouse keeper's logbook entry number ${i} in careful detail.`,
        ).join(' ');
        const rec = await indexed(k, { typeName: t, payload: { title: 'Lighthouse log', body: long } }, 'FAILED');
        expect(rec.indexFailure?.code).toBe('VECTOR_LIMIT_EXCEEDED');
        expect(await found({ query: 'lighthouse', mode: 'TEXT' }, k)).toContain(rec.id);
        expect(await found({ query: 'lighthouse keeper', mode: 'SEMANTIC' }, k)).not.toContain(rec.id);
      },
    );
  });

  describe('modes and results', () => {
    it('TEXT, SEMANTIC and HYBRID each find the right record; scores follow the mode', async () => {
      const t = await search({ query: 'lava eruption', mode: 'TEXT' });
      expect(t.status).toBe(200);
      expect(t.body.results[0].documentId).toBe(ids.volcano);
      expect(t.body.results[0].textScore).toBe(0);
      expect(t.body.results[0].score).toBeGreaterThan(0);
      expect(t.body.results[0].snippet).toMatch(/<mark>/);
      const s = await search({ query: 'looking after a young cat', mode: 'SEMANTIC' });
      expect(s.body.results[0].documentId).toBe(ids.kitten);
      expect(s.body.results[0].semanticScore).toBeGreaterThan(0);
      expect(s.body.results[0].snippet).toBeNull();
      const h = await search({ query: 'glacier valley' });
      expect(h.body.results[0].documentId).toBe(ids.glacier);
      expect(h.body.results[0].textScore).toBeGreaterThan(0);
      expect(h.body.results[0].semanticScore).toBeGreaterThan(0);
      const r = h.body.results[0];
      expect(Object.keys(r).sort()).toEqual([
        'chunkText',
        'contextText',
        'createdAt',
        'documentId',
        'metadata',
        'score',
        'semanticScore',
        'snippet',
        'sourceType',
        'textScore',
        'typeName',
      ]);
      expect(r.sourceType).toBe('GenericRecord');
      expect(r.typeName).toBe(typeName);
      expect(r.chunkText).toContain('glacier');
      expect(Object.keys(h.body).sort()).toEqual([
        'degraded',
        'degradedLegs',
        'results',
        'searchTimeMs',
        'totalResults',
      ]);
      expect(h.body.degraded).toBe(false);
      for (let i = 1; i < h.body.results.length; i++)
        expect(h.body.results[i - 1].score).toBeGreaterThanOrEqual(h.body.results[i].score);
    });

    it(
      "a miss is 200 with no results, in the default HYBRID mode too (the vector leg's nearest passages are " +
        'not near enough)',
      async () => {
        for (const body of [{ mode: 'TEXT' }, {}, { mode: 'HYBRID', uniqueDocuments: true }]) {
          for (const query of ['xylophonequasar', 'zzqv kplmx wrrth']) {
            const r = await search({ query, ...body });
            expect(r.status).toBe(200);
            expect(r.body).toMatchObject({ results: [], totalResults: 0, degraded: false, degradedLegs: [] });
          }
        }
        // A query near a record's meaning but sharing none of its words is still found by HYBRID.
        expect(await found({ query: 'mountain ice loss from hotter weather' })).toContain('glacier');
        // A keyword match anywhere: the vector leg's other passages join as before, near or not.
        expect(await found({ query: 'xylophonequasar kitten' })).toEqual(expect.arrayContaining(['kitten', 'glacier']));
      },
    );

    it('never finds a sensitive value', async () => {
      for (const mode of ['TEXT', 'SEMANTIC', 'HYBRID']) {
        const r = await search({ query: SECRET_WORD, mode });
        expect(r.status).toBe(200);
        if (mode === 'TEXT') expect(r.body.results).toEqual([]);
        expect(JSON.stringify(r.body)).not.toContain(SECRET_WORD);
      }
      expect(await found({ query: `password ${SECRET_WORD}`, mode: 'TEXT', textMode: 'AND' })).toEqual([]);
    });

    it('textMode OR / AND / PHRASE with slop / COMPLEX', async () => {
      expect(await found({ query: 'lava kitten', mode: 'TEXT' })).toEqual(
        expect.arrayContaining(['volcano', 'kitten']),
      );
      expect(await found({ query: 'lava kitten', mode: 'TEXT', textMode: 'AND' })).toEqual([]);
      expect(await found({ query: 'glowing lava flowed', mode: 'TEXT', textMode: 'PHRASE' })).toEqual(['volcano']);
      expect(await found({ query: 'glowing flowed', mode: 'TEXT', textMode: 'PHRASE' })).toEqual([]);
      expect(await found({ query: 'glowing flowed', mode: 'TEXT', textMode: 'PHRASE', slop: 1 })).toEqual(['volcano']);
      expect(await found({ query: '(glacier OR dough) -oven', mode: 'TEXT', textMode: 'COMPLEX' })).toEqual([
        'glacier',
      ]);
      expect(await found({ query: '"young cat" OR loaf', mode: 'TEXT', textMode: 'COMPLEX' })).toEqual(
        expect.arrayContaining(['kitten', 'bread']),
      );
    });

    it('limit, offset, totalResults, uniqueDocuments, minTextRelevance, minSimilarity', async () => {
      const all = await search({ query: 'the a glacier volcano lava dough cat', mode: 'TEXT' });
      expect(all.body.totalResults).toBeGreaterThanOrEqual(4);
      const p1 = await search({ query: 'the a glacier volcano lava dough cat', mode: 'TEXT', limit: 2 });
      const p2 = await search({ query: 'the a glacier volcano lava dough cat', mode: 'TEXT', limit: 2, offset: 2 });
      expect(p1.body.results).toHaveLength(2);
      expect(p1.body.totalResults).toBe(all.body.totalResults);
      expect([...p1.body.results, ...p2.body.results].map((r: { documentId: string }) => r.documentId)).toEqual(
        all.body.results.slice(0, 4).map((r: { documentId: string }) => r.documentId),
      );
      const u = await search({ query: 'volcano glacier', uniqueDocuments: true, limit: 100 });
      const docIds = u.body.results.map((r: { documentId: string }) => r.documentId);
      expect(new Set(docIds).size).toBe(docIds.length);
      const strict = await search({ query: 'volcano lava cat', mode: 'TEXT', minTextRelevance: 0.99 });
      expect(strict.body.results.length).toBeLessThan(
        (await search({ query: 'volcano lava cat', mode: 'TEXT' })).body.results.length,
      );
      const sim = await search({ query: 'volcanic eruption', mode: 'SEMANTIC', minSimilarity: 0.99 });
      expect(sim.body.results).toEqual([]);
      const loose = await search({ query: 'volcanic eruption', mode: 'SEMANTIC', minSimilarity: 0.1 });
      expect(loose.body.results.every((r: { semanticScore: number }) => r.semanticScore >= 0.1)).toBe(true);
    });
  });

  describe('ranking depth', () => {
    it(
      'TEXT totalResults counts the ranked candidates (the depth: 100, or 3 × offset + limit); pages are ' +
        'slices of one ranking',
      async () => {
        const other = await enterprise();
        const token = other.tenants.live.rootKey;
        const type = await schema(token);
        const word = `qqdepth${randomUUID().slice(0, 6)}`;
        let last = '';
        for (let i = 0; i < 110; i++) {
          const r = await api.post('/v1/records', token, {
            typeName: type,
            payload: {
              title: `${word} item ${i}`,
              body: `${word} `.repeat(1 + (i % 7)) + `filler ${i}`,
              category: i % 2 ? 'odd' : 'even',
            },
            indexMode: 'TEXT',
          });
          expect(r.status, r.text).toBe(201);
          last = r.body.id;
        }
        await eventually(
          async () => (await api.get(`/v1/records/${last}`, token)).body.indexStatus === 'INDEXED',
          20_000 * SLOW,
        );
        const page = (body: Record<string, unknown>) => hits({ query: word, mode: 'TEXT', ...body }, token);
        const full = await page({ limit: 100 });
        expect(full.results).toHaveLength(100);
        expect(full.totalResults).toBe(110);
        const ranked = [...full.results, ...(await page({ offset: 100, limit: 100 })).results].map((r) => r.documentId);
        expect(new Set(ranked).size).toBe(110);
        for (const [offset, limit] of [
          [0, 3],
          [0, 33],
          [40, 10],
          [97, 3],
          [105, 10],
        ]) {
          const p = await page({ offset, limit });
          expect(p.totalResults, `offset ${offset} limit ${limit}`).toBe(
            Math.min(110, Math.max(100, 3 * (offset + limit))),
          );
          expect(p.results.map((r) => r.documentId)).toEqual(ranked.slice(offset, offset + limit));
        }
        // Filters apply before the count: 55 even records match.
        const even = await page({ limit: 5, filters: { category: 'even' } });
        expect(even.totalResults).toBe(55);
        expect(even.results.map((r) => r.documentId)).toEqual(
          (await page({ limit: 100, filters: { category: 'even' } })).results.slice(0, 5).map((r) => r.documentId),
        );
        // A relevance threshold counts only the candidates above it.
        const strict = await page({ limit: 100, minTextRelevance: 0.9 });
        expect(strict.totalResults).toBe(strict.results.length);
        expect((await page({ limit: 2, minTextRelevance: 0.9 })).totalResults).toBe(strict.results.length);
      },
      120_000 * SLOW,
    );

    it(
      'a TEXT page beyond the deepest candidate depth (1,000) is empty; the last page within it is full',
      async () => {
        const other = await enterprise();
        const token = other.tenants.live.rootKey;
        const type = await schema(token);
        const word = `qqdeep${randomUUID().slice(0, 6)}`;
        let last = '';
        for (let b = 0; b < 21; b++) {
          const r = await api.post('/v1/records/batch', token, {
            records: Array.from({ length: 50 }, (_, i) => ({
              typeName: type,
              payload: { title: `${word} ${b * 50 + i}` },
              indexMode: 'TEXT',
            })),
          });
          expect(r.status, r.text).toBe(200);
          last = r.body.results.at(-1).id;
        }
        await eventually(
          async () => (await api.get(`/v1/records/${last}`, token)).body.indexStatus === 'INDEXED',
          60_000 * SLOW,
        );
        const beyond = await hits({ query: word, mode: 'TEXT', offset: 1000, limit: 10 }, token);
        expect(beyond.results).toEqual([]);
        expect(beyond.totalResults).toBe(1000);
        const within = await hits({ query: word, mode: 'TEXT', offset: 990, limit: 10 }, token);
        expect(within.results).toHaveLength(10);
        expect(within.totalResults).toBe(1000);
      },
      180_000 * SLOW,
    );
  });

  describe('filters', () => {
    const q = { query: 'volcano glacier dough cat memo quarter', mode: 'TEXT' };
    it('attribute filters with every operator, before ranking and limit', async () => {
      expect((await found({ ...q, filters: { category: 'geology' } })).sort()).toEqual(['glacier', 'volcano']);
      expect((await found({ ...q, filters: { category: ['cooking', 'pets'] } })).sort()).toEqual(['bread', 'kitten']);
      expect((await found({ ...q, filters: { rating: { $gte: 4 } } })).sort()).toEqual(['glacier', 'volcano']);
      expect((await found({ ...q, filters: { rating: { $gt: 1, $lt: 4 } } })).sort()).toEqual(['bread', 'kitten']);
      expect(await found({ ...q, filters: { rating: { $lte: 1 } } })).toEqual(['secret']);
      expect((await found({ ...q, filters: { category: { $ne: 'geology' } } })).sort()).toEqual([
        'bread',
        'kitten',
        'secret',
      ]);
      expect(await found({ ...q, filters: { category: { $in: ['pets'] } } })).toEqual(['kitten']);
      expect((await found({ ...q, filters: { category: { $nin: ['geology', 'office'] } } })).sort()).toEqual([
        'bread',
        'kitten',
      ]);
      expect(await found({ ...q, filters: { due: { $gt: '2026-02-01' } } })).toEqual(['volcano']);
      expect(await found({ ...q, filters: { category: { $eq: 'geology' } }, limit: 1 })).toHaveLength(1);
      expect(await found({ ...q, mode: 'SEMANTIC', filters: { category: 'pets' } })).toEqual(['kitten']);
      expect(await found({ ...q, mode: 'HYBRID', filters: { typeName, category: 'cooking' } })).toEqual(['bread']);
    });

    it('typeName, contentTypes, folderId, rootFolderId, createdAfter / createdBefore', async () => {
      expect((await found({ ...q, typeName })).length).toBeGreaterThanOrEqual(5);
      expect(await found({ ...q, typeName: 'NoSuchType' })).toEqual([]);
      expect((await found({ ...q, contentTypes: ['records'] })).length).toBeGreaterThanOrEqual(5);
      expect(await found({ ...q, contentTypes: ['documents'] })).toEqual([]);
      expect(await found({ ...q, folderId: folderTop })).toEqual(['volcano']);
      expect((await found({ ...q, rootFolderId: folderTop })).sort()).toEqual(['glacier', 'volcano']);
      expect(await found({ ...q, rootFolderId: folderChild })).toEqual(['glacier']);
      const g = await api.get(`/v1/records/${ids.bread}`, root);
      expect(await found({ ...q, createdAfter: g.body.createdAt, createdBefore: g.body.createdAt })).toEqual(['bread']);
      expect(await found({ ...q, createdBefore: '2000-01-01T00:00:00Z' })).toEqual([]);
    });

    it('rejects bad parameters with 400', async () => {
      const bad = [
        { query: 'x', limit: 0 },
        { query: 'x', limit: 101 },
        { query: 'x', offset: -1 },
        { query: '' },
        { mode: 'TEXT' },
        { query: 'x', mode: 'FUZZY' },
        { query: 'x', textMode: 'REGEX' },
        { query: 'x', slop: -1 },
        { query: 'x', minSimilarity: 1.5 },
        { query: 'x', contentTypes: ['files'] },
        { query: 'x', unknownParam: 1 },
        { query: 'x', createdAfter: 'yesterday' },
        { query: 'x', folderId: 'not-a-uuid' },
        { query: 'x', filters: { category: { $regex: 'geo' } } },
        { query: 'x', filters: { category: { $eq: ['a'] } } },
        { query: 'x', filters: { category: { $in: 'geology' } } },
        { query: 'x', filters: { category: { $in: [{ a: 1 }] } } },
        { query: 'x', filters: { category: { $in: ['a'], $ne: 'b' } } },
        { query: 'x', filters: { 'bad key': 1 } },
        { query: 'x', filters: { '1abc': 1 } },
        { query: 'x', filters: { 'a.b': 1 } },
        { query: 'x', filters: { tenantId: 't' } },
        { query: 'x', filters: { contextId: 'c' } },
        { query: 'x', filters: { userId: 'u' } },
        { query: 'x', filters: { scopes: 'org:a' } },
        { query: 'x', filters: { category: null } },
        { query: 'x', filters: { category: { a: { b: 1 } } } },
        { query: 'x', filters: [] },
        { query: 'x', contentTypes: ['records'], filters: { notAField: 1 } },
        { query: 'x', typeName, filters: { title: 'x' } },
      ];
      for (const body of bad) {
        const r = await search(body);
        expect(r.status, JSON.stringify(body) + ' → ' + r.text).toBe(400);
        expect(typeof r.body.message).toBe('string');
      }
    });
  });

  describe('access', () => {
    it('requires search:r', async () => {
      const t = await mint(root, ['records:r']);
      expect((await search({ query: 'volcano' }, t)).status).toBe(403);
      expect((await api.post('/v1/search', undefined, { query: 'volcano' })).status).toBe(401);
    });

    it('applies the credential data scope and the ownership parameters', async () => {
      const u1 = await mint(root, ALL, { userId: 'u1' });
      const mine = await indexed(u1, {
        typeName,
        payload: { title: 'Pelican notes', body: 'Pelicans fish in the bay.' },
      });
      const org = await indexed(root, {
        typeName,
        payload: { title: 'Pelican census', body: 'Counting pelicans.' },
        scopes: ['org:acme'],
      });
      expect(await found({ query: 'pelican', mode: 'TEXT' }, u1)).toEqual([mine.id]);
      expect(await found({ query: 'pelican', mode: 'HYBRID' }, u1)).toEqual([mine.id]);
      expect((await found({ query: 'pelican', mode: 'TEXT' })).sort()).toEqual([mine.id, org.id].sort());
      expect(await found({ query: 'pelican', mode: 'TEXT', userId: 'u1' })).toEqual([mine.id]);
      expect(await found({ query: 'pelican', mode: 'TEXT', orgId: 'acme' })).toEqual([org.id]);
      expect(await found({ query: 'pelican', mode: 'TEXT', clientId: 'acme' })).toEqual([]);
    });

    it('no leakage across tenants or contexts', async () => {
      const other = await enterprise();
      for (const k of [other.tenants.live.rootKey, acct.tenants.test.rootKey]) {
        for (const mode of ['TEXT', 'SEMANTIC', 'HYBRID']) {
          const r = await search({ query: 'volcano lava glacier', mode }, k);
          expect(r.status).toBe(200);
          expect(r.body.results).toEqual([]);
        }
      }
    });
  });

  describe('degradation', () => {
    it('one failed leg: the other answers with degraded: true; requireComplete gives 503', async () => {
      await engine.breakTextLeg(svc);
      try {
        const h = await search({ query: 'glacier valley' });
        expect(h.status, h.text).toBe(200);
        expect(h.body.degraded).toBe(true);
        expect(h.body.degradedLegs).toEqual(['text']);
        expect(h.body.results[0].documentId).toBe(ids.glacier);
        expect((await search({ query: 'glacier valley', requireComplete: true })).status).toBe(503);
        expect((await search({ query: 'glacier valley', mode: 'TEXT' })).status).toBe(503);
        expect((await search({ query: 'glacier valley', mode: 'SEMANTIC', requireComplete: true })).status).toBe(200);
      } finally {
        await engine.restoreTextLeg(svc);
      }
      expect((await search({ query: 'glacier valley', requireComplete: true })).body.degraded).toBe(false);
    });
  });

  describe('documents', () => {
    // A tenant of their own: the record cases above count exact result sets.
    let dk: string;
    let dTop: string;
    let dChild: string;
    let recordId: string;
    const d: Record<string, string> = {};
    const TITLE_WORD = `quillwort${randomUUID().slice(0, 6)}`;
    const dfound = async (body: Record<string, unknown>, token = dk) => {
      const r = await search(body, token);
      expect(r.status, r.text).toBe(200);
      return r.body.results.map(
        (x: { documentId: string }) =>
          Object.entries(d).find(([, v]) => v === x.documentId)?.[0] ??
          (x.documentId === recordId ? 'record' : x.documentId),
      ) as string[];
    };
    const docStatus = (id: string) =>
      eventually(
        async () => {
          const g = await api.get(`/v1/documents/${id}`, dk);
          return ['INDEXED', 'SKIPPED', 'STORED', 'FAILED'].includes(g.body.status) ? g.body : null;
        },
        20_000 * SLOW,
        20,
      );
    async function ingest(key: string, body: Record<string, unknown>, want = 'INDEXED', token = dk) {
      const r = await api.post('/v1/documents', token, { title: `${TITLE_WORD} ${key}`, indexMode: 'HYBRID', ...body });
      expect(r.status, r.text).toBe(201);
      d[key] = r.body.id;
      const done = await docStatus(r.body.id);
      expect(done.status, JSON.stringify(done.indexFailure ?? null)).toBe(want);
      return done;
    }

    beforeAll(async () => {
      const a = await enterprise();
      dk = a.tenants.live.rootKey;
      dTop = (await api.post('/v1/folders', dk, { name: 'Sky' })).body.id;
      dChild = (await api.post('/v1/folders', dk, { name: 'Sea', parentFolderId: dTop })).body.id;
      await ingest('comet', {
        text: 'A bright comet with a long icy tail crossed the night sky above the observatory.',
        folderId: dTop,
        payload: { region: 'north', priority: 3 },
      });
      await ingest('reef', {
        text: 'Coral reef fish shelter among colourful anemones in warm shallow water.',
        folderId: dChild,
        payload: { region: 'south', priority: 1 },
      });
      await ingest('telescope', {
        text: 'Telescope mirrors must be ground precisely to focus faint starlight.',
        indexMode: 'TEXT',
      });
      await ingest('bees', {
        text: 'Bees pollinate flowers while collecting nectar to make honey in the hive.',
        indexMode: 'SEMANTIC',
      });
      const long = Array.from(
        { length: 80 },
        (_, i) => `Entry ${i}: the comet observation notes for night ${i} were written down carefully.`,
      ).join(' ');
      await ingest('longcomet', { text: long, payload: { region: 'north' } });
      const t = await schema(dk);
      const rec = await indexed(dk, {
        typeName: t,
        payload: { title: 'Comet sighting', body: 'A comet was logged by an amateur astronomer.' },
      });
      recordId = rec.id;
    }, 120_000 * SLOW);

    it('TEXT, SEMANTIC and HYBRID find documents: PartnerDocument results, the document id, no title', async () => {
      const t = await search({ query: 'comet icy tail', mode: 'TEXT' }, dk);
      expect(t.status, t.text).toBe(200);
      const top = t.body.results[0];
      expect(top.documentId).toBe(d.comet);
      expect(top.sourceType).toBe('PartnerDocument');
      expect(top.snippet).toMatch(/<mark>/);
      expect(top.chunkText).toContain('icy tail');
      expect(top.metadata).toMatchObject({
        folderId: dTop,
        indexMode: 'HYBRID',
        attributes: { region: 'north', priority: 3 },
      });
      expect(top.metadata).not.toHaveProperty('title');
      expect(await dfound({ query: 'insects gathering nectar from blossoms', mode: 'SEMANTIC' })).toContain('bees');
      expect((await dfound({ query: 'insects gathering nectar from blossoms', mode: 'SEMANTIC' }))[0]).toBe('bees');
      expect((await dfound({ query: 'coral reef fish' }))[0]).toBe('reef');
      // The index mode decides the legs: TEXT documents have no vectors, SEMANTIC documents no keywords.
      expect(await dfound({ query: 'telescope mirrors', mode: 'TEXT' })).toEqual(['telescope']);
      expect(await dfound({ query: 'telescope mirrors starlight', mode: 'SEMANTIC' })).not.toContain('telescope');
      expect(await dfound({ query: 'nectar honey', mode: 'TEXT' })).toEqual([]);
      // The title is not indexed and never shows.
      for (const mode of ['TEXT', 'SEMANTIC', 'HYBRID']) {
        const r = await search({ query: TITLE_WORD, mode }, dk);
        if (mode === 'TEXT') expect(r.body.results).toEqual([]);
        expect(JSON.stringify(r.body)).not.toContain(TITLE_WORD);
      }
    });

    it('contentTypes: documents, records, both', async () => {
      const q = { query: 'comet', mode: 'TEXT', uniqueDocuments: true, limit: 100 };
      expect((await dfound({ ...q, contentTypes: ['documents'] })).sort()).toEqual(['comet', 'longcomet']);
      expect(await dfound({ ...q, contentTypes: ['records'] })).toEqual(['record']);
      expect((await dfound({ ...q, contentTypes: ['documents', 'records'] })).sort()).toEqual([
        'comet',
        'longcomet',
        'record',
      ]);
      expect((await dfound(q)).sort()).toEqual(['comet', 'longcomet', 'record']);
      expect(await dfound({ ...q, mode: 'HYBRID', contentTypes: ['documents'] })).not.toContain('record');
    });

    it('folderId and rootFolderId', async () => {
      const q = { query: 'comet coral reef', mode: 'TEXT', uniqueDocuments: true };
      expect(await dfound({ ...q, folderId: dTop })).toEqual(['comet']);
      expect((await dfound({ ...q, rootFolderId: dTop })).sort()).toEqual(['comet', 'reef']);
      expect(await dfound({ ...q, rootFolderId: dChild })).toEqual(['reef']);
      expect(await dfound({ ...q, mode: 'SEMANTIC', folderId: dChild })).toEqual(['reef']);
    });

    it('uniqueDocuments: at most one hit per document', async () => {
      const all = await dfound({
        query: 'comet observation notes',
        mode: 'TEXT',
        contentTypes: ['documents'],
        limit: 100,
      });
      expect(all.filter((k) => k === 'longcomet').length).toBeGreaterThan(1);
      for (const mode of ['TEXT', 'SEMANTIC', 'HYBRID']) {
        const u = await dfound({
          query: 'comet observation notes',
          mode,
          contentTypes: ['documents'],
          uniqueDocuments: true,
          limit: 100,
        });
        expect(new Set(u).size, mode).toBe(u.length);
        expect(u, mode).toContain('longcomet');
      }
    });

    it('filters on undeclared document payload keys, and the creation date', async () => {
      const q = { query: 'comet coral reef', mode: 'TEXT', uniqueDocuments: true, contentTypes: ['documents'] };
      expect(await dfound({ ...q, filters: { region: 'south' } })).toEqual(['reef']);
      expect((await dfound({ ...q, filters: { region: 'north' } })).sort()).toEqual(['comet', 'longcomet']);
      expect(await dfound({ ...q, filters: { priority: { $gte: 2 } } })).toEqual(['comet']);
      expect(await dfound({ ...q, mode: 'HYBRID', filters: { region: { $in: ['south'] } } })).toEqual(['reef']);
      // A unified search takes a key some document's payload carries; a key no schema declares and no document
      // carries is unknown: 400, in a unified or a documents search alike.
      expect(await dfound({ query: 'comet', mode: 'TEXT', filters: { region: 'south' } })).toEqual([]);
      for (const body of [
        { query: 'comet', mode: 'TEXT', filters: { nosuchkey: 'south' } },
        { ...q, filters: { region: 'south', nosuchkey: { $in: ['a'] } } },
        { query: 'comet', mode: 'HYBRID', contentTypes: ['records', 'documents'], filters: { nosuchkey: 1 } },
      ]) {
        const r = await search(body, dk);
        expect(r.status, JSON.stringify(body) + ' → ' + r.text).toBe(400);
        expect(r.body.message).toContain("unknown key 'nosuchkey'");
      }
      const g = await api.get(`/v1/documents/${d.reef}`, dk);
      expect(await dfound({ ...q, createdAfter: g.body.createdAt, createdBefore: g.body.createdAt })).toEqual(['reef']);
    });

    it('ownership and data scope apply to documents', async () => {
      const u7 = await mint(dk, ['documents:c', 'documents:r', 'search:r'], { userId: 'u7' });
      await ingest('mine', { text: 'Lichen grows slowly on granite boulders.', scopes: ['org:acme'] }, 'INDEXED', u7);
      await ingest('theirs', { text: 'Lichen colonies on the old stone wall.' });
      expect(await dfound({ query: 'lichen', mode: 'TEXT' }, u7)).toEqual(['mine']);
      expect(await dfound({ query: 'lichen', mode: 'HYBRID' }, u7)).toEqual(['mine']);
      expect((await dfound({ query: 'lichen', mode: 'TEXT' })).sort()).toEqual(['mine', 'theirs']);
      expect(await dfound({ query: 'lichen', mode: 'TEXT', userId: 'u7' })).toEqual(['mine']);
      expect(await dfound({ query: 'lichen', mode: 'TEXT', orgId: 'acme' })).toEqual(['mine']);
    });

    it('a change of folder or payload moves the filters; delete removes the document from both legs', async () => {
      const doc = await ingest('moving', {
        text: 'Narwhal tusks spiral in the arctic sea.',
        folderId: dTop,
        payload: { region: 'north' },
      });
      const p = await api.put(`/v1/documents/${doc.id}`, dk, {
        title: 'renamed',
        folderId: dChild,
        payload: { region: 'east' },
      });
      expect(p.status, p.text).toBe(200);
      await eventually(async () =>
        (await dfound({ query: 'narwhal', mode: 'TEXT', folderId: dChild })).includes('moving'),
      );
      expect(await dfound({ query: 'narwhal', mode: 'TEXT', folderId: dTop })).toEqual([]);
      expect(await dfound({ query: 'narwhal', mode: 'TEXT', filters: { region: 'east' } })).toEqual(['moving']);
      // The vector leg's copy of the filters follows on its own (through the router it is read by another process,
      // which sees LanceDB's new rows within a second): eventually, like every search.
      await eventually(async () =>
        (
          await dfound({ query: 'narwhal tusk', mode: 'SEMANTIC', folderId: dChild, filters: { region: 'east' } })
        ).includes('moving'),
      );
      expect(await dfound({ query: 'narwhal', mode: 'TEXT', filters: { region: 'north' } })).toEqual([]);
      expect((await api.del(`/v1/documents/${doc.id}`, dk)).status).toBe(204);
      await eventually(async () => !(await dfound({ query: 'narwhal', mode: 'TEXT' })).includes('moving'));
      await eventually(
        async () => !(await dfound({ query: 'narwhal tusks arctic sea', mode: 'SEMANTIC' })).includes('moving'),
      );
    });

    it('no indexable text is SKIPPED; indexMode NONE is STORED and never found', async () => {
      await ingest('blank', { text: '  \n ' }, 'SKIPPED');
      await ingest('stored', { text: 'Walrus colonies haul out on the ice.', indexMode: 'NONE' }, 'STORED');
      for (const mode of ['TEXT', 'SEMANTIC', 'HYBRID'])
        expect(await dfound({ query: 'walrus colonies ice', mode })).not.toContain('stored');
    });

    it('no leakage across tenants: documents of one tenant never show in another', async () => {
      const other = await enterprise();
      for (const k of [other.tenants.live.rootKey, root]) {
        for (const mode of ['TEXT', 'SEMANTIC', 'HYBRID']) {
          const r = await search({ query: 'comet icy tail coral reef', mode, contentTypes: ['documents'] }, k);
          expect(r.status).toBe(200);
          expect(
            r.body.results
              .map((x: { documentId: string }) => x.documentId)
              .filter((id: string) => Object.values(d).includes(id)),
          ).toEqual([]);
        }
      }
    });
  });
}
