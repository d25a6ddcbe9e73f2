import { z } from 'zod';
import { identifier, scopes } from '../common';
import { scopeFilter } from './item-fields';

/** Namespaces every tenant has; they cannot be created or deleted. */
export const BUILTIN_NAMESPACES = ['org', 'client'] as const;

const id = z.string().min(1).max(128);
const payload = z.record(z.string(), z.unknown());

// namespaces ------------------------------------------------------------------

export const createNamespaceBody = z
  .object({ name: identifier, description: z.string().max(2000).optional() })
  .strict();
export type CreateNamespace = z.infer<typeof createNamespaceBody>;
export const namespaceResponse = z.object({
  name: z.string(),
  description: z.string().optional(),
  createdAt: z.string(),
});
export type NamespaceResponse = z.infer<typeof namespaceResponse>;
export const namespaceParam = z.object({ name: z.string().min(1).max(128) });

// users -----------------------------------------------------------------------

export const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const email = z.string().max(254).regex(EMAIL_RE, 'must be an email address');

export const createUserBody = z
  .object({
    email: email.optional(),
    displayName: z.string().min(1).max(200).optional(),
    payload: payload.optional(),
    /** Immutable; a `user` schema needs the root key to create or write its users. */
    schemaId: id.optional(),
    scopes: scopes.optional(),
  })
  .strict();
export type CreateUser = z.infer<typeof createUserBody>;
/**
 * PUT replaces email, displayName and payload (omitted: cleared); omitted scopes are kept; `schemaId` may only repeat
 * the current value.
 */
export const putUserBody = createUserBody;
export type PutUser = z.infer<typeof putUserBody>;

export const PATCHABLE_USER_KEYS = ['email', 'displayName', 'payload', 'scopes'] as const;
export const IMMUTABLE_USER_KEYS = ['id', 'schemaId'] as const;
export const patchUserBody = z.record(z.string(), z.unknown());
export const patchUserFields = createUserBody.omit({ schemaId: true }).partial().strict();

export const userResponse = z.object({
  id: z.string(),
  email: z.string().optional(),
  displayName: z.string().optional(),
  payload: payload.optional(),
  schemaId: z.string().optional(),
  scopes: z.array(z.string()).optional(),
});
export type UserResponse = z.infer<typeof userResponse>;

export const listUsersQuery = z.object({
  email: z.string().min(1).max(254).optional(),
  scope: scopeFilter,
  startFrom: z.string().optional(),
});

// entities --------------------------------------------------------------------

/** An entity key is the value half of a `<namespace>:<value>` scope. */
export const entityKey = z.string().regex(/^[^\s]{1,256}$/, 'must be 1-256 characters without whitespace');

export const createEntityBody = z
  .object({
    namespace: identifier,
    key: entityKey,
    payload: payload.optional(),
    /** Immutable; the schema must allow the `entity` surface. */
    schemaId: id.optional(),
    /** Ignored on create. */
    expectedVersion: z.number().int().optional(),
  })
  .strict();
export type CreateEntity = z.infer<typeof createEntityBody>;
/** PUT replaces the payload in full; `namespace`, `key` and `schemaId` may only repeat the current value. */
export const putEntityBody = createEntityBody.partial({ namespace: true, key: true });
export type PutEntity = z.infer<typeof putEntityBody>;

export const PATCHABLE_ENTITY_KEYS = ['payload', 'expectedVersion'] as const;
export const IMMUTABLE_ENTITY_KEYS = ['id', 'namespace', 'key', 'schemaId'] as const;
export const patchEntityBody = z.record(z.string(), z.unknown());
export const patchEntityFields = z.object({ payload, expectedVersion: z.number().int() }).partial().strict();

export const entityResponse = z.object({
  id: z.string(),
  namespace: z.string(),
  key: z.string(),
  payload: payload.optional(),
  schemaId: z.string().optional(),
  version: z.number().int(),
});
export type EntityResponse = z.infer<typeof entityResponse>;

export const listEntitiesQuery = z.object({
  namespace: identifier.optional(),
  key: entityKey.optional(),
  startFrom: z.string().optional(),
});
