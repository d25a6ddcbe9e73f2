import type { Passage } from '../search/chunking';
import type { AttrValue } from '../search/indexable';
import type { FilterClause } from '../search/filters';

/*
 * The search ports: the text index, the vector index, the embedder and the
 * search catalogue's reads. Adapters live in search/src/engines/ (PostgreSQL
 * full-text search, Elasticsearch, in-memory; LanceDB, in-memory vectors; the
 * built-in model, an OpenAI-compatible endpoint; the SQL catalogue); deploy
 * opens them (deploy/src/engines/search.ts) and hands them to the search
 * projector (search/src/indexer/) and to the query side.
 */

/**
 * The text-index port: keyword search over passages. Adapters: PostgreSQL
 * full-text search (embedded default, PGlite or a server) and Elasticsearch.
 * Both pass tests/src/contracts/text-index.contract.ts.
 */
export type SourceKind = 'record' | 'document';
export type TextMode = 'OR' | 'AND' | 'PHRASE' | 'COMPLEX';

/**
 * What the index and the catalogue both know of a searchable item (a record or a document): identity, isolation,
 * filters, result metadata.
 */
export interface SearchableItem {
  itemId: string;
  tenantId: string;
  contextId: string;
  sourceType: SourceKind;
  typeName: string | null;
  folderId: string | null;
  userId: string | null;
  scopes: string[];
  /** Filter attributes (built-in item fields and filterable payload fields; dates as epoch ms). */
  attrs: Record<string, AttrValue>;
  createdAt: string;
  metadata: Record<string, unknown>;
}

/** One searchable item with its passages, as the text and vector indexes take it. */
export interface IndexedItem extends SearchableItem {
  passages: Passage[];
}

/** Everything that narrows a search before ranking. */
export interface ItemFilter {
  tenantId: string;
  contextId: string;
  /** Undefined: both kinds. */
  sourceTypes?: SourceKind[];
  typeName?: string;
  /** Any of these folders (a folder and its descendants, already expanded). */
  folderIds?: string[];
  /** Item owner must equal each of these (the parameter and the credential's data scope). */
  userIds?: string[];
  /** Item scopes must contain all of these (orgId → org:<id>, clientId → client:<id>). */
  scopesAll?: string[];
  /** Item scopes must contain at least one of these (credential data scope). */
  scopesAny?: string[];
  createdAfter?: string;
  createdBefore?: string;
  clauses: FilterClause[];
}

export interface TextSearch {
  filter: ItemFilter;
  query: string;
  textMode: TextMode;
  /** PHRASE only. */
  slop: number;
  limit: number;
  /**
   * false: `total` need only be a lower bound (at least the hits returned), so an adapter may skip
   * passages that cannot reach the top `limit` instead of counting every match (as Elasticsearch's
   * track_total_hits). Default true: the exact count.
   */
  trackTotal?: boolean;
  /**
   * Matches counted up to this many (at least `limit`): `total` is then exactly min(matches, countUpTo), and
   * an adapter may skip passages that cannot reach the top `limit` once that many are known to match (as
   * Elasticsearch's track_total_hits with a number). For a page of a ranking whose size is capped.
   */
  countUpTo?: number;
}

export interface PassageText {
  /** The chunk with matched terms wrapped in <mark>…</mark> (not HTML-escaped). */
  snippet: string | null;
  chunkText: string;
  contextText: string;
}

/** A ranked passage; its text is absent when the adapter hydrates only the page shown (`hydrate`). */
export interface TextHit extends Partial<PassageText> {
  itemId: string;
  chunkNo: number;
  /** BM25 score (higher is better). */
  score: number;
}

export interface TextIndex {
  readonly engine: 'postgres' | 'elasticsearch';
  init(): Promise<void>;
  /** Replaces every passage of the item (an empty list removes it). */
  replaceItem(item: IndexedItem): Promise<void>;
  /**
   * Batched replaceItem (the search projector's write per batch; optional). Not all or nothing:
   * on a throw the caller treats every listed item as not written (and writes them one by one).
   */
  replaceItems?(items: IndexedItem[]): Promise<void>;
  /**
   * Rewrites the item's filter columns and attributes on its existing passages (no re-chunking); a no-op for an unknown
   * item.
   */
  updateItemMeta(item: Omit<IndexedItem, 'passages' | 'metadata'>): Promise<void>;
  deleteItem(itemId: string): Promise<void>;
  deleteContext(tenantId: string, contextId: string): Promise<void>;
  /**
   * Ranked hits (at most `limit`) and the number of passages that matched (a lower bound with `trackTotal: false`;
   * capped at `countUpTo`).
   */
  search(q: TextSearch): Promise<{ hits: TextHit[]; total: number }>;
  /** Fills in the text and snippet of hits returned without them (only the page shown needs them). */
  hydrate?(hits: TextHit[], q: TextSearch): Promise<void>;
  /** Removes everything (rebuild). */
  drop(): Promise<void>;
  close(): Promise<void>;
}

export class TextIndexError extends Error {
  constructor(
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
    this.name = 'TextIndexError';
  }
}

/**
 * The vector-index port: nearest passages by cosine similarity, isolated by
 * tenant and context. Adapters: LanceDB (search/src/engines/vector-index.ts)
 * and the in-memory index (memory-vectors.ts); both pass
 * tests/src/contracts/vector-index.contract.ts.
 */
export interface VectorRow {
  itemId: string;
  chunkNo: number;
  tenantId: string;
  contextId: string;
  vector: number[];
  chunkText: string;
  contextText: string;
}

export interface VectorHit {
  itemId: string;
  chunkNo: number;
  /** Cosine similarity, clamped to [0, 1]. */
  similarity: number;
  /** Absent when the search asked for no text (`text: false`): `hydrate` fills in the page shown. */
  chunkText?: string;
  contextText?: string;
}

export interface VectorSearch {
  tenantId: string;
  contextId: string;
  vector: number[];
  limit: number;
  itemIds?: string[];
  /** Skip the ANN index (ground truth for recall measurements). */
  exact?: boolean;
  /**
   * The query's text, when the vector is a query's: an index still answering a context from an earlier
   * embedding model's vectors (a model change being rebuilt, search/src/engines/vector-models.ts)
   * embeds it with that model. Other adapters ignore it.
   */
  query?: string;
  /**
   * false: the caller reads texts for the page shown only (`hydrate`), so an adapter may leave them out of
   * the hits. The in-memory index does; LanceDB reads them with the search anyway (a second LanceDB query
   * for the page costs more than the text columns of the hits: measured in docs/search.md).
   */
  text?: boolean;
}

/** The isolation key of hits to hydrate (their texts are read within it only). */
export interface VectorScope {
  tenantId: string;
  contextId: string;
}

export interface VectorIndex {
  init(): Promise<void>;
  replaceItem(itemId: string, rows: VectorRow[]): Promise<void>;
  /**
   * Batched replaceItem (the search projector's write per batch): every listed item's rows are
   * replaced by its new ones (an empty list removes the item). All or nothing per call is not
   * promised (delete, then add): on a throw the caller treats every listed item as not written.
   */
  replaceItems?(items: Array<{ itemId: string; rows: VectorRow[] }>): Promise<void>;
  deleteItem(itemId: string): Promise<void>;
  deleteContext(tenantId: string, contextId: string): Promise<void>;
  search(q: VectorSearch): Promise<VectorHit[]>;
  /**
   * Fills in chunkText / contextText of hits returned without them (`text: false`); a passage deleted meanwhile gets
   * empty texts.
   */
  hydrate(hits: VectorHit[], scope: VectorScope): Promise<void>;
  /** Index upkeep (ANN build / fold-in / retrain, scalar indexes); writers run it in the background on their own. */
  maintain?(o?: { force?: boolean }): Promise<MaintainReport>;
  drop(): Promise<void>;
  close(): Promise<void>;
}

/** What one index upkeep run did (VectorIndex.maintain). */
export interface MaintainReport {
  rows: number;
  /** What was done: 'none' (small table / nothing to do), 'built', 'retrained', 'optimized'. */
  action: 'none' | 'built' | 'retrained' | 'optimized';
  partitions?: number;
  ms: number;
}

/** What a text is embedded for: a search query (latency matters, served first) or a passage being indexed. */
export type EmbedPurpose = 'query' | 'passage';

/**
 * The embeddings port: texts in, unit-length vectors out. Runs in the search
 * projector (off the request path) and once per query on the read side
 * (through `SearchEngines.embedQuery`, which caches). Adapters:
 * search/src/engines/embeddings.ts (the built-in model, an OpenAI-compatible endpoint).
 */
export interface Embedder {
  /** Identifies the vector space: vectors of different models never share a table. */
  readonly model: string;
  readonly dims: number;
  /**
   * Passages one call embeds best (the built-in model: one model call; an endpoint: one request). The search
   * projector's vector queue embeds this many passages per round, shared fairly between tenants.
   */
  readonly passageBatch?: number;
  /**
   * HYBRID's keyword weight α for this model's vector leg (domain/src/search/fusion.ts), when it was tuned for it;
   * else FUSION_TEXT_WEIGHT. A stronger vector leg earns a lower α.
   */
  readonly fusionTextWeight?: number;
  /**
   * The cosine similarity below which HYBRID leaves out a passage only the vector leg found, when it was measured
   * for this model: a query that matches nothing still has nearest neighbours, and without a floor a HYBRID miss
   * would never be empty. Unset: no floor (`minSimilarity` still applies).
   */
  readonly hybridSimilarityFloor?: number;
  /**
   * Set when there is no model behind this embedder (BUILTIN_EMBEDDINGS_MODEL=none): why semantic search is off.
   * Its embed() throws; the search projector then writes no vectors and indexes SEMANTIC and HYBRID items for
   * keywords, and the query side answers without the vector leg.
   */
  readonly unavailable?: string;
  /** `purpose` lets an implementation serve queries before bulk work (the built-in model does); others ignore it. */
  embed(texts: string[], o?: { purpose?: EmbedPurpose }): Promise<number[][]>;
  /** Releases what the embedder holds (the built-in model's thread). Safe to call more than once. */
  close?(): Promise<void>;
  /**
   * Loads what the first call would otherwise wait for (the built-in model); services call it at start, without
   * waiting.
   */
  warm?(): Promise<void>;
}

/**
 * One item known to the search projector: its filter columns, the metadata results show, the revision indexed and its
 * vector count.
 */
export interface CatalogueItem extends SearchableItem {
  accountId: string | null;
  schemaId: string | null;
  externalId: string | null;
  indexMode: string | null;
  revision: number;
  vectors: number;
}

/** What the query side reads of the search catalogue (adapter: search/src/engines/catalogue.ts, SearchCatalogue). */
export interface SearchCatalogueReads {
  items(ids: string[]): Promise<Map<string, CatalogueItem>>;
  /**
   * Ids of the items a filter admits, or null when more than `max` do (the caller then filters after the vector
   * search).
   */
  admitted(f: ItemFilter, max: number): Promise<string[] | null>;
  /** The subset of `ids` a filter admits. */
  admit(f: ItemFilter, ids: string[]): Promise<Set<string>>;
}

/** The engines a search runs on (POST /v1/search); deploy opens them once per process. */
export interface SearchEngines {
  text: TextIndex;
  vectors: VectorIndex;
  embedder: Embedder;
  catalogue: SearchCatalogueReads;
  /** The vector of a query text: `embedder` through a cache of recent query texts. */
  embedQuery(text: string): Promise<number[]>;
}
