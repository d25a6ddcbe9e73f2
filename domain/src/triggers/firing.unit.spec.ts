import { describe, expect, it } from 'vitest';
import {
  firingDepth,
  inputBytes,
  isRetryableTriggerFailure,
  MAX_TRIGGER_DEPTH,
  nextFailureStep,
  projectFields,
  resolveDataScope,
  scopeMap,
  triggerEventKind,
  triggerInput,
  triggerPrincipal,
} from './firing';

const rule = {
  id: 'r1',
  fields: ['amount', 'status'],
  grant: { allowedActions: ['records:r', 'records:c'], dataScope: { userId: '${{ input.userId }}' } },
};
const row = {
  kind: 'UPDATE' as const,
  schemaId: 's1',
  typeName: 'invoice',
  recordId: 'rec',
  userId: 'u1',
  scopes: ['team:a'],
  payload: { amount: 2, other: 'x' },
  previous: { amount: 1, status: 'open', other: 'y' },
};

describe('trigger firing', () => {
  it('maps record events to rule events', () => {
    expect(['RecordCreated', 'RecordUpdated', 'RecordDeleted', 'RecordIndexed'].map(triggerEventKind)).toEqual([
      'CREATE',
      'UPDATE',
      'DELETE',
      null,
    ]);
  });

  it('projects only declared fields; absent ones stay absent (undefined), not null', () => {
    const out = projectFields({ amount: 1, other: 2 }, ['amount', 'status']);
    expect(out).toEqual({ amount: 1 });
    expect('status' in out).toBe(false);
  });

  it('builds the input with record and previous for UPDATE only, scopes by namespace', () => {
    const p = triggerPrincipal(
      rule,
      { accountId: 'a', tenantId: 't', contextId: 'c' },
      resolveDataScope(rule.grant.dataScope, { userId: 'u1', scope: scopeMap(row.scopes) }),
    );
    expect(p).toMatchObject({
      kind: 'scoped',
      tenantId: 't',
      contextId: 'c',
      allowedActions: ['records:r', 'records:c'],
      dataScope: { userId: 'u1' },
      userId: null,
    });
    const input = triggerInput(rule, row, p);
    expect(input).toEqual({
      event: 'UPDATE',
      schemaId: 's1',
      recordId: 'rec',
      userId: 'u1',
      scope: { team: 'a' },
      record: { amount: 2 },
      previous: { amount: 1, status: 'open' },
    });
    expect(triggerInput(rule, { ...row, kind: 'CREATE' }, p)).not.toHaveProperty('previous');
  });

  it('gives empty record and previous when the grant cannot read the record', () => {
    const p = triggerPrincipal(
      { ...rule, grant: { allowedActions: ['records:c'], dataScope: null } },
      { accountId: 'a', tenantId: 't', contextId: 'c' },
      null,
    );
    expect(triggerInput(rule, row, p)).toMatchObject({ record: {}, previous: {} });
    const other = triggerPrincipal(rule, { accountId: 'a', tenantId: 't', contextId: 'c' }, { userId: 'someone-else' });
    expect(triggerInput(rule, row, other)).toMatchObject({ record: {}, previous: {} });
  });

  it('resolves placeholders; one the record cannot fill reaches nothing', () => {
    expect(
      resolveDataScope(
        { userId: '${{ input.userId }}', scopes: ['${{ input.scope.team }}'] },
        { userId: 'u1', scope: { team: 'a' } },
      ),
    ).toEqual({ userId: 'u1', scopes: ['team:a'] });
    const none = resolveDataScope(
      { userId: '${{ input.userId }}', scopes: ['${{ input.scope.team }}'] },
      { userId: null, scope: {} },
    );
    expect(none?.userId).not.toBe(undefined);
    expect(none?.scopes).toHaveLength(1);
    expect(resolveDataScope(null, { userId: 'u', scope: {} })).toBeNull();
  });

  it('measures record plus previous', () => {
    expect(inputBytes({ record: { a: 1 }, previous: { a: 2 } })).toBe(14);
    expect(inputBytes({ record: {} })).toBe(2);
  });

  it('counts depth from the event that fired', () => {
    expect(firingDepth(undefined)).toBe(1);
    expect(firingDepth(MAX_TRIGGER_DEPTH)).toBe(MAX_TRIGGER_DEPTH + 1);
  });

  it('is terminal at once for deterministic failures; retries service-side ones on the webhook schedule', () => {
    expect(nextFailureStep({ retryable: false, attempts: 1, now: 0 })).toEqual({ terminal: true });
    expect(nextFailureStep({ retryable: true, attempts: 1, now: 1000 })).toEqual({ terminal: false, retryAt: 31_000 });
    expect(nextFailureStep({ retryable: true, attempts: 5, now: 0 })).toEqual({ terminal: false, retryAt: 28_800_000 });
    expect(nextFailureStep({ retryable: true, attempts: 6, now: 0 })).toEqual({ terminal: true });
    expect(nextFailureStep({ retryable: true, attempts: 1, now: 0, scale: 0.001 })).toEqual({
      terminal: false,
      retryAt: 30,
    });
    expect(['CONCURRENT_MODIFICATION', 'INTERNAL', 'EXECUTION_OUTCOME_UNKNOWN'].every(isRetryableTriggerFailure)).toBe(
      true,
    );
    expect(
      [
        'SCRIPT_ERROR',
        'TIMEOUT',
        'RESOURCE_LIMIT_EXCEEDED',
        'WRITE_BUFFER_CAP_EXCEEDED',
        'AUTHORIZATION_DENIED',
        'CONFLICT',
        'NOT_FOUND',
        'VALIDATION_ERROR',
      ].some(isRetryableTriggerFailure),
    ).toBe(false);
  });
});
