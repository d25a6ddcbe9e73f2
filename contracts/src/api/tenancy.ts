import { z } from 'zod';
import { scopes, uuid } from '../common';

export const planSchema = z.enum(['free', 'starter', 'pro', 'scale', 'enterprise']);
const entitlements = z.object({ allowGlobalRegion: z.boolean().optional() }).strict();
/** A permission string: `*` or `<resource>:<action>[:<name>]`. */
export const permission = z
  .string()
  .regex(/^(\*|[a-z][a-z-]*:(\*|[a-z])(:[A-Za-z0-9_-]{1,64})?)$/, 'must be <resource>:<action>');
export const dataScopeSchema = z
  .object({ userId: z.string().min(1).max(128).optional(), scopes: scopes.optional() })
  .strict();

export const createAccountBody = z
  .object({
    plan: planSchema.optional(),
    name: z.string().max(200).optional(),
    inferenceBalanceCents: z.number().int().min(0).optional(),
    creditLimit: z.number().int().min(0).optional(),
    rateLimitPerMinute: z.number().int().min(1).optional(),
    entitlements: entitlements.optional(),
  })
  .strict();

export const patchAccountBody = z
  .object({
    plan: planSchema.optional(),
    creditLimit: z.number().int().min(0).nullable().optional(),
    rateLimitPerMinute: z.number().int().min(1).nullable().optional(),
    inferenceBalanceCents: z.number().int().min(0).optional(),
    entitlements: entitlements.optional(),
  })
  .strict();

const tenantKeys = z.object({ tenantId: z.string(), contextId: z.string(), rootKey: z.string() });
export const accountCreatedResponse = z.object({
  accountId: z.string(),
  plan: planSchema,
  developerToken: z.string(),
  tenants: z.object({ live: tenantKeys, test: tenantKeys }),
});

export const mintTokenBody = z
  .object({
    scope: z.object({ allowedActions: z.array(permission).min(1), dataScope: dataScopeSchema.optional() }).strict(),
    contextId: uuid.optional(),
    userId: z.string().min(1).max(128).optional(),
    expiresInSeconds: z
      .number()
      .int()
      .min(1)
      .max(365 * 24 * 3600)
      .optional(),
  })
  .strict();
export const mintTokenResponse = z.object({
  id: z.string(),
  token: z.string(),
  contextId: z.string(),
  expiresAt: z.string().nullable(),
});

export const createScopedKeyBody = z
  .object({
    tenantId: z.string(),
    contextId: uuid.optional(),
    allowedActions: z.array(permission).min(1),
    dataScope: dataScopeSchema.optional(),
    userId: z.string().min(1).max(128).optional(),
    crossContext: z.boolean().optional(),
  })
  .strict();

/** POST /developer/keys: the key is shown once. */
export const scopedKeyResponse = z.object({
  id: z.string(),
  key: z.string(),
  tenantId: z.string(),
  contextId: z.string(),
  allowedActions: z.array(z.string()),
  crossContext: z.boolean(),
});
/**
 * POST /v1/contexts: `name` is optional (a context made without one is named `context-<first 8 characters of its id>`).
 */
export const createContextBody = z.object({ name: z.string().min(1).max(200).optional() }).strict();
/** An app context: `contextId` is the name the rest of the API uses for it (decisions §2), the same value as `id`. */
/** GET /v1/ping: the credential works; where its requests land (the spec's `ping` log resource). */
export const pingResponse = z.object({
  status: z.literal('ok'),
  tenantId: z.string(),
  contextId: z.string().nullable(),
  livemode: z.boolean(),
});
export const contextResponse = z.object({
  id: z.string(),
  contextId: z.string(),
  tenantId: z.string(),
  name: z.string(),
  isDefault: z.boolean(),
  createdAt: z.string(),
});
export const idParam = z.object({ id: z.string().min(1).max(128) });
export const rotateRootKeyParams = z.object({ tenantId: z.string().min(1).max(128) });
export const rotateRootKeyResponse = z.object({
  id: z.string(),
  tenantId: z.string(),
  environment: z.enum(['live', 'test']),
  rootKey: z.string(),
});
