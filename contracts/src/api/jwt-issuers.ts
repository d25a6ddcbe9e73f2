import { z } from 'zod';
import { permission } from './tenancy';

/** Issuers one tenant may register (docs/limits.md). */
export const MAX_JWT_ISSUERS_PER_TENANT = 10;

/** The claims read when a registration names none (docs/identity.md "Sign in with your identity provider"). */
export const JWT_CLAIM_DEFAULTS = {
  userId: 'sub',
  contextId: 'svc_context',
  scopes: 'svc_scopes',
  permissions: 'svc_permissions',
} as const;
export type JwtClaimNames = { [K in keyof typeof JWT_CLAIM_DEFAULTS]: string };

const LOOPBACK_HOSTS = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * Where the service may fetch an issuer's keys or discovery document from: https, or plain http to a loopback
 * address only (an identity provider on the same machine, as in development and the tests). No credentials in
 * the URL, no fragment.
 */
export function isKeySourceUrl(value: string): boolean {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return false;
  }
  if (u.username || u.password || u.hash) return false;
  return u.protocol === 'https:' || (u.protocol === 'http:' && LOOPBACK_HOSTS.test(u.hostname));
}

/**
 * The OIDC discovery document of an issuer (OpenID Connect Discovery 1.0 §4: the issuer, its trailing slash removed,
 * plus the well-known path).
 */
export const discoveryUrlOf = (issuer: string) => `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;

const KEY_SOURCE_RULE =
  'must be an https URL (plain http only to localhost, 127.0.0.0/8 or [::1]) without credentials or fragment';
const keySourceUrl = z.string().max(2048).refine(isKeySourceUrl, KEY_SOURCE_RULE);
const claimName = z.string().min(1).max(256);

export const jwtIssuerClaims = z
  .object({
    userId: claimName.optional(),
    contextId: claimName.optional(),
    scopes: claimName.optional(),
    permissions: claimName.optional(),
  })
  .strict()
  .describe(
    'Which claim carries each value (claim names, top level of the token); each one left out keeps its default',
  );

const jwtIssuerEntry = z
  .object({
    issuer: z.string().min(1).max(512).describe('The `iss` value of the tokens, exactly'),
    audience: z
      .string()
      .min(1)
      .max(512)
      .describe('The `aud` value the tokens must carry (one of them, when `aud` is a list)'),
    jwksUrl: keySourceUrl
      .optional()
      .describe("The issuer's JSON Web Key Set; without it, the `jwks_uri` of the issuer's OIDC discovery document"),
    claims: jwtIssuerClaims.optional(),
    defaultPermissions: z
      .array(permission)
      .max(100)
      .optional()
      .describe('Permissions of a token that has no permissions claim (without it: none)'),
  })
  .strict()
  .superRefine((v, ctx) => {
    // Without jwksUrl the keys are found through the issuer's discovery document, which the issuer's URL names.
    if (v.jwksUrl === undefined && !isKeySourceUrl(v.issuer))
      ctx.addIssue({
        code: 'custom',
        path: ['issuer'],
        message: `without jwksUrl, issuer ${KEY_SOURCE_RULE} (its OIDC discovery document is fetched)`,
      });
  });

export const putJwtIssuersBody = z
  .object({
    issuers: z
      .array(jwtIssuerEntry)
      .max(MAX_JWT_ISSUERS_PER_TENANT, `at most ${MAX_JWT_ISSUERS_PER_TENANT} issuers a tenant`),
  })
  .strict()
  .superRefine((v, ctx) => {
    const seen = new Set<string>();
    v.issuers.forEach((i, n) => {
      const key = JSON.stringify([i.issuer, i.audience]);
      if (seen.has(key))
        ctx.addIssue({ code: 'custom', path: ['issuers', n], message: 'the same issuer and audience twice' });
      seen.add(key);
    });
  });
export type PutJwtIssuersBody = z.infer<typeof putJwtIssuersBody>;

export const jwtIssuerView = z.object({
  issuer: z.string(),
  audience: z.string(),
  jwksUrl: z.string().optional(),
  claims: z.object({ userId: z.string(), contextId: z.string(), scopes: z.string(), permissions: z.string() }),
  defaultPermissions: z.array(z.string()).optional(),
});
export type JwtIssuerView = z.infer<typeof jwtIssuerView>;
export const jwtIssuersResponse = z.object({ issuers: z.array(jwtIssuerView) });

export const tenantIdParam = z.object({ tenantId: z.string().min(1).max(128) });
