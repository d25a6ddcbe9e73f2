import {
  CREDENTIAL_CHANGE_CHANNEL,
  readModelVersionSql,
  type Sql,
  stampReadModelVersion,
  TENANCY_TABLES,
} from '@svc/domain';
import { hashSecret, type Principal } from '@svc/contracts';
import { looksLikeJwt } from './jwt-credentials';

type Row = {
  credential_id: string;
  account_id: string;
  kind: Principal['kind'];
  tenant_id: string | null;
  environment: 'live' | 'test' | null;
  context_id: string | null;
  cross_context: boolean;
  allowed_actions: string[];
  data_scope: Principal['dataScope'];
  user_id: string | null;
  expires_at: Date | string | null;
  wire_version_pin: string | null;
  default_context_id: string | null;
  context_deleted: boolean;
  read_version?: string | null;
};

export interface CredentialCacheOptions {
  /**
   * How long a resolved credential is trusted without asking the database (the backstop when no invalidation arrives).
   */
  ttlMs?: number;
  /** Known credentials kept, least recently used evicted one at a time. */
  maxEntries?: number;
  /** Unknown secrets remembered (so a repeated bad token stays off the database), in their own small LRU. */
  maxMisses?: number;
  /**
   * Serve known credentials from the cache (default true). False where no projector of this process applies
   * revocations: there nothing but a NOTIFY, unordered with the client's next request, would tell the cache.
   */
  cacheHits?: boolean;
  /**
   * The projection runner whose checkpoint versions the read models (roles without a projector): each lookup
   * also reads that version, in the same statement, and stamps it on the principal it answers (read-model-version.ts),
   * for the caches the request meets later. Such a principal is never served from the cache (it carries its request's
   * version).
   */
  readModelVersion?: string;
  /**
   * Resolves bearer JWTs (tokens of a tenant's identity provider, jwt-credentials.ts). They bypass both caches: a
   * token refused now may work once its issuer is registered, and a registration's change must hold on the next
   * request.
   */
  jwt?: { resolve(token: string): Promise<Principal | null> };
}

export const CREDENTIAL_CACHE_DEFAULTS = { ttlMs: 5000, maxEntries: 10_000, maxMisses: 1_000 } as const;

/**
 * Resolves bearer secrets to principals from the credentials read model. A
 * short-lived cache keeps authentication off the database on hot paths:
 * known credentials in an LRU (evicting one entry at a time), unknown secrets
 * in a separate, much smaller LRU, so a flood of random tokens can only evict
 * other misses, never a tenant's credentials.
 *
 * Revocations: `invalidate()` empties both caches. The projector of this
 * process calls `hold()` as it applies a revocation, inside its transaction,
 * and `release()` once that transaction has committed: in between, nothing is
 * served from or kept in the cache, so a request that arrives after the commit
 * is visible (another process may already have answered the revoke) reads the
 * database. `watch()` makes another process's revocations empty the cache
 * through PostgreSQL NOTIFY, with `ttlMs` as the backstop if one is lost.
 * NOTIFY is not ordered with the client's next request, so a process without
 * such a projector keeps only misses (`cacheHits: false`): every known
 * credential is read from the database, and a revocation answered anywhere
 * holds on its next request. There that read also brings the read models'
 * version (`readModelVersion`), which the request's other caches check their
 * entries against (domain/src/ports/read-model-version.ts). A remembered miss
 * stays right: secrets are made when a credential is issued, so one presented
 * before cannot start working.
 */
export class CredentialResolver {
  private hits = new Map<string, { p: Principal; at: number }>();
  private misses = new Map<string, number>();
  /** Bumped by every invalidation: a lookup that started before one never fills the cache. */
  private generation = 0;
  /**
   * A revocation is being applied by this process's projector and has not been heard committed: the cache is bypassed.
   */
  private held = false;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly maxMisses: number;
  private readonly cacheHits: boolean;
  private readonly versionRunner: string | undefined;
  private readonly jwt: CredentialCacheOptions['jwt'];

  constructor(
    private readonly sql: Sql,
    opts: CredentialCacheOptions | number = {},
  ) {
    const o = typeof opts === 'number' ? { ttlMs: opts } : opts;
    this.ttlMs = o.ttlMs ?? CREDENTIAL_CACHE_DEFAULTS.ttlMs;
    this.maxEntries = Math.max(1, o.maxEntries ?? CREDENTIAL_CACHE_DEFAULTS.maxEntries);
    this.maxMisses = Math.max(0, o.maxMisses ?? CREDENTIAL_CACHE_DEFAULTS.maxMisses);
    this.versionRunner = o.readModelVersion;
    this.jwt = o.jwt;
    this.cacheHits = (o.cacheHits ?? true) && !this.versionRunner;
  }

  /** Entries held now (known credentials, remembered misses). */
  get size(): { entries: number; misses: number } {
    return { entries: this.hits.size, misses: this.misses.size };
  }

  async resolve(secret: string): Promise<Principal | null> {
    if (looksLikeJwt(secret)) return this.jwt ? this.jwt.resolve(secret) : null;
    const hash = hashSecret(secret);
    if (this.held) return this.live(await this.load(hash));
    const now = Date.now();
    const hit = this.hits.get(hash);
    if (hit) {
      if (now - hit.at < this.ttlMs) {
        // Most recently used goes to the end of the map's order.
        this.hits.delete(hash);
        this.hits.set(hash, hit);
        return this.live(hit.p);
      }
      this.hits.delete(hash);
    }
    const missAt = this.misses.get(hash);
    if (missAt !== undefined) {
      if (now - missAt < this.ttlMs) return null;
      this.misses.delete(hash);
    }
    const generation = this.generation;
    const p = await this.load(hash);
    if (generation === this.generation) this.remember(hash, p, now);
    return this.live(p);
  }

  private remember(hash: string, p: Principal | null, at: number) {
    const [map, max] = p
      ? [this.hits as Map<string, unknown>, this.cacheHits ? this.maxEntries : 0]
      : [this.misses as Map<string, unknown>, this.maxMisses];
    if (max === 0) return;
    map.delete(hash);
    while (map.size >= max) map.delete(map.keys().next().value as string);
    if (p) this.hits.set(hash, { p, at });
    else this.misses.set(hash, at);
  }

  private async load(hash: string): Promise<Principal | null> {
    const { rows } = await this.sql.query<Row>(
      `SELECT c.credential_id, c.account_id, c.kind, c.tenant_id, c.environment, c.context_id, ` +
        `c.cross_context, c.allowed_actions,
              c.data_scope, c.user_id, c.expires_at, ` +
        `c.wire_version_pin, t.default_context_id,
              (x.deleted_at IS NOT NULL) AS ` +
        `context_deleted${this.versionRunner ? `, ${readModelVersionSql('$2')} AS read_version` : ''}
         FROM ${TENANCY_TABLES.credentials} c
         LEFT JOIN ${TENANCY_TABLES.tenants} t ON t.tenant_id = c.tenant_id
         LEFT JOIN ${TENANCY_TABLES.contexts} x ON x.context_id = c.context_id
        WHERE c.secret_hash = $1 AND NOT c.revoked`,
      this.versionRunner ? [hash, this.versionRunner] : [hash],
    );
    const r = rows[0];
    // A confined credential dies with its context; a cross-context one falls back to the default context.
    if (!r || (r.context_deleted && !r.cross_context)) return null;
    return stampReadModelVersion<Principal>(
      {
        credentialId: r.credential_id,
        kind: r.kind,
        accountId: r.account_id,
        tenantId: r.tenant_id,
        environment: r.environment,
        contextId: r.context_deleted ? r.default_context_id : (r.context_id ?? r.default_context_id),
        crossContext: r.cross_context,
        allowedActions: r.allowed_actions,
        dataScope: r.data_scope,
        userId: r.user_id,
        wireVersionPin: r.wire_version_pin,
        ...(r.expires_at ? { expiresAt: new Date(r.expires_at).getTime() } : {}),
      },
      r.read_version,
    );
  }

  private live(p: Principal | null): Principal | null {
    const exp = p?.expiresAt;
    return p && exp !== undefined && exp <= Date.now() ? null : p;
  }

  /** Forgets everything: the next request of every credential asks the database. */
  invalidate(): void {
    this.generation += 1;
    this.hits.clear();
    this.misses.clear();
  }

  /** A revocation is being applied (not yet committed): forget everything and stop caching until `release()`. */
  hold(): void {
    this.held = true;
    this.invalidate();
  }

  /** The revocation being applied has committed (or its transaction ended): cache again, from the committed state. */
  release(): void {
    this.held = false;
    this.invalidate();
  }

  /** Invalidates on every credential change another process's projector announces. Returns the unsubscribe. */
  watch(): Promise<() => Promise<void>> {
    return this.sql.listen(CREDENTIAL_CHANGE_CHANNEL, () => this.invalidate());
  }
}
