import { describe, expect, it } from 'vitest';
import { isServiceError, type SchemaDefinition } from '@svc/contracts';
import { encodeValue } from '@svc/domain';
import { planLookup, type LookupParams } from './lookups';

const def: SchemaDefinition = {
  typeName: 'T',
  displayName: 'T',
  allowedSurfaces: ['record'],
  fields: [
    { fieldId: 'age', fieldType: 'number' },
    { fieldId: 'name', fieldType: 'string' },
    { fieldId: 'born', fieldType: 'date' },
    { fieldId: 'ok', fieldType: 'boolean' },
    { fieldId: 'kind', fieldType: 'enum', enumValues: ['a', 'b', 1] },
  ],
  lookupFields: ['age', 'name', 'born', 'ok', 'kind'],
};
const bare: SchemaDefinition = { typeName: 'B', displayName: 'B', allowedSurfaces: ['record'], lookupFields: ['x'] };

const plan = (p: Partial<LookupParams>, d = def, via: 'GET' | 'POST' = 'GET') =>
  planLookup(d, { type: d.typeName, field: 'age', ...p } as LookupParams, via, () => 'h');

function rejection(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (isServiceError(e) && e.code === 'VALIDATION_ERROR') return e.message;
    throw e;
  }
  throw new Error('expected a VALIDATION_ERROR');
}

describe('range bounds are read in the field type', () => {
  it.each([
    ['a non-number on a number field', { from: 'a', to: '5' }],
    ['a non-number upper bound', { from: '1', to: 'z' }],
    ['an empty bound', { from: '', to: '5' }],
    ['hex text', { from: '0x10', to: '20' }],
    ['padded text', { from: ' 1', to: '5' }],
    ['Infinity text', { from: 'Infinity', to: '5' }],
    ['a literal beyond 64 bits', { from: '1e400', to: '1e401' }],
    ['an upper bound beyond 64 bits', { from: '1', to: '1e400' }],
    ['39 significant digits', { from: '1', to: '123456789012345678901234567890123456789' }],
    ['a boolean on a number field', { from: true, to: 5 }],
  ])('number field: %s → 400', (_, b) => {
    rejection(() => plan(b as Partial<LookupParams>));
  });

  it('inverted ranges → 400 on every comparable type', () => {
    expect(rejection(() => plan({ from: '10', to: '1' }))).toMatch(/inverted range/);
    rejection(() => plan({ from: 10, to: -1 }, def, 'POST'));
    rejection(() => plan({ field: 'name', from: 'z', to: 'a' }));
    rejection(() => plan({ field: 'name', from: 'é', to: 'z' })); // UTF-8 byte order, as the index compares
    rejection(() => plan({ field: 'born', from: '2022-01-01', to: '2020-01-01' }));
    rejection(() => plan({ field: 'born', from: '1700000000001', to: '1700000000000' }));
    rejection(() => plan({ field: 'ok', from: 'true', to: 'false' }));
    rejection(() => plan({ field: 'kind', from: 'b', to: 'a' }));
  });

  it('other types: strings need text, dates a date, booleans true / false', () => {
    rejection(() => plan({ field: 'name', from: 1, to: 5 }, def, 'POST'));
    rejection(() => plan({ field: 'born', from: 'yesterday', to: '2022-01-01' }));
    rejection(() => plan({ field: 'born', from: 1.5, to: 2 }, def, 'POST'));
    rejection(() => plan({ field: 'ok', from: 'no', to: 'true' }));
  });

  it('valid ranges plan the index bounds as before', () => {
    const n = (x: number) => encodeValue({ fieldId: 'age', fieldType: 'number' }, x);
    expect(plan({ from: '1', to: '10' }).args).toEqual([n(1), n(10)]);
    expect(plan({ from: '5', to: '5' }).args).toEqual([n(5), n(5)]);
    expect(plan({ from: '-2.5', to: '1e1' }).args).toEqual([n(-2.5), n(10)]);
    expect(plan({ from: 1, to: 10 }, def, 'POST').args).toEqual([n(1), n(10)]);
    expect(plan({ from: '1', to: '10' }, def, 'POST').args).toEqual([n(1), n(10)]);
    expect(plan({ field: 'name', from: '', to: 'b' }).args).toEqual(['s', 'sb']);
    expect(plan({ field: 'born', from: '2020-01-01', to: String(Date.parse('2021-01-01')) }).args).toEqual([
      encodeValue({ fieldId: 'born', fieldType: 'date' }, Date.parse('2020-01-01')),
      encodeValue({ fieldId: 'born', fieldType: 'date' }, Date.parse('2021-01-01')),
    ]);
    expect(plan({ field: 'ok', from: 'false', to: 'true' }).args).toEqual(['b0', 'b1']);
    // A bare schema's field: keyed as given, inverted text still refused, mixed kinds not compared.
    expect(plan({ field: 'x', from: 'a', to: 'b' }, bare).args).toEqual(['sa', 'sb']);
    rejection(() => plan({ field: 'x', from: 'b', to: 'a' }, bare));
    expect(plan({ field: 'x', from: 5, to: 'a' }, bare, 'POST').args).toHaveLength(2);
  });
});
