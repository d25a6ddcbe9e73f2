/**
 * The k-th largest of values[0..n) (1 ≤ k ≤ n), by quickselect: reorders `values` (pass a scratch copy).
 * Ranking keeps the best k of tens of thousands of scores per search; finding the k-th first and sorting
 * only what is above it beats a heap of k (a comparison per candidate, and a log k step for most).
 */
export function kthLargest(values: Float32Array | Float64Array, n: number, k: number): number {
  let lo = 0;
  let hi = n - 1;
  const want = k - 1; // index in descending order
  while (lo < hi) {
    const pivot = values[(lo + hi) >>> 1];
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (values[i] > pivot) i++;
      while (values[j] < pivot) j--;
      if (i <= j) {
        const t = values[i];
        values[i] = values[j];
        values[j] = t;
        i++;
        j--;
      }
    }
    if (want <= j) hi = j;
    else if (want >= i) lo = i;
    else break;
  }
  return values[want];
}
