import { describe, expect, it } from 'vitest';
import { kthLargest } from './select';

describe('kthLargest', () => {
  it('finds the k-th largest value, duplicates included, for every k', () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    for (const n of [1, 2, 3, 10, 257]) {
      const xs = Array.from({ length: n }, () => Math.floor(rnd() * (n / 3 + 1))); // many ties
      const sorted = [...xs].sort((a, b) => b - a);
      for (let k = 1; k <= n; k++) expect(kthLargest(Float64Array.from(xs), n, k), `n ${n} k ${k}`).toBe(sorted[k - 1]);
    }
  });

  it('looks at the first n values only', () => {
    expect(kthLargest(Float32Array.from([1, 5, 3, 100]), 3, 1)).toBe(5);
  });
});
