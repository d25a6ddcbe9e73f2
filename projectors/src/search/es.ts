import { request } from 'undici';
import { dateOperand, type FilterClause, type Scalar } from '@svc/domain/search/filters';
import { parseComplexQuery, type QueryNode } from '@svc/domain/search/query-syntax';
import { TextIndexError, type IndexedItem, type ItemFilter, type TextHit, type TextIndex, type TextSearch } from './text-index';

/**
 * Keyword search on Elasticsearch (8.x / 9.x REST API over undici; no client
 * library, so any server major works). One index of passages; tenant and
 * context are keyword fields applied as filters on every query. BM25 is the
 * engine's own similarity. Attributes are stored per JSON type (`attrs_s.*`
 * keyword, `attrs_n.*` double, `attrs_b.*` boolean) so tenants with different
 * types under one key never conflict. Writes use refresh=wait_for, so an
 * item is searchable when replaceItem resolves.
 */
type Json = Record<string, unknown>;

export class ElasticsearchTextIndex implements TextIndex {
  readonly engine = 'elasticsearch' as const;
  private analyzer = 'english';

  constructor(private readonly o: { url: string; index: string }) {}

  private async call(method: string, path: string, body?: unknown, ndjson = false): Promise<Json> {
    let res;
    try {
      res = await request(this.o.url.replace(/\/$/, '') + path, {
        method: method as 'GET',
        headers: { 'content-type': ndjson ? 'application/x-ndjson' : 'application/json' },
        body: body === undefined ? undefined : ndjson ? (body as string) : JSON.stringify(body),
      });
    } catch (e) {
      throw new TextIndexError(`Elasticsearch unreachable: ${(e as Error).message}`, e);
    }
    const text = await res.body.text();
    const json = text ? (JSON.parse(text) as Json) : {};
    if (res.statusCode >= 300 && !(method === 'HEAD' && res.statusCode === 404)) throw new TextIndexError(`Elasticsearch ${method} ${path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
    return { ...json, _status: res.statusCode };
  }

  private mapping(analyzer: string) {
    return {
      mappings: {
        dynamic_templates: [
          { attrs_s: { path_match: 'attrs_s.*', mapping: { type: 'keyword' } } },
          { attrs_n: { path_match: 'attrs_n.*', mapping: { type: 'double' } } },
          { attrs_b: { path_match: 'attrs_b.*', mapping: { type: 'boolean' } } },
        ],
        properties: {
          item_id: { type: 'keyword' }, chunk_no: { type: 'integer' }, tenant_id: { type: 'keyword' }, context_id: { type: 'keyword' },
          source_type: { type: 'keyword' }, type_name: { type: 'keyword' }, folder_id: { type: 'keyword' }, user_id: { type: 'keyword' },
          scopes: { type: 'keyword' }, created_at: { type: 'date' }, chunk_text: { type: 'text', analyzer }, context_text: { type: 'text', index: false },
        },
      },
    };
  }

  async init(): Promise<void> {
    const head = await this.call('HEAD', `/${this.o.index}`);
    if (head._status === 200) return;
    try {
      await this.call('PUT', `/${this.o.index}`, this.mapping('english'));
    } catch (e) {
      // Minimal distributions (integ-test-zip) lack analysis-common and its `english` analyzer.
      if (!/analyzer|resource_already_exists/i.test((e as Error).message)) throw e;
      if (/resource_already_exists/i.test((e as Error).message)) return;
      this.analyzer = 'standard';
      await this.call('PUT', `/${this.o.index}`, this.mapping('standard'));
    }
  }

  async replaceItem(item: IndexedItem): Promise<void> {
    await this.deleteItem(item.itemId, false);
    if (!item.passages.length) return void (await this.call('POST', `/${this.o.index}/_refresh`));
    const { attrs_s, attrs_n, attrs_b } = splitAttrs(item.attrs);
    const lines: string[] = [];
    for (const p of item.passages) {
      lines.push(JSON.stringify({ index: { _index: this.o.index, _id: `${item.itemId}:${p.chunkNo}` } }));
      lines.push(JSON.stringify({
        item_id: item.itemId, chunk_no: p.chunkNo, tenant_id: item.tenantId, context_id: item.contextId, source_type: item.sourceType, type_name: item.typeName,
        folder_id: item.folderId, user_id: item.userId, scopes: item.scopes, created_at: item.createdAt, chunk_text: p.chunkText, context_text: p.contextText,
        attrs_s, attrs_n, attrs_b,
      }));
    }
    const r = await this.call('POST', `/_bulk?refresh=wait_for`, lines.join('\n') + '\n', true);
    if (r.errors) throw new TextIndexError(`Elasticsearch bulk index reported errors`);
  }

  async updateItemMeta(item: Omit<IndexedItem, 'passages' | 'metadata'>): Promise<void> {
    const params = {
      type_name: item.typeName, folder_id: item.folderId, user_id: item.userId, scopes: item.scopes, created_at: item.createdAt, ...splitAttrs(item.attrs),
    };
    const r = await this.call('POST', `/${this.o.index}/_update_by_query?refresh=true&conflicts=proceed`, {
      query: { term: { item_id: item.itemId } },
      script: { lang: 'painless', source: Object.keys(params).map((k) => `ctx._source.${k} = params.${k};`).join(' '), params },
    });
    if (Array.isArray(r.failures) && r.failures.length) throw new TextIndexError('Elasticsearch update_by_query reported failures');
  }

  async deleteItem(itemId: string, refresh = true): Promise<void> {
    await this.call('POST', `/${this.o.index}/_delete_by_query?refresh=${refresh}&conflicts=proceed`, { query: { term: { item_id: itemId } } });
  }

  async deleteContext(tenantId: string, contextId: string): Promise<void> {
    await this.call('POST', `/${this.o.index}/_delete_by_query?refresh=true&conflicts=proceed`, {
      query: { bool: { filter: [{ term: { tenant_id: tenantId } }, { term: { context_id: contextId } }] } },
    });
  }

  async drop(): Promise<void> {
    await this.call('DELETE', `/${this.o.index}?ignore_unavailable=true`);
    await this.init();
  }

  async close(): Promise<void> {}

  async search(s: TextSearch): Promise<{ hits: TextHit[]; total: number }> {
    const must = textQuery(s);
    if (!must) return { hits: [], total: 0 };
    const r = await this.call('POST', `/${this.o.index}/_search`, {
      size: s.limit,
      track_total_hits: true,
      query: { bool: { must: [must], filter: filterClauses(s.filter) } },
      sort: [{ _score: 'desc' }, { item_id: 'asc' }, { chunk_no: 'asc' }],
      _source: ['item_id', 'chunk_no', 'chunk_text', 'context_text'],
      highlight: { pre_tags: ['<mark>'], post_tags: ['</mark>'], fields: { chunk_text: { number_of_fragments: 2, fragment_size: 240, no_match_size: 240 } } },
    });
    const hits = (r.hits as { total: { value: number }; hits: Array<{ _score: number; _source: Json; highlight?: { chunk_text?: string[] } }> });
    return {
      total: hits.total.value,
      hits: hits.hits.map((h) => ({
        itemId: h._source.item_id as string,
        chunkNo: Number(h._source.chunk_no),
        score: h._score,
        snippet: h.highlight?.chunk_text?.join(' … ') ?? null,
        chunkText: h._source.chunk_text as string,
        contextText: h._source.context_text as string,
      })),
    };
  }
}

/** Attributes per JSON type (attrs_s keyword, attrs_n double, attrs_b boolean). */
function splitAttrs(attrs: IndexedItem['attrs']): { attrs_s: Json; attrs_n: Json; attrs_b: Json } {
  const attrs_s: Json = {}, attrs_n: Json = {}, attrs_b: Json = {};
  for (const [k, v] of Object.entries(attrs)) {
    for (const x of Array.isArray(v) ? v : [v]) {
      const bucket = typeof x === 'string' ? attrs_s : typeof x === 'number' ? attrs_n : attrs_b;
      bucket[k] = bucket[k] === undefined ? x : ([] as unknown[]).concat(bucket[k], x);
    }
  }
  return { attrs_s, attrs_n, attrs_b };
}

function textQuery(s: TextSearch): Json | null {
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

function nodeQuery(n: QueryNode): Json {
  switch (n.kind) {
    case 'term':
      return { match: { chunk_text: { query: n.text, operator: 'and' } } };
    case 'phrase':
      return { match_phrase: { chunk_text: { query: n.text } } };
    case 'not':
      return { bool: { must_not: [nodeQuery(n.item)] } };
    case 'and':
      return { bool: { must: n.items.map(nodeQuery) } };
    case 'or':
      return { bool: { should: n.items.map(nodeQuery), minimum_should_match: 1 } };
  }
}

function filterClauses(f: ItemFilter): Json[] {
  const out: Json[] = [{ term: { tenant_id: f.tenantId } }, { term: { context_id: f.contextId } }];
  if (f.sourceTypes?.length) out.push({ terms: { source_type: f.sourceTypes } });
  if (f.typeName !== undefined) out.push({ term: { type_name: f.typeName } });
  if (f.folderIds) out.push({ terms: { folder_id: f.folderIds } });
  for (const u of f.userIds ?? []) out.push({ term: { user_id: u } });
  for (const s of f.scopesAll ?? []) out.push({ term: { scopes: s } });
  if (f.scopesAny?.length) out.push({ terms: { scopes: f.scopesAny } });
  if (f.createdAfter || f.createdBefore) out.push({ range: { created_at: { ...(f.createdAfter ? { gte: f.createdAfter } : {}), ...(f.createdBefore ? { lte: f.createdBefore } : {}) } } });
  for (const c of f.clauses) out.push(clauseQuery(c));
  return out;
}

function eqQuery(key: string, v: Scalar): Json {
  const alts: Json[] = [];
  if (typeof v === 'string') alts.push({ term: { [`attrs_s.${key}`]: v } });
  if (typeof v === 'number') alts.push({ term: { [`attrs_n.${key}`]: v } });
  if (typeof v === 'boolean') alts.push({ term: { [`attrs_b.${key}`]: v } });
  const d = dateOperand(v);
  if (d !== null) alts.push({ term: { [`attrs_n.${key}`]: d } });
  return alts.length === 1 ? alts[0] : { bool: { should: alts, minimum_should_match: 1 } };
}

function clauseQuery(c: FilterClause): Json {
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
      const v = c.value as Scalar;
      const alts: Json[] = [];
      const num = typeof v === 'number' ? v : dateOperand(v);
      if (num !== null) alts.push({ range: { [`attrs_n.${c.key}`]: { [c.op]: num } } });
      if (typeof v === 'string') alts.push({ range: { [`attrs_s.${c.key}`]: { [c.op]: v } } });
      return alts.length ? { bool: { should: alts, minimum_should_match: 1 } } : { bool: { must_not: [{ match_all: {} }] } };
    }
  }
}
