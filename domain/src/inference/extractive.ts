/**
 * The built-in extractive model's choice of sentences (decisions §8; docs/inference.md).
 * It writes nothing of its own: it splits the given sources into sentences
 * (Intl.Segmenter, the ICU sentence rules), scores each against the question by
 * keyword overlap (IDF-weighted over the candidate sentences, with light
 * stemming, length-normalised like BM25), adds the source's own retrieval score
 * and, where a similarity is given, the cosine between the question and the best
 * keyword candidates, and answers with the best sentences verbatim, each with
 * its source. When no sentence shares a meaningful word with the question (or,
 * with a similarity, is close enough in meaning), it says that nothing relevant
 * was found.
 */
export interface ExtractiveSource {
  /** Shown after each sentence taken from it (`[1]`, or a document id). */
  label: string;
  text: string;
  /** The source's retrieval score in [0, 1] (search), 0 when there is none. */
  score?: number;
}

export interface Sentence {
  text: string;
  source: number;
  score: number;
}

export const NOTHING_FOUND = 'I found nothing in the provided content that answers this question.';

const STOP = new Set(
  (
    'a an and are as at be been but by can could did do does for from had has have how i if in into is it ' +
    'its me my of on or our she should so than that the their them then there these they this those to was ' +
    'we were what when where which who whom why will with would you your about any all also am more most no ' +
    'not only other over same some such too very just'
  ).split(' '),
);

/** Lower-cased word stems of `text`, stop words dropped. */
export function terms(text: string): string[] {
  const out: string[] = [];
  for (const m of text.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)) {
    const w = m[0];
    if (w.length < 2 || STOP.has(w)) continue;
    out.push(stem(w));
  }
  return out;
}

/** A light suffix stripper: enough to match plural and tense variants of a word. */
function stem(w: string): string {
  if (w.length > 5 && w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.length > 5 && (w.endsWith('ing') || w.endsWith('ed'))) return w.slice(0, w.endsWith('ing') ? -3 : -2);
  if (w.length > 4 && w.endsWith('es') && /(s|x|z|ch|sh)es$/.test(w)) return w.slice(0, -2);
  if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss')) return w.slice(0, -1);
  return w;
}

const segmenter = new Intl.Segmenter('en', { granularity: 'sentence' });

/** Abbreviations after which ICU's plain sentence rules break but a sentence goes on ("Dr. Smith"). */
const ABBREVIATIONS = [
  ...['Mr', 'Mrs', 'Ms', 'Dr', 'Prof', 'Sr', 'Jr', 'St', 'Mt', 'No', 'Fig', 'Vol', 'vs', 'etc', 'e.g', 'i.e', 'approx'],
  ...['Inc', 'Ltd', 'Co', 'Jan', 'Feb', 'Mar', 'Apr', 'Jun', 'Jul', 'Aug', 'Sep', 'Sept', 'Oct', 'Nov', 'Dec'],
];
const ABBREVIATION = new RegExp(`(?:^|\\s)(?:${ABBREVIATIONS.map((a) => a.replace('.', '\\.')).join('|')})\\.$`);

/**
 * The sentences of `text` (ICU sentence boundaries, not split after common abbreviations; a line break ends a
 * sentence).
 */
export function sentencesOf(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split(/\n\s*\n|\r?\n(?=[-*•#]|\s*\d+[.)]\s)/)) {
    let carry = '';
    for (const s of segmenter.segment(line)) {
      const t = `${carry}${carry ? ' ' : ''}${s.segment.replace(/\s+/g, ' ').trim()}`.trim();
      if (ABBREVIATION.test(t)) {
        carry = t;
        continue;
      }
      carry = '';
      if (t.split(' ').length >= 3) out.push(t);
    }
    if (carry.split(' ').length >= 3) out.push(carry);
  }
  return out;
}

export interface ExtractiveChoice {
  /** Chosen sentences, best first; empty when nothing relevant was found. */
  sentences: Sentence[];
  /** Every candidate considered. */
  candidates: number;
}

export interface ExtractiveOptions {
  /** Most sentences in an answer. */
  maxSentences?: number;
  /** Sentences below this share of the best score are left out. */
  relativeFloor?: number;
  /**
   * Cosine similarity (question vs sentences) for the best keyword candidates; absent: keywords and source scores only.
   */
  similarity?: (question: string, sentences: string[]) => Promise<number[]>;
  /** How many keyword candidates get a similarity (default 8). */
  rerank?: number;
}

/** Chooses the sentences of `sources` that best answer `question`. */
export async function chooseSentences(
  question: string,
  sources: ExtractiveSource[],
  o: ExtractiveOptions = {},
): Promise<ExtractiveChoice> {
  const q = [...new Set(terms(question))];
  const all: Array<Sentence & { terms: string[] }> = [];
  sources.forEach((src, i) => {
    for (const text of sentencesOf(src.text)) all.push({ text, source: i, score: 0, terms: terms(text) });
  });
  if (!all.length) return { sentences: [], candidates: 0 };
  // IDF of the question's terms over the candidate sentences.
  const df = new Map<string, number>();
  for (const s of all) for (const t of new Set(s.terms)) if (q.includes(t)) df.set(t, (df.get(t) ?? 0) + 1);
  const idf = (t: string) => Math.log(1 + all.length / (df.get(t) ?? all.length));
  const avgLen = all.reduce((a, s) => a + s.terms.length, 0) / all.length || 1;
  const maxIdf = q.reduce((a, t) => a + idf(t), 0) || 1;
  for (const s of all) {
    const tf = new Map<string, number>();
    for (const t of s.terms) tf.set(t, (tf.get(t) ?? 0) + 1);
    let kw = 0;
    for (const t of q) {
      const f = tf.get(t) ?? 0;
      if (f) kw += (idf(t) * f * 2.2) / (f + 1.2 * (0.25 + 0.75 * (s.terms.length / avgLen)));
    }
    s.score = kw / maxIdf + 0.15 * (sources[s.source].score ?? 0);
  }
  let ranked = [...all].sort((a, b) => b.score - a.score);
  let semantic = false;
  if (o.similarity) {
    const top = ranked.slice(0, o.rerank ?? 8);
    const sims = await o.similarity(
      question,
      top.map((s) => s.text),
    );
    top.forEach((s, i) => (s.score = s.score + 0.8 * Math.max(0, sims[i] ?? 0)));
    semantic = sims.some((x) => x >= 0.6);
    ranked = [...top.sort((a, b) => b.score - a.score), ...ranked.slice(top.length)];
  }
  const best = ranked[0];
  const relevant = best.terms.some((t) => q.includes(t) && idf(t) > 0.3) || semantic;
  if (!relevant) return { sentences: [], candidates: all.length };
  const floor = best.score * (o.relativeFloor ?? 0.5);
  const chosen: Sentence[] = [];
  const seen = new Set<string>();
  for (const s of ranked) {
    if (chosen.length >= (o.maxSentences ?? 3) || s.score < floor || s.score <= 0) break;
    const key = s.text.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    chosen.push({ text: s.text, source: s.source, score: s.score });
  }
  return { sentences: chosen, candidates: all.length };
}
