import { describe, expect, it } from 'vitest';
import { InternalError } from '@svc/contracts';
import { given } from '../shared/given-when-then.test-support';
import { type ContextEvent, contextDecider, type TenantEvent, tenantDecider } from './contexts';

const data = (isDefault = false) => ({ contextId: 'c1', tenantId: 't1', accountId: 'a1', name: 'app', isDefault });
const created = (isDefault = false): ContextEvent => ({ type: 'ContextCreated', data: data(isDefault) });
const deleted: ContextEvent = { type: 'ContextDeleted', data: { contextId: 'c1', tenantId: 't1' } };

describe('CreateContext', () => {
  it('creates a context once', () => {
    given(contextDecider)
      .when({ type: 'CreateContext', ...data() })
      .then([created()]);
    expect(() =>
      given(contextDecider, [created()])
        .when({ type: 'CreateContext', ...data() })
        .events(),
    ).toThrow(InternalError);
  });
});

describe('DeleteContext', () => {
  it('deletes a context of the tenant', () => {
    given(contextDecider, [created()]).when({ type: 'DeleteContext', tenantId: 't1' }).then([deleted]);
    expect(given(contextDecider, [created(), deleted]).state()).toEqual({ exists: false, deleted: true });
  });

  it('refuses a missing, deleted or foreign context, and the default one', () => {
    given(contextDecider).when({ type: 'DeleteContext', tenantId: 't1' }).thenThrows('NOT_FOUND');
    given(contextDecider, [created(), deleted]).when({ type: 'DeleteContext', tenantId: 't1' }).thenThrows('NOT_FOUND');
    given(contextDecider, [created()]).when({ type: 'DeleteContext', tenantId: 't2' }).thenThrows('NOT_FOUND');
    given(contextDecider, [created(true)])
      .when({ type: 'DeleteContext', tenantId: 't1' })
      .thenThrows('VALIDATION_ERROR');
  });
});

describe('TearDownContext', () => {
  it('deletes every live context of the tenant, the default one too', () => {
    given(contextDecider, [created(true)])
      .when({ type: 'TearDownContext', tenantId: 't1' })
      .then([deleted]);
  });

  it('leaves alone what is gone or another tenant’s', () => {
    given(contextDecider).when({ type: 'TearDownContext', tenantId: 't1' }).then([]);
    given(contextDecider, [created(), deleted]).when({ type: 'TearDownContext', tenantId: 't1' }).then([]);
    given(contextDecider, [created()]).when({ type: 'TearDownContext', tenantId: 't2' }).then([]);
  });
});

describe('TearDownTenant', () => {
  const tornDown: TenantEvent = {
    type: 'TenantTornDown',
    data: { tenantId: 't1', accountId: 'a1', environment: 'test', contextIds: ['c1'] },
  };

  it('tears a tenant down once; again reads as a tenant that is not there', () => {
    given(tenantDecider)
      .when({ type: 'TearDownTenant', ...tornDown.data })
      .then([tornDown]);
    given(tenantDecider, [tornDown])
      .when({ type: 'TearDownTenant', ...tornDown.data })
      .thenThrows('NOT_FOUND');
  });
});
