/**
 * Retrieval metrics as BEIR computes them (pytrec_eval / trec_eval):
 *
 *   nDCG@k   = DCG@k / IDCG@k,  DCG@k = Σ_{i=1..k} rel_i / log2(i + 1)
 *              rel_i is the graded judgment of the document at rank i (0 when
 *              unjudged; linear gain, as trec_eval), IDCG@k the DCG of the
 *              judged documents sorted by grade (the ideal ranking from the qrels).
 *   Recall@k = |relevant ∩ top k| / |relevant|, relevant = judged with grade > 0.
 *
 * A ranking is a list of document ids, best first; a repeated id counts once
 * (at its first rank), like the dictionary pytrec_eval takes. Queries without a
 * relevant judgment are not scored (BEIR averages over the judged queries).
 */
export type Judgments = ReadonlyMap<string, number>;

const dedupe = (ranking: readonly string[]): string[] => {
  const seen = new Set<string>();
  return ranking.filter((d) => (seen.has(d) ? false : (seen.add(d), true)));
};

export function dcg(gains: readonly number[]): number {
  let s = 0;
  for (let i = 0; i < gains.length; i++) s += gains[i] / Math.log2(i + 2);
  return s;
}

export function ndcgAtK(ranking: readonly string[], judged: Judgments, k = 10): number {
  const ideal = [...judged.values()]
    .filter((g) => g > 0)
    .sort((a, b) => b - a)
    .slice(0, k);
  const idcg = dcg(ideal);
  if (idcg === 0) return 0;
  const gains = dedupe(ranking)
    .slice(0, k)
    .map((d) => Math.max(0, judged.get(d) ?? 0));
  return dcg(gains) / idcg;
}

export function recallAtK(ranking: readonly string[], judged: Judgments, k = 100): number {
  const relevant = [...judged].filter(([, g]) => g > 0).map(([d]) => d);
  if (!relevant.length) return 0;
  const top = new Set(dedupe(ranking).slice(0, k));
  return relevant.filter((d) => top.has(d)).length / relevant.length;
}

/** Nearest-rank percentile (p in 0..100) of a non-empty sample. */
export function percentile(values: readonly number[], p: number): number {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * s.length);
  return s[Math.min(s.length, Math.max(1, rank)) - 1];
}

export interface Evaluation {
  /** Queries scored (those with at least one relevant judgment). */
  queries: number;
  ndcg10: number;
  recall100: number;
  perQuery: Record<string, { ndcg10: number; recall100: number }>;
}

/**
 * Mean nDCG@10 and Recall@100 of `runs` (query id → ranking) over every judged query of `qrels` (a missing run scores
 * 0).
 */
export function evaluate(
  runs: ReadonlyMap<string, readonly string[]>,
  qrels: ReadonlyMap<string, Judgments>,
): Evaluation {
  const perQuery: Evaluation['perQuery'] = {};
  let n = 0;
  let ndcg = 0;
  let recall = 0;
  for (const [q, judged] of qrels) {
    if (![...judged.values()].some((g) => g > 0)) continue;
    const ranking = runs.get(q) ?? [];
    const r = { ndcg10: ndcgAtK(ranking, judged, 10), recall100: recallAtK(ranking, judged, 100) };
    perQuery[q] = r;
    n += 1;
    ndcg += r.ndcg10;
    recall += r.recall100;
  }
  return { queries: n, ndcg10: n ? ndcg / n : 0, recall100: n ? recall / n : 0, perQuery };
}
