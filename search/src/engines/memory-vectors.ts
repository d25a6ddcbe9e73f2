import { compacted, TextArena } from './text-arena';
import { kthLargest } from './select';
import { kernelsFor, wasm, type Kernels, type WasmMemory } from './vector-kernels';
import type { MaintainReport, VectorHit, VectorIndex, VectorRow, VectorScope, VectorSearch } from '@svc/domain';
import { isoKey, type LanceVectorIndex } from './vector-index';

/**
 * Vector search from memory (role `all`): LanceDB stays the store, and this wraps it like
 * MemoryTextIndex wraps PgTextIndex. Each write goes to LanceDB first and is then applied to the
 * loaded contexts; a tenant/context ("shard") is read from LanceDB on its first search (which waits
 * for it, like the keyword index's). A search is then answered here in a few milliseconds, without
 * LanceDB's per-query planning and Arrow conversion (about 7–10 ms of CPU per query here):
 *
 *  - IVF, as LanceDB's default index: √rows partitions from spherical k-means (trained when the
 *    context has more than `exactBelow` rows, retrained at `retrainGrowth`× the rows); a query
 *    scores the centroids, then every row of the `nprobes` nearest partitions (more, until
 *    `minCandidates` rows) with exact float32 cosine on the stored unit vectors. So `similarity` is
 *    exact; what partitions can cost is recall (measured with tests/bench/vector-ann.ts:
 *    docs/search.md).
 *  - Contexts with at most `exactBelow` rows, id-prefiltered searches (`itemIds`) and `exact: true`
 *    score every admitted row.
 *  - Rows are assigned to partitions by exact similarity among the 8 centroids nearest by a
 *    1-bit-per-dimension code (signs of vector − mean; Hamming distance), which keeps training of
 *    100,000 rows at a few seconds.
 *  - Both inner loops (dot products, Hamming distances) are WebAssembly generated in
 *    vector-kernels.ts (f32x4 SIMD, i64 popcount), with plain JavaScript as the fallback.
 *
 * Memory: dims × 4 + dims / 8 bytes per vector (2,112 bytes at 512-d, about 250 MB per 100,000
 * vectors with spare capacity and partitions) plus ids and the passages' texts (the context text,
 * and the chunk text only where it is not part of it: about 1 byte per character, ~60 MB for the
 * bench's 100,000 passages of ~600 characters). Contexts are dropped least recently searched first
 * beyond `maxBytes` (vectors and codes), and a context larger than that is searched in LanceDB.
 * Hits carry no text when asked so (`text: false`); `hydrate` fills in the page's from memory.
 */
export interface MemoryVectorSettings {
  /** Memory for loaded vectors (bytes, all contexts). */
  maxBytes: number;
  /** IVF partitions probed per query (nearest centroids first), at least. */
  nprobes: number;
  /** ...and at least this many rows scored exactly (more partitions are probed until reached). */
  minCandidates: number;
  /** Contexts with at most this many rows are scored exactly (every row), without partitions. */
  exactBelow: number;
  /**
   * The partitions are retrained (√rows again) when the context holds this many times the rows they were trained on.
   */
  retrainGrowth: number;
  /**
   * A search of a context not in memory waits for its load (default, like the keyword index); false: LanceDB answers
   * meanwhile.
   */
  waitForLoad: boolean;
  /**
   * Partition searches score their candidates on int8 copies of the rows first, then score exactly (float32)
   * the best max(`refine`, 2 × limit) of them; 0 scores every candidate in float32.
   */
  refine: number;
}

// exactBelow 10,000: as LanceDB's flat threshold, so both adapters answer such a context exactly (docs/search.md).
export const MEMORY_VECTOR_DEFAULTS: MemoryVectorSettings = {
  maxBytes: 2048 * 2 ** 20,
  nprobes: 20,
  minCandidates: 2000,
  exactBelow: 10_000,
  retrainGrowth: 4,
  waitForLoad: true,
  refine: 200,
};

const PAGE = 65536;
/** Centroids shortlisted by code distance before the exact comparison that assigns a row to its partition. */
const SHORTLIST = 8;

/** A WebAssembly memory with typed views that follow its growth. */
class Arena {
  readonly mem: WasmMemory = new wasm.Memory({ initial: 1 });
  f32!: Float32Array;
  u8!: Uint8Array;
  i32!: Int32Array;
  u16!: Uint16Array;
  i16!: Int16Array;
  i8!: Int8Array;
  readonly k: Kernels;
  constructor(dims: number, words: number) {
    this.k = kernelsFor(dims, this.mem) ?? jsKernels(dims, this.mem, words);
    this.views();
  }
  ensure(bytes: number) {
    const pages = Math.ceil(bytes / PAGE);
    const have = this.mem.buffer.byteLength / PAGE;
    if (pages > have) this.mem.grow(pages - have);
    if (this.f32?.buffer !== this.mem.buffer) this.views();
  }
  private views() {
    const b = this.mem.buffer;
    this.f32 = new Float32Array(b);
    this.u8 = new Uint8Array(b);
    this.i32 = new Int32Array(b);
    this.u16 = new Uint16Array(b);
    this.i16 = new Int16Array(b);
    this.i8 = new Int8Array(b);
  }
}

/**
 * The IVF partitions' centroids (unit vectors) and their codes, in their own memory: [centroids][codes][query][query
 * code][ids][scores][distances].
 */
class Coarse {
  readonly a: Arena;
  readonly cOff = 0;
  readonly ccOff: number;
  readonly qOff: number;
  readonly qcOff: number;
  readonly idsOff: number;
  readonly scoreOff: number;
  readonly hamOff: number;
  constructor(
    readonly dims: number,
    readonly k: number,
    readonly words: number,
  ) {
    this.a = new Arena(dims, words);
    this.ccOff = k * dims * 4;
    this.qOff = this.ccOff + k * words * 8;
    this.qcOff = this.qOff + dims * 4;
    this.idsOff = this.qcOff + words * 8;
    this.scoreOff = this.idsOff + k * 4;
    this.hamOff = this.scoreOff + k * 4;
    this.a.ensure(this.hamOff + k * 2 + 16);
    const ids = this.idsOff >> 2;
    for (let j = 0; j < k; j++) this.a.i32[ids + j] = j;
  }
  get bytes() {
    return this.a.mem.buffer.byteLength;
  }
  /** Centroid j = the unit vector of src[at .. at + dims). */
  set(j: number, src: Float32Array | Float64Array, at: number) {
    const d = this.dims;
    let s = 0;
    for (let x = 0; x < d; x++) s += src[at + x] * src[at + x];
    const inv = 1 / (Math.sqrt(s) || 1);
    for (let x = 0; x < d; x++) this.a.f32[j * d + x] = src[at + x] * inv;
  }
  code(mean: Float32Array) {
    const d = this.dims;
    const cb = this.words * 8;
    const u8 = this.a.u8;
    for (let j = 0; j < this.k; j++) {
      const c = this.ccOff + j * cb;
      u8.fill(0, c, c + cb);
      for (let x = 0; x < d; x++) if (this.a.f32[j * d + x] - mean[x] > 0) u8[c + (x >> 3)] |= 1 << (x & 7);
    }
  }
  /** The partition of a row: shortlist by code distance, then the best exact similarity. */
  nearest(vec: Float32Array, at: number, code: Uint8Array, codeAt: number): number {
    const a = this.a;
    const d = this.dims;
    a.f32.set(vec.subarray(at, at + d), this.qOff >> 2);
    let m = this.k;
    if (this.k > SHORTLIST * 4) {
      a.u8.set(code.subarray(codeAt, codeAt + this.words * 8), this.qcOff);
      a.k.hamming(this.ccOff, this.k, this.qcOff, this.hamOff);
      // The SHORTLIST smallest distances (insertion into a small sorted list).
      const h = a.u16;
      const h0 = this.hamOff >> 1;
      const best: number[] = [];
      for (let j = 0; j < this.k; j++) {
        const x = h[h0 + j];
        if (best.length === SHORTLIST && x >= h[h0 + best[SHORTLIST - 1]]) continue;
        let i = Math.min(best.length, SHORTLIST - 1);
        if (best.length < SHORTLIST) best.push(j);
        while (i > 0 && h[h0 + best[i - 1]] > x) {
          best[i] = best[i - 1];
          i--;
        }
        best[i] = j;
      }
      for (let i = 0; i < best.length; i++) a.i32[(this.idsOff >> 2) + i] = best[i];
      m = best.length;
      a.k.dots(this.cOff, this.idsOff, m, this.qOff, this.scoreOff);
      let bi = 0;
      for (let i = 1; i < m; i++) if (a.f32[(this.scoreOff >> 2) + i] > a.f32[(this.scoreOff >> 2) + bi]) bi = i;
      const out = best[bi];
      for (let i = 0; i < m; i++) a.i32[(this.idsOff >> 2) + i] = i; // restore the identity list
      return out;
    }
    a.k.dots(this.cOff, this.idsOff, m, this.qOff, this.scoreOff);
    let bi = 0;
    for (let j = 1; j < m; j++) if (a.f32[(this.scoreOff >> 2) + j] > a.f32[(this.scoreOff >> 2) + bi]) bi = j;
    return bi;
  }
  /** Partitions by similarity of their centroid to the (unit) query, best first. */
  order(q: Float32Array, qAt: number): Int32Array {
    const a = this.a;
    a.f32.set(q.subarray(qAt, qAt + this.dims), this.qOff >> 2);
    a.k.dots(this.cOff, this.idsOff, this.k, this.qOff, this.scoreOff);
    const sc = a.f32.subarray(this.scoreOff >> 2, (this.scoreOff >> 2) + this.k);
    return Int32Array.from(topK(sc, this.k));
  }
}

/**
 * One tenant/context: rows 0..n-1, unit vectors and codes in one WebAssembly memory:
 * [vectors][codes][query][ids][scores].
 */
class Shard {
  n = 0;
  private cap = 0;
  readonly words: number;
  private readonly rowBytes: number;
  private readonly codeBytes: number;
  private readonly a: Arena;
  private codeOff = 0;
  private qOff = 0;
  private idsOff = 0;
  private scoreOff = 0;
  itemOf: string[] = [];
  chunkOf = new Int32Array(0);
  /**
   * Texts, outside the JavaScript heap (TextArena): per row its context text's id, and its chunk text's where
   * that is not a substring of the context (else -1, and the chunk's start and length in the context).
   */
  private texts = new TextArena();
  private contextOf = new Int32Array(0);
  private chunkTextOf = new Int32Array(0);
  private chunkAt = new Int32Array(0);
  private chunkLen = new Int32Array(0);
  readonly rowsOf = new Map<string, number[]>();
  /** The mean the codes were made against (at the last training). */
  private readonly mean: Float32Array;
  /** IVF partitions (once the context has more than `exactBelow` rows): each row's partition and place in its list. */
  private coarse: Coarse | undefined;
  private partOf = new Int32Array(0);
  private posOf = new Int32Array(0);
  private lists: Int32Array[] = [];
  private sizes = new Int32Array(0);
  private trainedAt = 0;
  /**
   * Int8 copies of the partitioned rows, in their own memory, each partition's rows side by side (the scan of
   * a partition reads memory in order, a quarter of the bytes of float32 rows scattered by row id: it is bound
   * by memory access, not arithmetic). A slot is `dims` int8 and, 16-byte aligned after them, the row's scale
   * (max |x| / 127) as f32; partition p holds slots slotBase[p] .. + slotCap[p), row lists[p][i] in slot
   * slotBase[p] + i. A partition that outgrows its slots moves to the end; retraining lays them out afresh.
   * Above the slots: scratch for a search (query as i16, slot ids, scores). Absent without an int8 kernel
   * (dims not a multiple of 16) or with `refine` 0.
   */
  private b: Arena | undefined;
  private readonly slotBytes: number;
  private slots = 0;
  private slotBase = new Int32Array(0);
  private slotCap = new Int32Array(0);
  lastUsed = performance.now();

  constructor(
    readonly key: string,
    readonly dims: number,
    private readonly s: MemoryVectorSettings,
  ) {
    this.words = Math.ceil(dims / 64);
    this.rowBytes = dims * 4;
    this.codeBytes = this.words * 8;
    this.slotBytes = dims + 16;
    this.mean = new Float32Array(dims);
    this.a = new Arena(dims, this.words);
    this.reserve(0);
  }

  get bytes() {
    return this.a.mem.buffer.byteLength + (this.b?.mem.buffer.byteLength ?? 0) + (this.coarse?.bytes ?? 0);
  }

  /** Room for `need` rows. */
  private reserve(need: number) {
    if (need <= this.cap && this.cap > 0) return;
    const cap = Math.max(1024, Math.ceil(Math.max(need, this.cap * 1.25) / 1024) * 1024);
    const codeOff = cap * this.rowBytes;
    const qOff = codeOff + cap * this.codeBytes;
    const idsOff = qOff + this.rowBytes;
    const scoreOff = idsOff + cap * 4;
    this.a.ensure(scoreOff + cap * 4 + 16);
    // The codes move up (vectors keep offset 0); the rest is scratch.
    if (this.n && codeOff !== this.codeOff)
      this.a.u8.copyWithin(codeOff, this.codeOff, this.codeOff + this.n * this.codeBytes);
    Object.assign(this, { cap, codeOff, qOff, idsOff, scoreOff });
    const grow = (x: Int32Array) => {
      const c = new Int32Array(cap);
      c.set(x.subarray(0, this.n));
      return c;
    };
    this.chunkOf = grow(this.chunkOf);
    this.contextOf = grow(this.contextOf);
    this.chunkTextOf = grow(this.chunkTextOf);
    this.chunkAt = grow(this.chunkAt);
    this.chunkLen = grow(this.chunkLen);
    this.partOf = grow(this.partOf);
    this.posOf = grow(this.posOf);
  }

  /**
   * Appends rows (vectors row-major); the caller removed the items' old rows. `train: false` defers (re)training (a
   * load trains once at its end).
   */
  add(
    itemIds: string[],
    chunkNos: number[],
    vectors: Float32Array | number[][],
    chunkTexts: string[],
    contextTexts: string[],
    o: { train?: boolean } = {},
  ) {
    const m = itemIds.length;
    this.reserve(this.n + m);
    const d = this.dims;
    const f32 = this.a.f32;
    for (let j = 0; j < m; j++) {
      const r = this.n++;
      const at = (r * this.rowBytes) >> 2;
      const v = vectors instanceof Float32Array ? vectors.subarray(j * d, (j + 1) * d) : vectors[j];
      let s = 0;
      for (let k = 0; k < d; k++) s += v[k] * v[k];
      const inv = 1 / (Math.sqrt(s) || 1);
      for (let k = 0; k < d; k++) f32[at + k] = v[k] * inv;
      this.itemOf[r] = itemIds[j];
      this.chunkOf[r] = chunkNos[j];
      const c = chunkTexts[j];
      const x = contextTexts[j];
      const pos = c ? x.indexOf(c) : 0;
      this.contextOf[r] = this.texts.add(x);
      this.chunkTextOf[r] = pos < 0 ? this.texts.add(c) : -1;
      this.chunkAt[r] = Math.max(0, pos);
      this.chunkLen[r] = c.length;
      let rows = this.rowsOf.get(itemIds[j]);
      if (!rows) this.rowsOf.set(itemIds[j], (rows = []));
      rows.push(r);
      if (this.coarse) {
        this.code(r);
        this.assign(r);
      }
    }
    if (o.train !== false && this.needsTraining) for (const _ of this.training());
  }

  /** Trains, giving the event loop a turn every few thousand rows (a load: the shard is not in use yet). */
  async train(): Promise<void> {
    for (const _ of this.training()) await new Promise((r) => setImmediate(r));
  }

  /** Whether the context has outgrown exact scoring, or the partitions it was trained on. */
  get needsTraining() {
    return this.n > this.s.exactBelow && (!this.coarse || this.n >= this.trainedAt * this.s.retrainGrowth);
  }

  private assign(r: number) {
    const p = this.coarse!.nearest(this.a.f32, (r * this.rowBytes) >> 2, this.a.u8, this.codeOff + r * this.codeBytes);
    let list = this.lists[p];
    const size = this.sizes[p];
    if (size === list.length) {
      const l = new Int32Array(Math.max(16, size * 2));
      l.set(list);
      this.lists[p] = list = l;
    }
    list[size] = r;
    this.sizes[p] = size + 1;
    this.partOf[r] = p;
    this.posOf[r] = size;
    if (this.b) {
      if (size === this.slotCap[p]) this.moveSlots(p, Math.max(16, size * 2));
      this.quantise(r, this.slotBase[p] + size);
    }
  }

  private unassign(r: number) {
    if (!this.coarse) return;
    const p = this.partOf[r];
    const list = this.lists[p];
    const last = --this.sizes[p];
    const moved = list[last];
    list[this.posOf[r]] = moved;
    this.posOf[moved] = this.posOf[r];
    const sb = this.slotBytes;
    const base = this.slotBase[p];
    if (this.b) this.b.u8.copyWithin((base + this.posOf[r]) * sb, (base + last) * sb, (base + last + 1) * sb);
  }

  /** Row r's int8 copy and scale into a slot. */
  private quantise(r: number, slot: number) {
    const b = this.b!;
    const d = this.dims;
    const at = (r * this.rowBytes) >> 2;
    const f32 = this.a.f32;
    let max = 0;
    for (let k = 0; k < d; k++) max = Math.max(max, Math.abs(f32[at + k]));
    const scale = max / 127 || 1;
    const o = slot * this.slotBytes;
    for (let k = 0; k < d; k++) b.i8[o + k] = Math.round(f32[at + k] / scale);
    b.f32[(o + d) >> 2] = scale;
  }

  /** Partition p's slots to the end, with room for `cap` rows. */
  private moveSlots(p: number, cap: number) {
    const b = this.b!;
    const sb = this.slotBytes;
    const to = this.slots;
    b.ensure((to + cap) * sb + 16);
    b.u8.copyWithin(to * sb, this.slotBase[p] * sb, (this.slotBase[p] + this.sizes[p]) * sb);
    this.slotBase[p] = to;
    this.slotCap[p] = cap;
    this.slots = to + cap;
  }

  /** Removes an item's rows (the last rows move into the holes). */
  remove(itemId: string) {
    const rows = this.rowsOf.get(itemId);
    if (!rows) return;
    this.rowsOf.delete(itemId);
    const u8 = this.a.u8;
    for (const r of rows.sort((a, b) => b - a)) {
      this.unassign(r);
      this.texts.free(this.contextOf[r]);
      this.texts.free(this.chunkTextOf[r]);
      const last = --this.n;
      if (r !== last) {
        u8.copyWithin(r * this.rowBytes, last * this.rowBytes, (last + 1) * this.rowBytes);
        u8.copyWithin(
          this.codeOff + r * this.codeBytes,
          this.codeOff + last * this.codeBytes,
          this.codeOff + (last + 1) * this.codeBytes,
        );
        const moved = this.itemOf[last];
        this.itemOf[r] = moved;
        this.chunkOf[r] = this.chunkOf[last];
        this.contextOf[r] = this.contextOf[last];
        this.chunkTextOf[r] = this.chunkTextOf[last];
        this.chunkAt[r] = this.chunkAt[last];
        this.chunkLen[r] = this.chunkLen[last];
        const mr = this.rowsOf.get(moved)!;
        mr[mr.indexOf(last)] = r;
        if (this.coarse) {
          this.partOf[r] = this.partOf[last];
          this.posOf[r] = this.posOf[last];
          this.lists[this.partOf[r]][this.posOf[r]] = r;
        }
      }
      this.itemOf.length = this.n;
    }
    if (this.texts.wasteful) this.texts = compacted(this.texts, [this.contextOf, this.chunkTextOf], this.n);
  }

  private code(r: number) {
    const d = this.dims;
    const at = (r * this.rowBytes) >> 2;
    const c = this.codeOff + r * this.codeBytes;
    const u8 = this.a.u8;
    const f32 = this.a.f32;
    u8.fill(0, c, c + this.codeBytes);
    for (let k = 0; k < d; k++) if (f32[at + k] - this.mean[k] > 0) u8[c + (k >> 3)] |= 1 << (k & 7);
  }

  /**
   * Spherical k-means: √rows centroids, started from rows spread over the context, 6 rounds over a
   * sample of max(32 × centroids, 4,096) rows; then every row goes to its nearest centroid. Rows are
   * assigned by exact similarity among the centroids nearest by code (SHORTLIST), which keeps a
   * 100,000-row context's training well under a second.
   */
  private *training(): Generator<void> {
    const d = this.dims;
    const n = this.n;
    const f32 = this.a.f32;
    // Codes against the context's mean.
    const mean = new Float64Array(d);
    for (let r = 0; r < n; r++) {
      const at = (r * this.rowBytes) >> 2;
      for (let k = 0; k < d; k++) mean[k] += f32[at + k];
    }
    for (let k = 0; k < d; k++) this.mean[k] = n ? mean[k] / n : 0;
    for (let r = 0; r < n; r++) this.code(r);
    const k = Math.max(1, Math.round(Math.sqrt(n)));
    const coarse = new Coarse(d, k, this.words);
    const S = Math.min(n, Math.max(32 * k, 4096));
    const sample = Int32Array.from({ length: S }, (_, i) => Math.floor((i * n) / S));
    for (let j = 0; j < k; j++) coarse.set(j, f32, (sample[Math.floor((j * S) / k)] * this.rowBytes) >> 2);
    const sums = new Float64Array(k * d);
    const counts = new Int32Array(k);
    for (let round = 0; round < 6; round++) {
      coarse.code(this.mean);
      sums.fill(0);
      counts.fill(0);
      yield;
      for (const r of sample) {
        const at = (r * this.rowBytes) >> 2;
        const p = coarse.nearest(f32, at, this.a.u8, this.codeOff + r * this.codeBytes);
        counts[p]++;
        for (let x = 0; x < d; x++) sums[p * d + x] += f32[at + x];
      }
      for (let j = 0; j < k; j++) if (counts[j]) coarse.set(j, sums, j * d);
    }
    coarse.code(this.mean);
    // Every row's partition, then the switch (searches meanwhile use the previous partitions, or score every row).
    const partOf = new Int32Array(this.partOf.length);
    for (let r = 0; r < n; r++) {
      partOf[r] = coarse.nearest(f32, (r * this.rowBytes) >> 2, this.a.u8, this.codeOff + r * this.codeBytes);
      if (r % 4096 === 4095) yield;
    }
    this.coarse = coarse;
    this.lists = Array.from({ length: k }, () => new Int32Array(Math.max(16, Math.ceil((2 * n) / k))));
    this.sizes = new Int32Array(k);
    for (let r = 0; r < n; r++) {
      const p = partOf[r];
      this.lists[p][this.sizes[p]] = r;
      this.posOf[r] = this.sizes[p]++;
      if (this.sizes[p] === this.lists[p].length) {
        const l = new Int32Array(this.lists[p].length * 2);
        l.set(this.lists[p]);
        this.lists[p] = l;
      }
    }
    this.partOf.set(partOf.subarray(0, n));
    this.trainedAt = n;
    if (this.s.refine > 0 && this.a.k.dots8) {
      // Every partition's slots afresh, with room to grow by a quarter.
      this.slotBase = new Int32Array(k);
      this.slotCap = new Int32Array(k);
      let slots = 0;
      for (let p = 0; p < k; p++) {
        this.slotBase[p] = slots;
        this.slotCap[p] = Math.ceil(this.sizes[p] * 1.25) + 4;
        slots += this.slotCap[p];
      }
      this.slots = slots;
      this.b = new Arena(d, this.words);
      this.b.ensure(slots * this.slotBytes + 16);
      for (let r = 0; r < n; r++) this.quantise(r, this.slotBase[partOf[r]] + this.posOf[r]);
    }
  }

  /** The texts of passage (itemId, chunkNo), or undefined when this context does not hold it. */
  text(itemId: string, chunkNo: number): { chunkText: string; contextText: string } | undefined {
    for (const r of this.rowsOf.get(itemId) ?? []) {
      if (this.chunkOf[r] !== chunkNo) continue;
      const x = this.texts.get(this.contextOf[r]);
      return {
        chunkText:
          this.chunkTextOf[r] >= 0
            ? this.texts.get(this.chunkTextOf[r])
            : x.slice(this.chunkAt[r], this.chunkAt[r] + this.chunkLen[r]),
        contextText: x,
      };
    }
    return undefined;
  }

  /** Gives back the texts' spare room once a load is done. */
  trimTexts() {
    this.texts.trim();
  }

  /** Bytes of text held (UTF-8: context texts, and chunk texts not inside them; freed ones until compacted). */
  textBytes() {
    return this.texts.bytes;
  }

  /** Exact scores of `m` rows listed at idsOff, best `limit` as hits. */
  private rank(m: number, limit: number): VectorHit[] {
    this.a.k.dots(0, this.idsOff, m, this.qOff, this.scoreOff);
    const ids = this.a.i32.subarray(this.idsOff >> 2, (this.idsOff >> 2) + m);
    const sc = this.a.f32.subarray(this.scoreOff >> 2, (this.scoreOff >> 2) + m);
    return topK(sc, Math.min(limit, m)).map((j) => ({
      itemId: this.itemOf[ids[j]],
      chunkNo: this.chunkOf[ids[j]],
      similarity: Math.max(0, Math.min(1, sc[j])),
    }));
  }

  search(q: VectorSearch): VectorHit[] {
    this.lastUsed = performance.now();
    if (!this.n || q.limit <= 0) return [];
    const d = this.dims;
    let s = 0;
    for (let k = 0; k < d; k++) s += q.vector[k] * q.vector[k];
    const inv = 1 / (Math.sqrt(s) || 1);
    const q0 = this.qOff >> 2;
    const f32 = this.a.f32;
    for (let k = 0; k < d; k++) f32[q0 + k] = q.vector[k] * inv;
    const i32 = this.a.i32;
    const ids = this.idsOff >> 2;
    let m = 0;
    if (q.itemIds) {
      for (const id of new Set(q.itemIds)) for (const r of this.rowsOf.get(id) ?? []) i32[ids + m++] = r;
      return this.rank(m, q.limit);
    }
    const want = Math.max(this.s.minCandidates, q.limit);
    if (q.exact || !this.coarse || this.n <= Math.max(this.s.exactBelow, want)) {
      for (let r = 0; r < this.n; r++) i32[ids + r] = r;
      return this.rank(this.n, q.limit);
    }
    // The partitions nearest to the query: at least `nprobes`, and enough for `want` rows.
    const order = this.coarse.order(f32, q0);
    let probed = 0;
    for (; probed < order.length && (probed < this.s.nprobes || m < want); probed++) {
      const p = order[probed];
      i32.set(this.lists[p].subarray(0, this.sizes[p]), ids + m);
      m += this.sizes[p];
    }
    const refine = Math.max(this.s.refine, 2 * q.limit);
    const b = this.b;
    if (!b || this.s.refine <= 0 || m <= refine) return this.rank(m, q.limit);
    // The int8 pass over the candidates' slots, then the best `refine` scored exactly. Scratch above the slots:
    // the query (i16), the slot of each candidate, their scores.
    const bq = Math.ceil((this.slots * this.slotBytes) / 16) * 16;
    const bIds = bq + d * 2;
    const bOut = bIds + m * 4;
    b.ensure(bOut + m * 4 + 16);
    let max = 0;
    for (let k = 0; k < d; k++) max = Math.max(max, Math.abs(f32[q0 + k]));
    const qs = max / 127 || 1;
    for (let k = 0; k < d; k++) b.i16[(bq >> 1) + k] = Math.round(f32[q0 + k] / qs);
    const slotIds = b.i32;
    let j = bIds >> 2;
    for (let i = 0; i < probed; i++) {
      const p = order[i];
      for (let x = this.slotBase[p], end = x + this.sizes[p]; x < end; x++) slotIds[j++] = x;
    }
    b.k.dots8!(0, bIds, m, bq, bOut);
    const best = topK(b.f32.subarray(bOut >> 2, (bOut >> 2) + m), refine);
    const rows = best.map((c) => i32[ids + c]);
    for (let i = 0; i < rows.length; i++) i32[ids + i] = rows[i];
    return this.rank(rows.length, q.limit);
  }
}

let topScratch = new Float32Array(0);
/** Indexes of the `k` largest scores, best first (equal scores: lower index first). */
function topK(sc: Float32Array, k: number): number[] {
  const m = sc.length;
  k = Math.min(k, m);
  if (k <= 0) return [];
  const out: number[] = [];
  if (k === m) for (let j = 0; j < m; j++) out.push(j);
  else {
    if (topScratch.length < m) topScratch = new Float32Array(Math.max(m, topScratch.length * 2));
    topScratch.set(sc);
    const kth = kthLargest(topScratch, m, k);
    for (let j = 0; j < m; j++) if (sc[j] > kth) out.push(j);
    for (let j = 0; j < m && out.length < k; j++) if (sc[j] === kth) out.push(j);
  }
  return out.sort((a, b) => sc[b] - sc[a] || a - b);
}

/** The kernels in plain JavaScript (no WebAssembly SIMD, or dims not a multiple of 4). */
function jsKernels(dims: number, mem: WasmMemory, words: number): Kernels {
  const pc = (x: number) => {
    x -= (x >>> 1) & 0x55555555;
    x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
    x = (x + (x >>> 4)) & 0x0f0f0f0f;
    return Math.imul(x, 0x01010101) >>> 24;
  };
  return {
    hamming(codes, n, q, out) {
      const u32 = new Uint32Array(mem.buffer);
      const u16 = new Uint16Array(mem.buffer);
      const w = words * 2;
      const c0 = codes >> 2;
      const q0 = q >> 2;
      for (let i = 0; i < n; i++) {
        let s = 0;
        for (let k = 0; k < w; k++) s += pc(u32[c0 + i * w + k] ^ u32[q0 + k]);
        u16[(out >> 1) + i] = s;
      }
    },
    dots(vecs, ids, m, q, out) {
      const f32 = new Float32Array(mem.buffer);
      const i32 = new Int32Array(mem.buffer);
      const q0 = q >> 2;
      for (let j = 0; j < m; j++) {
        const at = (vecs >> 2) + i32[(ids >> 2) + j] * dims;
        let s = 0;
        for (let k = 0; k < dims; k++) s += f32[at + k] * f32[q0 + k];
        f32[(out >> 2) + j] = s;
      }
    },
    // The same integer sums as the WebAssembly kernel, so both rank the candidates alike.
    dots8:
      dims % 16 === 0
        ? (slots, ids, m, q, out) => {
            const i8 = new Int8Array(mem.buffer);
            const i16 = new Int16Array(mem.buffer);
            const i32 = new Int32Array(mem.buffer);
            const f32 = new Float32Array(mem.buffer);
            const q0 = q >> 1;
            for (let j = 0; j < m; j++) {
              const at = slots + i32[(ids >> 2) + j] * (dims + 16);
              let s = 0;
              for (let k = 0; k < dims; k++) s += i8[at + k] * i16[q0 + k];
              f32[(out >> 2) + j] = Math.fround(s) * f32[(at + dims) >> 2];
            }
          }
        : undefined,
  };
}

export class MemoryVectorIndex implements VectorIndex {
  readonly settings: MemoryVectorSettings;
  private readonly shards = new Map<string, Shard>();
  /** Loads in progress (concurrent first searches share one). */
  private readonly loading = new Map<string, Promise<Shard | undefined>>();
  /** Contexts too large for memory (or whose load failed): searched in LanceDB, looked at again after a minute. */
  private readonly tooLarge = new Map<string, number>();
  /** Which loaded shard holds an item (deletes name the item only). */
  private readonly itemShard = new Map<string, Shard>();
  /** Loads and the application of writes take turns, so a load never misses a write (see `apply`). */
  private chain: Promise<unknown> = Promise.resolve();
  private readonly log: (m: string, e?: unknown) => void;

  constructor(
    readonly inner: LanceVectorIndex,
    o: Partial<MemoryVectorSettings> & { log?: (m: string, e?: unknown) => void } = {},
  ) {
    const { log, ...settings } = o;
    this.settings = { ...MEMORY_VECTOR_DEFAULTS, ...settings };
    this.log = log ?? (() => {});
  }

  get dims() {
    return this.inner.dims;
  }

  /** Vectors, bytes of vectors and codes, and characters of text held (benchmarks, docs). */
  get stats() {
    let rows = 0;
    let bytes = 0;
    let textBytes = 0;
    for (const s of this.shards.values()) {
      rows += s.n;
      bytes += s.bytes;
      textBytes += s.textBytes();
    }
    return { contexts: this.shards.size, rows, bytes, textBytes };
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  private serial<T>(f: () => Promise<T> | T): Promise<T> {
    const run = this.chain.then(f, f);
    this.chain = run.catch(() => {});
    return run;
  }

  /**
   * A write is applied to memory after LanceDB has it, in turn with loads: a load that read LanceDB
   * before the write is installed before the write is applied; one that read after it sees it, and
   * applying it again changes nothing (a write replaces an item's rows whole). If LanceDB fails, the
   * item's context is dropped from memory (reloaded on its next search), so memory never differs.
   */
  private async apply(write: () => Promise<void>, change: () => void, itemId?: string, iso?: string): Promise<void> {
    try {
      await write();
    } catch (e) {
      await this.serial(() => {
        const s = (itemId && this.itemShard.get(itemId)) || (iso && this.shards.get(iso));
        if (s) this.unloadShard(s);
      });
      throw e;
    }
    await this.serial(change);
  }

  replaceItem(itemId: string, rows: VectorRow[]): Promise<void> {
    const iso = rows.length ? isoKey(rows[0].tenantId, rows[0].contextId) : undefined;
    return this.apply(
      () => this.inner.replaceItem(itemId, rows),
      () => {
        this.removeItem(itemId);
        const s = iso && this.shards.get(iso);
        if (!s || !rows.length) return;
        s.add(
          rows.map((r) => r.itemId),
          rows.map((r) => r.chunkNo),
          rows.map((r) => r.vector),
          rows.map((r) => r.chunkText),
          rows.map((r) => r.contextText),
        );
        this.itemShard.set(itemId, s);
        this.fit(s.key);
      },
      itemId,
      iso,
    );
  }

  /**
   * Batched replaceItem (the search projector's write per batch): one LanceDB write (`inner.replaceItems`), then every
   * item applied to memory.
   */
  async replaceItems(items: Array<{ itemId: string; rows: VectorRow[] }>): Promise<void> {
    const isoOf = (rows: VectorRow[]) => (rows.length ? isoKey(rows[0].tenantId, rows[0].contextId) : undefined);
    try {
      await this.inner.replaceItems(items);
    } catch (e) {
      // As in `apply`: the contexts the batch touched are dropped from memory (reloaded on their next search).
      await this.serial(() => {
        for (const { itemId, rows } of items) {
          const iso = isoOf(rows);
          const s = this.itemShard.get(itemId) || (iso && this.shards.get(iso));
          if (s) this.unloadShard(s);
        }
      });
      throw e;
    }
    await this.serial(() => {
      const touched = new Set<string>();
      for (const { itemId, rows } of items) {
        this.removeItem(itemId);
        const iso = isoOf(rows);
        const s = iso && this.shards.get(iso);
        if (!s || !rows.length) continue;
        s.add(
          rows.map((r) => r.itemId),
          rows.map((r) => r.chunkNo),
          rows.map((r) => r.vector),
          rows.map((r) => r.chunkText),
          rows.map((r) => r.contextText),
        );
        this.itemShard.set(itemId, s);
        touched.add(s.key);
      }
      for (const key of touched) this.fit(key);
    });
  }

  deleteItem(itemId: string): Promise<void> {
    return this.apply(
      () => this.inner.deleteItem(itemId),
      () => this.removeItem(itemId),
      itemId,
    );
  }

  deleteContext(tenantId: string, contextId: string): Promise<void> {
    const iso = isoKey(tenantId, contextId);
    return this.apply(
      () => this.inner.deleteContext(tenantId, contextId),
      () => {
        const s = this.shards.get(iso);
        if (s) this.unloadShard(s);
      },
      undefined,
      iso,
    );
  }

  private removeItem(itemId: string) {
    const s = this.itemShard.get(itemId);
    if (!s) return;
    s.remove(itemId);
    this.itemShard.delete(itemId);
  }

  private unloadShard(s: Shard) {
    if (this.shards.get(s.key) !== s) return;
    this.shards.delete(s.key);
    for (const id of s.rowsOf.keys()) if (this.itemShard.get(id) === s) this.itemShard.delete(id);
  }

  /** Drops every loaded context (tests; memory pressure). */
  unload(): void {
    for (const s of [...this.shards.values()]) this.unloadShard(s);
  }

  async search(q: VectorSearch): Promise<VectorHit[]> {
    if (q.itemIds?.length === 0) return [];
    let s = this.shard(q);
    if (!s && this.settings.waitForLoad) {
      await this.loading.get(isoKey(q.tenantId, q.contextId));
      s = this.shards.get(isoKey(q.tenantId, q.contextId));
    }
    if (!s) return this.inner.search(q);
    const hits = s.search(q);
    return q.text === false ? hits : (await this.hydrate(hits, q), hits);
  }

  /**
   * The page's texts from the loaded context (LanceDB for a context not in memory, or a passage it no longer holds).
   */
  async hydrate(hits: VectorHit[], scope: VectorScope): Promise<void> {
    const s = this.shards.get(isoKey(scope.tenantId, scope.contextId));
    const rest: VectorHit[] = [];
    for (const h of hits) {
      if (h.chunkText !== undefined) continue;
      const t = s?.text(h.itemId, h.chunkNo);
      if (t) Object.assign(h, t);
      else rest.push(h);
    }
    if (rest.length) await this.inner.hydrate(rest, scope);
  }

  /**
   * The loaded context, or undefined: then LanceDB answers, and the context's load starts in the
   * background (its searches go to LanceDB until it is in), unless it is too large for memory.
   */
  private shard(scope: VectorScope): Shard | undefined {
    const key = isoKey(scope.tenantId, scope.contextId);
    const s = this.shards.get(key);
    if (s) return s;
    const big = this.tooLarge.get(key);
    if (big !== undefined && performance.now() - big < 60_000) return undefined;
    if (!this.loading.has(key)) {
      const p = this.serial(() => this.loadNow(scope, key))
        .catch((e) => {
          this.tooLarge.set(key, performance.now()); // LanceDB answers; the load is tried again after a minute
          this.log(`vector index: loading ${key} failed; searched in LanceDB meanwhile`, e);
          return undefined;
        })
        .finally(() => this.loading.delete(key));
      this.loading.set(key, p);
    }
    return undefined;
  }

  /** Loads a context now (tests, benchmarks; searches load in the background on their own). */
  async load(scope: VectorScope): Promise<boolean> {
    const key = isoKey(scope.tenantId, scope.contextId);
    this.shard(scope);
    await this.loading.get(key);
    return this.shards.has(key);
  }

  private async loadNow(scope: VectorScope, key: string): Promise<Shard | undefined> {
    const have = this.shards.get(key);
    if (have) return have;
    const rows = await this.inner.countRows(scope);
    // float32 row, sign code, int8 slot (partitioned contexts), ids
    const perRow = this.dims * 4 + Math.ceil(this.dims / 64) * 8 + (this.settings.refine > 0 ? this.dims + 16 : 0) + 10;
    if (rows * perRow * 1.3 > this.settings.maxBytes || rows * perRow * 1.3 > 3.5 * 2 ** 30) {
      this.tooLarge.set(key, performance.now());
      this.log(`vector index: context ${key} (${rows} vectors) does not fit in memory; searched in LanceDB`);
      return undefined;
    }
    this.tooLarge.delete(key);
    const t0 = performance.now();
    const s = new Shard(key, this.dims, this.settings);
    await this.inner.scan(scope, (itemIds, chunkNos, vectors, chunkTexts, contextTexts) =>
      s.add(itemIds, chunkNos, vectors, chunkTexts, contextTexts, { train: false }),
    );
    const t1 = performance.now();
    if (s.needsTraining) await s.train();
    s.trimTexts();
    const t2 = performance.now();
    this.shards.set(key, s);
    for (const id of s.rowsOf.keys()) this.itemShard.set(id, s);
    this.fit(key);
    this.log(
      `vector index: loaded ${s.n} vectors of ${key} in ${Math.round(t2 - t0)} ms (read ` +
        `${Math.round(t1 - t0)} ms, partitions ${Math.round(t2 - t1)} ms)`,
    );
    return s;
  }

  /** Drops least recently searched contexts (never `keep`) while over the memory budget. */
  private fit(keep: string) {
    let total = 0;
    for (const s of this.shards.values()) total += s.bytes;
    if (total <= this.settings.maxBytes) return;
    for (const s of [...this.shards.values()].sort((a, b) => a.lastUsed - b.lastUsed)) {
      if (total <= this.settings.maxBytes) break;
      if (s.key === keep) continue;
      total -= s.bytes;
      this.unloadShard(s);
    }
  }

  maintain(o?: { force?: boolean }): Promise<MaintainReport> {
    return this.inner.maintain(o);
  }

  async drop(): Promise<void> {
    await this.serial(async () => {
      await this.inner.drop();
      this.unload();
      this.tooLarge.clear();
    });
  }

  async close(): Promise<void> {
    await this.serial(() => this.unload());
    await this.inner.close();
  }
}
