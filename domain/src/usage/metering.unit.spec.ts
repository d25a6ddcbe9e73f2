import { describe, it } from 'vitest';
import { given } from '../shared/given-when-then.test-support';
import type { UsageItem } from './charges';
import { usageDecider } from './metering';

const terms = { includedCalls: 1000, callsPerCredit: 100, includedBytes: 1_000_000, bytesPerCredit: 100_000 };
const item: UsageItem = { category: 'searchText', count: 1, units: 0, milli: 100 };

describe('usage decider', () => {
  it('priced work is one UsageMetered event of the tenant context and period', () => {
    given(usageDecider)
      .when({ type: 'MeterUsage', tenantId: 't1', contextId: 'c1', period: '2026-01', items: [item] })
      .then([{ type: 'UsageMetered', data: { tenantId: 't1', contextId: 'c1', period: '2026-01', items: [item] } }]);
  });
  it('nothing to charge appends nothing', () => {
    given(usageDecider)
      .when({ type: 'MeterUsage', tenantId: 't1', contextId: null, period: '2026-01', items: [] })
      .then([]);
    given(usageDecider)
      .when({
        type: 'MeterReads',
        tenantId: 't1',
        contextId: null,
        reads: [{ period: '2026-01', calls: 0, bytes: 0, terms }],
      })
      .then([]);
  });
  it(
    'read tallies: one ReadsMetered per period with the terms that price them; bytes are whole and not ' + 'negative',
    () => {
      given(usageDecider)
        .when({
          type: 'MeterReads',
          tenantId: 't1',
          contextId: 'c1',
          reads: [
            { period: '2026-01', calls: 3, bytes: 10.4, terms },
            { period: '2026-02', calls: 1, bytes: -5, terms },
          ],
        })
        .then([
          {
            type: 'ReadsMetered',
            data: { tenantId: 't1', contextId: 'c1', period: '2026-01', calls: 3, bytes: 10, terms },
          },
          {
            type: 'ReadsMetered',
            data: { tenantId: 't1', contextId: 'c1', period: '2026-02', calls: 1, bytes: 0, terms },
          },
        ]);
    },
  );
});
