import { describe, expect, it } from 'vitest';
import { newestOutcomes } from './index-outcome';

describe('newestOutcomes', () => {
  it('keeps per record the outcome of the highest revision, the later of equals, whatever the order', () => {
    const xs = [
      { recordId: 'a', forRevision: 2, status: 'INDEXED' },
      { recordId: 'b', forRevision: 0, status: 'INDEXED' },
      { recordId: 'a', forRevision: 1, status: 'FAILED' },
      { recordId: 'b', forRevision: 0, status: 'FAILED' },
    ];
    const got = newestOutcomes(xs, (x) => x);
    expect(Object.fromEntries([...got].map(([k, v]) => [k, `${v.forRevision}:${v.status}`]))).toEqual({
      a: '2:INDEXED',
      b: '0:FAILED',
    });
  });
});
