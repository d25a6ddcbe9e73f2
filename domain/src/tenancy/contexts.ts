import { type EventData, InternalError, invalid, notFound } from '@svc/contracts';
import { assertNever, type Decider, type EventsOf, unexpected } from '../shared/decider';

/** One app context's stream: created once, deleted at most once (DELETE /v1/contexts/{id}, or with its tenant). */
export type ContextState = { exists: false; deleted?: boolean } | ({ exists: true } & EventData<'ContextCreated'>);

export type ContextEvent = EventsOf<'ContextCreated' | 'ContextDeleted'>;

export type ContextCommand =
  | ({ type: 'CreateContext' } & EventData<'ContextCreated'>)
  /**
   * DELETE /v1/contexts/{id} by a root key of `tenantId`: another tenant's context reads as missing; the default one
   * stays.
   */
  | { type: 'DeleteContext'; tenantId: string }
  /**
   * Part of a tenant teardown: every live context of `tenantId` goes, the default one too; anything else is left alone.
   */
  | { type: 'TearDownContext'; tenantId: string };

export const contextDecider: Decider<ContextState, ContextCommand, ContextEvent> = {
  initialState: () => ({ exists: false }),

  decide(cmd, state) {
    switch (cmd.type) {
      case 'CreateContext': {
        if (state.exists || state.deleted) throw new InternalError('context id reused');
        const { type: _, ...data } = cmd;
        return [{ type: 'ContextCreated', data }];
      }
      case 'DeleteContext':
        if (!state.exists || state.tenantId !== cmd.tenantId) throw notFound();
        if (state.isDefault) throw invalid('The default context cannot be deleted');
        return [{ type: 'ContextDeleted', data: { contextId: state.contextId, tenantId: cmd.tenantId } }];
      case 'TearDownContext':
        if (!state.exists || state.tenantId !== cmd.tenantId) return [];
        return [{ type: 'ContextDeleted', data: { contextId: state.contextId, tenantId: cmd.tenantId } }];
      default:
        return assertNever(cmd);
    }
  },

  evolve(state, e) {
    switch (e.type) {
      case 'ContextCreated':
        return { exists: true, ...e.data };
      case 'ContextDeleted':
        return { exists: false, deleted: true };
      default:
        return unexpected(e, state);
    }
  },
};

/** A tenant's teardown stream `tenant-<id>`: it exists only once the tenant is torn down. */
export interface TenantState {
  tornDown: boolean;
}

export type TenantEvent = EventsOf<'TenantTornDown'>;

/** DELETE /developer/tenants/{tenantId}: `contextIds` are the contexts deleted in the same append. */
export type TenantCommand = { type: 'TearDownTenant' } & EventData<'TenantTornDown'>;

/** One command, one event: nothing to switch on. */
export const tenantDecider: Decider<TenantState, TenantCommand, TenantEvent> = {
  initialState: () => ({ tornDown: false }),

  decide({ type: _, ...data }, state) {
    // Torn down already (or concurrently): reads as a tenant that is not there.
    if (state.tornDown) throw notFound();
    return [{ type: 'TenantTornDown', data }];
  },

  evolve: (state, e) => (e.type === 'TenantTornDown' ? { tornDown: true } : state),
};
