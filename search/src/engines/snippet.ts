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

/** [A-Za-z0-9]: the ASCII characters of \p{L} and \p{N}. */
const ASCII_WORD = (() => {
  const t = new Uint8Array(128);
  for (let c = 48; c <= 57; c++) t[c] = 1;
  for (let c = 65; c <= 90; c++) t[c] = t[c + 32] = 1;
  return t;
})();

/**
 * Word tokens as [start, end) pairs, flat: a scan by character code for ASCII text (the common case, no
 * regex and no match objects), the WORD expression as soon as a character outside ASCII appears.
 */
export function wordBounds(text: string): number[] {
  const n = scanBounds(text);
  return n < 0 ? regexBounds(text) : Array.from(scratch.subarray(0, n));
}

/**
 * wordBounds in a scratch array shared by every call (valid until the next call): a search marks twenty
 * passages, and fresh arrays of every word's bounds were a tenth of what a TEXT search allocated.
 */
export function wordBoundsScratch(text: string): ArrayLike<number> {
  const n = scanBounds(text);
  return n < 0 ? regexBounds(text) : scratch.subarray(0, n);
}

let scratch = new Int32Array(1024);

/** The ASCII scan into `scratch`: how many bounds it wrote, or -1 when the text has a character outside ASCII. */
function scanBounds(text: string): number {
  const len = text.length;
  let k = 0;
  let i = 0;
  while (i < len) {
    const c = text.charCodeAt(i);
    if (c >= 128) return -1;
    if (!ASCII_WORD[c]) {
      i++;
      continue;
    }
    const start = i++;
    for (; i < len; i++) {
      const d = text.charCodeAt(i);
      if (d >= 128) return -1;
      if (!ASCII_WORD[d]) break;
    }
    if (k + 2 > scratch.length) {
      const grown = new Int32Array(scratch.length * 2);
      grown.set(scratch);
      scratch = grown;
    }
    scratch[k++] = start;
    scratch[k++] = i;
  }
  return k;
}

function regexBounds(text: string): number[] {
  const out: number[] = [];
  for (const m of text.matchAll(WORD)) out.push(m.index!, m.index! + m[0].length);
  return out;
}

export function words(text: string): string[] {
  const b = wordBounds(text);
  const out: string[] = new Array(b.length >> 1);
  for (let i = 0; i < b.length; i += 2) out[i >> 1] = text.slice(b[i], b[i + 1]);
  return out;
}

export function snippet(text: string, isMatch: (word: string) => boolean): string {
  const b = wordBounds(text);
  const hit = new Uint8Array(b.length >> 1);
  for (let i = 0; i < hit.length; i++) hit[i] = isMatch(text.slice(b[2 * i], b[2 * i + 1])) ? 1 : 0;
  return markedSnippet(text, b, hit);
}

/**
 * Words from..to (inclusive) of `text` (bounds `b`), with the text between them, matches wrapped in <mark>: the
 * text between two matches is copied as one slice (a slice per word made most of a snippet's garbage).
 */
function marked(text: string, b: ArrayLike<number>, hit: Uint8Array, from: number, to: number): string {
  if (from > to) return '';
  let out = '';
  let at = b[2 * from];
  for (let i = from; i <= to; i++) {
    if (!hit[i]) continue;
    out += text.slice(at, b[2 * i]) + '<mark>' + text.slice(b[2 * i], b[2 * i + 1]) + '</mark>';
    at = b[2 * i + 1];
  }
  return out + text.slice(at, b[2 * to + 1]);
}

/**
 * The snippet of a text whose words (`b`: wordBounds(text)) are already known to match or not (`hit`, one per word).
 * (No closures inside: a search makes twenty of these, and the service's TypeScript runner names every closure it
 * creates.)
 */
export function markedSnippet(text: string, b: ArrayLike<number>, hit: Uint8Array): string {
  const n = b.length >> 1;
  if (!n) return text;
  const { maxWords, minWords, maxFragments, delimiter } = SNIPPET;
  if (n <= maxWords) return text.slice(0, b[0]) + marked(text, b, hit, 0, n - 1) + text.slice(b[2 * n - 1]);
  const hits: number[] = [];
  for (let i = 0; i < n; i++) if (hit[i]) hits.push(i);
  if (!hits.length) return marked(text, b, hit, 0, minWords - 1);
  // Greedy: the span of at most maxWords words holding the most matches not shown yet, then the next best.
  const windows: Array<[number, number]> = [];
  for (let f = 0; f < maxFragments; f++) {
    let best: { first: number; last: number; n: number } | null = null;
    for (let j = 0; j < hits.length; j++) {
      const h = hits[j];
      if (inside(windows, h)) continue;
      const to = Math.min(nextStart(windows, h, n) - 1, h + maxWords - 1);
      // The matches in h..to: none is inside a window (the next one starts after `to`, and h is free).
      let e = j;
      while (e + 1 < hits.length && hits[e + 1] <= to) e++;
      if (!best || e - j + 1 > best.n) best = { first: h, last: hits[e], n: e - j + 1 };
    }
    if (!best) break;
    // Some words of context around the matches, at least minWords, at most maxWords, never over another fragment.
    const lo = prevEnd(windows, best.first) + 1;
    const hi = nextStart(windows, best.first, n) - 1;
    const span = best.last - best.first + 1;
    const size = Math.min(maxWords, Math.max(minWords, span + 10));
    let from = Math.max(lo, best.first - Math.floor((size - span) / 2));
    const to = Math.max(best.last, Math.min(hi, from + size - 1));
    from = Math.max(lo, Math.min(from, to - size + 1));
    windows.push([from, to]);
  }
  windows.sort((x, y) => x[0] - y[0]);
  let out = '';
  for (let w = 0; w < windows.length; w++)
    out += (w ? delimiter : '') + marked(text, b, hit, windows[w][0], windows[w][1]);
  return out;
}

function inside(windows: Array<[number, number]>, i: number): boolean {
  for (const [a, z] of windows) if (i >= a && i <= z) return true;
  return false;
}
/** The first word of the first window after word i (or n). */
function nextStart(windows: Array<[number, number]>, i: number, n: number): number {
  let s = n;
  for (const [a] of windows) if (a > i && a < s) s = a;
  return s;
}
/** The last word of the last window before word i (or -1). */
function prevEnd(windows: Array<[number, number]>, i: number): number {
  let e = -1;
  for (const [, z] of windows) if (z < i && z > e) e = z;
  return e;
}
