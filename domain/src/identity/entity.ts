import {
  type EntityResponse,
  type EventMetadata,
  IMMUTABLE_ENTITY_KEYS,
  InternalError,
  invalid,
  notFound,
  PATCHABLE_ENTITY_KEYS,
  patchEntityFields,
  type Principal,
  type SchemaDefinition,
  versionConflict,
} from '@svc/contracts';
import { changedPayload } from '../records/payload';
import { assertNever, type Decider, type EventsOf, nextVersion, unexpected } from '../shared/decider';
import { checkPatchBody, type PatchRules } from '../shared/patch-body';
import type { PayloadSealing } from '../shared/sealing';
import { maskPayload } from '../records/view';
import { storedIdentityPayload } from './payload';

export interface LiveEntity {
  exists: true;
  id: string;
  tenantId: string | null;
  contextId: string | null;
  namespace: string;
  key: string;
  payload: Record<string, unknown>;
  schemaId: string | null;
  createdAt: string;
  updatedAt: string;
  version: number;
}
export type EntityState = { exists: false; deleted?: boolean } | LiveEntity;

/** The scope string an entity stands for: `<namespace>:<key>`. */
export const entityScope = (e: Pick<LiveEntity, 'namespace' | 'key'>) => `${e.namespace}:${e.key}`;

/**
 * Whether a principal may see an entity: same tenant and context, and, for a
 * credential limited to scopes, the entity's own scope is one of them.
 * Entities belong to no user, so a credential's bound user does not hide them.
 */
export function canSeeEntity(
  p: Principal,
  e: Pick<LiveEntity, 'tenantId' | 'contextId' | 'namespace' | 'key'>,
): boolean {
  if (e.tenantId !== p.tenantId || e.contextId !== p.contextId) return false;
  const scopes = p.dataScope?.scopes;
  return !scopes?.length || scopes.includes(entityScope(e));
}

const ENTITY_PATCH: PatchRules = {
  immutable: IMMUTABLE_ENTITY_KEYS,
  patchable: PATCHABLE_ENTITY_KEYS,
  fields: patchEntityFields,
};

export type EntityEvent = EventsOf<'EntityCreated' | 'EntityUpdated' | 'EntityDeleted'>;

export type EntityCommand =
  | {
      type: 'CreateEntity';
      entityId: string;
      namespace: string;
      key: string;
      payload?: Record<string, unknown>;
      schemaId?: string;
      definition?: SchemaDefinition;
      /** Every namespace of the tenant (built-in and registered). */
      namespaces: readonly string[];
    }
  /**
   * PUT replaces the payload in full; PATCH merges it (RFC 7386). `definition`: of the bound schema, if it still
   * exists.
   */
  | {
      type: 'ChangeEntity';
      actor: Principal;
      kind: 'put' | 'patch';
      body: Record<string, unknown>;
      definition?: SchemaDefinition;
    }
  | { type: 'DeleteEntity'; actor: Principal; expectedVersion?: number };

/** A live entity the actor can see; anything else is the same 404. */
function visible(actor: Principal, state: EntityState): LiveEntity {
  if (!state.exists || !canSeeEntity(actor, state)) throw notFound();
  return state;
}

/** The entity decider; payloads are stored sealed (see `userDecider`). */
export function entityDecider(
  sealing: Pick<PayloadSealing, 'seal' | 'unseal'>,
): Decider<EntityState, EntityCommand, EntityEvent> {
  return {
    initialState: () => ({ exists: false }),

    decide(cmd, state) {
      switch (cmd.type) {
        case 'CreateEntity': {
          if (state.exists || state.deleted) throw new InternalError('entity id reused');
          if (!cmd.namespaces.includes(cmd.namespace))
            throw invalid(`namespace '${cmd.namespace}' is not org, client or a registered namespace`);
          const payload = storedIdentityPayload(sealing, cmd.definition, cmd.payload ?? {});
          return [
            {
              type: 'EntityCreated',
              data: {
                entityId: cmd.entityId,
                namespace: cmd.namespace,
                key: cmd.key,
                payload,
                schemaId: cmd.schemaId ?? null,
              },
            },
          ];
        }
        case 'ChangeEntity': {
          const cur = visible(cmd.actor, state);
          const b = cmd.body;
          if (cmd.kind === 'patch') checkPatchBody(b, ENTITY_PATCH);
          else {
            if (b.namespace !== undefined && b.namespace !== cur.namespace) throw invalid('namespace is immutable');
            if (b.key !== undefined && b.key !== cur.key) throw invalid('key is immutable');
            if (b.schemaId !== undefined && b.schemaId !== cur.schemaId) throw invalid('schemaId is immutable');
          }
          if (b.expectedVersion !== undefined && b.expectedVersion !== cur.version) throw versionConflict();
          const payload = storedIdentityPayload(
            sealing,
            cmd.definition,
            changedPayload(sealing, cmd.kind, b, cur.payload),
          );
          return [{ type: 'EntityUpdated', data: { entityId: cur.id, payload, change: cmd.kind } }];
        }
        case 'DeleteEntity': {
          const cur = visible(cmd.actor, state);
          if (cmd.expectedVersion !== undefined && cmd.expectedVersion !== cur.version) throw versionConflict();
          return [{ type: 'EntityDeleted', data: { entityId: cur.id, namespace: cur.namespace, key: cur.key } }];
        }
        default:
          return assertNever(cmd);
      }
    },

    evolve(state, e, m?: EventMetadata) {
      const at = m?.occurredAt ?? '';
      switch (e.type) {
        case 'EntityCreated': {
          const { entityId, ...d } = e.data;
          return {
            exists: true,
            id: entityId,
            tenantId: m?.tenantId ?? null,
            contextId: m?.contextId ?? null,
            ...d,
            createdAt: at,
            updatedAt: at,
            version: 1,
          };
        }
        case 'EntityUpdated':
          return nextVersion(state, { payload: e.data.payload, updatedAt: at });
        case 'EntityDeleted':
          return { exists: false, deleted: true };
        default:
          return unexpected(e, state);
      }
    },
  };
}

export function entityView(
  e: Omit<LiveEntity, 'exists' | 'tenantId' | 'contextId' | 'createdAt' | 'updatedAt'>,
  def: Pick<SchemaDefinition, 'fields'> | undefined,
): EntityResponse {
  return {
    id: e.id,
    namespace: e.namespace,
    key: e.key,
    payload: maskPayload(def, e.payload),
    ...(e.schemaId !== null ? { schemaId: e.schemaId } : {}),
    version: e.version,
  };
}
