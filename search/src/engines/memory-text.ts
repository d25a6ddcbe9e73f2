import {
  type AttrValue,
  contextOf,
  type IndexedItem,
  type ItemFilter,
  parseComplexQuery,
  positiveText,
  type QueryNode,
  type TextHit,
  type TextIndex,
  TextIndexError,
  type TextSearch,
} from '@svc/domain';
import { itemPredicate, type FilterableItem } from './filter-memory';
import { markedSnippet, wordBoundsScratch } from './snippet';
import { BM25, type PassageRow, type PgTextIndex } from './pg-fts';
import { TextArena } from './text-arena';

/**
 * The embedded keyword index served from memory. PostgreSQL full-text search
 * (PgTextIndex) stays the store: every write goes there first, with the same
 * `english` analysis, and each context's passages are loaded from it into an
 * inverted index on its first search. Queries are then answered here with the
 * same matching (OR / AND / PHRASE with slop / COMPLEX) and the same BM25 as the
 * SQL path, so results are identical, in microseconds instead of a scan of the
 * GIN matches; only the page shown reads its text and snippet from SQL
 * (`hydrate`). Exact only where every write of the index goes through this
 * object: the service uses it when the search projector runs in the same
 * process (SERVICE_ROLE=all); split roles query PostgreSQL directly.
 */
const DEFAULT_MAX_PASSAGES = 2_000_000;
/** Passages read and built per step when a context loads (then the event loop gets a turn). */
const LOAD_PAGE_ROWS = 2000;

type Analysed = Array<{ lexeme: string; pos: number }>;

/** A compiled match: lexeme ids of the context (-1 = not in the context). */
type Match =
  | { kind: 'any'; lex: number[] }
  | { kind: 'all'; lex: number[] }
  | { kind: 'phrase'; lex: number[]; gaps: number[]; slop: number }
  | { kind: 'not'; item: Match }
  | { kind: 'and' | 'or'; items: Match[] }
  /** A term of stop words only: ignored inside AND / OR, matches nothing alone (as PostgreSQL does). */
  | { kind: 'empty' };

interface ItemEntry extends FilterableItem {
  itemId: string;
  pids: number[];
}

/** `a` copied into a typed array twice its length. */
function doubled<T extends Int32Array | Uint8Array | Uint16Array>(a: T, make: (n: number) => T): T {
  const b = make(a.length * 2);
  b.set(a);
  return b;
}

// Growable typed arrays: one class per element type, so the hot loops' property reads stay monomorphic.
class I32 {
  a = new Int32Array(16);
  n = 0;
  push(v: number) {
    if (this.n === this.a.length) this.a = doubled(this.a, (n) => new Int32Array(n));
    this.a[this.n++] = v;
  }
}
class U8 {
  a = new Uint8Array(16);
  n = 0;
  push(v: number) {
    if (this.n === this.a.length) this.a = doubled(this.a, (n) => new Uint8Array(n));
    this.a[this.n++] = v;
  }
}
class U16 {
  a = new Uint16Array(16);
  n = 0;
  push(v: number) {
    if (this.n === this.a.length) this.a = doubled(this.a, (n) => new Uint16Array(n));
    this.a[this.n++] = v;
  }
}

/** The passages of one tenant and context, with postings (passage id, term frequency) per lexeme. */
class Shard {
  readonly lexIds = new Map<string, number>();
  readonly postPid: I32[] = [];
  readonly postTf: I32[] = [];
  /** Per lexeme: the highest term frequency it has had in a passage (not lowered by removals: an upper bound). */
  readonly tfMax: number[] = [];
  readonly df: number[] = [];
  readonly items: ItemEntry[] = [];
  readonly itemIndex = new Map<string, number>();
  /**
   * items[0..ordered) are in ascending item id order (as a load from PostgreSQL, ORDER BY item_id, leaves
   * them when the collation agrees, and as ids that grow keep them): ranking ties between two of them
   * compare indexes instead of id strings.
   */
  ordered = 0;
  // per passage id
  readonly pItem = new I32();
  readonly pChunk = new I32();
  readonly pLen = new I32();
  readonly pAlive = new U8();
  /**
   * Chunk texts, and the context texts that chunking did not make (the others are rebuilt from the item's
   * chunks), in an arena outside the JavaScript heap (ids per passage; -1: no stored context).
   */
  readonly texts = new TextArena();
  readonly pText = new I32();
  readonly pContext = new I32();
  /** Whether the chunk text is plain (PLAIN_TEXT), worked out once: its snippet can be marked from positions. */
  readonly pPlain = new U8();
  /**
   * Per passage: its lexeme ids (ascending) and, for each, its positions (phrases), in flat arrays (no
   * objects per passage for the collector to trace): the terms of passage p are tLex[pTermFrom[p]..pTermFrom[p+1]),
   * the positions of term t are tPos[tPosFrom[t]..tPosFrom[t+1]) (a sentinel closes both; a removed passage's
   * terms stay until the shard reloads).
   */
  readonly pTermFrom = new I32();
  readonly tLex = new I32();
  readonly tPosFrom = new I32();
  readonly tPos = new U16();
  alive = 0;
  totalLen = 0;
  dead = 0;
  /**
   * Per-search scratch (searches are synchronous, so one set per shard), with the BM25 length normalisation:
   * sn[2p] the score of passage p, sn[2p + 1] its k1 × (1 − b + b × len / avgdl), side by side so that a
   * posting's two random reads share one cache line. Then candidate ids and item verdicts.
   */
  sn = new Float64Array(0);
  /** Passages whose normalisation sn holds. */
  snN = 0;
  cands = new Int32Array(0);
  verdict = new Int8Array(0);
  kth = new Float64Array(0);
  /** The least normalisation of the passages: with tfMax, a bound on any passage's BM25 term for a lexeme. */
  normMin = 0;
  normAvgdl = NaN;
  normN = 0;

  get passages() {
    return this.pItem.n;
  }

  lexId(lexeme: string): number {
    let id = this.lexIds.get(lexeme);
    if (id === undefined) {
      id = this.df.length;
      this.lexIds.set(lexeme, id);
      this.df.push(0);
      this.tfMax.push(0);
      this.postPid.push(new I32());
      this.postTf.push(new I32());
    }
    return id;
  }

  /** Replaces every passage of an item (rows: its passages, possibly none). */
  replace(itemId: string, rows: PassageRow[]) {
    this.remove(itemId);
    if (!rows.length) return;
    const r0 = rows[0];
    const entry: ItemEntry = { itemId, pids: [], ...filterable(r0) };
    let idx = this.itemIndex.get(itemId);
    if (idx === undefined) {
      idx = this.items.length;
      if (this.ordered === idx && (idx === 0 || this.items[idx - 1].itemId < itemId)) this.ordered += 1;
      this.items.push(entry);
      this.itemIndex.set(itemId, idx);
    } else this.items[idx] = entry;
    const chunks = rows.map((r) => r.chunk_text);
    rows.forEach((r, i) => entry.pids.push(this.addPassage(idx, r, r.context_text !== contextOf(chunks, i))));
  }

  private addPassage(itemIdx: number, r: PassageRow, ownContext: boolean): number {
    const pid = this.pItem.n;
    this.pItem.push(itemIdx);
    this.pChunk.push(Number(r.chunk_no));
    const len = Number(r.len);
    this.pLen.push(len);
    this.pAlive.push(1);
    this.pText.push(this.texts.add(r.chunk_text));
    this.pContext.push(ownContext ? this.texts.add(r.context_text) : -1);
    this.pPlain.push(PLAIN_TEXT.test(r.chunk_text) && !JOINED_WORDS.test(r.chunk_text) ? 1 : 0);
    const terms = parseTsvector(r.tsv)
      .map(([lexeme, pos]) => [this.lexId(lexeme), pos] as const)
      .sort((a, b) => a[0] - b[0]);
    if (pid === 0) {
      this.pTermFrom.push(0);
      this.tPosFrom.push(0);
    }
    // The sentinels of the previous passage become this passage's starts.
    this.pTermFrom.n -= 1;
    this.tPosFrom.n -= 1;
    this.pTermFrom.push(this.tLex.n);
    for (const [id, ps] of terms) {
      this.tLex.push(id);
      this.tPosFrom.push(this.tPos.n);
      for (const p of ps) this.tPos.push(p);
      this.postPid[id].push(pid);
      this.postTf[id].push(ps.length);
      if (ps.length > this.tfMax[id]) this.tfMax[id] = ps.length;
      this.df[id] += 1;
    }
    this.pTermFrom.push(this.tLex.n);
    this.tPosFrom.push(this.tPos.n);
    this.alive += 1;
    this.totalLen += len;
    return pid;
  }

  remove(itemId: string) {
    const idx = this.itemIndex.get(itemId);
    if (idx === undefined) return;
    const entry = this.items[idx];
    for (const pid of entry.pids) {
      if (!this.pAlive.a[pid]) continue;
      this.pAlive.a[pid] = 0;
      for (let t = this.pTermFrom.a[pid], to = this.pTermFrom.a[pid + 1]; t < to; t++) this.df[this.tLex.a[t]] -= 1;
      this.pText.a[pid] = this.pContext.a[pid] = -1;
      this.alive -= 1;
      this.totalLen -= this.pLen.a[pid];
      this.dead += 1;
    }
    entry.pids = [];
  }

  updateMeta(itemId: string, m: FilterableItem) {
    const idx = this.itemIndex.get(itemId);
    if (idx !== undefined) Object.assign(this.items[idx], m);
  }

  /** Chunk and context text of an item's passage, or null when it is not here. */
  text(itemId: string, chunkNo: number): { chunkText: string; contextText: string; pid: number } | null {
    const idx = this.itemIndex.get(itemId);
    if (idx === undefined) return null;
    const pids = this.items[idx].pids;
    let at = -1;
    for (let i = 0; i < pids.length; i++)
      if (this.pChunk.a[pids[i]] === chunkNo) {
        at = i;
        break;
      }
    if (at < 0) return null;
    const pid = pids[at];
    const chunkText = this.texts.get(this.pText.a[pid]);
    if (this.pContext.a[pid] >= 0) return { chunkText, contextText: this.texts.get(this.pContext.a[pid]), pid };
    // contextOf reads the neighbours only
    const chunk = (p: number) => this.texts.get(this.pText.a[p]);
    const near = [
      ...(at > 0 ? [chunk(pids[at - 1])] : []),
      chunkText,
      ...(at < pids.length - 1 ? [chunk(pids[at + 1])] : []),
    ];
    return { chunkText, contextText: contextOf(near, at > 0 ? 1 : 0), pid };
  }

  /**
   * Which words of passage `pid` match lexemes `lex` (shard ids), from the positions in its tsvector:
   * word i is at position i + 1 when the text is plain (see PLAIN_TEXT); null when that cannot be
   * relied on (then the words are looked up one by one).
   */
  matchedWords(
    pid: number,
    text: string,
    bounds: ArrayLike<number>,
    lex: number[],
    firsts: string[],
  ): Uint8Array | null {
    if (!this.pPlain.a[pid]) return null;
    const words = bounds.length >> 1;
    const hit = new Uint8Array(words);
    for (let j = 0; j < lex.length; j++) {
      if (lex[j] < 0) continue;
      const pos = this.positions(pid, lex[j]);
      if (pos.length >= 255) return null; // a tsvector keeps 256 positions per lexeme
      for (const p of pos) {
        // A word is marked only where it begins as its lexeme does (a check that the positions line up).
        if (p < 1 || p > words || (text.charCodeAt(bounds[2 * (p - 1)]) | 0x20) !== firsts[j].charCodeAt(0))
          return null;
        hit[p - 1] = 1;
      }
    }
    return hit;
  }

  /** Index (in tLex) of a lexeme among a live passage's terms, or -1 when absent. */
  termAt(pid: number, lexId: number): number {
    if (!this.pAlive.a[pid]) return -1;
    const lex = this.tLex.a;
    let lo = this.pTermFrom.a[pid];
    let hi = this.pTermFrom.a[pid + 1] - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const v = lex[mid];
      if (v === lexId) return mid;
      if (v < lexId) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** Positions of a lexeme in a passage (empty when absent). */
  positions(pid: number, lexId: number): Uint16Array {
    const at = this.termAt(pid, lexId);
    if (at < 0) return EMPTY_POS;
    return this.tPos.a.subarray(this.tPosFrom.a[at], this.tPosFrom.a[at + 1]);
  }

  /** Term frequency of a lexeme in a passage (its position count; 0 when absent). */
  tf(pid: number, lexId: number): number {
    const at = this.termAt(pid, lexId);
    if (at < 0) return 0;
    return this.tPosFrom.a[at + 1] - this.tPosFrom.a[at];
  }
}
const EMPTY_POS = new Uint16Array(0);

/**
 * Text whose words ([A-Za-z0-9] runs) are exactly the tokens of PostgreSQL's parser, one position each
 * (stop words included): ASCII letters and digits, white space and sentence punctuation, and no
 * punctuation joining two words (decimals, hosts, "e.g." are single tokens there).
 */
const PLAIN_TEXT = /^[A-Za-z0-9 \t\r\n.,;:!?()"]*$/;
const JOINED_WORDS = /[A-Za-z0-9][.,:][A-Za-z0-9]/;

const filterable = (
  r: Pick<PassageRow, 'source_type' | 'type_name' | 'folder_id' | 'user_id' | 'scopes' | 'attrs' | 'created_at'>,
): FilterableItem => ({
  sourceType: r.source_type,
  typeName: r.type_name,
  folderId: r.folder_id,
  userId: r.user_id,
  scopes: r.scopes,
  attrs: r.attrs as Record<string, AttrValue>,
  createdAt: new Date(r.created_at).getTime(),
});

/** Parses PostgreSQL's text form of a tsvector: `'lexeme':1,5 'it''s':2A`. */
export function parseTsvector(s: string): Array<[string, number[]]> {
  const out: Array<[string, number[]]> = [];
  let i = 0;
  while (i < s.length) {
    if (s[i] !== "'") {
      i++;
      continue;
    }
    i++;
    let lex = '';
    for (;;) {
      const c = s[i];
      if (c === undefined) break;
      if (c === '\\') {
        lex += s[i + 1] ?? '';
        i += 2;
      } else if (c === "'") {
        if (s[i + 1] === "'") {
          lex += "'";
          i += 2;
        } else {
          i++;
          break;
        }
      } else {
        lex += c;
        i++;
      }
    }
    const pos: number[] = [];
    if (s[i] === ':') {
      i++;
      for (;;) {
        let n = 0;
        while (i < s.length && s.charCodeAt(i) >= 48 && s.charCodeAt(i) <= 57) n = n * 10 + s.charCodeAt(i++) - 48;
        while (i < s.length && /[A-D]/.test(s[i])) i++; // weight
        pos.push(n);
        if (s[i] === ',') i++;
        else break;
      }
    }
    out.push([lex, pos]);
  }
  return out;
}

/**
 * The k-th best score of the candidates (1 ≤ k ≤ nc) in one pass with a min-heap of k scores (s.kth): past the
 * first few hundred candidates most are one comparison with the heap's least. Quickselect over a copy of the
 * scores cost 13% more search time on the bench's 100,000 passages (0.34 vs 0.30 ms a query, alternating runs,
 * 2026-11-27): the copy is a second random gather of the scores, then a partition pass or more.
 */
function kthScore(sn: Float64Array, cands: Int32Array, nc: number, k: number, s: Shard): number {
  if (s.kth.length < k) s.kth = new Float64Array(Math.max(k, s.kth.length * 2));
  const heap = s.kth;
  for (let c = 0; c < k; c++) {
    let i = c;
    const v = sn[2 * cands[c]];
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (heap[p] <= v) break;
      heap[i] = heap[p];
      i = p;
    }
    heap[i] = v;
  }
  for (let c = k; c < nc; c++) {
    const v = sn[2 * cands[c]];
    if (v <= heap[0]) continue;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= k) break;
      const r = l + 1;
      const m = r < k && heap[r] < heap[l] ? r : l;
      if (heap[m] >= v) break;
      heap[i] = heap[m];
      i = m;
    }
    heap[i] = v;
  }
  return heap[0];
}

/** The best `k` (score desc, item id asc, chunk asc) of the first `nc` candidate passage ids. */
function topK(cands: Int32Array, nc: number, sn: Float64Array, s: Shard, k: number): number[] {
  k = Math.min(k, nc);
  if (k <= 0) return [];
  const items = s.items;
  const pItem = s.pItem.a;
  const pChunk = s.pChunk.a;
  const ordered = s.ordered;
  const order = (a: number, b: number) => {
    if (sn[2 * a] !== sn[2 * b]) return sn[2 * b] - sn[2 * a];
    const ia = pItem[a];
    const ib = pItem[b];
    if (ia !== ib) return (ia < ordered && ib < ordered ? ia < ib : items[ia].itemId < items[ib].itemId) ? -1 : 1;
    return pChunk[a] - pChunk[b];
  };
  const out: number[] = [];
  if (k === nc) for (let c = 0; c < nc; c++) out.push(cands[c]);
  else {
    // The k-th best score, then every candidate at or above it (ties at the k-th are ordered below).
    const kth = kthScore(sn, cands, nc, k, s);
    for (let c = 0; c < nc; c++) if (sn[2 * cands[c]] >= kth) out.push(cands[c]);
  }
  return out.sort(order).slice(0, k);
}

export class MemoryTextIndex implements TextIndex {
  readonly engine = 'postgres' as const;
  /** Loaded (or loading) contexts, least recently searched first. */
  private readonly shards = new Map<string, { ready: Promise<Shard>; shard?: Shard }>();
  private writes: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly pg: PgTextIndex,
    private readonly o: { maxPassages?: number; loadPageRows?: number; log?: (m: string) => void } = {},
  ) {}

  init(): Promise<void> {
    return this.pg.init();
  }

  /**
   * Writes and shard loads run one at a time: a load reads every write queued
   * before it from PostgreSQL, and every write queued after it finds the shard
   * ready and applies itself there.
   */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.writes.then(fn, fn);
    this.writes = run.catch(() => {});
    return run;
  }

  /** Applies a change to a ready shard; a shard that could not follow is dropped and reloads on its next search. */
  private async follow(key: string, apply: (s: Shard) => Promise<void> | void) {
    const e = this.shards.get(key);
    if (!e?.shard) return;
    try {
      await apply(e.shard);
      // Replaced passages stay as tombstones in the postings; reload from PostgreSQL once they outnumber the live ones.
      if (e.shard.dead > Math.max(e.shard.alive, 10_000)) this.shards.delete(key);
    } catch {
      this.shards.delete(key);
    }
  }

  replaceItem(item: IndexedItem): Promise<void> {
    return this.replaceItems([item]);
  }

  /**
   * One PostgreSQL write for the batch (PgTextIndex.replaceItems), then each loaded shard follows with one read of the
   * batch's rows.
   */
  replaceItems(items: IndexedItem[]): Promise<void> {
    return this.serial(async () => {
      await this.pg.replaceItems(items);
      const byShard = new Map<string, IndexedItem[]>();
      for (const item of items) {
        const key = `${item.tenantId}/${item.contextId}`;
        if (this.shards.get(key)?.shard) byShard.set(key, [...(byShard.get(key) ?? []), item]);
      }
      for (const [key, group] of byShard) {
        const withText = group.filter((i) => i.passages.length).map((i) => i.itemId);
        const rows = withText.length ? await this.pg.passageRows({ itemIds: withText }) : [];
        await this.follow(key, (s) => {
          for (const item of group)
            s.replace(
              item.itemId,
              rows.filter((r) => r.item_id === item.itemId),
            );
        });
      }
    });
  }

  updateItemMeta(item: Omit<IndexedItem, 'passages' | 'metadata'>): Promise<void> {
    return this.serial(async () => {
      await this.pg.updateItemMeta(item);
      await this.follow(`${item.tenantId}/${item.contextId}`, (s) =>
        s.updateMeta(item.itemId, {
          sourceType: item.sourceType,
          typeName: item.typeName,
          folderId: item.folderId,
          userId: item.userId,
          scopes: item.scopes,
          attrs: item.attrs,
          createdAt: Date.parse(item.createdAt),
        }),
      );
    });
  }

  deleteItem(itemId: string): Promise<void> {
    return this.serial(async () => {
      await this.pg.deleteItem(itemId);
      for (const key of [...this.shards.keys()]) await this.follow(key, (s) => s.remove(itemId));
    });
  }

  deleteContext(tenantId: string, contextId: string): Promise<void> {
    return this.serial(async () => {
      await this.pg.deleteContext(tenantId, contextId);
      this.shards.delete(`${tenantId}/${contextId}`);
    });
  }

  drop(): Promise<void> {
    return this.serial(async () => {
      await this.pg.drop();
      this.shards.clear();
    });
  }

  /** Frees every loaded context; each reloads from PostgreSQL on its next search. */
  unload(): void {
    this.shards.clear();
  }

  async close(): Promise<void> {
    this.shards.clear();
    await this.pg.close();
  }

  private shard(tenantId: string, contextId: string): Promise<Shard> {
    const key = `${tenantId}/${contextId}`;
    const known = this.shards.get(key);
    if (known) {
      this.shards.delete(key);
      this.shards.set(key, known);
      return known.ready;
    }
    const entry: { ready: Promise<Shard>; shard?: Shard } = {
      ready: this.serial(async () => {
        const s = new Shard();
        const t0 = performance.now();
        // Read and built a page at a time, yielding between pages: a large context's load does not hold the
        // event loop (other requests go on; searches of this context wait for it, writes queue behind it).
        let held: PassageRow[] = []; // the last item of a page, which may continue on the next one
        for (let after: { itemId: string; chunkNo: number } | null = null; ;) {
          const limit = this.o.loadPageRows ?? LOAD_PAGE_ROWS;
          const rows = await this.pg.passageRows({ tenantId, contextId }, { after, limit });
          const all = held.concat(rows);
          const last = rows.length === limit ? all[all.length - 1].item_id : null;
          let i = 0;
          for (; i < all.length;) {
            if (all[i].item_id === last) break;
            let j = i + 1;
            while (j < all.length && all[j].item_id === all[i].item_id) j++;
            s.replace(all[i].item_id, all.slice(i, j));
            i = j;
          }
          held = all.slice(i);
          if (rows.length < limit) break;
          after = { itemId: rows[rows.length - 1].item_id, chunkNo: rows[rows.length - 1].chunk_no };
          await new Promise((r) => setImmediate(r));
        }
        s.texts.trim();
        this.o.log?.(
          `keyword index: loaded ${s.passages} passages of ${key} in ${Math.round(performance.now() - t0)} ms`,
        );
        entry.shard = s;
        this.evict(key);
        return s;
      }),
    };
    entry.ready.catch(() => this.shards.get(key) === entry && this.shards.delete(key));
    this.shards.set(key, entry);
    return entry.ready;
  }

  /** Keeps the loaded passages under the cap, dropping the least recently searched contexts (never `keep`). */
  private evict(keep: string) {
    let total = 0;
    for (const e of this.shards.values()) total += e.shard?.passages ?? 0;
    for (const [k, e] of this.shards) {
      if (total <= (this.o.maxPassages ?? DEFAULT_MAX_PASSAGES)) break;
      if (k === keep || !e.shard) continue;
      this.shards.delete(k);
      total -= e.shard.passages;
    }
  }

  /** Lexemes of texts, analysed by PostgreSQL (remembered there). */
  private async analyse(texts: string[]): Promise<Map<string, Analysed>> {
    const got = await this.pg.analyse(texts);
    return new Map(texts.map((t, i) => [t, got[i]]));
  }

  async search(q: TextSearch): Promise<{ hits: TextHit[]; total: number }> {
    try {
      const ast = q.textMode === 'COMPLEX' ? parseComplexQuery(q.query) : null;
      if (q.textMode === 'COMPLEX' && !ast) return { hits: [], total: 0 };
      const positive = ast ? positiveText(ast).join(' ') : q.query;
      const texts = [positive, ...(ast ? nodeTexts(ast) : [])];
      const [lx, shard] = await Promise.all([this.analyse(texts), this.shard(q.filter.tenantId, q.filter.contextId)]);
      const scoring = lx.get(positive)!;
      if (!ast && !scoring.length) return { hits: [], total: 0 };
      const id = (l: string) => shard.lexIds.get(l) ?? -1;
      let match: Match;
      if (ast) match = compile(ast, lx, id);
      else if (q.textMode === 'OR') match = { kind: 'any', lex: scoring.map((l) => id(l.lexeme)) };
      else if (q.textMode === 'AND') match = { kind: 'all', lex: scoring.map((l) => id(l.lexeme)) };
      else match = phrase(scoring, id, q.slop);
      return run(
        shard,
        q,
        match,
        [...new Set(scoring.map((l) => id(l.lexeme)))].filter((x) => x >= 0),
      );
    } catch (e) {
      throw e instanceof TextIndexError ? e : new TextIndexError(`text search failed: ${(e as Error).message}`, e);
    }
  }

  /** Text from memory; snippets marked against PostgreSQL's analysis (remembered per word). */
  async hydrate(hits: TextHit[], q: TextSearch): Promise<void> {
    const shard = this.shards.get(`${q.filter.tenantId}/${q.filter.contextId}`)?.shard;
    const found: Array<[TextHit, { chunkText: string; contextText: string; pid: number }]> = [];
    for (const h of hits) {
      if (h.chunkText !== undefined) continue;
      const t = shard?.text(h.itemId, h.chunkNo);
      if (t) found.push([h, t]);
    }
    try {
      // Snippets from the passages' own positions where the text is plain; the rest by word (pg.snippets).
      const lexemes = await this.pg.markedLexemes(q);
      const ids = shard ? lexemes.map((l) => shard.lexIds.get(l) ?? -1) : [];
      const rest: typeof found = [];
      for (const [h, t] of found) {
        const bounds = shard!.pPlain.a[t.pid] ? wordBoundsScratch(t.chunkText) : null; // used before the next call
        const hit = bounds && shard!.matchedWords(t.pid, t.chunkText, bounds, ids, lexemes);
        if (hit)
          Object.assign(h, {
            chunkText: t.chunkText,
            contextText: t.contextText,
            snippet: markedSnippet(t.chunkText, bounds!, hit),
          });
        else rest.push([h, t]);
      }
      if (rest.length) {
        const mark = await this.pg.snippets(
          rest.map(([, t]) => t.chunkText),
          q,
        );
        for (const [h, t] of rest)
          Object.assign(h, { chunkText: t.chunkText, contextText: t.contextText, snippet: mark(t.chunkText) });
      }
    } catch (e) {
      throw new TextIndexError(`text search failed: ${(e as Error).message}`, e);
    }
    await this.pg.hydrate(hits, q); // any not in memory (removed meanwhile)
  }
}

/** Texts of the COMPLEX query's terms and phrases (each analysed separately, as plainto / phraseto_tsquery do). */
function nodeTexts(n: QueryNode): string[] {
  switch (n.kind) {
    case 'term':
    case 'phrase':
      return [n.text];
    case 'not':
      return nodeTexts(n.item);
    default:
      return n.items.flatMap(nodeTexts);
  }
}

function phrase(lx: Analysed, id: (l: string) => number, slop: number): Match {
  if (!lx.length) return { kind: 'empty' };
  return { kind: 'phrase', lex: lx.map((l) => id(l.lexeme)), gaps: lx.slice(1).map((l, i) => l.pos - lx[i].pos), slop };
}

function compile(n: QueryNode, lx: Map<string, Analysed>, id: (l: string) => number): Match {
  switch (n.kind) {
    case 'term': {
      const l = lx.get(n.text)!;
      return l.length ? { kind: 'all', lex: l.map((x) => id(x.lexeme)) } : { kind: 'empty' };
    }
    case 'phrase':
      return phrase(lx.get(n.text)!, id, 0);
    case 'not': {
      const item = compile(n.item, lx, id);
      return item.kind === 'empty' ? item : { kind: 'not', item };
    }
    default: {
      const items = n.items.map((i) => compile(i, lx, id)).filter((m) => m.kind !== 'empty');
      return items.length === 0 ? { kind: 'empty' } : items.length === 1 ? items[0] : { kind: n.kind, items };
    }
  }
}

/** The passages a match admits, as a bit per passage id (alive passages only). */
function evaluate(s: Shard, m: Match): Uint8Array {
  const n = s.passages;
  const out = new Uint8Array(n);
  switch (m.kind) {
    case 'empty':
      return out;
    case 'any':
      for (const l of m.lex) {
        if (l < 0) continue;
        const pids = s.postPid[l];
        for (let i = 0; i < pids.n; i++) out[pids.a[i]] = s.pAlive.a[pids.a[i]];
      }
      return out;
    case 'all':
    case 'phrase': {
      const lex = [...new Set(m.lex)];
      if (lex.some((l) => l < 0)) return out;
      lex.sort((a, b) => s.df[a] - s.df[b]);
      for (let k = 0; k < lex.length; k++) {
        const pids = s.postPid[lex[k]];
        for (let i = 0; i < pids.n; i++) {
          const pid = pids.a[i];
          if (out[pid] === k && s.pAlive.a[pid]) out[pid] = k + 1;
        }
      }
      const want = lex.length;
      for (let pid = 0; pid < n; pid++)
        out[pid] = out[pid] === want && (m.kind === 'all' || phraseAt(s, pid, m.lex, m.gaps, m.slop)) ? 1 : 0;
      return out;
    }
    case 'not': {
      const inner = evaluate(s, m.item);
      for (let pid = 0; pid < n; pid++) out[pid] = s.pAlive.a[pid] && !inner[pid] ? 1 : 0;
      return out;
    }
    case 'and':
    case 'or': {
      const parts = m.items.map((i) => evaluate(s, i));
      for (let pid = 0; pid < n; pid++)
        out[pid] = (m.kind === 'and' ? parts.every((p) => p[pid]) : parts.some((p) => p[pid])) ? 1 : 0;
      return out;
    }
  }
}

/** Whether the lexemes occur in order with the query's gaps, the extra distances summing to at most `slop`. */
function phraseAt(s: Shard, pid: number, lex: number[], gaps: number[], slop: number): boolean {
  const pos = lex.map((l) => s.positions(pid, l));
  const from = (i: number, prev: number, left: number): boolean => {
    if (i === lex.length) return true;
    const min = prev + gaps[i - 1];
    for (const p of pos[i]) if (p >= min && p - min <= left && from(i + 1, p, left - (p - min))) return true;
    return false;
  };
  for (const p of pos[0]) if (from(1, p, slop)) return true;
  return false;
}

/** Whether a filter admits every item of its context (nothing narrows it; the same cases as itemPredicate). */
function admitsAll(f: ItemFilter): boolean {
  return (
    !f.sourceTypes?.length &&
    f.typeName === undefined &&
    !f.folderIds &&
    !f.userIds?.length &&
    !f.scopesAll?.length &&
    !f.scopesAny?.length &&
    !f.createdAfter &&
    !f.createdBefore &&
    !f.clauses.length
  );
}

/**
 * The passages of an AND / PHRASE match (alive and admitted), driven by the rarest lexeme's postings:
 * each is checked for the other lexemes (and the phrase) in its own terms. Written to `out`; returns the count.
 */
function conjunction(
  s: Shard,
  m: Extract<Match, { kind: 'all' | 'phrase' }>,
  admitted: (pid: number) => boolean,
  out: Int32Array,
): number {
  const lex = [...new Set(m.lex)];
  if (!lex.length || lex.some((l) => l < 0)) return 0;
  lex.sort((a, b) => s.df[a] - s.df[b]);
  const alive = s.pAlive.a;
  const pids = s.postPid[lex[0]];
  let nc = 0;
  next: for (let i = 0; i < pids.n; i++) {
    const pid = pids.a[i];
    if (!alive[pid]) continue;
    for (let k = 1; k < lex.length; k++) if (s.termAt(pid, lex[k]) < 0) continue next;
    if (m.kind === 'phrase' && !phraseAt(s, pid, m.lex, m.gaps, m.slop)) continue;
    if (admitted(pid)) out[nc++] = pid;
  }
  return nc;
}

/**
 * One lexeme's BM25 terms (idf `w`) added to its postings' scores; a passage is a new
 * candidate while its score is 0. A small function of its own: the hottest loop of a keyword query,
 * compiled apart from run's many cases.
 */
function accumulate(
  pa: Int32Array,
  tfs: Int32Array,
  m: number,
  w: number,
  sn: Float64Array,
  cands: Int32Array,
  nc: number,
): number {
  const k1p1 = BM25.k1 + 1;
  for (let i = 0; i < m; i++) {
    const pid = pa[i];
    if (!(sn[2 * pid] > 0)) {
      sn[2 * pid] = 0;
      cands[nc++] = pid;
    }
    const tf = tfs[i];
    sn[2 * pid] += (w * (tf * k1p1)) / (tf + sn[2 * pid + 1]);
  }
  return nc;
}

/**
 * Matching, filtering and BM25 over one shard; synchronous so it sees one state of the index.
 * Work is proportional to the postings of the query's lexemes (a COMPLEX query with NOT / AND / OR
 * groups also makes a pass over the shard's passage ids); scores, candidates and item verdicts live
 * in the shard's scratch arrays (scores are back to 0 after every search).
 */
function run(s: Shard, q: TextSearch, match: Match, scoring: number[]): { hits: TextHit[]; total: number } {
  const n = s.passages;
  if (s.snN < n) {
    const size = Math.max(n, s.snN * 2);
    const sn = new Float64Array(2 * size);
    sn.set(s.sn);
    s.sn = sn;
    s.snN = size;
    s.cands = new Int32Array(size);
  }
  if (s.verdict.length < s.items.length) s.verdict = new Int8Array(Math.max(s.items.length, s.verdict.length * 2));
  const sn = s.sn;
  const cands = s.cands;
  const verdict = s.verdict; // per item: 0 unknown, 1 admitted, -1 not
  verdict.fill(0, 0, s.items.length);
  const admit = itemPredicate(q.filter);
  const items = s.items;
  const pItem = s.pItem.a;
  const pLen = s.pLen.a;
  const alive = s.pAlive.a;
  const admitted = (pid: number) => {
    const it = pItem[pid];
    let v = verdict[it];
    if (v === 0) v = verdict[it] = admit(items[it]) ? 1 : -1;
    return v === 1;
  };
  const avgdl = Math.max(s.totalLen / (s.alive || 1), 1);
  const { k1, b } = BM25;
  // BM25's length normalisation per passage, k1 × (1 − b + b × len / avgdl): kept until a write changes avgdl
  // (the same expression as inline, so the same doubles).
  if (s.normAvgdl !== avgdl || s.normN !== n) {
    let least = Infinity;
    for (let pid = 0; pid < n; pid++) {
      const v = (sn[2 * pid + 1] = k1 * (1 - b + (b * pLen[pid]) / avgdl));
      if (v < least) least = v;
    }
    s.normMin = least;
    s.normAvgdl = avgdl;
    s.normN = n;
  }
  const idf = (l: number) => Math.log(1 + (s.alive - s.df[l] + 0.5) / (s.df[l] + 0.5));
  let nc = 0;
  let total = 0;
  if (match.kind === 'any') {
    // OR: the candidates are the admitted passages of the scoring lexemes' postings; without an exact count
    // (trackTotal false) only those that can still reach the top `limit` are scored.
    const every = s.dead === 0 && admitsAll(q.filter);
    // With countUpTo the count must be exact that far: a skip then waits until that many are known to match.
    const prune = q.trackTotal === false || q.countUpTo !== undefined;
    const r = scoreOr(
      s,
      scoring,
      scoring.map(idf),
      q.limit,
      every ? null : (pid) => alive[pid] === 1 && admitted(pid),
      sn,
      cands,
      prune,
      q.countUpTo ?? 0,
    );
    nc = r.nc;
    total = r.matched;
  } else {
    if (match.kind === 'all' || match.kind === 'phrase') nc = conjunction(s, match, admitted, cands);
    else {
      const mask = evaluate(s, match);
      for (let pid = 0; pid < n; pid++) if (mask[pid] && admitted(pid)) cands[nc++] = pid;
    }
    // Each candidate's term frequencies from its own terms (the same sums, in the same order, as over the postings).
    const ws = scoring.map(idf);
    for (let c = 0; c < nc; c++) {
      const pid = cands[c];
      sn[2 * pid] = 0;
      for (let j = 0; j < scoring.length; j++) {
        const tf = s.tf(pid, scoring[j]);
        if (tf) sn[2 * pid] += (ws[j] * (tf * (k1 + 1))) / (tf + sn[2 * pid + 1]);
      }
    }
    total = nc;
  }
  const top = topK(cands, nc, sn, s, q.limit);
  const hits = top.map((pid) => ({ itemId: items[pItem[pid]].itemId, chunkNo: s.pChunk.a[pid], score: sn[2 * pid] }));
  for (let c = 0; c < nc; c++) sn[2 * cands[c]] = 0;
  return { hits, total: q.countUpTo !== undefined ? Math.min(total, q.countUpTo) : total };
}

/**
 * A lexeme's postings are skipped (looked up by galloping instead) only when this many times longer than the
 * candidates: a gallop costs several scanned postings.
 */
const PRUNE_RATIO = 6;

/**
 * An OR query's candidates for its best `k`, skipping the long postings of common words where they
 * cannot change the top `k` (term-at-a-time with the "continue" strategy of Moffat & Zobel, 1996):
 * lexemes are taken shortest postings first; before a long one, when the k-th best score so far is above
 * what every lexeme left could still add (its bound: idf × the most its BM25 term can be, from tfMax
 * and normMin), no passage outside the candidates can reach the top `k`. The candidates that still may
 * are then kept, and the lexemes left are found in their postings by galloping (sorted ids: a few steps
 * each, where the scan would read every posting). Then the candidates near the top `k` are scored again
 * as the exhaustive loop sums them (`scoring`'s order), so hits and scores are the same to the bit; a
 * candidate leaves only when its bound is under the k-th score by a margin (ties at the k-th stay).
 * Without `prune` (an exact count wanted) every posting is scored, in `scoring`'s order: the exhaustive loop.
 * Writes the candidates to `cands`, their scores in `sn`; `matched` counts the matching passages
 * seen (a lower bound of all matches; all of them without `prune`). With `countTo` the skip waits until
 * that many passages are known to match (the candidates so far; with no filter, also any one lexeme's
 * postings, all of them live matches), and `matched` is then at least `countTo`: exact up to it.
 */
function scoreOr(
  s: Shard,
  scoring: number[],
  ws: number[],
  k: number,
  keep: ((pid: number) => boolean) | null,
  sn: Float64Array,
  cands: Int32Array,
  prune: boolean,
  countTo = 0,
): { nc: number; matched: number } {
  const k1p1 = BM25.k1 + 1;
  const m = scoring.length;
  if (!m || k <= 0) return { nc: 0, matched: 0 };
  // Shortest postings first when a long list could be skipped (it holds PRUNE_RATIO × the postings before it); else
  // in scoring's order, which sums every score as the exhaustive loop does (nothing to score again).
  const lens = scoring.map((l) => s.postPid[l].n);
  let order = scoring.map((_, j) => j).sort((a, b) => lens[a] - lens[b]);
  let all = 0;
  for (const n of lens) all += n;
  let may = false;
  for (let i = 0, before = 0; prune && i < m && !may; before += lens[order[i++]])
    may = before >= k && all - before > PRUNE_RATIO * before;
  if (!may) order = order.map((_, j) => j);
  // From order[i] on: the postings left (leftLen[i]) and what they could add to a score at most (leftBound[i]:
  // each lexeme's idf × the largest BM25 term it can give, from tfMax and normMin). Suffix sums, so a long query
  // (4,000 characters) costs one pass, not one per lexeme.
  const leftLen = new Float64Array(may ? m + 1 : 0);
  const leftBound = new Float64Array(may ? m + 1 : 0);
  for (let i = may ? m - 1 : -1; i >= 0; i--) {
    const j = order[i];
    const tfMax = s.tfMax[scoring[j]];
    leftLen[i] = leftLen[i + 1] + lens[j];
    leftBound[i] = leftBound[i + 1] + (ws[j] * (tfMax * k1p1)) / (tfMax + s.normMin);
  }
  const kthOf = (n: number) => kthScore(sn, cands, n, k, s);
  /**
   * Keeps the candidates whose score plus `more` is at least `floor` (the others' scores back to 0); returns their
   * count.
   */
  const keepAbove = (n: number, floor: number, more = 0) => {
    let kept = 0;
    for (let c = 0; c < n; c++) {
      const pid = cands[c];
      if (sn[2 * pid] + more < floor) sn[2 * pid] = 0;
      else cands[kept++] = pid;
    }
    return kept;
  };
  // Passages known to match whatever is skipped: with no filter every posting is a live match, so the longest list's
  // length.
  let longest = 0;
  if (!keep) for (const n of lens) longest = Math.max(longest, n);
  let nc = 0;
  let done = 0; // order[0..done) accumulated over their postings
  for (; done < m; done++) {
    const j = order[done];
    const l = scoring[j];
    const len = s.postPid[l].n;
    if (may && nc >= k && leftLen[done] > PRUNE_RATIO * nc && Math.max(nc, longest) >= countTo) {
      const theta = kthOf(nc);
      const rest = leftBound[done];
      if (rest < theta * (1 - 1e-9)) {
        // Continue: only the candidates that may still reach theta, the lexemes left added by galloping.
        nc = keepAbove(nc, theta * (1 - 1e-9), rest);
        break;
      }
    }
    if (!keep) nc = accumulate(s.postPid[l].a, s.postTf[l].a, len, ws[j], sn, cands, nc);
    else {
      const pa = s.postPid[l].a;
      const tfs = s.postTf[l].a;
      const w = ws[j];
      for (let i = 0; i < len; i++) {
        const pid = pa[i];
        if (!keep(pid)) continue;
        if (!(sn[2 * pid] > 0)) {
          sn[2 * pid] = 0;
          cands[nc++] = pid;
        }
        const tf = tfs[i];
        sn[2 * pid] += (w * (tf * k1p1)) / (tf + sn[2 * pid + 1]);
      }
    }
  }
  const matched = done < m ? Math.max(nc, longest, countTo) : nc;
  if (done === m && order.every((j, i) => j === i)) return { nc, matched }; // summed in scoring's order already
  const ids = done < m ? cands.subarray(0, nc).sort() : cands;
  const tf = new Int32Array(nc);
  for (let i = done; i < m; i++) {
    const j = order[i];
    const l = scoring[j];
    tfsOf(s.postPid[l].a, s.postTf[l].a, s.postPid[l].n, ids, nc, tf);
    for (let c = 0; c < nc; c++) if (tf[c]) sn[2 * ids[c]] += (ws[j] * (tf[c] * k1p1)) / (tf[c] + sn[2 * ids[c] + 1]);
  }
  // The candidates that may rank (their sums differ from the exhaustive ones in the last bits only), summed again in
  // order.
  if (nc > k) nc = keepAbove(nc, kthOf(nc) * (1 - 1e-9));
  const top = cands.subarray(0, nc).sort();
  const exact = new Float64Array(nc);
  for (let j = 0; j < m; j++) {
    const l = scoring[j];
    tfsOf(s.postPid[l].a, s.postTf[l].a, s.postPid[l].n, top, nc, tf);
    for (let c = 0; c < nc; c++) if (tf[c]) exact[c] += (ws[j] * (tf[c] * k1p1)) / (tf[c] + sn[2 * top[c] + 1]);
  }
  for (let c = 0; c < nc; c++) sn[2 * top[c]] = exact[c];
  return { nc, matched };
}

/**
 * For each of the ascending ids[0..n), its term frequency in a lexeme's postings (ascending pids `pa`), 0 when absent:
 * galloping from one to the next.
 */
function tfsOf(pa: Int32Array, tfs: Int32Array, len: number, ids: Int32Array, n: number, out: Int32Array) {
  let p = 0;
  for (let c = 0; c < n; c++) {
    const want = ids[c];
    if (p < len && pa[p] < want) {
      // pa[lo] < want; find hi with pa[hi] >= want (or the end), then the first such index between them.
      let lo = p;
      let step = 1;
      let hi = p + 1;
      while (hi < len && pa[hi] < want) {
        lo = hi;
        step <<= 1;
        hi = lo + step;
      }
      if (hi > len) hi = len;
      let a = lo + 1;
      while (a < hi) {
        const mid = (a + hi) >>> 1;
        if (pa[mid] < want) a = mid + 1;
        else hi = mid;
      }
      p = a;
    }
    out[c] = p < len && pa[p] === want ? tfs[p] : 0;
  }
}
