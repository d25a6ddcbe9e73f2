import { describe, expect, it } from 'vitest';
import type { SchemaDefinition } from '@svc/contracts';
import {
  chargeOf,
  decodeCharge,
  documentWriteItems,
  encodeCharge,
  fileIngestItem,
  indexCharge,
  inferenceItem,
  overageMilli,
  recordWriteItems,
  scriptExecutionItem,
  searchItem,
  textIngestItem,
} from './charges';
import { DEFAULT_PRICES, allowanceOf, loadPrices, periodOf } from './prices';

const def: SchemaDefinition = {
  typeName: 'item',
  displayName: 'Item',
  allowedSurfaces: ['record'],
  fields: [
    { fieldId: 'code', fieldType: 'string' },
    { fieldId: 'price', fieldType: 'number' },
    { fieldId: 'a', fieldType: 'string' },
    { fieldId: 'b', fieldType: 'string' },
  ],
  lookupFields: [
    { fieldName: 'code', unique: true },
    { fieldName: 'price', rangeEnabled: true },
    { fieldNames: ['a', 'b'] },
  ],
};

describe('price table', () => {
  it('defaults are decisions §5; PRICES_JSON overrides parts and is validated', () => {
    expect(loadPrices(undefined)).toBe(DEFAULT_PRICES);
    expect(DEFAULT_PRICES.textIngest.unitBytes).toBe(10 * 1024);
    const p = loadPrices(JSON.stringify({ search: { HYBRID: 3000 }, allowances: { free: 10 } }));
    expect(p.search).toEqual({ TEXT: 1000, SEMANTIC: 1000, HYBRID: 3000 });
    expect(p.allowances).toEqual({ ...DEFAULT_PRICES.allowances, free: 10 });
    expect(DEFAULT_PRICES.search.HYBRID).toBe(2000); // the defaults are not changed by an override
    expect(() => loadPrices('{"search": {"HYBRID": -1}}')).toThrow(/PRICES_JSON: search.HYBRID/);
    expect(() => loadPrices('{"nope": {}}')).toThrow(/PRICES_JSON/);
    expect(() => loadPrices('{"textIngest": {"unitBytes": 0}}')).toThrow(/unitBytes/);
    expect(() => loadPrices('not json')).toThrow(/not valid JSON/);
    // Inference prices may be fractional; negative ones are refused.
    const i = loadPrices(JSON.stringify({ inference: { centsPerCredit: 0.25, llmOutputCreditsPer1kTokens: 1.5 } }));
    expect(i.inference).toEqual({
      ...DEFAULT_PRICES.inference,
      centsPerCredit: 0.25,
      llmOutputCreditsPer1kTokens: 1.5,
    });
    expect(DEFAULT_PRICES.inference.centsPerCredit).toBe(0.1);
    expect(() => loadPrices('{"inference": {"centsPerCredit": -1}}')).toThrow(/inference.centsPerCredit/);
  });

  it(
    'allowances per plan; a set creditLimit overrides any plan (enterprise without one: no ceiling); ' +
      'unknown plan is free',
    () => {
      expect(allowanceOf(DEFAULT_PRICES, { plan: 'free' })).toBe(1000);
      expect(allowanceOf(DEFAULT_PRICES, { plan: 'starter' })).toBe(50_000);
      expect(allowanceOf(DEFAULT_PRICES, { plan: 'pro' })).toBe(250_000);
      expect(allowanceOf(DEFAULT_PRICES, { plan: 'scale' })).toBe(1_000_000);
      expect(allowanceOf(DEFAULT_PRICES, { plan: 'enterprise', creditLimit: 42 })).toBe(42);
      expect(allowanceOf(DEFAULT_PRICES, { plan: 'enterprise', creditLimit: null })).toBeNull();
      // decisions §2: creditLimit is taken on every plan and overrides the plan's allowance.
      expect(allowanceOf(DEFAULT_PRICES, { plan: 'free', creditLimit: 5 })).toBe(5);
      expect(allowanceOf(DEFAULT_PRICES, { plan: 'starter', creditLimit: 0 })).toBe(0);
      expect(allowanceOf(DEFAULT_PRICES, { plan: 'pro', creditLimit: 2_000_000 })).toBe(2_000_000);
      expect(allowanceOf(DEFAULT_PRICES, { plan: 'scale', creditLimit: null })).toBe(1_000_000);
      expect(allowanceOf(DEFAULT_PRICES, { creditLimit: 7 })).toBe(7);
      expect(allowanceOf(DEFAULT_PRICES, { plan: 'gold' })).toBe(1000);
      expect(allowanceOf(DEFAULT_PRICES, null)).toBe(1000);
      expect(periodOf('2026-08-31T23:59:59.999Z')).toBe('2026-08');
      expect(periodOf('2026-08-31T23:59:59Z')).toBe('2026-08');
      // Not UTC: the period is the UTC month of that moment.
      expect(periodOf('2026-08-31T23:30:00-02:00')).toBe('2026-09');
      expect(periodOf(new Date('2026-12-31T23:59:59.999Z'))).toBe('2026-12');
    },
  );
});

describe('charges', () => {
  it(
    'index credits: equality 1, range 3, composite 1 per declared lookup with a value; automatic lookups ' +
      'counted, not charged',
    () => {
      expect(
        indexCharge(DEFAULT_PRICES, { definition: def, payload: { code: 'x', price: 1, a: 'p', b: 'q' } }),
      ).toEqual({
        credits: 1 + 3 + 1 + 1,
        milli: 5000,
      });
      expect(indexCharge(DEFAULT_PRICES, { definition: def, payload: {} })).toEqual({ credits: 1, milli: 0 });
      expect(
        indexCharge(DEFAULT_PRICES, {
          definition: def,
          payload: { price: 2 },
          externalId: 'e',
          userId: 'u',
          scopes: ['org:a', 'org:b'],
        }),
      ).toEqual({ credits: 3 + 4, milli: 3000 });
      expect(indexCharge(DEFAULT_PRICES, { definition: null, payload: { code: 'x' }, scopes: [] })).toEqual({
        credits: 0,
        milli: 0,
      });
      const charged = loadPrices(JSON.stringify({ index: { automatic: 1 } }));
      expect(indexCharge(charged, { definition: def, payload: {}, externalId: 'e' })).toEqual({
        credits: 2,
        milli: 2000,
      });
    },
  );

  it('writes, ingests, searches', () => {
    expect(recordWriteItems(DEFAULT_PRICES, { definition: def, payload: { code: 'x' } })).toEqual([
      { category: 'recordWrite', count: 1, units: 0, milli: 1000 },
      { category: 'recordIndex', count: 0, units: 2, milli: 1000 },
    ]);
    expect(
      documentWriteItems(DEFAULT_PRICES, { definition: undefined, payload: {} }, 10_241).map((i) => i.milli),
    ).toEqual([1000, 0, 2000]);
    expect([0, 1, 10_240, 10_241, 25_000].map((b) => textIngestItem(DEFAULT_PRICES, b).milli)).toEqual([
      1000, 1000, 1000, 2000, 3000,
    ]);
    expect([1, 102_400, 102_401, 150_000].map((b) => fileIngestItem(DEFAULT_PRICES, b).milli)).toEqual([
      2000, 2000, 4000, 4000,
    ]);
    expect(searchItem(DEFAULT_PRICES, 'HYBRID')).toEqual({ category: 'searchHybrid', count: 1, units: 0, milli: 2000 });
    expect(searchItem(DEFAULT_PRICES, 'SEMANTIC').milli).toBe(1000);
    expect(inferenceItem('rag', 12.4)).toEqual({ category: 'inferenceRag', count: 1, units: 12, milli: 0 });
  });

  it(
    'script execution: baseline 5 ms, 50 included ms consumed (not earned), 1 milli-credit per billable ms; ' +
      'service failures metered, not charged',
    () => {
      expect(scriptExecutionItem(DEFAULT_PRICES, { executions: 1, totalMillis: 120, charged: true })).toMatchObject({
        count: 1,
        units: 120,
        includedMillis: 50,
        billableMillis: 75,
        milli: 75,
      });
      expect(scriptExecutionItem(DEFAULT_PRICES, { executions: 1, totalMillis: 10, charged: true })).toMatchObject({
        includedMillis: 15,
        billableMillis: 0,
        milli: 0,
      });
      expect(scriptExecutionItem(DEFAULT_PRICES, { executions: 2, totalMillis: 200, charged: true })).toMatchObject({
        includedMillis: 100,
        billableMillis: 110,
        milli: 110,
      });
      expect(scriptExecutionItem(DEFAULT_PRICES, { executions: 1, totalMillis: 500, charged: false })).toMatchObject({
        count: 1,
        units: 500,
        includedMillis: 0,
        billableMillis: 0,
        milli: 0,
      });
    },
  );

  it('read overage priced per batch adds up to the overage of the total', () => {
    const per = DEFAULT_PRICES.reads.bytesPerCredit;
    const included = DEFAULT_PRICES.reads.includedBytes;
    const batches = [included - 10, 7, 12_345, 1, per, 3 * per + 17];
    let total = 0;
    let priced = 0;
    for (const b of batches) {
      priced += overageMilli(total + b, included, per) - overageMilli(total, included, per);
      total += b;
    }
    expect(priced).toBe(overageMilli(total, included, per));
    expect(overageMilli(100_001, 100_000, 1000)).toBe(1);
    expect(overageMilli(99_999, 100_000, 1000)).toBe(0);
  });
});

describe('a write charge in event metadata (chargeCode)', () => {
  it("round-trips every item, with the script items' included and billable milliseconds", () => {
    const items = [
      ...recordWriteItems(DEFAULT_PRICES, { definition: def, payload: { code: 'a', price: 3 } }),
      textIngestItem(DEFAULT_PRICES, 25_000),
      scriptExecutionItem(DEFAULT_PRICES, { executions: 2, totalMillis: 130, charged: true }),
    ];
    const code = encodeCharge(items);
    expect(code.length).toBeLessThan(JSON.stringify(items).length / 2);
    expect(decodeCharge(code)).toEqual(items);
    expect(chargeOf({ chargeCode: code })).toEqual(items);
  });

  it('events written before it keep their items; no charge is empty; a malformed code throws', () => {
    const legacy = [{ category: 'recordWrite' as const, count: 1, units: 0, milli: 1000 }];
    expect(chargeOf({ charge: legacy })).toBe(legacy);
    expect(chargeOf({})).toEqual([]);
    expect(() => decodeCharge('recordWrite 1 0')).toThrow(/malformed/);
    expect(() => decodeCharge('recordWrite 1 x 1000')).toThrow(/malformed/);
  });
});
