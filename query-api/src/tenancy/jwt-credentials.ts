import { createHash } from 'node:crypto';
import { createRemoteJWKSet, decodeJwt, errors as joseErrors, type JWTPayload, jwtVerify } from 'jose';
import {
  CURRENT_WIRE_VERSION,
  discoveryUrlOf,
  isKeySourceUrl,
  permission,
  type Principal,
  scopes as scopesSchema,
} from '@svc/contracts';
import { type JwtIssuer, readModelVersionSql, type Sql, stampReadModelVersion, TENANCY_TABLES } from '@svc/domain';

/**
 * Signature algorithms a token may use: asymmetric only, so `alg: none` and an HMAC token "signed" with a public
 * key are refused before any key is looked at.
 */
export const JWT_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];
/** Seconds of clock difference tolerated on `exp` and `nbf`. */
export const JWT_CLOCK_TOLERANCE_S = 60;

/**
 * Three base64url parts (the signature may be empty: `alg: none`, refused later); the service's own secrets have no
 * dot.
 */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
export const looksLikeJwt = (token: string): boolean => JWT_SHAPE.test(token);

export interface JwtKeyOptions {
  /**
   * Least time between two fetches of an issuer's keys prompted by an unknown `kid` (JWT_KEYS_REFETCH_MS, default 60
   * s).
   */
  refetchMs?: number;
  /**
   * How long fetched keys are used before they are fetched again (JWT_KEYS_MAX_AGE_MS, default 10 min): a key removed
   * from the JWKS stops working within this.
   */
  maxAgeMs?: number;
  /** Timeout of one fetch of a discovery document or a key set. */
  timeoutMs?: number;
  /** Key sets kept (least recently used dropped). */
  maxKeySets?: number;
}

export const JWT_KEY_DEFAULTS = { refetchMs: 60_000, maxAgeMs: 600_000, timeoutMs: 5_000, maxKeySets: 1_000 } as const;

type KeySet = ReturnType<typeof createRemoteJWKSet>;
/**
 * One registration's keys: the key set (behind its discovery, when there is one), and when they last proved unusable.
 */
type KeyEntry = { keys: Promise<KeySet>; unusableAt?: number };
type Row = {
  tenant_id: string;
  doc: JwtIssuer;
  account_id: string;
  environment: 'live' | 'test';
  default_context_id: string;
  read_version?: string | null;
};

/**
 * Bearer JWTs from the identity providers tenants registered (PUT /operator/tenants/{tenantId}/jwt-issuers) as
 * credentials of those tenants, resolved to the same Principal a minted token (`st_`) gives.
 *
 * The token's `iss` is read unverified only to find registrations; an issuer nobody registered is refused without
 * any fetch, and no URL a token names is ever fetched (keys come from the registration: its `jwksUrl`, or the
 * `jwks_uri` of the issuer's discovery document). The signature, `iss`, `aud`, `exp` and `nbf` are checked by
 * jose's `jwtVerify` with asymmetric algorithms only and 60 s of clock tolerance. Key sets are jose's
 * `createRemoteJWKSet`: cached, fetched again on an unknown `kid` at most once per `refetchMs`, and after `maxAgeMs`.
 *
 * Registrations and contexts are read from the read models on every request (one indexed query, two when the
 * token names a context), so a change is seen on the next request in every process; `readModelVersion` stamps the
 * principal like the credential lookup does (domain/src/ports/read-model-version.ts). Every refusal is null: the
 * edge answers the uniform 401.
 */
export class JwtCredentials {
  private readonly keySets = new Map<string, KeyEntry>();
  private readonly o: Required<JwtKeyOptions>;

  constructor(
    private readonly sql: Sql,
    opts: JwtKeyOptions & { readModelVersion?: string; log?: (msg: string) => void } = {},
  ) {
    this.o = {
      ...JWT_KEY_DEFAULTS,
      ...Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined)),
    } as Required<JwtKeyOptions>;
    this.versionRunner = opts.readModelVersion;
    this.log = opts.log ?? (() => {});
  }

  private readonly versionRunner: string | undefined;
  private readonly log: (msg: string) => void;

  async resolve(token: string): Promise<Principal | null> {
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(token);
    } catch {
      return null;
    }
    if (typeof unverified.iss !== 'string') return null;
    const rows = await this.registrations(unverified.iss);
    const audiences = Array.isArray(unverified.aud) ? unverified.aud : [unverified.aud];
    const matching = rows.filter((r) => audiences.includes(r.doc.audience));
    // One registration, or none: a token whose audiences name registrations of two tenants could be either's, so it
    // is nobody's (the uniform 401), whatever order the rows come in.
    if (matching.length !== 1) return null;
    const row = matching[0];
    const reg = row.doc;
    const entry = this.keysOf(reg);
    // Keys that could not be fetched are not asked for again before `refetchMs` (a provider down is not hammered, nor
    // waited on).
    if (entry.unusableAt !== undefined && Date.now() - entry.unusableAt < this.o.refetchMs) return null;
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, await entry.keys, {
        issuer: reg.issuer,
        audience: reg.audience,
        algorithms: JWT_ALGORITHMS,
        clockTolerance: JWT_CLOCK_TOLERANCE_S,
        requiredClaims: ['exp'],
      }));
    } catch (e) {
      // A refused token is the caller's; anything else (keys unreachable, a bad key set) is the operator's to see.
      if (keysFailed(e)) {
        entry.unusableAt = Date.now();
        this.log(`jwt: keys of issuer ${reg.issuer} unusable: ${(e as Error).message}`);
      }
      return null;
    }
    const mapped = mapClaims(claims, reg);
    if (!mapped) return null;
    const contextId = mapped.contextId ?? row.default_context_id;
    if (mapped.contextId !== undefined && !(await this.liveContext(row.tenant_id, mapped.contextId))) return null;
    const dataScope =
      mapped.userId !== null || mapped.scopes !== null
        ? {
            ...(mapped.userId !== null ? { userId: mapped.userId } : {}),
            ...(mapped.scopes !== null ? { scopes: mapped.scopes } : {}),
          }
        : null;
    return stampReadModelVersion<Principal>(
      {
        // One id per token (its hash): what it mints and revokes is its own, as a minted token's.
        credentialId: `jwt_${createHash('sha256').update(token).digest('hex').slice(0, 32)}`,
        kind: 'token',
        accountId: row.account_id,
        tenantId: row.tenant_id,
        environment: row.environment,
        contextId,
        crossContext: false,
        allowedActions: mapped.permissions ?? reg.defaultPermissions ?? [],
        dataScope,
        userId: mapped.userId,
        wireVersionPin: CURRENT_WIRE_VERSION,
        expiresAt: (claims.exp as number) * 1000,
      },
      row.read_version,
    );
  }

  private async registrations(issuer: string): Promise<Row[]> {
    const version = this.versionRunner ? `, ${readModelVersionSql('$2')} AS read_version` : '';
    const { rows } = await this.sql.query<Row>(
      `SELECT i.tenant_id, i.doc, t.account_id, t.environment, t.default_context_id${version}
         FROM ${TENANCY_TABLES.jwtIssuers} i JOIN ${TENANCY_TABLES.tenants} t ON t.tenant_id = i.tenant_id
        WHERE i.issuer = $1 AND t.torn_down_at IS NULL`,
      this.versionRunner ? [issuer, this.versionRunner] : [issuer],
    );
    return rows;
  }

  private async liveContext(tenantId: string, contextId: string): Promise<boolean> {
    const { rows } = await this.sql.query(
      `SELECT 1 FROM ${TENANCY_TABLES.contexts} WHERE context_id = $1 AND tenant_id = $2 AND deleted_at IS NULL`,
      [contextId, tenantId],
    );
    return rows.length > 0;
  }

  /**
   * The registration's keys, kept per key-set URL (least recently used dropped); a discovery that failed is done again
   * once it may be retried.
   */
  private keysOf(reg: JwtIssuer): KeyEntry {
    const id = reg.jwksUrl ?? `discovery ${reg.issuer}`;
    let entry = this.keySets.get(id);
    if (entry) this.keySets.delete(id);
    else while (this.keySets.size >= this.o.maxKeySets) this.keySets.delete(this.keySets.keys().next().value as string);
    if (
      !entry ||
      (entry.unusableAt !== undefined && Date.now() - entry.unusableAt >= this.o.refetchMs && reg.jwksUrl === null)
    ) {
      const keys = this.openKeySet(reg);
      keys.catch(() => {});
      entry = { keys, unusableAt: entry?.unusableAt };
    }
    this.keySets.set(id, entry);
    return entry;
  }

  private async openKeySet(reg: JwtIssuer): Promise<KeySet> {
    const url = reg.jwksUrl ?? (await this.discoveredJwksUri(reg.issuer));
    return createRemoteJWKSet(new URL(url), {
      cooldownDuration: this.o.refetchMs,
      cacheMaxAge: this.o.maxAgeMs,
      timeoutDuration: this.o.timeoutMs,
    });
  }

  private async discoveredJwksUri(issuer: string): Promise<string> {
    const res = await fetch(discoveryUrlOf(issuer), {
      signal: AbortSignal.timeout(this.o.timeoutMs),
      redirect: 'error',
      headers: { accept: 'application/json' },
    });
    if (!res.ok) throw new KeySourceError(`discovery document answered ${res.status}`);
    const doc = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
    // OpenID Connect Discovery §4.3: the document names the issuer it was fetched for.
    if (doc.issuer !== issuer) throw new KeySourceError('discovery document names another issuer');
    if (typeof doc.jwks_uri !== 'string' || !isKeySourceUrl(doc.jwks_uri))
      throw new KeySourceError('discovery document has no usable jwks_uri');
    return doc.jwks_uri;
  }
}

/** The issuer's discovery document cannot be used: like a failed key fetch, the token's uniform 401 (never shown). */
class KeySourceError extends Error {
  override readonly name = 'KeySourceError';
}

/**
 * Codes of jose errors that are the key source's fault, not the token's: a fetch that did not answer 200 with JSON, a
 * timeout, a malformed key set.
 */
const KEY_SOURCE_ERRORS = new Set(['ERR_JOSE_GENERIC', 'ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID']);
const keysFailed = (e: unknown) => !(e instanceof joseErrors.JOSEError) || KEY_SOURCE_ERRORS.has(e.code);

/** The verified claims a registration maps, validated as a minted token's fields are; null when one is malformed. */
function mapClaims(
  payload: JWTPayload,
  reg: JwtIssuer,
): { userId: string | null; contextId?: string; scopes: string[] | null; permissions: string[] | null } | null {
  const claim = (name: string): unknown => (Object.hasOwn(payload, name) ? payload[name] : undefined);
  const user = claim(reg.claims.userId);
  if (user !== undefined && (typeof user !== 'string' || user.length < 1 || user.length > 128)) return null;
  const context = claim(reg.claims.contextId);
  if (context !== undefined && (typeof context !== 'string' || !context.length || context.length > 128)) return null;
  const scopes = listClaim(claim(reg.claims.scopes));
  if (scopes === false || (scopes && !scopesSchema.safeParse(scopes).success)) return null;
  const permissions = listClaim(claim(reg.claims.permissions));
  if (permissions === false || (permissions && !permissions.every((p) => permission.safeParse(p).success))) return null;
  return {
    userId: (user as string | undefined) ?? null,
    ...(context !== undefined ? { contextId: context as string } : {}),
    scopes: scopes?.length ? [...new Set(scopes)] : null,
    permissions,
  };
}

/**
 * A list claim: an array of strings, or one space-separated string (the OAuth `scope` form); absent is null, anything
 * else false.
 */
function listClaim(v: unknown): string[] | null | false {
  if (v === undefined) return null;
  if (typeof v === 'string') return v.split(' ').filter(Boolean);
  if (Array.isArray(v) && v.length <= 100 && v.every((x) => typeof x === 'string')) return v as string[];
  return false;
}
