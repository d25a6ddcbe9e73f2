import { describe, expect, it } from 'vitest';
import { kernelsFor, wasm } from './vector-kernels';

// The int8 first pass of the in-memory vector index: the WebAssembly kernel against the plain sums.
describe('vector kernels: dots8 (int8 slot · int16 query × the slot scale)', () => {
  it('equals the integer dot product times the slot scale, for slots picked by id', () => {
    const dims = 48;
    const slotBytes = dims + 16;
    const mem = new wasm.Memory({ initial: 1 });
    const k = kernelsFor(dims, mem);
    expect(k?.dots8, 'WebAssembly SIMD with dims a multiple of 16').toBeDefined();
    expect(kernelsFor(40, new wasm.Memory({ initial: 1 }))?.dots8).toBeUndefined();
    const n = 7;
    const q = n * slotBytes;
    const ids = q + dims * 2;
    const out = ids + 64;
    const i8 = new Int8Array(mem.buffer);
    const i16 = new Int16Array(mem.buffer);
    const i32 = new Int32Array(mem.buffer);
    const f32 = new Float32Array(mem.buffer);
    let seed = 1;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % 255) - 127;
    for (let r = 0; r < n; r++) {
      for (let x = 0; x < dims; x++) i8[r * slotBytes + x] = rnd();
      f32[(r * slotBytes + dims) >> 2] = 0.001 * (r + 1);
    }
    for (let x = 0; x < dims; x++) i16[(q >> 1) + x] = rnd();
    i8[3 * slotBytes] = -128; // the extremes
    i16[q >> 1] = -127;
    const pick = [6, 3, 3, 0];
    pick.forEach((r, j) => (i32[(ids >> 2) + j] = r));
    k!.dots8!(0, ids, pick.length, q, out);
    pick.forEach((r, j) => {
      let s = 0;
      for (let x = 0; x < dims; x++) s += i8[r * slotBytes + x] * i16[(q >> 1) + x];
      expect(f32[(out >> 2) + j]).toBe(Math.fround(Math.fround(s) * f32[(r * slotBytes + dims) >> 2]));
    });
    expect(f32[(out >> 2) + pick.length]).toBe(0); // nothing written past m
  });
});
