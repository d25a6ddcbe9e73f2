import type { Sql, StoredEvent } from '@svc/domain';
import { AccountRateLimits, CachedStanding } from '@svc/command-api';
import { isIndexOutcome, type RevocationHooks, sqlAccountStanding } from '@svc/projectors';
import { CredentialResolver, pageKeyPrefix, ReadCache, type RecordRow, TenancyReads } from '@svc/query-api';
import type { RoleTraits } from './roles';

/**
 * The request path's views of the read models, and the hooks through which this
 * process's projector keeps them exact. Kept long only where that projector runs
 * beside them; elsewhere a short TTL is the backstop.
 */
export interface ReadCaches {
  credentials: CredentialResolver;
  /** PostgreSQL: stops hearing other processes' revocations (NOTIFY). */
  unwatchCredentials?: () => Promise<void>;
  tenancy: TenancyReads;
  /** Each account's burst limit (its plan). */
  accountLimits: AccountRateLimits;
  /** The credit gate's view of each account (plan terms, usage of the period). */
  standing: CachedStanding;
  /** By-id and page caches: only beside an in-process projector that invalidates them. */
  recordCache?: ReadCache<RecordRow>;
  pageCache?: ReadCache<unknown>;
  /** The read-model projections' change hooks (readModelProjections). */
  revocations: RevocationHooks;
  onRecordsChanged(ids: string[] | null): void;
  onUsageChange(accountId?: string, totals?: ReadonlyMap<string, number>): void;
  /** What the projection runner committed: drops the caches those events change. */
  onCommitted(events: ReadonlyArray<StoredEvent>): void;
}

export async function openCaches(sql: Sql, role: RoleTraits): Promise<ReadCaches> {
  // Revocations reach the credential cache exactly only from this process's projector (hold/release). Another
  // process's NOTIFY can arrive after the client's next request, so without a projector beside it the cache keeps
  // unknown secrets only and every known credential is read from the database.
  const credentials = new CredentialResolver(sql, role.projectors ? { ttlMs: 5000 } : { ttlMs: 1000, cacheHits: false });
  const unwatchCredentials = sql.kind === 'postgres' && role.projectors ? await credentials.watch() : undefined;
  const tenancy = new TenancyReads(sql);
  // Dropped by this process's projector when an account changes.
  const accountLimits = new AccountRateLimits((id) => tenancy.account(id), role.exactCaches ? 5000 : 1000);
  // Kept briefly, dropped by this process's projector when it moves.
  const standing = new CachedStanding(sqlAccountStanding(sql), role.exactCaches ? 5000 : 1000);
  const recordCache = role.exactCaches ? new ReadCache<RecordRow>() : undefined;
  // Lookup and list pages are dropped whenever records or schemas change.
  const pageCache = role.exactCaches ? new ReadCache<unknown>(5_000) : undefined;
  return {
    credentials,
    unwatchCredentials,
    tenancy,
    accountLimits,
    standing,
    recordCache,
    pageCache,
    revocations: { revoking: () => credentials.hold(), revoked: () => credentials.release() },
    onRecordsChanged: (ids) => (ids ? recordCache?.invalidate(ids) : recordCache?.clear()),
    onUsageChange: (accountId, totals) => (accountId && totals ? totals.forEach((used, period) => standing.moved(accountId, period, used)) : standing.invalidate(accountId)),
    onCommitted(events) {
      // Index outcomes change only their context's pages (indexStatus); every other change of these kinds drops them all.
      if (events.some((e) => /^(Record|Schema|Context|Tenant)/.test(e.type) && !isIndexOutcome(e))) pageCache?.clear();
      else for (const c of new Set(events.filter(isIndexOutcome).map((e) => pageKeyPrefix(e.metadata.tenantId, e.metadata.contextId)))) pageCache?.clearPrefix(c);
      if (events.some((e) => e.type === 'AccountChanged')) accountLimits.invalidate();
    },
  };
}
