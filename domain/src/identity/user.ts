import { type DomainEvent, type EventMetadata, IMMUTABLE_USER_KEYS, InternalError, invalid, notFound, PATCHABLE_USER_KEYS, patchUserFields, type SchemaDefinition, type UserResponse } from '@svc/contracts';
import type { Owned } from '../tenancy/access';
import { checkInlineLimit, mergePatch, validatePayload } from '../records/payload';
import { maskPayload } from '../records/view';

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

/** Payload rules without a schema: reserved keys, number rules and the inline size limit. */
export const BARE_DEFINITION = { typeName: 'bare', displayName: 'bare', allowedSurfaces: ['user', 'entity'] } as SchemaDefinition;

/** Emails are unique per tenant regardless of case and surrounding spaces. */
export const emailKey = (email: string) => email.trim().toLowerCase();

export function checkIdentityPayload(def: SchemaDefinition | undefined, payload: Record<string, unknown>): void {
  validatePayload(def ?? BARE_DEFINITION, payload, { enforceRequired: true });
  checkInlineLimit(def ?? BARE_DEFINITION, payload);
}

export const userAggregate = {
  initialState: (): UserState => ({ exists: false }),
  evolve(state: UserState, e: DomainEvent, m?: EventMetadata): UserState {
    const at = m?.occurredAt ?? '';
    switch (e.type) {
      case 'UserCreated': {
        const { userId, ...d } = e.data;
        return { exists: true, id: userId, tenantId: m?.tenantId ?? null, contextId: m?.contextId ?? null, ...d, createdAt: at, updatedAt: at, version: 1 };
      }
      case 'UserUpdated': {
        if (!state.exists) return state;
        const { userId: _, change: __, ...d } = e.data;
        return { ...state, ...d, updatedAt: at, version: state.version + 1 };
      }
      case 'UserDeleted':
        return { exists: false, deleted: true };
      default:
        return state;
    }
  },
};

/** A user is owned by itself: a credential bound to an identity reaches that user only; scoped credentials reach users sharing a scope. */
export const userOwner = (u: Pick<LiveUser, 'id' | 'tenantId' | 'contextId' | 'scopes'>): Owned => ({ tenantId: u.tenantId, contextId: u.contextId, userId: u.id, scopes: u.scopes });

export interface CreateUserCommand {
  userId: string;
  email?: string;
  displayName?: string;
  payload?: Record<string, unknown>;
  schemaId?: string;
  /** The bound schema's definition (undefined without schemaId). */
  definition?: SchemaDefinition;
  scopes: string[];
}

export function decideCreateUser(cmd: CreateUserCommand, state: UserState): DomainEvent[] {
  if (state.exists || state.deleted) throw new InternalError('user id reused');
  const payload = cmd.payload ?? {};
  checkIdentityPayload(cmd.definition, payload);
  return [
    {
      type: 'UserCreated',
      data: { userId: cmd.userId, email: cmd.email ?? null, displayName: cmd.displayName ?? null, payload, schemaId: cmd.schemaId ?? null, scopes: cmd.scopes },
    },
  ];
}

/** Rejections of a PATCH body that do not depend on the user. */
export function checkUserPatch(b: Record<string, unknown>): void {
  for (const k of IMMUTABLE_USER_KEYS) if (k in b) throw invalid(`${k} cannot be changed`);
  for (const k of Object.keys(b)) {
    if (!(PATCHABLE_USER_KEYS as readonly string[]).includes(k)) throw invalid(`${k} is not a patchable field`);
    if (b[k] === null) throw invalid(`${k} cannot be null in a PATCH`);
  }
  const r = patchUserFields.safeParse(b);
  if (!r.success) throw invalid(`Invalid body: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
}

export interface ChangeUserCommand {
  kind: 'put' | 'patch';
  body: Record<string, unknown>;
  definition?: SchemaDefinition;
  /** Scopes after identity auto-assign (undefined: unchanged). */
  scopes?: string[];
}

/** PUT replaces email, displayName and payload; PATCH merges (RFC 7386). Rejections change nothing. */
export function decideChangeUser(cmd: ChangeUserCommand, state: UserState): DomainEvent[] {
  if (!state.exists) throw notFound();
  const b = cmd.body;
  if (cmd.kind === 'patch') checkUserPatch(b);
  else if (b.schemaId !== undefined && b.schemaId !== state.schemaId) throw invalid('schemaId is immutable');
  const put = cmd.kind === 'put';
  const payload = put
    ? ((b.payload as Record<string, unknown> | undefined) ?? {})
    : b.payload !== undefined
      ? (mergePatch(state.payload, b.payload) as Record<string, unknown>)
      : state.payload;
  checkIdentityPayload(cmd.definition, payload);
  const pick = (k: 'email' | 'displayName') => (put ? ((b[k] as string | undefined) ?? null) : k in b ? (b[k] as string) : state[k]);
  return [
    {
      type: 'UserUpdated',
      data: { userId: state.id, email: pick('email'), displayName: pick('displayName'), payload, scopes: cmd.scopes ?? state.scopes, change: cmd.kind },
    },
  ];
}

export function decideDeleteUser(state: UserState): DomainEvent[] {
  if (!state.exists) throw notFound();
  return [{ type: 'UserDeleted', data: { userId: state.id, email: state.email } }];
}

/** The response shape: unset optional fields are absent; sensitive payload values read back masked. */
export function userView(u: Omit<LiveUser, 'exists' | 'tenantId' | 'contextId' | 'createdAt' | 'updatedAt' | 'version'>, def: Pick<SchemaDefinition, 'fields'> | undefined): UserResponse {
  return {
    id: u.id,
    ...(u.email !== null ? { email: u.email } : {}),
    ...(u.displayName !== null ? { displayName: u.displayName } : {}),
    payload: maskPayload(def, u.payload),
    ...(u.schemaId !== null ? { schemaId: u.schemaId } : {}),
    scopes: u.scopes,
  };
}
