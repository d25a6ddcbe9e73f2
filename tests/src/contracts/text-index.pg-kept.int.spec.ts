import { afterAll, describe, expect, it } from 'vitest';
import { openPglite } from '@svc/deploy';
import { chunkText, type Sql, TextIndexError, type TextSearch } from '@svc/domain';
import { PgTextIndex } from '@svc/search';
import { QUERIES } from '../relevance/corpus';
import { tempDir } from '../support/engines';
import { PARITY_FILTERS, PARITY_MODES, parityItem, parityPassages } from './text-index.parity-fixtures';

/**
 * A keyword index kept for the in-memory index only (`sqlSearch: false`, the embedded default) stores the
 * passages without the SQL search's term statistics and tsvector index. Opened with SQL search again (a tool,
 * or a move of the data), it counts the statistics again: it then ranks exactly as an index that kept them all
 * along, after writes, re-writes and deletes made while they were not kept.
 */
const T = 'tenant-kept';
const C = 'ctx-kept';
const ps = parityPassages;
const item = (i: number, ctx = C) => parityItem(T, ctx, i);
const dirs = [tempDir(), tempDir()];
const open: Sql[] = [];

afterAll(async () => {
  for (const s of open) await s.close();
  for (const d of dirs) d.remove();
});

describe('a PostgreSQL keyword index kept for the in-memory index (sqlSearch: false)', () => {
  it('refuses SQL search, and ranks as an index that kept its statistics once reopened with SQL search', async () => {
    const db = await openPglite(dirs[0].dir);
    const ref = await openPglite(dirs[1].dir);
    open.push(db, ref);
    const always = new PgTextIndex(ref);
    await always.init();
    // Both see the same writes; `db` keeps its statistics for the first half only.
    const both = async (f: (x: PgTextIndex) => Promise<void>, x: PgTextIndex) => {
      await f(x);
      await f(always);
    };
    let kept = new PgTextIndex(db);
    await kept.init();
    const half = Math.floor(ps.length / 2);
    for (let i = 0; i < half; i++) await both((x) => x.replaceItem(item(i)), kept);
    await both((x) => x.replaceItems([item(0, 'ctx-other'), item(1, 'ctx-other')]), kept);

    const lean = new PgTextIndex(db, { sqlSearch: false });
    await lean.init();
    const s: TextSearch = {
      filter: { tenantId: T, contextId: C, clauses: [] },
      query: QUERIES[0].q,
      textMode: 'OR',
      slop: 0,
      limit: 10,
    };
    await expect(lean.search(s)).rejects.toBeInstanceOf(TextIndexError);
    for (let i = half; i < ps.length; i++) await both((x) => x.replaceItem(item(i)), lean);
    // Re-indexed with other text, removed, emptied, and a context dropped, all while no statistics are kept.
    for (let i = 0; i < ps.length; i += 5)
      await both((x) => x.replaceItem({ ...item(i), passages: chunkText(ps[(i + 3) % ps.length].text) }), lean);
    for (let i = 2; i < ps.length; i += 11) await both((x) => x.deleteItem(ps[i].id), lean);
    for (let i = 3; i < ps.length; i += 13) await both((x) => x.replaceItem({ ...item(i), passages: [] }), lean);
    await both((x) => x.deleteContext(T, 'ctx-other'), lean);

    kept = new PgTextIndex(db);
    await kept.init();
    let compared = 0;
    for (const { q: query } of QUERIES)
      for (const m of PARITY_MODES)
        for (const f of PARITY_FILTERS) {
          const q: TextSearch = {
            filter: { tenantId: T, contextId: C, clauses: [], ...f },
            query: m.q ? m.q(query) : query,
            textMode: m.textMode,
            slop: m.slop,
            limit: 25,
          };
          const [a, b] = [await always.search(q), await kept.search(q)];
          const at = `${m.textMode}/${m.slop} ${JSON.stringify(q.query)} ${JSON.stringify(f)}`;
          expect(b.total, at).toBe(a.total);
          expect(
            b.hits.map((h) => [h.itemId, h.chunkNo]),
            at,
          ).toEqual(a.hits.map((h) => [h.itemId, h.chunkNo]));
          b.hits.forEach((h, i) => expect(h.score, at).toBeCloseTo(a.hits[i].score, 9));
          compared += a.hits.length;
        }
    expect(compared).toBeGreaterThan(1000);
    const other = await kept.search({ ...s, filter: { tenantId: T, contextId: 'ctx-other', clauses: [] } });
    expect(other.hits).toEqual([]);
  }, 180_000);
});
