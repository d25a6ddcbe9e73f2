import type { Passage } from '@svc/domain/search/chunking';
import type { AttrValue } from '@svc/domain/search/indexable';
import type { FilterClause } from '@svc/domain/search/filters';

/**
 * The text-index port: keyword search over passages. Adapters: PostgreSQL
 * full-text search (embedded default, PGlite or a server) and Elasticsearch.
 * Both pass tests/src/contracts/text-index.contract.ts.
 */
export type SourceKind = 'record' | 'document';
export type TextMode = 'OR' | 'AND' | 'PHRASE' | 'COMPLEX';

/** One searchable item (a record or a document) with its passages; isolation by tenant and context. */
export interface IndexedItem {
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
  /** Rewrites the item's filter columns and attributes on its existing passages (no re-chunking); a no-op for an unknown item. */
  updateItemMeta(item: Omit<IndexedItem, 'passages' | 'metadata'>): Promise<void>;
  deleteItem(itemId: string): Promise<void>;
  deleteContext(tenantId: string, contextId: string): Promise<void>;
  /** Ranked hits (at most `limit`) and the number of passages that matched. */
  search(q: TextSearch): Promise<{ hits: TextHit[]; total: number }>;
  /** Fills in the text and snippet of hits returned without them (only the page shown needs them). */
  hydrate?(hits: TextHit[], q: TextSearch): Promise<void>;
  /** Removes everything (rebuild). */
  drop(): Promise<void>;
  close(): Promise<void>;
}

export class TextIndexError extends Error {
  constructor(message: string, override readonly cause?: unknown) {
    super(message);
    this.name = 'TextIndexError';
  }
}
