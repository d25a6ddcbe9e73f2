import {
  type IndexedItem,
  parseComplexQuery,
  positiveText,
  type QueryNode,
  type Sql,
  sqlBatch,
  type SqlQueryable,
  type SqlStatement,
  type TextHit,
  type TextIndex,
  TextIndexError,
  type TextSearch,
} from '@svc/domain';
import { filterSql } from './filter-sql';
import { markedSnippet, snippet, wordBounds } from './snippet';

type Analysed = Array<{ lexeme: string; pos: number }>;

/**
 * Keyword search on PostgreSQL full-text search (the same SQL on PGlite and a
 * server). Passages are stored with an `english` tsvector; ranking is Okapi
 * BM25 computed in SQL from term statistics kept per tenant and context
 * (ti_terms: passages containing each lexeme; ti_stats: passage count and total
 * length), k1 = 1.2, b = 0.75, idf = ln(1 + (N − df + 0.5) / (df + 0.5)).
 * Term frequency is the lexeme's position count in the passage's tsvector.
 */
export const BM25 = { k1: 1.2, b: 0.75 } as const;
const CONFIG = 'english';
/** Cap on the alternatives a PHRASE query with slop expands to; the slop is reduced until it fits. */
const MAX_PHRASE_ALTERNATIVES = 256;
/** Words whose lexemes are remembered for snippets (cleared when full). */
const MAX_CACHED_WORDS = 500_000;
const MAX_CACHED_ANALYSES = 10_000;
const ASCII_ONLY = /^[\x00-\x7f]*$/;

const PASSAGES_DDL =
  `
CREATE TABLE IF NOT EXISTS ti_passages (
  item_id text NOT NULL, chunk_no int NOT NULL, tenant_id text ` +
  `NOT NULL, context_id text NOT NULL, source_type text NOT NULL,
  type_name text, folder_id text, user_id ` +
  `text, scopes jsonb NOT NULL, attrs jsonb NOT NULL, created_at timestamptz NOT NULL,
  chunk_text text NOT ` +
  `NULL, context_text text NOT NULL, tsv tsvector NOT NULL, len int NOT NULL,
  PRIMARY KEY (item_id, ` +
  `chunk_no));
-- A context's passages in key order: the paged load of the in-memory index walks this (an ` +
  `index on the context alone
-- made every page sort the whole context: 45 s instead of 3 s to load 100,000 ` +
  `passages).
CREATE INDEX IF NOT EXISTS ti_passages_ctx_item ON ti_passages (tenant_id, context_id, ` +
  `item_id, chunk_no);
DROP INDEX IF EXISTS ti_passages_ctx;`;

/** What searching in SQL needs besides the passages: the tsvector index and the term statistics. */
const SEARCH_DDL =
  `
CREATE INDEX IF NOT EXISTS ti_passages_tsv ON ti_passages USING gin (tsv);
CREATE TABLE IF NOT EXISTS ` +
  `ti_terms (tenant_id text NOT NULL, context_id text NOT NULL, lexeme text NOT NULL, df int NOT NULL,
  ` +
  `PRIMARY KEY (tenant_id, context_id, lexeme));
CREATE TABLE IF NOT EXISTS ti_stats (tenant_id text NOT ` +
  `NULL, context_id text NOT NULL, n bigint NOT NULL, total_len bigint NOT NULL,
  PRIMARY KEY (tenant_id, ` +
  `context_id));`;

/** The term statistics counted again from the stored passages (after the index was kept without them). */
const RECOUNT =
  `
INSERT INTO ti_terms (tenant_id, context_id, lexeme, df)
  SELECT p.tenant_id, p.context_id, u.lexeme, ` +
  `count(*) FROM ti_passages p, unnest(p.tsv) u GROUP BY 1, 2, 3;
INSERT INTO ti_stats (tenant_id, ` +
  `context_id, n, total_len) SELECT tenant_id, context_id, count(*), sum(len) FROM ti_passages GROUP BY 1, 2;`;

/** Removes passages (by a condition) and takes them out of the term statistics, in one statement. */
const removeSql = (where: string) =>
  `
WITH old AS (DELETE FROM ti_passages p WHERE ${where} RETURNING tenant_id, context_id, tsv, len),
lex ` +
  `AS (SELECT o.tenant_id, o.context_id, u.lexeme, count(*) AS c FROM old o, unnest(o.tsv) u GROUP BY 1, 2, ` +
  `3),
t AS (UPDATE ti_terms t SET df = t.df - lex.c FROM lex WHERE t.tenant_id = lex.tenant_id AND ` +
  `t.context_id = lex.context_id AND t.lexeme = lex.lexeme RETURNING 1),
st AS (SELECT tenant_id, ` +
  `context_id, count(*) AS n, sum(len) AS l FROM old GROUP BY 1, 2)
UPDATE ti_stats s SET n = s.n - st.n, ` +
  `total_len = s.total_len - st.l FROM st WHERE s.tenant_id = st.tenant_id AND s.context_id = st.context_id`;

/**
 * Passages inserted, one row per passage of the arrays (the tsvector and its length computed here). OFFSET 0 keeps
 * the planner from pulling the lateral subquery up, which put to_tsvector in both the tsv and the len expressions:
 * the text was analysed twice (0.29 vs 0.19 ms a 640-character passage on PGlite).
 */
export const INSERT_PASSAGES_ONLY =
  `INSERT INTO ti_passages (item_id, chunk_no, tenant_id, context_id, source_type, type_name, folder_id, ` +
  `user_id, scopes, attrs, created_at,
     chunk_text, context_text, tsv, len)
   SELECT r.item_id, ` +
  `r.chunk_no, r.tenant_id, r.context_id, r.source_type, r.type_name, r.folder_id, r.user_id, r.scopes, ` +
  `r.attrs, r.created_at,
     r.chunk_text, r.context_text, v.tsv, (SELECT ` +
  `coalesce(sum(array_length(u.positions, 1)), 0) FROM unnest(v.tsv) u)
   FROM unnest($1::text[], ` +
  `$2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::jsonb[], ` +
  `$10::jsonb[],
     $11::timestamptz[], $12::text[], $13::text[])
     AS r(item_id, chunk_no, tenant_id, ` +
  `context_id, source_type, type_name, folder_id, user_id, scopes, attrs, created_at, chunk_text, ` +
  `context_text)
   CROSS JOIN LATERAL (SELECT to_tsvector('${CONFIG}', r.chunk_text) AS tsv OFFSET 0) v`;

/** Passages inserted and added to the term statistics, in one statement. */
const INSERT_PASSAGES =
  `WITH ins AS (${INSERT_PASSAGES_ONLY}
   RETURNING tenant_id, context_id, tsv, len),
 lex AS (SELECT ` +
  `i.tenant_id, i.context_id, u.lexeme, count(*) AS c FROM ins i, unnest(i.tsv) u GROUP BY 1, 2, 3),
 t AS ` +
  `(INSERT INTO ti_terms (tenant_id, context_id, lexeme, df) SELECT * FROM lex
       ON CONFLICT ` +
  `(tenant_id, context_id, lexeme) DO UPDATE SET df = ti_terms.df + excluded.df RETURNING 1)
 INSERT INTO ` +
  `ti_stats (tenant_id, context_id, n, total_len) SELECT tenant_id, context_id, count(*), sum(len) FROM ins ` +
  `GROUP BY 1, 2
 ON CONFLICT (tenant_id, context_id) DO UPDATE SET n = ti_stats.n + excluded.n, total_len = ` +
  `ti_stats.total_len + excluded.total_len`;

/** A stored passage as the in-memory index loads it (tsv: the tsvector's text form). */
export interface PassageRow {
  item_id: string;
  chunk_no: number;
  tenant_id: string;
  context_id: string;
  source_type: 'record' | 'document';
  type_name: string | null;
  folder_id: string | null;
  user_id: string | null;
  scopes: string[];
  attrs: Record<string, unknown>;
  created_at: Date | string;
  len: number;
  tsv: string;
  chunk_text: string;
  context_text: string;
}

/** A lexeme as a tsquery literal. */
const lit = (lexeme: string) => `'${lexeme.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

export class PgTextIndex implements TextIndex {
  readonly engine = 'postgres' as const;
  private readonly sqlSearch: boolean;

  /**
   * `sqlSearch: false` keeps only the passages and their tsvectors, for an in-memory index that answers every
   * query (memory-text.ts) in the one process that can open the database (PGlite): no GIN index and no term
   * statistics, which were ~60 % of a searchable write's SQL there, all for a search nothing ran. `search` then
   * refuses. An index opened with SQL search again (a server, a tool) counts the statistics again at `init`.
   */
  constructor(
    private readonly sql: Sql,
    o: { sqlSearch?: boolean } = {},
  ) {
    this.sqlSearch = o.sqlSearch ?? true;
  }

  async init(): Promise<void> {
    // Dropped rather than left behind: statistics not kept up to date would rank wrongly once searched.
    if (!this.sqlSearch)
      return this.sql.exec(
        `${PASSAGES_DDL} DROP INDEX IF EXISTS ti_passages_tsv; DROP TABLE IF EXISTS ti_terms; DROP TABLE ` +
          `IF EXISTS ti_stats;`,
      );
    await this.sql.tx(async (q) => {
      const { rows } = await q.query<{ kept: boolean }>(`SELECT to_regclass('ti_terms') IS NOT NULL AS kept`);
      await q.exec(PASSAGES_DDL + SEARCH_DDL);
      if (!rows[0].kept) await q.exec(RECOUNT);
    });
  }

  replaceItem(item: IndexedItem): Promise<void> {
    return this.replaceItems([item]);
  }

  /**
   * Items replaced in one transaction: one removal and one insert for all their passages, so the two statements'
   * planning and the term-statistics upserts are paid once per batch, not once per item (a searchable create
   * spent 3.6 ms of SQL here item by item).
   */
  async replaceItems(items: IndexedItem[]): Promise<void> {
    const rows = items.flatMap((item) => item.passages.map((p) => ({ item, p })));
    const col = <T>(f: (r: (typeof rows)[number]) => T) => rows.map(f);
    const statements: SqlStatement[] = [
      { text: this.removeSql('p.item_id = ANY($1::text[])'), params: [items.map((i) => i.itemId)] },
    ];
    if (rows.length)
      statements.push({
        text: this.sqlSearch ? INSERT_PASSAGES : INSERT_PASSAGES_ONLY,
        params: [
          col((r) => r.item.itemId),
          col((r) => r.p.chunkNo),
          col((r) => r.item.tenantId),
          col((r) => r.item.contextId),
          col((r) => r.item.sourceType),
          col((r) => r.item.typeName),
          col((r) => r.item.folderId),
          col((r) => r.item.userId),
          col((r) => JSON.stringify(r.item.scopes)),
          col((r) => JSON.stringify(r.item.attrs)),
          col((r) => r.item.createdAt),
          col((r) => r.p.chunkText),
          col((r) => r.p.contextText),
        ],
      });
    try {
      // One transaction, one round trip to a database in another thread.
      await sqlBatch(this.sql, statements);
    } catch (e) {
      throw new TextIndexError(`text index write failed: ${(e as Error).message}`, e);
    }
  }

  async updateItemMeta(item: Omit<IndexedItem, 'passages' | 'metadata'>): Promise<void> {
    try {
      await this.sql.query(
        'UPDATE ti_passages SET type_name = $2, folder_id = $3, user_id = $4, scopes = $5::jsonb, attrs = ' +
          '$6::jsonb, created_at = $7 WHERE item_id = $1',
        [
          item.itemId,
          item.typeName,
          item.folderId,
          item.userId,
          JSON.stringify(item.scopes),
          JSON.stringify(item.attrs),
          item.createdAt,
        ],
      );
    } catch (e) {
      throw new TextIndexError(`text index write failed: ${(e as Error).message}`, e);
    }
  }

  async deleteItem(itemId: string): Promise<void> {
    await this.sql.query(this.removeSql('p.item_id = $1'), [itemId]);
  }

  async deleteContext(tenantId: string, contextId: string): Promise<void> {
    await this.sql.tx(async (q) => {
      await q.query('DELETE FROM ti_passages WHERE tenant_id = $1 AND context_id = $2', [tenantId, contextId]);
      if (!this.sqlSearch) return;
      await q.query('DELETE FROM ti_terms WHERE tenant_id = $1 AND context_id = $2', [tenantId, contextId]);
      await q.query('DELETE FROM ti_stats WHERE tenant_id = $1 AND context_id = $2', [tenantId, contextId]);
    });
  }

  async drop(): Promise<void> {
    await this.sql.exec(
      'DROP TABLE IF EXISTS ti_passages; DROP TABLE IF EXISTS ti_terms; DROP TABLE IF EXISTS ti_stats;',
    );
    await this.init();
  }

  async close(): Promise<void> {}

  private removeSql(where: string): string {
    return this.sqlSearch ? removeSql(where) : `DELETE FROM ti_passages p WHERE ${where}`;
  }

  // --- what the in-memory index (memory-text.ts) loads and asks of PostgreSQL ---

  /** Every passage of one context (or one item) with its item columns, its chunk text and its tsvector as text. */
  /**
   * Stored passages in (item_id, chunk_no) order: one item's, or a context's one page at a time
   * (`after` = the last row of the previous page, `limit` rows), so a large context is read in bounded steps.
   */
  async passageRows(
    where: { tenantId: string; contextId: string } | { itemId: string } | { itemIds: string[] },
    page?: { after: { itemId: string; chunkNo: number } | null; limit: number },
  ): Promise<PassageRow[]> {
    const params: unknown[] =
      'itemId' in where ? [where.itemId] : 'itemIds' in where ? [where.itemIds] : [where.tenantId, where.contextId];
    let cond =
      'itemId' in where
        ? 'item_id = $1'
        : 'itemIds' in where
          ? 'item_id = ANY($1::text[])'
          : 'tenant_id = $1 AND context_id = $2';
    if (page?.after) {
      params.push(page.after.itemId, page.after.chunkNo);
      cond += ` AND (item_id, chunk_no) > ($${params.length - 1}, $${params.length})`;
    }
    const { rows } = await this.sql.query<PassageRow>(
      `SELECT item_id, chunk_no, tenant_id, context_id, source_type, type_name, folder_id, user_id, ` +
        `scopes, attrs, created_at, len, tsv::text AS tsv,
         chunk_text, context_text
       FROM ` +
        `ti_passages WHERE ${cond} ORDER BY item_id, ` +
        `chunk_no${page ? ` LIMIT ${Math.max(1, Math.floor(page.limit))}` : ''}`,
      params,
    );
    return rows;
  }

  private readonly analyses = new Map<string, Analysed>();
  private readonly wordLexemes = new Map<string, string | null>();

  /** The lexemes of each text with their positions, as the index analyses passages (remembered per text). */
  async analyse(texts: string[]): Promise<Analysed[]> {
    const missing = [...new Set(texts.filter((t) => !this.analyses.has(t)))];
    if (missing.length) {
      const got = missing.map(() => [] as Analysed);
      const { rows } = await this.sql.query<{ i: number; lexeme: string; pos: number }>(
        `SELECT t.i, u.lexeme, p AS pos FROM unnest($1::text[]) WITH ORDINALITY t(txt, i), ` +
          `unnest(to_tsvector('${CONFIG}', t.txt)) u, unnest(u.positions) p ORDER BY t.i, p`,
        [missing],
      );
      for (const r of rows) got[Number(r.i) - 1].push({ lexeme: r.lexeme, pos: Number(r.pos) });
      missing.forEach((t, i) => {
        if (this.analyses.size >= MAX_CACHED_ANALYSES) this.analyses.delete(this.analyses.keys().next().value!);
        this.analyses.set(t, got[i]);
      });
    }
    return texts.map((t) => this.analyses.get(t)!);
  }

  /**
   * A snippet maker for these passage texts and this query: words are marked when their lexeme is one of the query's.
   */
  /** The lexemes a snippet marks: those of the query's positive terms (a COMPLEX query's exclusions are not shown). */
  async markedLexemes(q: TextSearch): Promise<string[]> {
    const ast = q.textMode === 'COMPLEX' ? parseComplexQuery(q.query) : null;
    const [lx] = await this.analyse([ast ? positiveText(ast).join(' ') : q.query]);
    return [...new Set(lx.map((l) => l.lexeme))];
  }

  async snippets(texts: string[], q: TextSearch): Promise<(text: string) => string> {
    const wanted = new Set(await this.markedLexemes(q));
    // Whether each word matches, from its lexeme in the same analysis, remembered by the word lowercased;
    // unknown words of all the texts are analysed together. A word of ASCII letters and digits is one token
    // of the parser, and its lexeme begins with its first character lowercased (the english stemmer keeps
    // it), so in ASCII text only words that begin like a wanted lexeme are looked up at all.
    const initial = new Uint8Array(128);
    for (const l of wanted) if (l.charCodeAt(0) < 128) initial[l.charCodeAt(0)] = 1;
    const known = this.wordLexemes;
    const prepared = new Map<string, { bounds: number[]; hit: Uint8Array; unknown?: number[] }>();
    let missing: Set<string> | undefined;
    const matches = (l: string | null) => (l !== null && wanted.has(l) ? 1 : 0);
    for (const t of texts) {
      if (prepared.has(t)) continue;
      const bounds = wordBounds(t);
      const hit = new Uint8Array(bounds.length >> 1);
      const ascii = ASCII_ONLY.test(t);
      let unknown: number[] | undefined;
      for (let i = 0; i < bounds.length; i += 2) {
        if (ascii) {
          const c = t.charCodeAt(bounds[i]);
          if (!initial[c >= 65 && c <= 90 ? c + 32 : c]) continue;
        }
        const w = t.slice(bounds[i], bounds[i + 1]);
        let l = known.get(w);
        if (l === undefined) {
          const lw = w.toLowerCase();
          l = known.get(lw);
          if (l === undefined) {
            (missing ??= new Set()).add(lw);
            (unknown ??= []).push(i >> 1);
            continue;
          }
        }
        hit[i >> 1] = matches(l);
      }
      prepared.set(t, { bounds, hit, unknown });
    }
    if (missing) {
      if (known.size + missing.size > MAX_CACHED_WORDS) known.clear(); // (words resolved above keep their verdict)
      const { rows } = await this.sql.query<{ w: string; lexeme: string | null }>(
        `SELECT w, (SELECT min(u.lexeme) FROM unnest(to_tsvector('${CONFIG}', w)) u) AS lexeme FROM ` +
          `unnest($1::text[]) w`,
        [[...missing]],
      );
      for (const r of rows) known.set(r.w, r.lexeme);
      for (const [t, p] of prepared)
        for (const i of p.unknown ?? [])
          p.hit[i] = matches(known.get(t.slice(p.bounds[2 * i], p.bounds[2 * i + 1]).toLowerCase()) ?? null);
    }
    const isMatch = (w: string) => matches(known.get(w) ?? known.get(w.toLowerCase()) ?? null) === 1;
    return (text) => {
      const p = prepared.get(text);
      return p ? markedSnippet(text, p.bounds, p.hit) : snippet(text, isMatch);
    };
  }

  /**
   * Text and snippet for the hits shown (search returns ranked hits only): one
   * read by primary key, and the snippet marked here (snippet.ts) by comparing
   * each word's lexeme with the query's.
   */
  async hydrate(hits: TextHit[], q: TextSearch): Promise<void> {
    const need = hits.filter((h) => h.chunkText === undefined);
    if (!need.length) return;
    try {
      const { rows } = await this.sql.query<{
        item_id: string;
        chunk_no: number;
        chunk_text: string;
        context_text: string;
      }>(
        `SELECT p.item_id, p.chunk_no, p.chunk_text, p.context_text
         FROM unnest($1::text[], ` +
          `$2::int[]) k(item_id, chunk_no) JOIN ti_passages p ON p.item_id = k.item_id AND p.chunk_no = ` +
          `k.chunk_no`,
        [need.map((h) => h.itemId), need.map((h) => h.chunkNo)],
      );
      const mark = await this.snippets(
        rows.map((r) => r.chunk_text),
        q,
      );
      const byKey = new Map(rows.map((r) => [`${r.item_id}#${r.chunk_no}`, r]));
      for (const h of need) {
        const r = byKey.get(`${h.itemId}#${h.chunkNo}`);
        h.chunkText = r?.chunk_text ?? '';
        h.contextText = r?.context_text ?? '';
        h.snippet = r ? mark(r.chunk_text) : null;
      }
    } catch (e) {
      throw new TextIndexError(`text search failed: ${(e as Error).message}`, e);
    }
  }

  async search(s: TextSearch): Promise<{ hits: TextHit[]; total: number }> {
    if (!this.sqlSearch)
      throw new TextIndexError(
        'text search failed: this keyword index is kept for an in-memory index (sqlSearch: false)',
      );
    try {
      return await this.run(this.sql, s);
    } catch (e) {
      throw new TextIndexError(`text search failed: ${(e as Error).message}`, e);
    }
  }

  private async run(q: SqlQueryable, s: TextSearch): Promise<{ hits: TextHit[]; total: number }> {
    const params: unknown[] = [];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    let match: string;
    let scoring: string[];
    if (s.textMode === 'COMPLEX') {
      const ast = parseComplexQuery(s.query);
      if (!ast) return { hits: [], total: 0 };
      match = complexTsquery(ast, p);
      scoring = (await this.analyse([positiveText(ast).join(' ')]))[0].map((l) => l.lexeme);
    } else {
      const [lx] = await this.analyse([s.query]);
      scoring = lx.map((l) => l.lexeme);
      if (!lx.length) return { hits: [], total: 0 };
      if (s.textMode === 'OR') match = `${p([...new Set(scoring)].map(lit).join(' | '))}::tsquery`;
      else if (s.textMode === 'AND') match = `plainto_tsquery('${CONFIG}', ${p(s.query)})`;
      else match = `${p(phraseTsquery(lx, s.slop))}::tsquery`;
    }
    const lexParam = p([...new Set(scoring)]);
    const where = filterSql(s.filter, 'c', params);
    const limit = p(s.limit);
    const t = p(s.filter.tenantId);
    const ctx = p(s.filter.contextId);
    const { rows } = await q.query<{ item_id: string; chunk_no: number; score: number; total: number }>(
      // idf of the query's terms once (a handful of rows), then term frequencies of the matching passages in one pass.
      `WITH st AS (SELECT n::float8 AS n, greatest(total_len::float8 / nullif(n, 0), 1) AS avgdl FROM ` +
        `ti_stats WHERE tenant_id = ${t} AND context_id = ${ctx}),
       qt AS (SELECT tt.lexeme, ln(1 + ` +
        `(st.n - tt.df + 0.5) / (tt.df + 0.5)) AS idf FROM ti_terms tt, st
              WHERE tt.tenant_id ` +
        `= ${t} AND tt.context_id = ${ctx} AND tt.lexeme = ANY(${lexParam}::text[])),
       -- One ` +
        `aggregation over the matching passages: their query-term frequencies joined to the few query ` +
        `terms.
       -- (A join between CTEs would be planned from row estimates of 1 and recomputed per ` +
        `passage.)
       scored AS (
         SELECT c.item_id, c.chunk_no,
           coalesce(sum(qt.idf ` +
        `* (array_length(u.positions, 1) * ${BM25.k1 + 1}) / (array_length(u.positions, 1) + ${BM25.k1} * (1 ` +
        `- ${BM25.b} + ${BM25.b} * c.len / st.avgdl))), 0) AS score
         FROM ti_passages c CROSS JOIN ` +
        `st
           LEFT JOIN LATERAL unnest(c.tsv) u ON u.lexeme = ANY(${lexParam}::text[])
           ` +
        `LEFT JOIN qt ON qt.lexeme = u.lexeme
         WHERE ${where} AND c.tsv @@ (${match})
         GROUP ` +
        `BY c.item_id, c.chunk_no),
       top AS (SELECT item_id, chunk_no, score, count(*) OVER () AS ` +
        `total FROM scored ORDER BY score DESC, item_id, chunk_no LIMIT ${limit})
       SELECT item_id, ` +
        `chunk_no, score, total FROM top ORDER BY score DESC, item_id, chunk_no`,
      params,
    );
    return {
      total: rows.length ? Math.min(Number(rows[0].total), s.countUpTo ?? Infinity) : 0,
      hits: rows.map((r) => ({
        itemId: r.item_id,
        chunkNo: Number(r.chunk_no),
        score: Number(r.score),
      })),
    };
  }
}

/**
 * A phrase with slop as a tsquery: the query's lexemes in order, each gap at
 * its distance in the query (stop words count) plus an extra distance, the
 * extras summing to at most `slop`; alternatives are OR-ed. Slop 0 equals
 * phraseto_tsquery.
 */
export function phraseTsquery(lx: Array<{ lexeme: string; pos: number }>, slop: number): string {
  if (lx.length === 1) return lit(lx[0].lexeme);
  const gaps = lx.slice(1).map((l, i) => l.pos - lx[i].pos);
  const count = (s: number) => binom(s + gaps.length, gaps.length); // extras e_i >= 0 with Σ e_i <= s
  let s = slop;
  while (s > 0 && count(s) > MAX_PHRASE_ALTERNATIVES) s--;
  const alts: string[] = [];
  const walk = (i: number, left: number, acc: string) => {
    if (i === gaps.length) return void alts.push(acc);
    for (let e = 0; e <= left; e++) walk(i + 1, left - e, `${acc} <${gaps[i] + e}> ${lit(lx[i + 1].lexeme)}`);
  };
  walk(0, s, lit(lx[0].lexeme));
  return alts.map((a) => `(${a})`).join(' | ');
}

function binom(n: number, k: number): number {
  let r = 1;
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return r;
}

function complexTsquery(n: QueryNode, p: (v: unknown) => string): string {
  switch (n.kind) {
    case 'term':
      return `plainto_tsquery('${CONFIG}', ${p(n.text)})`;
    case 'phrase':
      return `phraseto_tsquery('${CONFIG}', ${p(n.text)})`;
    case 'not':
      return `(!! ${complexTsquery(n.item, p)})`;
    case 'and':
      return `(${n.items.map((i) => complexTsquery(i, p)).join(' && ')})`;
    case 'or':
      return `(${n.items.map((i) => complexTsquery(i, p)).join(' || ')})`;
  }
}
