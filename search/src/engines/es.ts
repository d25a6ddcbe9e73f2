import { Client, errors, type estypes } from '@elastic/elasticsearch';
import {
  dateOperand,
  FILTER_KEY_RE,
  type FilterClause,
  type IndexedItem,
  type ItemFilter,
  parseComplexQuery,
  type QueryNode,
  type Scalar,
  type TextHit,
  type TextIndex,
  TextIndexError,
  type TextSearch,
} from '@svc/domain';
import { TextIndexUnavailable } from './text-unavailable';

/**
 * Keyword search on Elasticsearch through the official client
 * (`@elastic/elasticsearch`, whose major must match the server's: 9.x here).
 *
 * One index of passages (`_id` = `<itemId>:<chunkNo>`, one shard so BM25
 * statistics are the index's); tenant and context are keyword fields applied as
 * filters on every query. Ranking is the engine's BM25 (k1 1.2, b 0.75).
 * Analysis mirrors PostgreSQL's `english` configuration: standard tokenizer,
 * lowercase, PostgreSQL's English stop words, then the Snowball English
 * stemmer: the `snowball` filter when the server has the analysis-common
 * module, else the `svc_english_stem` filter of the small plugin that
 * deploy/engines/elasticsearch.sh builds for the integ-test distribution, else
 * no stemming (logged once).
 *
 * Attributes are stored per JSON type (`attrs_s.*` keyword, `attrs_n.*` double,
 * `attrs_b.*` boolean) so tenants with different types under one key never
 * conflict; `attrs_arr` lists the keys whose value is an array (ranges never
 * match those, as on PostgreSQL). Only the calls of the server module are used
 * (no delete/update-by-query, no scripts: the integ-test distribution has no
 * reindex or painless module): writes are bulk requests with refresh=true, so
 * an item is searchable when replaceItem resolves.
 *
 * `search` returns ranked ids and scores only; `hydrate` fetches text and
 * highlighted snippets of the page shown.
 *
 * The index lives on a server that can lose it (restarted on an empty data
 * directory, deleted by hand): failures of the server rather than of an item
 * are TextIndexUnavailable (`missing` when the index is gone), `created` says
 * that the last init() had to create the index, and `lost()` checks that it is
 * still there with its marker (the mapping's `_meta`); the search projector
 * rebuilds the keyword index from the log when it was lost (../indexer/indexer.ts).
 */
type Doc = {
  item_id: string;
  chunk_no: number;
  tenant_id: string;
  context_id: string;
  source_type: string;
  type_name: string | null;
  folder_id: string | null;
  user_id: string | null;
  scopes: string[];
  created_at: string;
  chunk_text: string;
  context_text: string;
  attrs_s: Record<string, unknown>;
  attrs_n: Record<string, unknown>;
  attrs_b: Record<string, unknown>;
  attrs_arr: string[];
};
type Query = estypes.QueryDslQueryContainer;

/** PostgreSQL's English stop words (tsearch_data/english.stop), so both engines drop the same words. */
export const PG_ENGLISH_STOP_WORDS = [
  'i',
  'me',
  'my',
  'myself',
  'we',
  'our',
  'ours',
  'ourselves',
  'you',
  'your',
  'yours',
  'yourself',
  'yourselves',
  'he',
  'him',
  'his',
  'himself',
  'she',
  'her',
  'hers',
  'herself',
  'it',
  'its',
  'itself',
  'they',
  'them',
  'their',
  'theirs',
  'themselves',
  'what',
  'which',
  'who',
  'whom',
  'this',
  'that',
  'these',
  'those',
  'am',
  'is',
  'are',
  'was',
  'were',
  'be',
  'been',
  'being',
  'have',
  'has',
  'had',
  'having',
  'do',
  'does',
  'did',
  'doing',
  'a',
  'an',
  'the',
  'and',
  'but',
  'if',
  'or',
  'because',
  'as',
  'until',
  'while',
  'of',
  'at',
  'by',
  'for',
  'with',
  'about',
  'against',
  'between',
  'into',
  'through',
  'during',
  'before',
  'after',
  'above',
  'below',
  'to',
  'from',
  'up',
  'down',
  'in',
  'out',
  'on',
  'off',
  'over',
  'under',
  'again',
  'further',
  'then',
  'once',
  'here',
  'there',
  'when',
  'where',
  'why',
  'how',
  'all',
  'any',
  'both',
  'each',
  'few',
  'more',
  'most',
  'other',
  'some',
  'such',
  'no',
  'nor',
  'not',
  'only',
  'own',
  'same',
  'so',
  'than',
  'too',
  'very',
  's',
  't',
  'can',
  'will',
  'just',
  'don',
  'should',
  'now',
];

/** Stemming choices, best first: the analysis-common module's Snowball filter, the svc plugin's, none. */
const STEMMERS: Array<{ name: 'snowball' | 'svc_english_stem' | 'none'; filter?: estypes.AnalysisTokenFilter }> = [
  { name: 'snowball', filter: { type: 'snowball', language: 'English' } as estypes.AnalysisTokenFilter },
  { name: 'svc_english_stem', filter: { type: 'svc_english_stem' } as unknown as estypes.AnalysisTokenFilter },
  { name: 'none' },
];
/** Bumped when the mapping or analysis changes (kept in the index's _meta). */
const MAPPING_VERSION = 2;
const PAGE = 5000;
const BULK_DOCS = 1000;
/** Searches fail fast (no retry with backoff): a failed keyword leg degrades the answer instead of delaying it. */
const SEARCH_OPTIONS = { maxRetries: 0, requestTimeout: 10_000 } as const;
const HIGHLIGHT: estypes.SearchHighlightField = { number_of_fragments: 2, fragment_size: 240, no_match_size: 240 };

export class ElasticsearchTextIndex implements TextIndex {
  readonly engine = 'elasticsearch' as const;
  private readonly client: Client;
  private readonly index: string;
  private readonly log: (m: string) => void;
  /** The stemmer of the index (known after init). */
  stemmer: (typeof STEMMERS)[number]['name'] | 'unknown' = 'unknown';
  /** The last init() created the index: it was missing (a first start, or a server that lost it). */
  created = false;

  constructor(o: { url: string; index: string; client?: Client; log?: (m: string) => void }) {
    this.index = o.index;
    this.client = o.client ?? new Client({ node: o.url, requestTimeout: 30_000, maxRetries: 2 });
    this.log = o.log ?? ((m) => console.warn(m));
  }

  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof TextIndexError) throw e;
      const message = `Elasticsearch ${what} failed: ${describe(e)}`;
      if (indexMissing(e)) throw new TextIndexUnavailable(message, e, true);
      if (unavailable(e)) throw new TextIndexUnavailable(message, e);
      throw new TextIndexError(message, e);
    }
  }

  async init(): Promise<void> {
    this.created = false;
    await this.call('init', async () => {
      for (const s of STEMMERS) {
        if (await this.client.indices.exists({ index: this.index })) {
          if (await this.marked()) return this.readStemmer();
          // An index of our name without our marker was made by something else: a write that reached the server after
          // it lost the index (auto-created, with a dynamic mapping). Replaced, so the projector rebuilds it.
          this.log(
            `Elasticsearch index ${this.index} has no mapping marker (_meta): created by something else, replacing it`,
          );
          await this.client.indices.delete({ index: this.index, ignore_unavailable: true });
        }
        try {
          await this.client.indices.create({ index: this.index, ...indexBody(s) });
          this.stemmer = s.name;
          this.created = true;
          if (s.name === 'none')
            this.log(
              `Elasticsearch index ${this.index}: no English stemmer on this server (analysis-common or ` +
                `the svc-english-stem plugin); keyword search does not stem`,
            );
          return;
        } catch (e) {
          if (e instanceof errors.ResponseError && e.body?.error?.type === 'resource_already_exists_exception')
            return this.readStemmer();
          if (
            e instanceof errors.ResponseError &&
            /unknown filter type|failed to find (global )?filter/i.test(describe(e))
          )
            continue;
          throw e;
        }
      }
    });
  }

  /** The index carries the marker this adapter writes at creation (its mapping's `_meta.version`). */
  private async marked(): Promise<boolean> {
    const m = await this.client.indices.getMapping({ index: this.index, filter_path: ['*.mappings._meta'] });
    return typeof (Object.values(m)[0]?.mappings?._meta as { version?: unknown } | undefined)?.version === 'number';
  }

  /**
   * True when the server answers that the index is gone or lacks its marker (the search projector then rebuilds
   * it); false while it is there, and when the server does not answer (nothing is known then).
   */
  async lost(): Promise<boolean> {
    try {
      return !(await this.client.indices.exists({ index: this.index }, SEARCH_OPTIONS)) || !(await this.marked());
    } catch {
      return false;
    }
  }

  private async readStemmer(): Promise<void> {
    const m = await this.client.indices.getMapping({ index: this.index });
    const meta = Object.values(m)[0]?.mappings?._meta as { stemmer?: string; version?: number } | undefined;
    this.stemmer = (meta?.stemmer as ElasticsearchTextIndex['stemmer']) ?? 'unknown';
    if (meta?.version !== MAPPING_VERSION)
      this.log(
        `Elasticsearch index ${this.index} has mapping version ${meta?.version ?? 'none'}, this service ` +
          `writes ${MAPPING_VERSION}; rebuild the search index (npm run rebuild -- search-index)`,
      );
  }

  async replaceItem(item: IndexedItem): Promise<void> {
    await this.call('write', async () => {
      const keep = new Set(item.passages.map((p) => passageId(item.itemId, p.chunkNo)));
      const ops: estypes.BulkOperationContainer[] = [];
      const docs: Array<Doc | undefined> = [];
      const meta = metaFields(item);
      for (const p of item.passages) {
        ops.push({ index: { _index: this.index, _id: passageId(item.itemId, p.chunkNo) } });
        docs.push({
          item_id: item.itemId,
          chunk_no: p.chunkNo,
          tenant_id: item.tenantId,
          context_id: item.contextId,
          chunk_text: p.chunkText,
          context_text: p.contextText,
          ...meta,
        });
      }
      for (const id of await this.ids({ term: { item_id: item.itemId } })) {
        if (keep.has(id)) continue;
        ops.push({ delete: { _index: this.index, _id: id } });
        docs.push(undefined);
      }
      await this.bulk(ops, docs, true);
    });
  }

  /**
   * One passage-id lookup (terms on item_id) and one bulk write with one refresh for the whole batch, instead of a
   * refresh per item.
   */
  async replaceItems(items: IndexedItem[]): Promise<void> {
    if (!items.length) return;
    await this.call('write', async () => {
      const keep = new Set<string>();
      const ops: estypes.BulkOperationContainer[] = [];
      const docs: Array<Doc | undefined> = [];
      for (const item of items) {
        const meta = metaFields(item);
        for (const p of item.passages) {
          const id = passageId(item.itemId, p.chunkNo);
          keep.add(id);
          ops.push({ index: { _index: this.index, _id: id } });
          docs.push({
            item_id: item.itemId,
            chunk_no: p.chunkNo,
            tenant_id: item.tenantId,
            context_id: item.contextId,
            chunk_text: p.chunkText,
            context_text: p.contextText,
            ...meta,
          });
        }
      }
      const itemIds = [...new Set(items.map((i) => i.itemId))];
      for (let i = 0; i < itemIds.length; i += 1000) {
        for (const id of await this.ids({ terms: { item_id: itemIds.slice(i, i + 1000) } })) {
          if (keep.has(id)) continue;
          ops.push({ delete: { _index: this.index, _id: id } });
          docs.push(undefined);
        }
      }
      await this.bulk(ops, docs, true);
    });
  }

  async updateItemMeta(item: Omit<IndexedItem, 'passages' | 'metadata'>): Promise<void> {
    await this.call('write', async () => {
      // Whole documents are rewritten (no scripts or partial updates: a partial update would merge attribute maps).
      const meta = metaFields(item);
      const ops: estypes.BulkOperationContainer[] = [];
      const docs: Doc[] = [];
      for (const h of await this.sources({ term: { item_id: item.itemId } })) {
        ops.push({ index: { _index: this.index, _id: h._id! } });
        docs.push({ ...h._source!, ...meta });
      }
      await this.bulk(ops, docs, true);
    });
  }

  async deleteItem(itemId: string): Promise<void> {
    await this.call('delete', async () => {
      const ids = await this.ids({ term: { item_id: itemId } });
      await this.bulk(
        ids.map((id) => ({ delete: { _index: this.index, _id: id } })),
        ids.map(() => undefined),
        true,
      );
    });
  }

  async deleteContext(tenantId: string, contextId: string): Promise<void> {
    await this.call('delete', async () => {
      const q: Query = { bool: { filter: [{ term: { tenant_id: tenantId } }, { term: { context_id: contextId } }] } };
      for (;;) {
        const ids = await this.ids(q, PAGE);
        if (!ids.length) break;
        await this.bulk(
          ids.map((id) => ({ delete: { _index: this.index, _id: id } })),
          ids.map(() => undefined),
          true,
        );
      }
    });
  }

  async drop(): Promise<void> {
    await this.call('drop', () => this.client.indices.delete({ index: this.index, ignore_unavailable: true }));
    await this.init();
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  async search(s: TextSearch): Promise<{ hits: TextHit[]; total: number }> {
    const q = textQuery(s);
    if (!q) return { hits: [], total: 0 };
    return this.call('search', async () => {
      const r = await this.client.search(
        {
          index: this.index,
          size: s.limit,
          track_total_hits: s.countUpTo ?? s.trackTotal !== false,
          query: { bool: { must: [q], filter: filterClauses(s.filter) } },
          sort: [{ _score: { order: 'desc' } }, { item_id: { order: 'asc' } }, { chunk_no: { order: 'asc' } }],
          _source: false,
        },
        SEARCH_OPTIONS,
      );
      const total = typeof r.hits.total === 'number' ? r.hits.total : (r.hits.total?.value ?? 0);
      return {
        total: s.countUpTo !== undefined ? Math.min(total, s.countUpTo) : total,
        hits: r.hits.hits.map((h) => {
          const [, itemId, chunkNo] = h.sort as [number, string, number];
          return { itemId, chunkNo: Number(chunkNo), score: Number(h.sort![0]) };
        }),
      };
    });
  }

  /** Text, context and the highlighted snippet of the hits shown (one request). */
  async hydrate(hits: TextHit[], s: TextSearch): Promise<void> {
    const want = hits.filter((h) => h.chunkText === undefined);
    if (!want.length) return;
    const q = textQuery(s);
    await this.call('search', async () => {
      const r = await this.client.search<Pick<Doc, 'chunk_text' | 'context_text'>>(
        {
          index: this.index,
          size: want.length,
          query: {
            bool: {
              filter: [
                { ids: { values: want.map((h) => passageId(h.itemId, h.chunkNo)) } },
                ...filterClauses({ tenantId: s.filter.tenantId, contextId: s.filter.contextId, clauses: [] }),
              ],
            },
          },
          _source: ['chunk_text', 'context_text'],
          highlight: {
            pre_tags: ['<mark>'],
            post_tags: ['</mark>'],
            ...(q ? { highlight_query: q } : {}),
            fields: { chunk_text: HIGHLIGHT },
          },
        },
        SEARCH_OPTIONS,
      );
      const byId = new Map(r.hits.hits.map((h) => [h._id!, h]));
      for (const h of want) {
        const d = byId.get(passageId(h.itemId, h.chunkNo));
        h.chunkText = d?._source?.chunk_text ?? '';
        h.contextText = d?._source?.context_text ?? '';
        h.snippet = d ? (d.highlight?.chunk_text?.join(' … ') ?? null) : null;
      }
    });
  }

  /** Ids of the passages matching `q` (every page, or the first `max`). */
  private async ids(q: Query, max = Infinity): Promise<string[]> {
    const out: string[] = [];
    let after: estypes.SortResults | undefined;
    while (out.length < max) {
      const r = await this.client.search({
        index: this.index,
        size: Math.min(PAGE, max - out.length),
        query: q,
        _source: false,
        track_total_hits: false,
        sort: [{ item_id: 'asc' }, { chunk_no: 'asc' }],
        ...(after ? { search_after: after } : {}),
      });
      for (const h of r.hits.hits) out.push(h._id!);
      if (r.hits.hits.length < PAGE) break;
      after = r.hits.hits[r.hits.hits.length - 1].sort;
    }
    return out;
  }

  /** The stored passages matching `q`, every page. */
  private async sources(q: Query): Promise<Array<estypes.SearchHit<Doc>>> {
    const out: Array<estypes.SearchHit<Doc>> = [];
    let after: estypes.SortResults | undefined;
    for (;;) {
      const r = await this.client.search<Doc>({
        index: this.index,
        size: PAGE,
        query: q,
        track_total_hits: false,
        sort: [{ item_id: 'asc' }, { chunk_no: 'asc' }],
        ...(after ? { search_after: after } : {}),
      });
      out.push(...r.hits.hits);
      if (r.hits.hits.length < PAGE) return out;
      after = r.hits.hits[r.hits.hits.length - 1].sort;
    }
  }

  /** Bulk writes in groups; the last group refreshes when asked, so everything becomes searchable together. */
  private async bulk(
    ops: estypes.BulkOperationContainer[],
    docs: Array<Doc | undefined>,
    refresh: boolean,
  ): Promise<void> {
    if (!ops.length) return;
    for (let i = 0; i < ops.length; i += BULK_DOCS) {
      const last = i + BULK_DOCS >= ops.length;
      const operations: unknown[] = [];
      for (let j = i; j < Math.min(ops.length, i + BULK_DOCS); j++) {
        operations.push(ops[j]);
        if (docs[j]) operations.push(docs[j]);
      }
      const r = await this.client.bulk({ operations, refresh: last && refresh });
      if (r.errors) {
        const failed = r.items.map((it) => Object.values(it)[0]).filter((x) => x?.error);
        const bad = failed[0];
        const message =
          `Elasticsearch bulk write reported errors: ${bad?.error?.type}: ${bad?.error?.reason ?? ''}`.slice(0, 500);
        if (failed.some((x) => x?.error?.type === 'index_not_found_exception'))
          throw new TextIndexUnavailable(message, undefined, true);
        // Refused for now (a full queue, shards not yet started): the server's state, not the items'.
        if (failed.every((x) => UNAVAILABLE_STATUS.has(x!.status))) throw new TextIndexUnavailable(message);
        throw new TextIndexError(message);
      }
    }
  }
}

const passageId = (itemId: string, chunkNo: number) => `${itemId}:${chunkNo}`;

/**
 * Statuses of a server that refuses for now (too many requests, bad gateway, unavailable: a cluster block, shards not
 * started; gateway timeout).
 */
const UNAVAILABLE_STATUS = new Set([429, 502, 503, 504]);

/** The index is gone: the server answered index_not_found_exception. */
function indexMissing(e: unknown): boolean {
  return e instanceof errors.ResponseError && e.body?.error?.type === 'index_not_found_exception';
}

/** The server did not answer, or refused for now: nothing is wrong with what was asked. */
function unavailable(e: unknown): boolean {
  if (
    e instanceof errors.ConnectionError ||
    e instanceof errors.TimeoutError ||
    e instanceof errors.NoLivingConnectionsError
  )
    return true;
  return e instanceof errors.ResponseError && UNAVAILABLE_STATUS.has(e.statusCode ?? 0);
}

function describe(e: unknown): string {
  if (e instanceof errors.ResponseError) {
    const err = e.body?.error;
    const cause = typeof err === 'object' && err?.caused_by;
    const causeText = cause ? ` (${cause.type}: ${cause.reason ?? ''})` : '';
    const reason =
      typeof err === 'object' && err ? `${err.type}: ${err.reason ?? ''}${causeText}` : String(e.body ?? e.message);
    return `${e.statusCode ?? ''} ${reason}`.trim().slice(0, 500);
  }
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

function indexBody(s: (typeof STEMMERS)[number]): Pick<estypes.IndicesCreateRequest, 'settings' | 'mappings'> {
  return {
    settings: {
      number_of_shards: 1,
      auto_expand_replicas: '0-1',
      'mapping.total_fields.limit': 10_000,
      analysis: {
        filter: {
          svc_stop: { type: 'stop', stopwords: PG_ENGLISH_STOP_WORDS },
          ...(s.filter ? { svc_stem: s.filter } : {}),
        },
        analyzer: {
          svc_english: {
            type: 'custom',
            tokenizer: 'standard',
            filter: ['lowercase', 'svc_stop', ...(s.filter ? ['svc_stem'] : [])],
          },
        },
      },
    },
    mappings: {
      _meta: { version: MAPPING_VERSION, stemmer: s.name },
      dynamic: 'strict',
      dynamic_templates: [
        { attrs_s: { path_match: 'attrs_s.*', mapping: { type: 'keyword' } } },
        { attrs_n: { path_match: 'attrs_n.*', mapping: { type: 'double' } } },
        { attrs_b: { path_match: 'attrs_b.*', mapping: { type: 'boolean' } } },
      ],
      properties: {
        item_id: { type: 'keyword' },
        chunk_no: { type: 'integer' },
        tenant_id: { type: 'keyword' },
        context_id: { type: 'keyword' },
        source_type: { type: 'keyword' },
        type_name: { type: 'keyword' },
        folder_id: { type: 'keyword' },
        user_id: { type: 'keyword' },
        scopes: { type: 'keyword' },
        created_at: { type: 'date' },
        chunk_text: { type: 'text', analyzer: 'svc_english' },
        context_text: { type: 'text', index: false },
        attrs_s: { type: 'object', dynamic: true },
        attrs_n: { type: 'object', dynamic: true },
        attrs_b: { type: 'object', dynamic: true },
        attrs_arr: { type: 'keyword' },
      },
    },
  };
}

/** The filter columns of a passage. Attribute keys a filter cannot name (FILTER_KEY_RE) are not stored. */
function metaFields(
  item: Omit<IndexedItem, 'passages' | 'metadata'>,
): Omit<Doc, 'item_id' | 'chunk_no' | 'tenant_id' | 'context_id' | 'chunk_text' | 'context_text'> {
  const attrs_s: Record<string, unknown> = {},
    attrs_n: Record<string, unknown> = {},
    attrs_b: Record<string, unknown> = {};
  const attrs_arr: string[] = [];
  for (const [k, v] of Object.entries(item.attrs)) {
    if (!FILTER_KEY_RE.test(k)) continue;
    if (Array.isArray(v)) attrs_arr.push(k);
    for (const x of Array.isArray(v) ? v : [v]) {
      const bucket =
        typeof x === 'string' ? attrs_s : typeof x === 'number' ? attrs_n : typeof x === 'boolean' ? attrs_b : null;
      if (!bucket) continue;
      bucket[k] = !Object.hasOwn(bucket, k) ? x : ([] as unknown[]).concat(bucket[k], x);
    }
  }
  return {
    source_type: item.sourceType,
    type_name: item.typeName,
    folder_id: item.folderId,
    user_id: item.userId,
    scopes: item.scopes,
    created_at: item.createdAt,
    attrs_s,
    attrs_n,
    attrs_b,
    attrs_arr,
  };
}

/** The keyword query of a search (null: nothing can match). */
export function textQuery(s: Pick<TextSearch, 'query' | 'textMode' | 'slop'>): Query | null {
  switch (s.textMode) {
    case 'OR':
      return { match: { chunk_text: { query: s.query, operator: 'or' } } };
    case 'AND':
      return { match: { chunk_text: { query: s.query, operator: 'and' } } };
    case 'PHRASE':
      return { match_phrase: { chunk_text: { query: s.query, slop: s.slop } } };
    case 'COMPLEX': {
      const ast = parseComplexQuery(s.query);
      return ast ? nodeQuery(ast) : null;
    }
  }
}

const STOP = new Set(PG_ENGLISH_STOP_WORDS);
/**
 * True when a term or phrase has no word left after stop-word removal (an approximation of the analyzer: Unicode
 * letter/digit runs).
 */
function onlyStopWords(text: string): boolean {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).every((w) => STOP.has(w));
}

/**
 * COMPLEX syntax: terms AND their words, phrases are match_phrase, exclusions are must_not (they never score).
 * As in PostgreSQL's tsquery, a term or phrase of stop words only drops out of the expression (and so does a NOT or
 * a group left empty); null when nothing is left, which matches nothing.
 */
function nodeQuery(n: QueryNode): Query | null {
  switch (n.kind) {
    case 'term':
      return onlyStopWords(n.text) ? null : { match: { chunk_text: { query: n.text, operator: 'and' } } };
    case 'phrase':
      return onlyStopWords(n.text) ? null : { match_phrase: { chunk_text: { query: n.text } } };
    case 'not': {
      const inner = nodeQuery(n.item);
      return inner && { bool: { must_not: [inner] } };
    }
    case 'and': {
      const must: Query[] = [],
        mustNot: Query[] = [];
      for (const i of n.items) {
        const q = nodeQuery(i.kind === 'not' ? i.item : i);
        if (q) (i.kind === 'not' ? mustNot : must).push(q);
      }
      return must.length + mustNot.length ? { bool: { must, must_not: mustNot } } : null;
    }
    case 'or': {
      const should = n.items.map(nodeQuery).filter((q): q is Query => q !== null);
      return should.length ? { bool: { should, minimum_should_match: 1 } } : null;
    }
  }
}

export function filterClauses(f: ItemFilter): Query[] {
  const out: Query[] = [{ term: { tenant_id: f.tenantId } }, { term: { context_id: f.contextId } }];
  if (f.sourceTypes?.length) out.push({ terms: { source_type: f.sourceTypes } });
  if (f.typeName !== undefined) out.push({ term: { type_name: f.typeName } });
  if (f.folderIds) out.push({ terms: { folder_id: f.folderIds } });
  for (const u of f.userIds ?? []) out.push({ term: { user_id: u } });
  for (const s of f.scopesAll ?? []) out.push({ term: { scopes: s } });
  if (f.scopesAny?.length) out.push({ terms: { scopes: f.scopesAny } });
  if (f.createdAfter || f.createdBefore)
    out.push({
      range: {
        created_at: {
          ...(f.createdAfter ? { gte: f.createdAfter } : {}),
          ...(f.createdBefore ? { lte: f.createdBefore } : {}),
        },
      },
    });
  for (const c of f.clauses) out.push(clauseQuery(c));
  return out;
}

const NOTHING: Query = { bool: { must_not: [{ match_all: {} }] } };

/** Equality with a scalar: the value in its type's field, and an ISO date also as epoch ms. */
function eqQuery(key: string, v: Scalar): Query {
  if (!FILTER_KEY_RE.test(key)) return NOTHING;
  const alts: Query[] = [];
  if (typeof v === 'string') alts.push({ term: { [`attrs_s.${key}`]: v } });
  if (typeof v === 'number') alts.push({ term: { [`attrs_n.${key}`]: v } });
  if (typeof v === 'boolean') alts.push({ term: { [`attrs_b.${key}`]: v } });
  const d = dateOperand(v);
  if (d !== null) alts.push({ term: { [`attrs_n.${key}`]: d } });
  return alts.length === 1 ? alts[0] : { bool: { should: alts, minimum_should_match: 1 } };
}

function clauseQuery(c: FilterClause): Query {
  switch (c.op) {
    case 'eq':
      return eqQuery(c.key, c.value as Scalar);
    case 'in':
      return { bool: { should: (c.value as Scalar[]).map((v) => eqQuery(c.key, v)), minimum_should_match: 1 } };
    case 'ne':
      return { bool: { must_not: [eqQuery(c.key, c.value as Scalar)] } };
    case 'nin':
      return { bool: { must_not: (c.value as Scalar[]).map((v) => eqQuery(c.key, v)) } };
    default: {
      // Ranges compare numbers with numbers (an ISO date as epoch ms) and strings with strings (keyword order is
      // byte order); an array attribute never matches a range.
      if (!FILTER_KEY_RE.test(c.key)) return NOTHING;
      const v = c.value as Scalar;
      const alts: Query[] = [];
      const num = typeof v === 'number' ? v : dateOperand(v);
      if (num !== null) alts.push({ range: { [`attrs_n.${c.key}`]: { [c.op]: num } } });
      if (typeof v === 'string') alts.push({ range: { [`attrs_s.${c.key}`]: { [c.op]: v } } });
      if (!alts.length) return NOTHING;
      return { bool: { should: alts, minimum_should_match: 1, must_not: [{ term: { attrs_arr: c.key } }] } };
    }
  }
}
