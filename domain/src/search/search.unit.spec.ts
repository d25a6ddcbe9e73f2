import { describe, expect, it } from 'vitest';
import { chunkSentences, chunkText } from './chunking';
import { matchesFilters, parseFilters } from './filters';
import { aboveTextRelevance, convexFusion, FUSION_TEXT_WEIGHT as A } from './fusion';
import { filterAttributes, recordPassages, searchableText } from './indexable';
import { parseComplexQuery, positiveText } from './query-syntax';

describe('chunking', () => {
  it('keeps short text in one passage whose context is itself', () => {
    expect(chunkText('One sentence. Two sentences.')).toEqual([
      { chunkNo: 0, chunkText: 'One sentence. Two sentences.', contextText: 'One sentence. Two sentences.' },
    ]);
  });
  it('cuts long text at sentence boundaries with neighbours in the context', () => {
    const text = Array.from({ length: 30 }, (_, i) => `Sentence ${i} is here.`).join(' ');
    const ps = chunkText(text, { maxChars: 100, contextChars: 40 });
    expect(ps.length).toBeGreaterThan(3);
    for (const p of ps) expect(p.chunkText.length).toBeLessThanOrEqual(100);
    expect(ps.map((p) => p.chunkText).join(' ')).toBe(text);
    expect(ps[1].contextText).toContain(ps[1].chunkText);
    expect(ps[1].contextText.length).toBeGreaterThan(ps[1].chunkText.length);
  });
  it('cuts a sentence without boundaries between words, and a giant word hard', () => {
    const ps = chunkText('word '.repeat(100) + 'x'.repeat(250), { maxChars: 100 });
    for (const p of ps) expect(p.chunkText.length).toBeLessThanOrEqual(100);
  });
  it('a short text with single spaces is one passage, exactly what the sentence split gives', () => {
    const texts = [
      ' Leading and trailing. ',
      'Wait! Really? Yes; no. Done.',
      'a.b c.d e',
      '',
      ' ',
      'One.',
      'x'.repeat(2000),
      'Dr. Smith met Mr. Jones; they spoke. Then left!',
      'Tabs\tand\nlines.  Two  spaces.',
      'Non-breaking\u00a0space. Here.',
    ];
    for (const t of texts) expect(chunkText(t), JSON.stringify(t)).toEqual(chunkSentences(t));
    expect(chunkText(' Leading and trailing. ')).toEqual([
      { chunkNo: 0, chunkText: 'Leading and trailing.', contextText: 'Leading and trailing.' },
    ]);
  });
});

describe('indexable record text', () => {
  const def = {
    fields: [
      { fieldId: 'title', fieldType: 'string' as const, searchable: true },
      { fieldId: 'secret', fieldType: 'string' as const, searchable: true, sensitive: true },
      { fieldId: 'tags', fieldType: 'array' as const, searchable: true, filterable: true },
      { fieldId: 'due', fieldType: 'date' as const, filterable: true },
      { fieldId: 'pin', fieldType: 'string' as const, filterable: true, sensitive: true },
    ],
  };
  it('only searchable, non-sensitive fields become text', () => {
    expect(searchableText(def, { title: 'Hello', secret: 'hidden', tags: ['a', 'b'], due: '2026-01-01' })).toBe(
      'Hello\n\na, b',
    );
    expect(recordPassages(def, { secret: 'hidden' })).toEqual([]);
  });
  it('filterable, non-sensitive fields become attributes (dates as epoch ms) after the built-ins', () => {
    expect(
      filterAttributes(def, { tags: ['a'], due: '2026-01-01', pin: '1234' }, { status: 'ACTIVE', externalId: null }),
    ).toEqual({ status: 'ACTIVE', tags: ['a'], due: Date.parse('2026-01-01') });
  });
});

describe('filters', () => {
  it('parses scalars, arrays and operator maps', () => {
    expect(parseFilters({ a: 1, b: ['x', 'y'], c: { $gte: 2, $lt: 5 }, d: { $nin: [true] } })).toEqual([
      { key: 'a', op: 'eq', value: 1 },
      { key: 'b', op: 'in', value: ['x', 'y'] },
      { key: 'c', op: 'gte', value: 2 },
      { key: 'c', op: 'lt', value: 5 },
      { key: 'd', op: 'nin', value: [true] },
    ]);
  });
  it.each([
    [{ a: { $regex: 'x' } }],
    [{ a: { $eq: [1] } }],
    [{ a: { $in: 1 } }],
    [{ a: { $in: [1], $gt: 0 } }],
    [{ 'a b': 1 }],
    [{ '9a': 1 }],
    [{ tenantId: 1 }],
    [{ userId: 'u' }],
    [{ scopes: 'x' }],
    [{ contextId: 'c' }],
    [{ a: null }],
    [{ a: {} }],
    [{ a: [{}] }],
    [[1]],
  ])('rejects %j', (raw) => {
    expect(() => parseFilters(raw)).toThrow();
  });
  it('reference semantics: arrays match any element, dates compare as epoch ms, $ne matches absent', () => {
    const attrs = { tags: ['x', 'y'], due: Date.parse('2026-02-01'), n: 5, s: 'beta' };
    expect(matchesFilters(attrs, parseFilters({ tags: 'y' }))).toBe(true);
    expect(matchesFilters(attrs, parseFilters({ due: { $gt: '2026-01-01' } }))).toBe(true);
    expect(matchesFilters(attrs, parseFilters({ n: { $gt: 1, $lte: 5 }, s: { $gt: 'alpha' } }))).toBe(true);
    expect(matchesFilters(attrs, parseFilters({ missing: { $ne: 1 } }))).toBe(true);
    expect(matchesFilters(attrs, parseFilters({ missing: 1 }))).toBe(false);
    expect(matchesFilters(attrs, parseFilters({ s: { $gt: 1 } }))).toBe(false);
  });
});

describe('COMPLEX query syntax', () => {
  it('parses phrases, exclusion, AND / OR precedence and parentheses', () => {
    expect(parseComplexQuery('"brown fox" -lazy')).toEqual({
      kind: 'and',
      items: [
        { kind: 'phrase', text: 'brown fox' },
        { kind: 'not', item: { kind: 'term', text: 'lazy' } },
      ],
    });
    expect(parseComplexQuery('a b OR c')).toEqual({
      kind: 'or',
      items: [
        {
          kind: 'and',
          items: [
            { kind: 'term', text: 'a' },
            { kind: 'term', text: 'b' },
          ],
        },
        { kind: 'term', text: 'c' },
      ],
    });
    expect(parseComplexQuery('(a OR b) AND NOT c')).toEqual({
      kind: 'and',
      items: [
        {
          kind: 'or',
          items: [
            { kind: 'term', text: 'a' },
            { kind: 'term', text: 'b' },
          ],
        },
        { kind: 'not', item: { kind: 'term', text: 'c' } },
      ],
    });
  });
  it('never fails on broken input', () => {
    expect(parseComplexQuery('(a OR "b c')).toEqual({
      kind: 'or',
      items: [
        { kind: 'term', text: 'a' },
        { kind: 'phrase', text: 'b c' },
      ],
    });
    expect(parseComplexQuery('a ) b')).toEqual({
      kind: 'and',
      items: [
        { kind: 'term', text: 'a' },
        { kind: 'term', text: 'b' },
      ],
    });
    expect(parseComplexQuery('')).toBeNull();
    expect(parseComplexQuery('well-known e-mail')).toEqual({
      kind: 'and',
      items: [
        { kind: 'term', text: 'well-known' },
        { kind: 'term', text: 'e-mail' },
      ],
    });
  });
  it('positive text leaves out excluded parts', () => {
    expect(positiveText(parseComplexQuery('a -b "c d" OR -(e f)'))).toEqual(['a', 'c d']);
  });
});

describe('fusion', () => {
  it('convex fusion of z-scores rewards agreement, maps to 0-1 and gives missing passages the leg floor', () => {
    // z-scores: text a +√1.5, b 0, d −√1.5; vector b +√1.5, c 0, a −√1.5
    const text = [
      { key: 'a', score: 9 },
      { key: 'b', score: 7 },
      { key: 'd', score: 5 },
    ];
    const vector = [
      { key: 'b', score: 0.75 },
      { key: 'c', score: 0.5 },
      { key: 'a', score: 0.25 },
    ];
    const z = Math.sqrt(1.5);
    const sig = (x: number) => 1 / (1 + Math.exp(-x));
    const f = convexFusion(text, vector, { textWeight: 0.5 });
    expect(f.map((x) => x.key)).toEqual(['b', 'a', 'c', 'd']);
    expect(f[0]).toEqual({ key: 'b', score: sig(0.5 * 0 + 0.5 * z), textScore: 7, semanticScore: 0.75 });
    expect(f[1].score).toBeCloseTo(sig(0.5 * z - 0.5 * z));
    // c: not in the text leg -> the text floor (-z); d: not in the vector leg -> the vector floor (-z)
    expect(f[2].score).toBeCloseTo(sig(-0.5 * z + 0));
    expect(f[3]).toEqual({ key: 'd', score: sig(-0.5 * z - 0.5 * z), textScore: 5, semanticScore: 0 });
    // the default weight favours the keyword leg: a (text best) above b
    expect(
      convexFusion(text, vector)
        .map((x) => x.key)
        .slice(0, 2),
    ).toEqual(['a', 'b']);
    expect(A).toBeGreaterThan(0.5);
  });
  it('convex fusion: the weight decides between one leg and the other; a leg alone keeps its order', () => {
    const text = [
      { key: 'a', score: 3 },
      { key: 'b', score: 1 },
    ];
    const vector = [
      { key: 'b', score: 0.9 },
      { key: 'a', score: 0.1 },
    ];
    expect(convexFusion(text, vector, { textWeight: 0.9 })[0].key).toBe('a');
    expect(convexFusion(text, vector, { textWeight: 0.1 })[0].key).toBe('b');
    const alone = convexFusion(text, [], { textWeight: 0.8 });
    expect(alone.map((x) => x.key)).toEqual(['a', 'b']);
    for (const x of alone) (expect(x.score).toBeGreaterThan(0), expect(x.score).toBeLessThan(1));
    // a hit below the leg's top 100 counts no less than a passage the leg did not return
    const deep = Array.from({ length: 150 }, (_, i) => ({ key: `t${i}`, score: 1000 - i * i }));
    const g = convexFusion(deep, [
      { key: 't149', score: 0.5 },
      { key: 'v', score: 0.5 },
    ]);
    expect(g.find((x) => x.key === 't149')!.score).toBeGreaterThanOrEqual(g.find((x) => x.key === 'v')!.score);
  });
  it('minTextRelevance keeps hits at a fraction of the top score', () => {
    const hits = [{ score: 10 }, { score: 6 }, { score: 2 }];
    expect(aboveTextRelevance(hits, 0.5)).toEqual([{ score: 10 }, { score: 6 }]);
    expect(aboveTextRelevance(hits, 0)).toBe(hits);
  });
});
