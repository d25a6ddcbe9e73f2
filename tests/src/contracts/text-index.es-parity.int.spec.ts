import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from '@svc/deploy';
import type { Sql, TextHit, TextSearch } from '@svc/domain';
import { loadElasticsearch, PgTextIndex } from '@svc/search';
import { ndcgAt10, QUERIES } from '../relevance/corpus';
import { serverUrl, tempDir } from '../support/engines';
import { PARITY_FILTERS, PARITY_MODES, parityItem, parityPassages } from './text-index.parity-fixtures';

const { ElasticsearchTextIndex } = await loadElasticsearch();
type ElasticsearchTextIndex = InstanceType<typeof ElasticsearchTextIndex>;
const url = serverUrl('elasticsearch');
const T = 'tenant-es-parity';
const C = 'ctx-es-parity';
const C_REL = 'ctx-es-relevance';
const key = (h: Pick<TextHit, 'itemId' | 'chunkNo'>) => `${h.itemId}#${h.chunkNo}`;

const ps = parityPassages;
const item = (i: number) => parityItem(T, C, i);
const filters = PARITY_FILTERS;
const modes = PARITY_MODES;

/**
 * Elasticsearch answers like the embedded PostgreSQL full-text search over the
 * same passages (the project's relevance corpus, two passages per item): the
 * same matching passages and totals for every text mode (OR, AND, PHRASE with
 * and without slop, COMPLEX with phrases, groups and exclusions, exclusion
 * alone), under every kind of filter; nearly the same ranking (both BM25, with
 * Lucene's lossy length norms); <mark>s on the same words; and the same
 * keyword relevance on the judged set. Analysis is the reason this holds: both
 * use PostgreSQL's English stop words and the Snowball English stemmer.
 */
if (!url) describe.skip('text index parity Elasticsearch / PostgreSQL (ELASTICSEARCH_URL not set)', () => {});
else
  describe('text index parity: Elasticsearch answers like PostgreSQL full-text search', () => {
    const tmp = tempDir();
    let sql: Sql;
    let pg: PgTextIndex;
    let es: ElasticsearchTextIndex;
    const index = `test-parity-${randomUUID()}`;
    beforeAll(async () => {
      sql = await openPglite(tmp.dir);
      pg = new PgTextIndex(sql);
      es = new ElasticsearchTextIndex({ url, index });
      await pg.init();
      await es.init();
      for (let i = 0; i < ps.length; i++) {
        await pg.replaceItem(item(i));
        await es.replaceItem(item(i));
        // the relevance set as the relevance test indexes it: one passage per item, in a context of its own
        const one = {
          ...item(i),
          itemId: `rel:${ps[i].id}`,
          contextId: C_REL,
          attrs: {},
          passages: [{ chunkNo: 0, chunkText: ps[i].text, contextText: ps[i].text }],
        };
        await pg.replaceItem(one);
        await es.replaceItem(one);
      }
    }, 300_000);
    afterAll(async () => {
      await es?.close();
      await fetch(`${url.replace(/\/$/, '')}/${index}`, { method: 'DELETE' }).catch(() => {});
      await sql?.close();
      tmp.remove();
    });

    it('matches the same passages for each text mode, filter and query (totals too), ranks them alike', async () => {
      let compared = 0,
        nonEmpty = 0,
        topAgree = 0,
        ranked = 0;
      const overlap: number[] = [];
      const mismatches: string[] = [];
      for (const m of modes)
        for (const f of filters)
          for (const q of QUERIES) {
            const s: TextSearch = {
              filter: { tenantId: T, contextId: C, clauses: [], ...f },
              query: m.q ? m.q(q.q) : q.q,
              textMode: m.textMode,
              slop: m.slop,
              limit: 1000,
            };
            const [a, b] = [await pg.search(s), await es.search(s)];
            const ka = a.hits.map(key).sort(),
              kb = b.hits.map(key).sort();
            compared++;
            if (a.total) nonEmpty++;
            if (a.total !== b.total || JSON.stringify(ka) !== JSON.stringify(kb))
              mismatches.push(`${m.textMode}/${m.slop} ${JSON.stringify(f)} ${s.query}: pg ${a.total} es ${b.total}`);
            if (!a.hits.length || m.textMode === 'COMPLEX') continue;
            ranked++;
            // the top passage of PostgreSQL (or one tied with it) is Elasticsearch's top passage
            const tied = new Set(
              a.hits.filter((h) => Math.abs(h.score - a.hits[0].score) <= 1e-9 * a.hits[0].score).map(key),
            );
            if (tied.has(key(b.hits[0]))) topAgree++;
            const top = new Set(a.hits.slice(0, 10).map(key));
            overlap.push(b.hits.slice(0, 10).filter((h) => top.has(key(h))).length / Math.min(10, a.hits.length));
          }
      const meanOverlap = overlap.reduce((x, y) => x + y, 0) / overlap.length;
      console.log(
        `Elasticsearch vs PostgreSQL FTS: ${compared - mismatches.length}/${compared} searches ` +
          `(${nonEmpty} non-empty) match the same passages; top hit agrees in ${topAgree}/${ranked}; top-10 ` +
          `overlap ${meanOverlap.toFixed(3)}`,
      );
      expect(mismatches).toEqual([]);
      expect(nonEmpty).toBeGreaterThan(compared / 3);
      expect(topAgree / ranked).toBeGreaterThan(0.95);
      expect(meanOverlap).toBeGreaterThan(0.95);
    }, 300_000);

    it('highlights the matched terms like PostgreSQL (a <mark> wherever PostgreSQL has one)', async () => {
      let checked = 0;
      for (const q of QUERIES.slice(0, 24)) {
        const s: TextSearch = {
          filter: { tenantId: T, contextId: C, clauses: [] },
          query: q.q,
          textMode: 'OR',
          slop: 0,
          limit: 5,
        };
        const [a, b] = [await pg.search(s), await es.search(s)];
        await pg.hydrate?.(a.hits, s);
        await es.hydrate(b.hits, s);
        const byKey = new Map(a.hits.map((h) => [key(h), h]));
        for (const h of b.hits) {
          const p = byKey.get(key(h));
          if (!p) continue;
          checked++;
          expect(h.chunkText).toBe(p.chunkText);
          expect(h.contextText).toBe(p.contextText);
          expect(/<mark>/.test(h.snippet ?? ''), `${q.q}: ${h.snippet} vs ${p.snippet}`).toBe(
            /<mark>/.test(p.snippet ?? ''),
          );
          const marked = (x: string | null | undefined) =>
            new Set([...(x ?? '').matchAll(/<mark>(.*?)<\/mark>/g)].map((m) => m[1].toLowerCase()));
          for (const w of marked(h.snippet)) expect(h.chunkText!.toLowerCase()).toContain(w);
          expect(
            marked(p.snippet).size === 0 || [...marked(h.snippet)].some((w) => marked(p.snippet).has(w)),
            `${q.q}: ${h.snippet} vs ${p.snippet}`,
          ).toBe(true);
        }
      }
      expect(checked).toBeGreaterThan(50);
    }, 120_000);

    it('keyword relevance (nDCG@10, TEXT, the project relevance set) is on par with PostgreSQL', async () => {
      const ndcg = async (ix: PgTextIndex | ElasticsearchTextIndex) => {
        const out: number[] = [];
        for (const q of QUERIES) {
          const r = await ix.search({
            filter: { tenantId: T, contextId: C_REL, clauses: [] },
            query: q.q,
            textMode: 'OR',
            slop: 0,
            limit: 10,
          });
          out.push(
            ndcgAt10(
              r.hits.map((h) => h.itemId.slice('rel:'.length)),
              q.rel,
            ),
          );
        }
        return out.reduce((x, y) => x + y, 0) / out.length;
      };
      const [a, b] = [await ndcg(pg), await ndcg(es)];
      console.log(
        `nDCG@10 TEXT over ${QUERIES.length} queries: PostgreSQL ${a.toFixed(3)}, Elasticsearch ${b.toFixed(3)}`,
      );
      expect(b).toBeGreaterThan(0.6);
      expect(Math.abs(a - b)).toBeLessThan(0.03);
    }, 120_000);
  });
