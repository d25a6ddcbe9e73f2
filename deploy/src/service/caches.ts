import { ensureCheckpoints, type Sql, type StoredEvent } from '@svc/domain';
import { AccountRateLimits, CachedStanding } from '@svc/command-api';
import { isIndexOutcome, type RevocationHooks, sqlAccountStanding } from '@svc/projectors';
import {
  CredentialResolver,
  JwtCredentials,
  type JwtKeyOptions,
  pageKeyPrefix,
  ReadCache,
  RecentRecords,
  type RecordRow,
  SchemaReads,
  TenancyReads,
} from '@svc/query-api';
import type { RoleTraits } from './roles';
import { READ_MODELS } from './checkpoint-names';

/**
 * The request path's views of the read models, exact in every role
 * (docs/api.md "Consistency and caching").
 *
 * Beside a projector (role all) they are kept and dropped by its hooks below,
 * which run after a batch commits and before the writes waiting on it answer.
 *
 * Elsewhere (roles command and query: no projector, and other replicas may
 * answer the client's next request) a notification from the projector's process
 * can arrive after that request, so it is not enough. Each request reads the
 * read models' version instead: the projection checkpoint the command role's
 * read-your-writes barrier waits on, as one more column of the credential lookup
 * the request makes anyway (domain/src/ports/read-model-version.ts). The account
 * limits, the credit gate's standings and the schema definitions answer only
 * from an entry read at that same version, so a hit costs no query and a change
 * anywhere is seen on the next request. Known credentials are not kept (checking
 * one would cost the lookup it saves); by-id and page caches are not kept either
 * (with writes flowing the version moves on nearly every request, so they would
 * rarely hit, and their entries are many).
 */
export interface ReadCaches {
  credentials: CredentialResolver;
  /** PostgreSQL: stops hearing other processes' revocations (NOTIFY). */
  unwatchCredentials?: () => Promise<void>;
  tenancy: TenancyReads;
  /** Schema definitions that shape record, document, user and entity responses. */
  schemas: SchemaReads;
  /** Each account's burst limit (its plan). */
  accountLimits: AccountRateLimits;
  /** The credit gate's view of each account (plan terms, usage of the period). */
  standing: CachedStanding;
  /** By-id and page caches: only beside an in-process projector that invalidates them. */
  recordCache?: ReadCache<RecordRow>;
  /** Rows of records created lately, kept from the projector's commits (a first read costs no query): same rule. */
  recentRecords?: RecentRecords;
  pageCache?: ReadCache<unknown>;
  /** The read-model projections' change hooks (readModelProjections). */
  revocations: RevocationHooks;
  onRecordsChanged(ids: string[] | null, created: StoredEvent<'RecordCreated'>[]): void;
  onUsageChange(accountId?: string, totals?: ReadonlyMap<string, number>): void;
  /** What the projection runner committed: drops the caches those events change. */
  onCommitted(events: ReadonlyArray<StoredEvent>): void;
  /** Drops every cached view (the read models were replaced: an online rebuild's switch). */
  dropAll(): void;
}

/**
 * `jwt`: how the keys of tenants' identity providers are fetched and kept (JWT_KEYS_* settings), and where their
 * failures are logged.
 */
export async function openCaches(
  sql: Sql,
  role: RoleTraits,
  jwt: JwtKeyOptions & { log?: (msg: string) => void } = {},
): Promise<ReadCaches> {
  const versioned = !role.exactCaches;
  // The version is read from the checkpoint table (every role's runner creates it too; this process may ask first).
  if (versioned) await ensureCheckpoints(sql);
  // Revocations reach the credential cache exactly only from this process's projector (hold/release). Another
  // process's NOTIFY can arrive after the client's next request, so without a projector beside it every known
  // credential is read from the database, and that read brings the request's read-model version. Unknown secrets
  // stay remembered (1 s): a miss cannot turn into a credential, whose secret is made when it is issued.
  // Tokens of tenants' identity providers: read from the read models on every request, stamped with the version like
  // the lookup.
  const jwtTokens = new JwtCredentials(sql, { ...jwt, readModelVersion: versioned ? READ_MODELS : undefined });
  const credentials = new CredentialResolver(
    sql,
    role.projectors
      ? { ttlMs: 5000, jwt: jwtTokens }
      : { ttlMs: 1000, cacheHits: false, readModelVersion: versioned ? READ_MODELS : undefined, jwt: jwtTokens },
  );
  const unwatchCredentials = sql.kind === 'postgres' && role.projectors ? await credentials.watch() : undefined;
  const tenancy = new TenancyReads(sql);
  // Role all: dropped by this process's projector when a schema changes (2 s backstop). Elsewhere: per version.
  const schemas = new SchemaReads(sql, { versioned });
  // Role all: dropped by this process's projector when an account changes. Elsewhere: per version.
  const accountLimits = new AccountRateLimits((id) => tenancy.account(id), 5000, 10_000, versioned);
  // Role all: kept, moved or dropped by this process's projector when usage or an account moves. Elsewhere: per
  // version.
  const standing = new CachedStanding(sqlAccountStanding(sql), 5000, 10_000, versioned);
  const recordCache = role.exactCaches ? new ReadCache<RecordRow>() : undefined;
  const recentRecords = role.exactCaches ? new RecentRecords() : undefined;
  // Lookup and list pages are dropped whenever records or schemas change.
  const pageCache = role.exactCaches ? new ReadCache<unknown>(5_000) : undefined;
  return {
    credentials,
    unwatchCredentials,
    tenancy,
    schemas,
    accountLimits,
    standing,
    recordCache,
    recentRecords,
    pageCache,
    revocations: { revoking: () => credentials.hold(), revoked: () => credentials.release() },
    onRecordsChanged(ids, created) {
      if (ids) {
        recordCache?.invalidate(ids);
        recentRecords?.invalidate(ids);
      } else {
        recordCache?.clear();
        recentRecords?.clear();
      }
      recentRecords?.keep(created);
    },
    onUsageChange: (accountId, totals) =>
      accountId && totals
        ? totals.forEach((used, period) => standing.moved(accountId, period, used))
        : standing.invalidate(accountId),
    onCommitted(events) {
      // Index outcomes change only their context's pages (indexStatus); every other change of these kinds drops them
      // all.
      if (events.some((e) => /^(Record|Schema|Context|Tenant)/.test(e.type) && !isIndexOutcome(e))) pageCache?.clear();
      else
        for (const c of new Set(
          events.filter(isIndexOutcome).map((e) => pageKeyPrefix(e.metadata.tenantId, e.metadata.contextId)),
        ))
          pageCache?.clearPrefix(c);
      if (events.some((e) => e.type === 'AccountChanged')) accountLimits.invalidate();
      // A schema's change drops its definition; a context or tenant gone may take schemas with it.
      for (const e of events)
        if (e.type === 'SchemaCreated' || e.type === 'SchemaUpdated' || e.type === 'SchemaDeleted')
          schemas.invalidate(e.data.schemaId);
      if (events.some((e) => e.type === 'ContextDeleted' || e.type === 'TenantTornDown')) schemas.invalidate();
    },
    dropAll() {
      credentials.invalidate();
      schemas.invalidate();
      accountLimits.invalidate();
      standing.invalidate();
      recordCache?.clear();
      recentRecords?.clear();
      pageCache?.clear();
    },
  };
}
