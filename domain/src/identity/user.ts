import {
  type EventMetadata,
  forbidden,
  IMMUTABLE_USER_KEYS,
  InternalError,
  invalid,
  notFound,
  PATCHABLE_USER_KEYS,
  patchUserFields,
  type Principal,
  type SchemaDefinition,
  type UserResponse,
} from '@svc/contracts';
import { assertNever, type Decider, type EventsOf, nextVersion, unexpected } from '../shared/decider';
import { checkPatchBody, type PatchRules } from '../shared/patch-body';
import type { PayloadSealing } from '../shared/sealing';
import { canReach, type Owned, stampOwnership } from '../tenancy/access';
import { changedPayload } from '../records/payload';
import { maskPayload } from '../records/view';
import { storedIdentityPayload } from './payload';

export interface LiveUser {
  exists: true;
  id: string;
  tenantId: string | null;
  contextId: string | null;
  email: string | null;
  displayName: string | null;
  payload: Record<string, unknown>;
  schemaId: string | null;
  scopes: string[];
  createdAt: string;
  updatedAt: string;
  version: number;
}
export type UserState = { exists: false; deleted?: boolean } | LiveUser;

/** Emails are unique per tenant regardless of case and surrounding spaces. */
export const emailKey = (email: string) => email.trim().toLowerCase();

/**
 * A user is owned by itself: a credential bound to an identity reaches that user only; scoped credentials reach users
 * sharing a scope.
 */
export const userOwner = (u: Pick<LiveUser, 'id' | 'tenantId' | 'contextId' | 'scopes'>): Owned => ({
  tenantId: u.tenantId,
  contextId: u.contextId,
  userId: u.id,
  scopes: u.scopes,
});

/** Users bound to a `user` schema are created and written with the root key only (spec: Schema.allowedSurfaces). */
export function requireRootForUserSchema(p: Principal): void {
  if (p.kind !== 'root') throw forbidden();
}

const USER_PATCH: PatchRules = {
  immutable: IMMUTABLE_USER_KEYS,
  patchable: PATCHABLE_USER_KEYS,
  fields: patchUserFields,
};

export type UserEvent = EventsOf<'UserCreated' | 'UserUpdated' | 'UserDeleted'>;

export type UserCommand =
  | {
      type: 'CreateUser';
      userId: string;
      email?: string;
      displayName?: string;
      payload?: Record<string, unknown>;
      schemaId?: string;
      /** The bound schema's definition (undefined without schemaId). */
      definition?: SchemaDefinition;
      /** After identity auto-assign. */
      scopes: string[];
    }
  /**
   * PUT replaces email, displayName and payload; PATCH merges (RFC 7386). `definition`: of the schema the user is bound
   * to, if it still exists.
   */
  | {
      type: 'ChangeUser';
      actor: Principal;
      kind: 'put' | 'patch';
      body: Record<string, unknown>;
      definition?: SchemaDefinition;
    }
  | { type: 'DeleteUser'; actor: Principal };

/** A live user the actor can reach; anything else is the same 404. */
function reachable(actor: Principal, state: UserState): LiveUser {
  if (!state.exists || !canReach(actor, userOwner(state))) throw notFound();
  return state;
}

/**
 * The user decider. Payloads are stored sealed (sensitive values of the bound
 * schema): `sealing` unseals the stored payload a PATCH merges into and seals
 * what the decision stores.
 */
export function userDecider(
  sealing: Pick<PayloadSealing, 'seal' | 'unseal'>,
): Decider<UserState, UserCommand, UserEvent> {
  return {
    initialState: () => ({ exists: false }),

    decide(cmd, state) {
      switch (cmd.type) {
        case 'CreateUser': {
          if (state.exists || state.deleted) throw new InternalError('user id reused');
          const payload = storedIdentityPayload(sealing, cmd.definition, cmd.payload ?? {});
          return [
            {
              type: 'UserCreated',
              data: {
                userId: cmd.userId,
                email: cmd.email ?? null,
                displayName: cmd.displayName ?? null,
                payload,
                schemaId: cmd.schemaId ?? null,
                scopes: cmd.scopes,
              },
            },
          ];
        }
        case 'ChangeUser': {
          const cur = reachable(cmd.actor, state);
          const b = cmd.body;
          if (cmd.kind === 'patch') checkPatchBody(b, USER_PATCH);
          if (cur.schemaId) requireRootForUserSchema(cmd.actor);
          const scopes =
            'scopes' in b ? (stampOwnership(cmd.actor, { scopes: b.scopes as string[] }).scopes ?? []) : undefined;
          if (cmd.kind === 'put' && b.schemaId !== undefined && b.schemaId !== cur.schemaId)
            throw invalid('schemaId is immutable');
          const put = cmd.kind === 'put';
          const payload = storedIdentityPayload(
            sealing,
            cmd.definition,
            changedPayload(sealing, cmd.kind, b, cur.payload),
          );
          const pick = (k: 'email' | 'displayName') =>
            put ? ((b[k] as string | undefined) ?? null) : k in b ? (b[k] as string) : cur[k];
          return [
            {
              type: 'UserUpdated',
              data: {
                userId: cur.id,
                email: pick('email'),
                displayName: pick('displayName'),
                payload,
                scopes: scopes ?? cur.scopes,
                change: cmd.kind,
              },
            },
          ];
        }
        case 'DeleteUser': {
          const cur = reachable(cmd.actor, state);
          if (cur.schemaId) requireRootForUserSchema(cmd.actor);
          return [{ type: 'UserDeleted', data: { userId: cur.id, email: cur.email } }];
        }
        default:
          return assertNever(cmd);
      }
    },

    evolve(state, e, m?: EventMetadata) {
      const at = m?.occurredAt ?? '';
      switch (e.type) {
        case 'UserCreated': {
          const { userId, ...d } = e.data;
          return {
            exists: true,
            id: userId,
            tenantId: m?.tenantId ?? null,
            contextId: m?.contextId ?? null,
            ...d,
            createdAt: at,
            updatedAt: at,
            version: 1,
          };
        }
        case 'UserUpdated': {
          const { userId: _, change: __, ...d } = e.data;
          return nextVersion(state, { ...d, updatedAt: at });
        }
        case 'UserDeleted':
          return { exists: false, deleted: true };
        default:
          return unexpected(e, state);
      }
    },
  };
}

/** The response shape: unset optional fields are absent; sensitive payload values read back masked. */
export function userView(
  u: Omit<LiveUser, 'exists' | 'tenantId' | 'contextId' | 'createdAt' | 'updatedAt' | 'version'>,
  def: Pick<SchemaDefinition, 'fields'> | undefined,
): UserResponse {
  return {
    id: u.id,
    ...(u.email !== null ? { email: u.email } : {}),
    ...(u.displayName !== null ? { displayName: u.displayName } : {}),
    payload: maskPayload(def, u.payload),
    ...(u.schemaId !== null ? { schemaId: u.schemaId } : {}),
    scopes: u.scopes,
  };
}
