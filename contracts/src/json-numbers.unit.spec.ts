import { describe, expect, it } from 'vitest';
import { checkNumberLiteral, checkNumberValue, findNumberViolation } from './json-numbers';

describe('checkNumberLiteral', () => {
  it.each([
    '0',
    '0.0',
    '-0',
    '1',
    '-1',
    '1.5',
    '9223372036854775807',
    '-9223372036854775808',
    '9.223372036854775807e18',
    '1e18',
    '0.12345678901234567890123456789012345678',
    '12345678901234567890123456789012345678e-30',
    '1e-129',
    '1e-130',
    '-1e-129',
    '0.0000000000001',
    '1.50000000000000000000000000000000000000000',
  ])('accepts %s', (literal) => {
    expect(checkNumberLiteral(literal)).toBeNull();
  });

  it.each([
    ['1e400', 'infinite as a double'],
    ['-1e400', 'negative infinite as a double'],
    ['9223372036854775808', 'one above INT64_MAX'],
    ['-9223372036854775809', 'one below INT64_MIN'],
    ['9223372036854775807.5', 'INT64_MAX plus a fraction'],
    ['1e19', 'exponent above the 64-bit range'],
    ['0.123456789012345678901234567890123456789', '39 significant digits'],
    ['123456789012345678901234567890123456789e-30', '39 significant digits with an exponent'],
    ['1e-131', 'below 1e-130 in magnitude'],
    ['-1e-131', 'negative, below 1e-130 in magnitude'],
    ['0.1e-130', 'below 1e-130 written with a fraction'],
  ])('rejects %s (%s)', (literal) => {
    expect(checkNumberLiteral(literal)).toEqual(expect.any(String));
  });

  it('rejects text that is not a JSON number literal', () => {
    expect(checkNumberLiteral('1.2.3')).toEqual(expect.any(String));
    expect(checkNumberLiteral('--1')).toEqual(expect.any(String));
  });
});

describe('findNumberViolation', () => {
  it('accepts a document whose numbers are all within the rules', () => {
    expect(
      findNumberViolation('{"a":1,"b":[0,0.0,-9223372036854775808,9223372036854775807],"c":{"d":1e-129}}'),
    ).toBeNull();
  });

  it('finds an out-of-range number nested in arrays and objects', () => {
    expect(findNumberViolation('{"a":{"b":[1,2,{"c":1e400}]}}')).toEqual(expect.any(String));
    expect(findNumberViolation('[9223372036854775808]')).toEqual(expect.any(String));
    expect(findNumberViolation('{"x": -9223372036854775809}')).toEqual(expect.any(String));
  });

  it('finds a top-level bare number violation', () => {
    expect(findNumberViolation('1e-131')).toEqual(expect.any(String));
  });

  it('ignores numbers inside strings', () => {
    expect(findNumberViolation('{"a":"1e400"}')).toBeNull();
    expect(findNumberViolation('{"9223372036854775808":"12345678901234567890123456789012345678901"}')).toBeNull();
  });

  it('handles escaped quotes inside strings', () => {
    expect(findNumberViolation('{"a":"say \\"1e400\\" loudly"}')).toBeNull();
    expect(findNumberViolation('{"a":"\\"","b":1e400}')).toEqual(expect.any(String));
  });

  it('handles an escaped backslash right before a closing quote', () => {
    // "a\\" is a complete string ending in one backslash; the number after it is real
    expect(findNumberViolation('{"k":"a\\\\","n":1e400}')).toEqual(expect.any(String));
    expect(findNumberViolation('{"k":"a\\\\","n":1}')).toBeNull();
  });

  it('accepts literals true, false and null next to numbers', () => {
    expect(findNumberViolation('[true,false,null,1,-2.5e3]')).toBeNull();
  });
});

describe('checkNumberValue', () => {
  it('rejects non-finite values', () => {
    expect(checkNumberValue(Infinity)).toEqual(expect.any(String));
    expect(checkNumberValue(-Infinity)).toEqual(expect.any(String));
    expect(checkNumberValue(NaN)).toEqual(expect.any(String));
  });

  it('accepts ordinary values and rejects tiny magnitudes', () => {
    expect(checkNumberValue(0)).toBeNull();
    expect(checkNumberValue(42)).toBeNull();
    expect(checkNumberValue(-1.25)).toBeNull();
    expect(checkNumberValue(1e-129)).toBeNull();
    expect(checkNumberValue(1e-131)).toEqual(expect.any(String));
    expect(checkNumberValue(1e19)).toEqual(expect.any(String));
  });
});
