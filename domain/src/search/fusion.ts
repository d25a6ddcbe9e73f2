/**
 * HYBRID fusion: a convex combination of the two legs' z-score normalised
 * scores (Bruch et al. 2023, "An analysis of fusion functions for hybrid
 * retrieval"), mapped to 0–1 by the logistic function:
 *
 *   score(p) = σ(α · z_text(p) + (1 − α) · z_vector(p))          α = FUSION_TEXT_WEIGHT, σ(x) = 1 / (1 + e^−x)
 *   z_leg(p) = max((s(p) − μ_leg) / σ_leg, floor_leg) floor_leg = min(0, lowest z of the leg's top NORM_DEPTH)
 *
 * μ and σ (population standard deviation; 1 when 0) are taken over the leg's
 * top NORM_DEPTH hits, so a page's scores do not depend on how deep the legs
 * were read for it. A passage the leg did not return, or returned below its
 * top NORM_DEPTH, gets the leg's floor: being found never counts less than not
 * being found. An empty leg adds 0. σ is monotonic, so it changes the scores
 * shown, not the order. α was chosen on BEIR SciFact's train split
 * (docs/search.md). `textScore` is the passage's keyword (BM25) score and
 * `semanticScore` its cosine similarity, 0 where that leg did not return it.
 * Ties break on the keyword score, then on the key, so the order is
 * deterministic.
 */
export interface LegHit {
  /** Passage key (item id + chunk number), or the item id when documents are fused. */
  key: string;
  score: number;
}

export interface Fused {
  key: string;
  score: number;
  textScore: number;
  semanticScore: number;
}

export const FUSION_TEXT_WEIGHT = 0.8;
export const NORM_DEPTH = 100;

/** z-score normalisation over the top `NORM_DEPTH` of a ranked leg, and the value of a passage it did not return. */
function normaliser(hits: LegHit[]): { z: (s: number) => number; missing: number } {
  const top = hits.slice(0, NORM_DEPTH);
  if (!top.length) return { z: () => 0, missing: 0 };
  const mean = top.reduce((a, h) => a + h.score, 0) / top.length;
  const sd = Math.sqrt(top.reduce((a, h) => a + (h.score - mean) ** 2, 0) / top.length) || 1;
  const floor = Math.min(0, ...top.map((h) => (h.score - mean) / sd));
  return { z: (s) => Math.max(floor, (s - mean) / sd), missing: floor };
}

export function convexFusion(text: LegHit[], vector: LegHit[], o: { textWeight?: number } = {}): Fused[] {
  const a = o.textWeight ?? FUSION_TEXT_WEIGHT;
  const nt = normaliser(text);
  const nv = normaliser(vector);
  const out = new Map<string, Fused & { t: number; v: number }>();
  const add = (hits: LegHit[], n: typeof nt, leg: 't' | 'v') => {
    const seen = new Set<string>();
    for (const h of hits) {
      if (seen.has(h.key)) continue; // a key's first (best) hit counts
      seen.add(h.key);
      let f = out.get(h.key);
      if (!f)
        out.set(h.key, (f = { key: h.key, score: 0, textScore: 0, semanticScore: 0, t: nt.missing, v: nv.missing }));
      if (leg === 't') ((f.t = n.z(h.score)), (f.textScore = h.score));
      else ((f.v = n.z(h.score)), (f.semanticScore = h.score));
    }
  };
  add(text, nt, 't');
  add(vector, nv, 'v');
  const fused: Fused[] = [];
  for (const f of out.values())
    fused.push({
      key: f.key,
      score: 1 / (1 + Math.exp(-(a * f.t + (1 - a) * f.v))),
      textScore: f.textScore,
      semanticScore: f.semanticScore,
    });
  return fused.sort((x, y) => y.score - x.score || y.textScore - x.textScore || (x.key < y.key ? -1 : 1));
}

/** `minTextRelevance`: keeps keyword hits scoring at least `fraction` of the top hit (≤ 0 keeps all). */
export function aboveTextRelevance<T extends { score: number }>(hits: T[], fraction: number | undefined): T[] {
  if (!fraction || fraction <= 0 || !hits.length) return hits;
  const top = Math.max(...hits.map((h) => h.score));
  return hits.filter((h) => h.score >= fraction * top);
}
