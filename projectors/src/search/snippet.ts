/**
 * Snippets: the passage with the words that match the query wrapped in
 * <mark>…</mark> (not HTML-escaped), cut like ts_headline's
 * `MaxWords=40, MinWords=15, MaxFragments=2`: up to two fragments of at most 40
 * words around the densest groups of matches, in text order, joined by " … ".
 * A passage of at most 40 words is shown whole. Which words match is the
 * caller's (the text index compares each word's lexeme with the query's).
 */
export const SNIPPET = { maxWords: 40, minWords: 15, maxFragments: 2, delimiter: ' … ' } as const;

/** Word tokens: letters and digits (what the `english` parser makes lexemes of). */
export const WORD = /[\p{L}\p{N}]+/gu;

export function words(text: string): string[] {
  return text.match(WORD) ?? [];
}

export function snippet(text: string, isMatch: (word: string) => boolean): string {
  const toks = [...text.matchAll(WORD)].map((m) => ({ start: m.index!, end: m.index! + m[0].length, hit: isMatch(m[0]) }));
  const mark = (from: number, to: number) => {
    // words from..to (inclusive), with the original text between them
    if (from > to) return '';
    let out = '';
    let at = toks[from].start;
    for (let i = from; i <= to; i++) {
      out += text.slice(at, toks[i].start);
      const w = text.slice(toks[i].start, toks[i].end);
      out += toks[i].hit ? `<mark>${w}</mark>` : w;
      at = toks[i].end;
    }
    return out;
  };
  if (!toks.length) return text;
  const { maxWords, minWords, maxFragments, delimiter } = SNIPPET;
  if (toks.length <= maxWords) return text.slice(0, toks[0].start) + mark(0, toks.length - 1) + text.slice(toks[toks.length - 1].end);
  const hits = toks.flatMap((t, i) => (t.hit ? [i] : []));
  if (!hits.length) return mark(0, minWords - 1);
  // Greedy: the span of at most maxWords words holding the most matches not shown yet, then the next best.
  const windows: Array<[number, number]> = [];
  const inside = (i: number) => windows.some(([a, b]) => i >= a && i <= b);
  const nextStart = (i: number) => Math.min(toks.length, ...windows.filter(([a]) => a > i).map(([a]) => a));
  const prevEnd = (i: number) => Math.max(-1, ...windows.filter(([, b]) => b < i).map(([, b]) => b));
  for (let f = 0; f < maxFragments; f++) {
    const free = hits.filter((h) => !inside(h));
    let best: { first: number; last: number; n: number } | null = null;
    for (const h of free) {
      const to = Math.min(nextStart(h) - 1, h + maxWords - 1);
      const within = free.filter((x) => x >= h && x <= to);
      if (!best || within.length > best.n) best = { first: h, last: within[within.length - 1], n: within.length };
    }
    if (!best) break;
    // Some words of context around the matches, at least minWords, at most maxWords, never over another fragment.
    const lo = prevEnd(best.first) + 1;
    const hi = nextStart(best.first) - 1;
    const span = best.last - best.first + 1;
    const size = Math.min(maxWords, Math.max(minWords, span + 10));
    let from = Math.max(lo, best.first - Math.floor((size - span) / 2));
    const to = Math.max(best.last, Math.min(hi, from + size - 1));
    from = Math.max(lo, Math.min(from, to - size + 1));
    windows.push([from, to]);
  }
  return windows
    .sort((a, b) => a[0] - b[0])
    .map(([a, b]) => mark(a, b))
    .join(delimiter);
}
