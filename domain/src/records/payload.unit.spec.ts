import { describe, expect, it } from 'vitest';
import type { SchemaDefinition } from '@svc/contracts';
import { validatePayload } from './payload';

const def = { typeName: 'event', fields: [{ fieldId: 'on', fieldType: 'date' }] } as unknown as SchemaDefinition;
const check = (on: unknown) => () => validatePayload(def, { on }, { enforceRequired: true });

describe('date fields', () => {
  it('take real calendar dates and date-times, and epoch milliseconds', () => {
    for (const on of [
      '2026-02-28',
      '2024-02-29',
      '2026-12-31T23:59:59.999Z',
      '2026-06-01T10:00',
      '2026-06-01T10:00+05:30',
      '2026-06-01T10:00:00-0800',
      1767225600000,
    ])
      expect(check(on), String(on)).not.toThrow();
  });

  it('refuse a day the month does not have instead of rolling it over (2026-02-31 is not March 3)', () => {
    for (const on of ['2026-02-31', '2026-02-29', '2026-04-31', '2026-00-10', '2026-13-01', '2026-01-00'])
      expect(check(on), on).toThrow(/must be an ISO-8601 date/);
  });

  it('refuse an impossible clock or offset', () => {
    for (const on of [
      '2026-01-01T24:00Z',
      '2026-01-01T23:60Z',
      '2026-01-01T23:59:60Z',
      '2026-01-01T10:00+24:00',
      '2026-01-01T10:00+05:75',
    ])
      expect(check(on), on).toThrow(/must be an ISO-8601 date/);
  });

  it('refuse non-integer epoch values and other shapes', () => {
    for (const on of [1.5, '20260101', '2026-1-1', 'yesterday', true])
      expect(check(on), String(on)).toThrow(/must be an ISO-8601 date/);
  });
});
