import { describe, expect, it } from 'vitest';
import { snippet, SNIPPET } from './snippet';

const isMatch = (set: string[]) => (w: string) => set.includes(w.toLowerCase());
const wordsIn = (s: string) =>
  s
    .replace(/<\/?mark>/g, '')
    .split(SNIPPET.delimiter)
    .map((f) => f.match(/[\p{L}\p{N}]+/gu)?.length ?? 0);

describe('snippet', () => {
  it('marks every matching word of a short passage and keeps the text as it is', () => {
    expect(snippet('The Glacier carves valleys; glaciers move.', isMatch(['glacier']))).toBe(
      'The <mark>Glacier</mark> carves valleys; glaciers move.',
    );
  });

  it('shows at most two fragments of at most 40 words around the densest matches, in text order', () => {
    const filler = (n: number, p: string) => Array.from({ length: n }, (_, i) => `${p}${i}`).join(' ');
    const text = `${filler(50, 'a')} lava flows ${filler(60, 'b')} lava lava ash ${filler(60, 'c')} ash`;
    const s = snippet(text, isMatch(['lava', 'ash']));
    const frags = s.split(SNIPPET.delimiter);
    expect(frags).toHaveLength(2);
    expect(frags[0]).toContain('<mark>lava</mark> flows');
    expect(frags[1]).toContain('<mark>lava</mark> <mark>lava</mark> <mark>ash</mark>');
    for (const n of wordsIn(s)) expect(n).toBeLessThanOrEqual(SNIPPET.maxWords);
    for (const n of wordsIn(s)) expect(n).toBeGreaterThanOrEqual(SNIPPET.minWords);
  });

  it('without a match, the first words of the passage', () => {
    const text = Array.from({ length: 80 }, (_, i) => `w${i}`).join(' ');
    expect(snippet(text, () => false)).toBe(Array.from({ length: SNIPPET.minWords }, (_, i) => `w${i}`).join(' '));
  });
});
