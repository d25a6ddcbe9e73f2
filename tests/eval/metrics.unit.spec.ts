import { describe, expect, it } from 'vitest';
import { dcg, evaluate, ndcgAtK, percentile, recallAtK } from './metrics';

// Hand-computed: judgments a=1, b=2, c=1; ranking x b a y c (x, y unjudged).
//   DCG@10  = 0/log2(2) + 2/log2(3) + 1/log2(4) + 0/log2(5) + 1/log2(6) = 1.261860 + 0.5 + 0.386853 = 2.148712
//   IDCG@10 = 2/log2(2) + 1/log2(3) + 1/log2(4)                         = 2 + 0.630930 + 0.5      = 3.130930
//   nDCG@10 = 0.686286
//   nDCG@2  = (2/log2(3)) / (2 + 1/log2(3)) = 1.261860 / 2.630930 = 0.479625
const judged = new Map([
  ['a', 1],
  ['b', 2],
  ['c', 1],
]);
const ranking = ['x', 'b', 'a', 'y', 'c'];

describe('BEIR metrics', () => {
  it('DCG discounts by log2(rank + 1)', () => {
    expect(dcg([3, 2, 1])).toBeCloseTo(3 + 2 / Math.log2(3) + 1 / 2, 12);
  });

  it('nDCG@k with graded judgments, ideal ranking from the judgments', () => {
    expect(ndcgAtK(ranking, judged, 10)).toBeCloseTo(0.686286, 5);
    expect(ndcgAtK(ranking, judged, 2)).toBeCloseTo(0.479625, 5);
    expect(ndcgAtK(['b', 'a', 'c'], judged, 10)).toBeCloseTo(1, 12);
    expect(ndcgAtK([], judged, 10)).toBe(0);
    // binary: the only relevant document at rank 3 → 1 / log2(4)
    expect(ndcgAtK(['p', 'q', 'r'], new Map([['r', 1]]), 10)).toBeCloseTo(0.5, 12);
  });

  it('a repeated document counts once, at its first rank', () => {
    expect(ndcgAtK(['b', 'b', 'a', 'c'], judged, 10)).toBeCloseTo(1, 12);
  });

  it('ignores documents beyond k and judgments of grade 0', () => {
    expect(ndcgAtK(['x', 'y', 'b'], judged, 2)).toBe(0);
    const withZero = new Map([...judged, ['z', 0]]);
    expect(ndcgAtK(ranking, withZero, 10)).toBeCloseTo(0.686286, 5);
    expect(recallAtK(['z'], withZero, 100)).toBe(0);
  });

  it('Recall@k over the relevant judgments', () => {
    expect(recallAtK(ranking, judged, 100)).toBe(1);
    expect(recallAtK(ranking, judged, 3)).toBeCloseTo(2 / 3, 12);
    expect(recallAtK(['x'], judged, 100)).toBe(0);
  });

  it('evaluate averages over judged queries; a query without a run scores 0', () => {
    const qrels = new Map([
      ['q1', judged],
      ['q2', new Map([['r', 1]])],
      ['q3', new Map([['s', 0]])], // no relevant judgment: not scored
    ]);
    const ev = evaluate(new Map([['q1', ranking]]), qrels);
    expect(ev.queries).toBe(2);
    expect(ev.ndcg10).toBeCloseTo(0.686286 / 2, 5);
    expect(ev.recall100).toBeCloseTo(0.5, 12);
    expect(ev.perQuery.q2).toEqual({ ndcg10: 0, recall100: 0 });
  });

  it('nearest-rank percentiles', () => {
    const v = Array.from({ length: 100 }, (_, i) => 100 - i); // 1..100 shuffled order
    expect(percentile(v, 50)).toBe(50);
    expect(percentile(v, 99)).toBe(99);
    expect(percentile(v, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
  });
});
