import { describe, expect, it } from 'vitest';
import { isServiceError, type SchemaDefinition } from '@svc/contracts';
import { compilePattern, MAX_PATTERN_LENGTH, PATTERN_CHECK_BUDGET, patternProblem, patternTest } from './pattern';
import { validatePayload } from './payload';
import { validateDefinition } from '../schemas/schema';

const test = (pattern: string, value: string) => {
  const c = compilePattern(pattern);
  if (!c.ok) throw new Error(c.reason);
  return patternTest(c, value);
};

const def = (fields: SchemaDefinition['fields']): SchemaDefinition => ({
  typeName: 'T',
  displayName: 'T',
  allowedSurfaces: ['record'],
  fields,
});

/** The message of the 400 `fn` throws. */
function rejection(fn: () => void): string {
  try {
    fn();
  } catch (e) {
    if (isServiceError(e) && e.code === 'VALIDATION_ERROR') return e.message;
    throw e;
  }
  throw new Error('expected a VALIDATION_ERROR');
}

describe('tenant patterns run on RE2 (linear time)', () => {
  it('catastrophic-backtracking patterns answer at once', () => {
    for (const [p, v] of [
      ['^(a+)+$', 'a'.repeat(100_000) + '!'],
      ['^(a|aa)+$', 'a'.repeat(100_000) + '!'],
      ['^(\\w+\\s?)*$', 'word '.repeat(20_000) + '!'],
      ['(x+x+)+y', 'x'.repeat(100_000)],
    ]) {
      const t0 = performance.now();
      expect(test(p, v)).toBe(false);
      expect(performance.now() - t0).toBeLessThan(1000);
    }
  });

  it('keeps RegExp#test semantics: unanchored search, anchors, classes, Unicode', () => {
    expect(test('b', 'abc')).toBe(true);
    expect(test('^b', 'abc')).toBe(false);
    expect(test('^\\d{5}(-\\d{4})?$', '12345-6789')).toBe(true);
    expect(test('^\\d{5}(-\\d{4})?$', '1234')).toBe(false);
    expect(test('^\\p{L}+$', 'Ünïcødé')).toBe(true);
    expect(test('^.$', '😀')).toBe(true); // code points, like the u flag
    expect(test('\\u00e9', 'café')).toBe(true); // JavaScript escapes are translated
    expect(test('\\u{1F600}', 'a😀')).toBe(true);
    expect(test('^(?<year>\\d{4})$', '2026')).toBe(true);
    expect(test('b$', 'ab\n')).toBe(false); // $ is end of text, as without the m flag
    expect(test('a\\/b', 'a/b')).toBe(true);
  });

  it.each([
    ['lookbehind', '(?<=a)b'],
    ['negative lookbehind', '(?<!a)b'],
    ['lookahead', 'a(?=b)'],
    ['negative lookahead', '^(?!x)'],
    ['backreference', '(a)\\1'],
    ['named backreference', '(?<x>a)\\k<x>'],
    ['unbalanced group', '(abc'],
    ['identity escape the Unicode mode refuses', '\\e'],
    ['huge repetition', '((a{1,1000}){1,1000})'],
    ['over the length cap', 'a'.repeat(MAX_PATTERN_LENGTH + 1)],
  ])('rejects a %s pattern', (_, p) => {
    expect(patternProblem(p)).toEqual(expect.any(String));
  });

  it('accepts a pattern at the length cap', () => {
    expect(patternProblem('a'.repeat(MAX_PATTERN_LENGTH))).toBeNull();
  });
});

describe('schema write', () => {
  it('a pattern RE2 cannot run is a 400 naming the field', () => {
    const m = rejection(() =>
      validateDefinition(def([{ fieldId: 'f', fieldType: 'string', validation: { pattern: '(?<=a)b' } }])),
    );
    expect(m).toMatch(/^fields\.f: validation\.pattern is not supported/);
    expect(() =>
      validateDefinition(def([{ fieldId: 'f', fieldType: 'string', validation: { pattern: '^[a-z]+$' } }])),
    ).not.toThrow();
  });

  it('__proto__ cannot be a field id or a lookup field', () => {
    rejection(() => validateDefinition(def([{ fieldId: '__proto__', fieldType: 'string' }])));
    rejection(() => validateDefinition({ ...def(undefined), lookupFields: ['__proto__'] }));
  });
});

describe('payload validation', () => {
  const schema = def([{ fieldId: 'code', fieldType: 'string', validation: { pattern: '^(a+)+$' } }]);

  it('a non-matching value is the pattern 400; a matching one passes', () => {
    expect(
      rejection(() => validatePayload(schema, { code: 'a'.repeat(10_000) + '!' }, { enforceRequired: true })),
    ).toBe('payload.code: does not match the pattern');
    expect(() => validatePayload(schema, { code: 'aaa' }, { enforceRequired: true })).not.toThrow();
  });

  it('pattern checks of one payload have a work budget (value length × pattern size)', () => {
    const size = (compilePattern('^(a+)+$') as { size: number }).size;
    const max = Math.floor(PATTERN_CHECK_BUDGET / size) - 1;
    expect(() => validatePayload(schema, { code: 'a'.repeat(max) }, { enforceRequired: true })).not.toThrow();
    expect(rejection(() => validatePayload(schema, { code: 'a'.repeat(max + 1) }, { enforceRequired: true }))).toMatch(
      /too long to check against the pattern/,
    );
    // The budget is per payload, shared by its fields.
    const two = def([
      { fieldId: 'a', fieldType: 'string', validation: { pattern: '^(a+)+$' } },
      { fieldId: 'b', fieldType: 'string', validation: { pattern: '^(a+)+$' } },
    ]);
    const half = 'a'.repeat(Math.ceil(max / 2) + 1);
    expect(rejection(() => validatePayload(two, { a: half, b: half }, { enforceRequired: true }))).toMatch(
      /^payload\.b: too long/,
    );
  });

  it('a stored pattern RE2 cannot run (written before the check) fails closed with a 400', () => {
    const legacy = def([{ fieldId: 'f', fieldType: 'string', validation: { pattern: '(?<=a)b' } }]);
    expect(rejection(() => validatePayload(legacy, { f: 'ab' }, { enforceRequired: true }))).toMatch(
      /update the schema/,
    );
    expect(() => validatePayload(legacy, {}, { enforceRequired: true })).not.toThrow();
  });

  it('declared fields named like Object.prototype members read own keys only', () => {
    const d = def([
      { fieldId: 'constructor', fieldType: 'string' },
      { fieldId: 'toString', fieldType: 'number', required: true },
    ]);
    expect(rejection(() => validatePayload(d, {}, { enforceRequired: true }))).toBe('payload.toString: is required');
    expect(() => validatePayload(d, { toString: 1 }, { enforceRequired: true })).not.toThrow();
    expect(rejection(() => validatePayload(d, { toString: 1, constructor: 5 }, { enforceRequired: true }))).toBe(
      'payload.constructor: must be a string',
    );
  });

  it('an own __proto__ key anywhere in a payload is a 400', () => {
    const bare = def(undefined);
    for (const text of ['{"__proto__": {"a": 1}}', '{"x": {"__proto__": {}}}', '{"x": [{"__proto__": 1}]}'])
      expect(rejection(() => validatePayload(bare, JSON.parse(text), { enforceRequired: true }))).toMatch(
        /'__proto__' is not allowed/,
      );
    expect(() =>
      validatePayload(bare, { constructor: 'c', prototype: { a: 1 } }, { enforceRequired: true }),
    ).not.toThrow();
  });
});
