import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from '@svc/deploy';
import type { SearchEngines, Sql } from '@svc/domain';
import { type Principal, searchBody } from '@svc/contracts';
import {
  BuiltinEmbedder,
  embedQuery,
  type IndexerEngines,
  LanceVectorIndex,
  PgTextIndex,
  SearchCatalogue,
} from '@svc/search';
import { runSearch } from '@svc/query-api';
import { tempDir } from '../support/engines';
import { ndcgAt10, QUERIES, passages } from './corpus';

/**
 * Relevance of the real search pipeline (PostgreSQL BM25 on PGlite, LanceDB,
 * the built-in embedding model, convex fusion with the model's weight) on the project's own
 * judged set: nDCG@10 per mode, reported and held to floors.
 */
const T = 'relevance-tenant';
const C = 'relevance-context';
let sql: Sql;
let engines: IndexerEngines & SearchEngines;
const tmp = tempDir('svc-relevance-');
const principal: Principal = {
  credentialId: 'k',
  kind: 'root',
  accountId: 'a',
  tenantId: T,
  environment: 'live',
  contextId: C,
  crossContext: false,
  allowedActions: ['*'],
  dataScope: null,
  userId: null,
  wireVersionPin: null,
};

beforeAll(async () => {
  sql = await openPglite(tmp.dir + '/pg');
  const embedder = new BuiltinEmbedder();
  engines = {
    text: new PgTextIndex(sql),
    vectors: new LanceVectorIndex(tmp.dir + '/lancedb', embedder.model, embedder.dims),
    embedder,
    catalogue: new SearchCatalogue(sql),
    embedQuery: (q) => embedQuery(embedder, q),
  };
  await engines.text.init();
  await engines.vectors.init();
  await engines.catalogue.init();
  const ps = passages();
  const vectors = await embedder.embed(ps.map((p) => p.text));
  for (const [i, p] of ps.entries()) {
    const base = {
      itemId: p.id,
      tenantId: T,
      contextId: C,
      sourceType: 'record' as const,
      typeName: 'place',
      folderId: null,
      userId: null,
      scopes: [],
      attrs: {},
      createdAt: '2026-01-01T00:00:00.000Z',
      metadata: {},
    };
    const passage = { chunkNo: 0, chunkText: p.text, contextText: p.text };
    await engines.text.replaceItem({ ...base, passages: [passage] });
    await engines.vectors.replaceItem(p.id, [
      {
        itemId: p.id,
        chunkNo: 0,
        tenantId: T,
        contextId: C,
        vector: vectors[i],
        chunkText: p.text,
        contextText: p.text,
      },
    ]);
    await engines.catalogue.put({
      ...base,
      accountId: null,
      schemaId: null,
      externalId: null,
      indexMode: 'HYBRID',
      revision: 0,
      vectors: 1,
    });
  }
}, 120_000);

afterAll(async () => {
  await engines?.vectors.close();
  // The model pool is the test process's: left open, later files in this process would find it loaded.
  await engines?.embedder.close?.();
  await sql?.close();
  tmp.remove();
});

/**
 * Floors about 0.01 under the figures measured when they were set, per built-in model: bge-small-en-v1.5 (the
 * only one; TEXT 0.696, SEMANTIC 0.791, HYBRID 0.809 with α 0.4).
 */
const FLOORS_BY_MODEL: Record<string, { TEXT: number; SEMANTIC: number; HYBRID: number }> = {
  'bge-small-en-v1.5-q': { TEXT: 0.686, SEMANTIC: 0.781, HYBRID: 0.799 },
};

describe('relevance (nDCG@10 on the project relevance set)', () => {
  it('reports each mode; HYBRID beats TEXT and SEMANTIC; each clears its floor', async () => {
    const ps = passages();
    expect(ps.length).toBeGreaterThanOrEqual(200);
    expect(QUERIES.length).toBeGreaterThanOrEqual(40);
    const scores: Record<string, Record<string, number[]>> = {};
    for (const mode of ['TEXT', 'SEMANTIC', 'HYBRID'] as const) {
      scores[mode] = { all: [], keyword: [], meaning: [] };
      for (const q of QUERIES) {
        const r = await runSearch(sql, engines, principal, searchBody.parse({ query: q.q, mode, limit: 10 }));
        const n = ndcgAt10(
          r.results.map((x) => x.documentId),
          q.rel,
        );
        scores[mode].all.push(n);
        scores[mode][q.style].push(n);
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const table = Object.fromEntries(
      Object.entries(scores).map(([m, s]) => [
        m,
        { all: +mean(s.all).toFixed(3), keyword: +mean(s.keyword).toFixed(3), meaning: +mean(s.meaning).toFixed(3) },
      ]),
    );
    console.log(`nDCG@10 over ${QUERIES.length} queries / ${ps.length} passages:`, JSON.stringify(table));
    expect(table.HYBRID.all).toBeGreaterThan(table.TEXT.all);
    expect(table.HYBRID.all).toBeGreaterThan(table.SEMANTIC.all);
    // A change that lowers quality fails the build. Raise the floors when quality rises.
    const FLOORS = FLOORS_BY_MODEL[engines.embedder.model];
    console.log(`model ${engines.embedder.model}`);
    expect(table.TEXT.all).toBeGreaterThanOrEqual(FLOORS.TEXT);
    expect(table.SEMANTIC.all).toBeGreaterThanOrEqual(FLOORS.SEMANTIC);
    expect(table.HYBRID.all).toBeGreaterThanOrEqual(FLOORS.HYBRID);
  }, 120_000);
});
