import { describe, expect, it } from 'vitest';
import { EVENT_SCHEMA_VERSION } from '@svc/contracts';
import { systemMetadata } from './metadata';

describe('systemMetadata', () => {
  it('a write no request made: no actor, no user; the tenant, context, account and causing request as given', () => {
    expect(
      systemMetadata({
        tenantId: 't',
        contextId: 'c',
        accountId: 'a',
        requestId: 'r',
        occurredAt: new Date('2026-01-01T00:00:00Z'),
      }),
    ).toEqual({
      tenantId: 't',
      contextId: 'c',
      accountId: 'a',
      actorKeyId: null,
      userId: null,
      requestId: 'r',
      occurredAt: '2026-01-01T00:00:00.000Z',
      schemaVersion: EVENT_SCHEMA_VERSION,
    });
  });
  it('a trigger depth is carried only when given (events of other writers keep the same metadata shape)', () => {
    expect(
      systemMetadata({ tenantId: null, contextId: null, occurredAt: '2026-01-01T00:00:00.000Z' }),
    ).not.toHaveProperty('triggerDepth');
    expect(
      systemMetadata({ tenantId: 't', contextId: null, occurredAt: '2026-01-01T00:00:00.000Z', triggerDepth: 2 })
        .triggerDepth,
    ).toBe(2);
  });
});
