import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from '@svc/deploy';
import { chunkText, type IndexedItem, type Sql, type TextSearch } from '@svc/domain';
import { MemoryTextIndex, PgTextIndex } from '@svc/search';
import { QUERIES } from '../relevance/corpus';
import { tempDir } from '../support/engines';
import { PARITY_FILTERS, PARITY_MODES, parityItem, parityPassages } from './text-index.parity-fixtures';

/**
 * The in-memory index answers exactly as the SQL path over the same store:
 * same passages, same order, same BM25 scores, same totals, for every text mode,
 * with filters, after writes that arrive once the context is loaded
 * (re-index, metadata change, delete), and with the snippets SQL highlights.
 */
const T = 'tenant-parity';
const C = 'ctx-parity';
const tmp = tempDir();
let sql: Sql;
let pg: PgTextIndex;
let mem: MemoryTextIndex;
const ps = parityPassages;
const item = (i: number, over: Partial<IndexedItem> = {}) => parityItem(T, C, i, over);
const filters = PARITY_FILTERS;
const modes = PARITY_MODES;

/** Passage keys grouped by score (equal within 1e-9), sorted within a group; a group cut by the limit is left out. */
function tieGroups(hits: Array<{ itemId: string; chunkNo: number; score: number }>, limit: number): string[][] {
  const groups: Array<{ score: number; keys: string[] }> = [];
  for (const h of hits) {
    const g = groups.at(-1);
    if (g && Math.abs(g.score - h.score) <= 1e-9 * Math.max(1, h.score)) g.keys.push(`${h.itemId}#${h.chunkNo}`);
    else groups.push({ score: h.score, keys: [`${h.itemId}#${h.chunkNo}`] });
  }
  if (hits.length === limit) groups.pop();
  return groups.map((g) => g.keys.sort());
}

async function compare(label: string, index: MemoryTextIndex = mem) {
  let compared = 0;
  for (const { q: query } of QUERIES)
    for (const m of modes)
      for (const f of filters) {
        const s: TextSearch = {
          filter: { tenantId: T, contextId: C, clauses: [], ...f },
          query: m.q ? m.q(query) : query,
          textMode: m.textMode,
          slop: m.slop,
          limit: 25,
        };
        const [a, b] = [await pg.search(s), await index.search(s)];
        const at = `${label}: ${m.textMode}/${m.slop} ${JSON.stringify(s.query)} ${JSON.stringify(f)}`;
        expect(b.total, at).toBe(a.total);
        expect(b.hits.length, at).toBe(a.hits.length);
        b.hits.forEach((h, i) => expect(h.score, at).toBeCloseTo(a.hits[i].score, 9));
        // Equal scores may differ in the last bits (summation order), so order is compared between tie groups.
        expect(tieGroups(b.hits, s.limit), at).toEqual(tieGroups(a.hits, s.limit));
        compared += a.hits.length;
        // Without an exact count (as the search route asks) OR skips passages that cannot rank: the same
        // hits and scores, to the bit, and a total between the hits returned and every match.
        for (const limit of [s.limit, 3]) {
          const exact = limit === s.limit ? b : await index.search({ ...s, limit });
          const pruned = await index.search({ ...s, limit, trackTotal: false });
          expect(pruned.hits, `${at} trackTotal false, limit ${limit}`).toEqual(exact.hits);
          expect(pruned.total, at).toBeGreaterThanOrEqual(pruned.hits.length);
          expect(pruned.total, at).toBeLessThanOrEqual(exact.total);
          // Counted up to a cap (a TEXT page of the route): the same hits, and the count exact up to the cap.
          for (const cap of [limit + 2, 40]) {
            const counted = await index.search({ ...s, limit, trackTotal: false, countUpTo: cap });
            expect(counted.hits, `${at} countUpTo ${cap}, limit ${limit}`).toEqual(exact.hits);
            expect(counted.total, `${at} countUpTo ${cap}, limit ${limit}`).toBe(Math.min(exact.total, cap));
          }
        }
      }
  return compared;
}

beforeAll(async () => {
  sql = await openPglite(tmp.dir);
  pg = new PgTextIndex(sql);
  mem = new MemoryTextIndex(pg);
  await mem.init();
  // Half before the context is first searched (loaded from SQL), half after (applied in memory).
  for (let i = 0; i < ps.length / 2; i++) await mem.replaceItem(item(i));
  await mem.search({
    filter: { tenantId: T, contextId: C, clauses: [] },
    query: 'warm',
    textMode: 'OR',
    slop: 0,
    limit: 1,
  });
  for (let i = Math.floor(ps.length / 2); i < ps.length; i++) await mem.replaceItem(item(i));
}, 120_000);

afterAll(async () => {
  await sql?.close();
  tmp.remove();
});

describe('in-memory text index parity with the SQL path', () => {
  it('same hits, order, scores and totals for every mode and filter', async () => {
    expect(await compare('loaded + appended')).toBeGreaterThan(1000);
  }, 120_000);

  it(
    'a query of the longest size the API takes (4,000 characters, hundreds of words): the same hits pruned ' +
      'and exhaustive, and as SQL',
    async () => {
      const words = [...new Set(ps.flatMap((x) => x.text.split(/\W+/)).filter((w) => w.length > 2))];
      let query = '';
      for (const w of words) if (query.length + w.length + 1 <= 4000) query += (query ? ' ' : '') + w;
      expect(query.split(' ').length).toBeGreaterThan(200);
      for (const f of filters) {
        const s: TextSearch = {
          filter: { tenantId: T, contextId: C, clauses: [], ...f },
          query,
          textMode: 'OR',
          slop: 0,
          limit: 25,
        };
        const [sqlHits, exact, prunedHits] = [
          await pg.search(s),
          await mem.search(s),
          await mem.search({ ...s, trackTotal: false }),
        ];
        expect(prunedHits.hits, JSON.stringify(f)).toEqual(exact.hits);
        expect(exact.total).toBe(sqlHits.total);
        expect(tieGroups(exact.hits, s.limit)).toEqual(tieGroups(sqlHits.hits, s.limit));
      }
    },
    120_000,
  );

  it('stays exact after re-indexing, metadata changes and deletes made while loaded', async () => {
    for (let i = 0; i < ps.length; i += 5)
      await mem.replaceItem(item(i, { passages: chunkText(ps[(i + 3) % ps.length].text) }));
    for (let i = 1; i < ps.length; i += 7)
      await mem.updateItemMeta({ ...item(i, { folderId: 'f9', attrs: { rank: 1000 } }) });
    for (let i = 2; i < ps.length; i += 11) await mem.deleteItem(ps[i].id);
    for (let i = 3; i < ps.length; i += 13) await mem.replaceItem(item(i, { passages: [] }));
    expect(await compare('after writes')).toBeGreaterThan(1000);
  }, 120_000);

  it('a context read from SQL in small pages (items split across pages) loads the same index', async () => {
    const paged = new MemoryTextIndex(pg, { loadPageRows: 3 });
    expect(await compare('loaded in pages of 3 rows', paged)).toBeGreaterThan(1000);
  }, 120_000);

  it('marks the same words in every snippet as the SQL path (plain texts from positions, others by word)', async () => {
    let plain = 0;
    let other = 0;
    for (const { q: query } of QUERIES)
      for (const m of [PARITY_MODES[0], PARITY_MODES[4]]) {
        const s: TextSearch = {
          filter: { tenantId: T, contextId: C, clauses: [] },
          query: m.q ? m.q(query) : query,
          textMode: m.textMode,
          slop: 0,
          limit: 25,
        };
        const [a, b] = [await pg.search(s), await mem.search(s)];
        const bySql = new Map(a.hits.map((h) => [`${h.itemId}#${h.chunkNo}`, h]));
        await Promise.all([pg.hydrate(a.hits, s), mem.hydrate(b.hits, s)]);
        for (const h of b.hits) {
          const sqlHit = bySql.get(`${h.itemId}#${h.chunkNo}`);
          if (!sqlHit) continue; // (a tie cut differently by the limit)
          expect(h.snippet, `${s.query}: ${h.chunkText}`).toBe(sqlHit.snippet);
          if (/^[A-Za-z0-9 .,;:!?()"]*$/.test(h.chunkText!) && !/[A-Za-z0-9][.,:][A-Za-z0-9]/.test(h.chunkText!))
            plain++;
          else other++;
        }
      }
    expect(plain, 'plain passages compared').toBeGreaterThan(50);
    expect(other, 'other passages compared').toBeGreaterThan(50);
  }, 120_000);

  it(
    'gives back every stored text exactly, whatever its characters (accents, CJK, emoji, "…"), loaded or ' + 'appended',
    async () => {
      // The in-memory index keeps passage texts as UTF-8 outside the JavaScript heap and decodes the page's.
      const C2 = 'ctx-unicode';
      const text = (n: number) =>
        Array.from(
          { length: 12 },
          (_, i) =>
            `Sentence ${n}.${i}: the façade of Zürich’s café — naïve “quotes”, 東京タワー and 🎉🚀 emoji (ß, Ω, é).`,
        ).join(' ');
      const make = (n: number, over: Partial<IndexedItem> = {}) =>
        parityItem(T, C2, n, { itemId: `uni-${n}`, passages: chunkText(text(n), { maxChars: 300 }), ...over });
      await mem.replaceItem(make(0));
      // A passage whose context is not the one chunking makes (kept as stored).
      await mem.replaceItem(
        make(1, {
          passages: [
            { chunkNo: 0, chunkText: 'façade 東京 🎉 only', contextText: '…before — façade 東京 🎉 only — after…' },
          ],
        }),
      );
      const s: TextSearch = {
        filter: { tenantId: T, contextId: C2, clauses: [] },
        query: 'façade',
        textMode: 'OR',
        slop: 0,
        limit: 100,
      };
      await mem.search(s); // loads the context from SQL
      await mem.replaceItem(make(2)); // applied in memory
      const hits = (await mem.search(s)).hits;
      await mem.hydrate(hits, s);
      const { rows } = await sql.query<{ item_id: string; chunk_no: number; chunk_text: string; context_text: string }>(
        'SELECT item_id, chunk_no, chunk_text, context_text FROM ti_passages WHERE tenant_id = $1 AND context_id = $2',
        [T, C2],
      );
      expect(rows.length).toBeGreaterThan(5);
      expect(hits.length).toBe(rows.length);
      const stored = new Map(rows.map((r) => [`${r.item_id}#${r.chunk_no}`, [r.chunk_text, r.context_text]]));
      for (const h of hits)
        expect([h.chunkText, h.contextText], `${h.itemId}#${h.chunkNo}`).toEqual(
          stored.get(`${h.itemId}#${h.chunkNo}`),
        );
      expect(hits.find((h) => h.itemId === 'uni-1')?.contextText).toBe('…before — façade 東京 🎉 only — after…');
    },
  );

  it('hydrates the page: the stored text, and a snippet marking the query words', async () => {
    const s: TextSearch = {
      filter: { tenantId: T, contextId: C, clauses: [] },
      query: QUERIES[0].q,
      textMode: 'OR',
      slop: 0,
      limit: 10,
    };
    const [a, b] = [await pg.search(s), await mem.search(s)];
    expect(b.hits[0].chunkText).toBeUndefined();
    await Promise.all([pg.hydrate(a.hits, s), mem.hydrate(b.hits, s)]);
    expect(b.hits.map((h) => [h.chunkText, h.contextText, h.snippet])).toEqual(
      a.hits.map((h) => [h.chunkText, h.contextText, h.snippet]),
    );
    const { rows } = await sql.query<{ chunk_text: string; context_text: string }>(
      'SELECT chunk_text, context_text FROM ti_passages WHERE item_id = $1 AND chunk_no = $2',
      [b.hits[0].itemId, b.hits[0].chunkNo],
    );
    expect([b.hits[0].chunkText, b.hits[0].contextText]).toEqual([rows[0].chunk_text, rows[0].context_text]);
    const marked = b.hits.flatMap((h) =>
      [...(h.snippet ?? '').matchAll(/<mark>([^<]+)<\/mark>/g)].map((m) => m[1].toLowerCase()),
    );
    expect(marked.length).toBeGreaterThan(0);
    // every marked word is a query word up to stemming (it shares its first four letters with one)
    const qwords = QUERIES[0].q
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter(Boolean);
    for (const m of marked)
      expect(
        qwords.some((w) => w.slice(0, 4) === m.slice(0, 4)),
        `${m} in ${QUERIES[0].q}`,
      ).toBe(true);
  });
});
