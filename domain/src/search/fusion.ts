/**
 * HYBRID fusion: reciprocal-rank fusion (Cormack et al. 2009) over the two
 * legs' ranked passage lists,
 *
 *   score(p) = Σ_leg  w_leg / (k + rank_leg(p))      k = 60, ranks from 1
 *
 * with w_text = w_vector = 1. A passage found by one leg only gets that leg's
 * term. `textScore` is the passage's keyword (BM25) score and `semanticScore`
 * its cosine similarity, 0 where that leg did not return it. Ties break on the
 * sum of the raw scores, then on the key, so the order is deterministic.
 */
export interface LegHit {
  /** Passage key (item id + chunk number). */
  key: string;
  score: number;
}

export interface Fused {
  key: string;
  score: number;
  textScore: number;
  semanticScore: number;
}

export const RRF_K = 60;

export function reciprocalRankFusion(text: LegHit[], vector: LegHit[], o: { k?: number; textWeight?: number; vectorWeight?: number } = {}): Fused[] {
  const k = o.k ?? RRF_K;
  const wt = o.textWeight ?? 1;
  const wv = o.vectorWeight ?? 1;
  const out = new Map<string, Fused>();
  const get = (key: string) => {
    let f = out.get(key);
    if (!f) out.set(key, (f = { key, score: 0, textScore: 0, semanticScore: 0 }));
    return f;
  };
  text.forEach((h, i) => {
    const f = get(h.key);
    f.score += wt / (k + i + 1);
    f.textScore = h.score;
  });
  vector.forEach((h, i) => {
    const f = get(h.key);
    f.score += wv / (k + i + 1);
    f.semanticScore = h.score;
  });
  return [...out.values()].sort((a, b) => b.score - a.score || b.textScore + b.semanticScore - (a.textScore + a.semanticScore) || (a.key < b.key ? -1 : 1));
}

/** `minTextRelevance`: keeps keyword hits scoring at least `fraction` of the top hit (≤ 0 keeps all). */
export function aboveTextRelevance<T extends { score: number }>(hits: T[], fraction: number | undefined): T[] {
  if (!fraction || fraction <= 0 || !hits.length) return hits;
  const top = Math.max(...hits.map((h) => h.score));
  return hits.filter((h) => h.score >= fraction * top);
}
