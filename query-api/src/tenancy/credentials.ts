import type { Sql } from '@svc/domain/ports/sql';
import type { Principal } from '@svc/contracts/http/principal';
import { hashSecret } from '@svc/contracts/secrets';

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
};

/**
 * Resolves bearer secrets to principals from the credentials read model. A
 * short-lived cache keeps authentication off the database on hot paths; a
 * revocation seen by this process's projector clears it at once, one applied by
 * another process within `ttlMs`.
 */
export class CredentialResolver {
  private cache = new Map<string, { p: Principal | null; at: number }>();

  constructor(
    private readonly sql: Sql,
    private readonly ttlMs = 5000,
  ) {}

  async resolve(secret: string): Promise<Principal | null> {
    const hash = hashSecret(secret);
    const hit = this.cache.get(hash);
    const now = Date.now();
    if (hit && now - hit.at < this.ttlMs) return this.live(hit.p);
    const { rows } = await this.sql.query<Row>(
      `SELECT c.credential_id, c.account_id, c.kind, c.tenant_id, c.environment, c.context_id, c.cross_context, c.allowed_actions,
              c.data_scope, c.user_id, c.expires_at, c.wire_version_pin, t.default_context_id,
              (x.deleted_at IS NOT NULL) AS context_deleted
         FROM rm_credentials c
         LEFT JOIN rm_tenants t ON t.tenant_id = c.tenant_id
         LEFT JOIN rm_contexts x ON x.context_id = c.context_id
        WHERE c.secret_hash = $1 AND NOT c.revoked`,
      [hash],
    );
    const r = rows[0];
    // A confined credential dies with its context; a cross-context one falls back to the default context.
    const p: Principal | null =
      !r || (r.context_deleted && !r.cross_context)
        ? null
        : {
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
          };
    if (this.cache.size > 50_000) this.cache.clear();
    this.cache.set(hash, { p, at: now });
    return this.live(p);
  }

  private live(p: Principal | null): Principal | null {
    const exp = p?.expiresAt;
    return p && exp !== undefined && exp <= Date.now() ? null : p;
  }

  invalidate(): void {
    this.cache.clear();
  }
}
