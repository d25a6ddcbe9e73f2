/**
 * The two inner loops of the in-memory vector index (memory-vectors.ts), as
 * WebAssembly generated here for one dimension count (no toolchain, no
 * dependency: the bytes are assembled below, a few dozen instructions):
 *
 *   hamming(codes, n, q, out)      out[i] (u16) = popcount(codes[i] XOR q), i < n
 *                                  (codes: `words` u64 per row, row-major)
 *   dots(vecs, ids, m, q, out)     out[j] (f32) = vecs[ids[j]] · q, j < m
 *                                  (vecs: `dims` f32 per row; f32x4 SIMD)
 *   dots8(slots, ids, m, q, out)   out[j] (f32) = (slot ids[j] · q) × its scale
 *                                  (a slot: `dims` i8, then its f32 scale 16-byte aligned, so
 *                                  dims + 16 bytes; q: `dims` i16; i32x4.dot_i16x8_s; dims a
 *                                  multiple of 16, else absent)
 *
 * Both read and write one shared linear memory (the caller lays it out). Node
 * 20 has WebAssembly SIMD on by default; without it, `kernelsFor` returns
 * undefined and the caller uses its plain JavaScript loops (`VECTOR_KERNELS=js` forces
 * those, to compare).
 */

const leb = (n: number): number[] => {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
};
/** Signed LEB128 (i32.const operands). */
const sleb = (n: number): number[] => {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
};
const vec = (items: number[][]): number[] => [...leb(items.length), ...items.flat()];
const section = (id: number, body: number[]): number[] => [id, ...leb(body.length), ...body];
const name = (s: string): number[] => [...leb(s.length), ...Buffer.from(s, 'utf8')];

// Opcodes used.
const I32 = 0x7f,
  I64 = 0x7e,
  V128 = 0x7b;
const get = (i: number) => [0x20, ...leb(i)];
const set = (i: number) => [0x21, ...leb(i)];
const tee = (i: number) => [0x22, ...leb(i)];
const i32c = (n: number) => [0x41, ...sleb(n)];
const I32_ADD = 0x6a,
  I32_MUL = 0x6c,
  F32_MUL = 0x94,
  F32_CONVERT_I32_S = 0xb2,
  I32_LT_U = 0x49,
  I32_GE_U = 0x4f,
  I32_WRAP_I64 = 0xa7;
const I64_XOR = 0x85,
  I64_POPCNT = 0x7b,
  I64_ADD = 0x7c,
  F32_ADD = 0x92;
const i32load = (off: number) => [0x28, 2, ...leb(off)];
const i64load = (off: number) => [0x29, 3, ...leb(off)];
const i32store16 = (off: number) => [0x3b, 1, ...leb(off)];
const f32store = (off: number) => [0x38, 2, ...leb(off)];
const f32load = (off: number) => [0x2a, 2, ...leb(off)];
const v128load = (off: number) => [0xfd, ...leb(0), 4, ...leb(off)];
const F32X4_ADD = [0xfd, ...leb(0xe4)],
  F32X4_MUL = [0xfd, ...leb(0xe6)];
const lane = (l: number) => [0xfd, ...leb(0x1f), l];
const i32lane = (l: number) => [0xfd, ...leb(0x1b), l];
const I16X8_EXTEND_LOW_I8X16_S = [0xfd, ...leb(0x87)],
  I16X8_EXTEND_HIGH_I8X16_S = [0xfd, ...leb(0x88)];
const I32X4_DOT_I16X8_S = [0xfd, ...leb(0xba)],
  I32X4_ADD = [0xfd, ...leb(0xae)];
const BLOCK = [0x02, 0x40],
  LOOP = [0x03, 0x40],
  END = 0x0b;
const brIf = (d: number) => [0x0d, d];

function hammingBody(words: number): number[] {
  const stride = words * 8;
  // params: 0 codes, 1 n, 2 q, 3 out; locals: 4 end (i32), 5.. q words (i64)
  const code: number[] = [];
  for (let k = 0; k < words; k++) code.push(...get(2), ...i64load(8 * k), ...set(5 + k));
  code.push(...get(0), ...get(1), ...i32c(stride), I32_MUL, I32_ADD, ...set(4));
  code.push(...BLOCK, ...get(0), ...get(4), I32_GE_U, ...brIf(0), ...LOOP);
  code.push(...get(3));
  for (let k = 0; k < words; k++) {
    code.push(...get(0), ...i64load(8 * k), ...get(5 + k), I64_XOR, I64_POPCNT);
    if (k > 0) code.push(I64_ADD);
  }
  code.push(I32_WRAP_I64, ...i32store16(0));
  code.push(...get(3), ...i32c(2), I32_ADD, ...set(3));
  code.push(...get(0), ...i32c(stride), I32_ADD, ...tee(0), ...get(4), I32_LT_U, ...brIf(0), END, END, END);
  const locals = vec([
    [...leb(1), I32],
    [...leb(words), I64],
  ]);
  return [...locals, ...code];
}

function dotsBody(dims: number): number[] {
  const lanes = dims / 4;
  const rowBytes = dims * 4;
  // params: 0 vecs, 1 ids, 2 m, 3 q, 4 out; locals: 5 end, 6 p (i32), 7 acc0, 8 acc1 (v128)
  const code: number[] = [];
  code.push(...get(1), ...get(2), ...i32c(4), I32_MUL, I32_ADD, ...set(5));
  code.push(...BLOCK, ...get(1), ...get(5), I32_GE_U, ...brIf(0), ...LOOP);
  code.push(...get(0), ...get(1), ...i32load(0), ...i32c(rowBytes), I32_MUL, I32_ADD, ...set(6));
  for (let l = 0; l < lanes; l++) {
    const acc = 7 + (l & 1);
    if (l >= 2) code.push(...get(acc));
    code.push(...get(6), ...v128load(16 * l), ...get(3), ...v128load(16 * l), ...F32X4_MUL);
    if (l >= 2) code.push(...F32X4_ADD);
    code.push(...set(acc));
  }
  code.push(...get(4));
  if (lanes >= 2) code.push(...get(7), ...get(8), ...F32X4_ADD, ...set(7));
  code.push(
    ...get(7),
    ...lane(0),
    ...get(7),
    ...lane(1),
    F32_ADD,
    ...get(7),
    ...lane(2),
    F32_ADD,
    ...get(7),
    ...lane(3),
    F32_ADD,
  );
  code.push(...f32store(0));
  code.push(...get(4), ...i32c(4), I32_ADD, ...set(4));
  code.push(...get(1), ...i32c(4), I32_ADD, ...tee(1), ...get(5), I32_LT_U, ...brIf(0), END, END, END);
  const locals = vec([
    [...leb(2), I32],
    [...leb(2), V128],
  ]);
  return [...locals, ...code];
}

function dots8Body(dims: number): number[] {
  const blocks = dims / 16;
  const slotBytes = dims + 16;
  // params: 0 slots, 1 ids, 2 m, 3 q (i16), 4 out; locals: 5 end, 6 p (i32), 7 acc0, 8 acc1, 9 v (v128)
  const code: number[] = [];
  code.push(...get(1), ...get(2), ...i32c(4), I32_MUL, I32_ADD, ...set(5));
  code.push(...BLOCK, ...get(1), ...get(5), I32_GE_U, ...brIf(0), ...LOOP);
  code.push(...get(0), ...get(1), ...i32load(0), ...i32c(slotBytes), I32_MUL, I32_ADD, ...set(6));
  for (let l = 0; l < blocks; l++) {
    // 16 bytes of the slot: the low 8 and the high 8 widened to i16, each dotted with 8 lanes of the query.
    code.push(...get(6), ...v128load(16 * l), ...set(9));
    if (l > 0) code.push(...get(7));
    code.push(...get(9), ...I16X8_EXTEND_LOW_I8X16_S, ...get(3), ...v128load(32 * l), ...I32X4_DOT_I16X8_S);
    if (l > 0) code.push(...I32X4_ADD);
    code.push(...set(7));
    if (l > 0) code.push(...get(8));
    code.push(...get(9), ...I16X8_EXTEND_HIGH_I8X16_S, ...get(3), ...v128load(32 * l + 16), ...I32X4_DOT_I16X8_S);
    if (l > 0) code.push(...I32X4_ADD);
    code.push(...set(8));
  }
  code.push(...get(4));
  code.push(...get(7), ...get(8), ...I32X4_ADD, ...set(7));
  code.push(
    ...get(7),
    ...i32lane(0),
    ...get(7),
    ...i32lane(1),
    I32_ADD,
    ...get(7),
    ...i32lane(2),
    I32_ADD,
    ...get(7),
    ...i32lane(3),
    I32_ADD,
  );
  code.push(F32_CONVERT_I32_S, ...get(6), ...f32load(dims), F32_MUL);
  code.push(...f32store(0));
  code.push(...get(4), ...i32c(4), I32_ADD, ...set(4));
  code.push(...get(1), ...i32c(4), I32_ADD, ...tee(1), ...get(5), I32_LT_U, ...brIf(0), END, END, END);
  const locals = vec([
    [...leb(2), I32],
    [...leb(3), V128],
  ]);
  return [...locals, ...code];
}

function moduleBytes(dims: number): Uint8Array {
  const words = Math.ceil(dims / 64);
  const types = section(
    1,
    vec([
      [0x60, ...vec([[I32], [I32], [I32], [I32]]), ...vec([])],
      [0x60, ...vec([[I32], [I32], [I32], [I32], [I32]]), ...vec([])],
    ]),
  );
  const int8 = dims % 16 === 0;
  const imports = section(2, vec([[...name('m'), ...name('mem'), 0x02, 0x00, ...leb(1)]]));
  const funcs = section(3, vec(int8 ? [[0], [1], [1]] : [[0], [1]]));
  const exports = section(
    7,
    vec([[...name('hamming'), 0x00, 0], [...name('dots'), 0x00, 1], ...(int8 ? [[...name('dots8'), 0x00, 2]] : [])]),
  );
  const bodies = [hammingBody(words), dotsBody(dims), ...(int8 ? [dots8Body(dims)] : [])].map((b) => [
    ...leb(b.length),
    ...b,
  ]);
  const codeSec = section(10, vec(bodies));
  // The "name" custom section: CPU profiles show the kernels by name (not as wasm-function[i]).
  const fnNames = ['hamming', 'dots', ...(int8 ? ['dots8'] : [])].map((n, i) => [...leb(i), ...name(n)]);
  const names = section(0, [...name('name'), 1, ...leb(vec(fnNames).length), ...vec(fnNames)]);
  return Uint8Array.from([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...types,
    ...imports,
    ...funcs,
    ...exports,
    ...codeSec,
    ...names,
  ]);
}

/** The part of the WebAssembly API used here (the project's TypeScript libs do not declare it). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface Wasm {
  Memory: new (d: { initial: number; maximum?: number }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (m: object, imports: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> };
}
export const wasm = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly;

export interface Kernels {
  hamming(codes: number, n: number, q: number, out: number): void;
  dots(vecs: number, ids: number, m: number, q: number, out: number): void;
  /** Absent when dims is not a multiple of 16 (the caller then scores float32 rows only). */
  dots8?(slots: number, ids: number, m: number, q: number, out: number): void;
}

const modules = new Map<number, object | null>();

/**
 * Kernels for `dims`-dimensional rows over `memory`; undefined when WebAssembly SIMD is unavailable or dims is not a
 * multiple of 4.
 */
export function kernelsFor(dims: number, memory: WasmMemory): Kernels | undefined {
  if (dims % 4 !== 0 || process.env.VECTOR_KERNELS === 'js') return undefined;
  let m = modules.get(dims);
  if (m === undefined) {
    try {
      m = new wasm.Module(moduleBytes(dims));
    } catch {
      m = null;
    }
    modules.set(dims, m);
  }
  if (!m) return undefined;
  const inst = new wasm.Instance(m, { m: { mem: memory } });
  return inst.exports as unknown as Kernels;
}
