import type { Paginator } from '@svc/contracts/http/pagination';
import { deriveKey } from '@svc/contracts/secrets';
import { canSeeSchema } from '@svc/domain/tenancy/access';
import type { RouteSpec } from '@svc/contracts/http/route';
import type { EventStore } from '@svc/domain/ports/event-store';
import type { Sql } from '@svc/domain/ports/sql';
import type { CommandDeps } from '@svc/command-api/handle-command';
import { tenancyCommandRoutes } from '@svc/command-api/tenancy/routes';
import type { SqlProjection } from '@svc/projectors/runtime/runner';
import { sqlRootKeyIndex, sqlTenantContexts, tenancyProjection } from '@svc/projectors/read-models/tenancy';
import type { TenancyReads } from '@svc/query-api/tenancy/contexts';
import { schemaCommandRoutes } from '@svc/command-api/schemas/routes';
import { recordCommandRoutes } from '@svc/command-api/records/routes';
import { batchWriteRoute } from '@svc/command-api/records/batch';
import type { WindowCounter } from '@svc/command-api/limits/window-counter';
import { schemasProjection } from '@svc/projectors/read-models/schemas';
import { recordsProjection } from '@svc/projectors/read-models/records';
import { historyProjection } from '@svc/projectors/read-models/history';
import { SchemaReads } from '@svc/query-api/schemas/reads';
import { schemaQueryRoutes } from '@svc/query-api/schemas/routes';
import { RecordReads, type RecordRow } from '@svc/query-api/records/reads';
import type { ReadCache } from '@svc/query-api/read-cache';
import { recordQueryRoutes } from '@svc/query-api/records/routes';
import { HistoryReads } from '@svc/query-api/history/reads';
import { historyRoutes } from '@svc/query-api/history/routes';
import { tenancyQueryRoutes } from '@svc/query-api/tenancy/routes';
import { folderCommandRoutes } from '@svc/command-api/folders/routes';
import { rootFolderGuard } from '@svc/command-api/folders/load';
import { identityCommandRoutes } from '@svc/command-api/identity/routes';
import { foldersProjection, sqlFolderContents } from '@svc/projectors/read-models/folders';
import { identityProjection, sqlNamespaceUsage } from '@svc/projectors/read-models/identity';
import { FolderReads } from '@svc/query-api/folders/reads';
import { folderQueryRoutes, withRootFolder } from '@svc/query-api/folders/routes';
import { IdentityReads } from '@svc/query-api/identity/reads';
import { identityQueryRoutes } from '@svc/query-api/identity/routes';
import type { SearchEngines } from '@svc/projectors/search/indexer';
import { searchRoutes } from '@svc/query-api/search/routes';
import type { BlobStore, PresignedBlobUrls } from '@svc/domain/ports/blob-store';
import { DEFAULT_URL_TTL_MS, StorageGrants } from '@svc/domain/documents/grants';
import { documentCommandRoutes } from '@svc/command-api/documents/routes';
import { storageRoutes } from '@svc/command-api/documents/storage';
import { DocumentWorker } from '@svc/command-api/documents/worker';
import { documentsProjection } from '@svc/projectors/read-models/documents';
import { DocumentReads } from '@svc/query-api/documents/reads';
import { documentQueryRoutes } from '@svc/query-api/documents/routes';
import { usageProjection } from '@svc/projectors/read-models/usage';
import { UsageReads } from '@svc/query-api/usage/report';
import { usageRoutes } from '@svc/query-api/usage/routes';
import { meteredSearch } from '@svc/query-api/usage/search-metering';
import { DEFAULT_PRICES } from '@svc/domain/usage/prices';
import { exportRoutes } from '@svc/query-api/export/routes';
import { ActivityLogStore } from '@svc/query-api/activity/store';
import { activityLogRoutes } from '@svc/query-api/activity/routes';
import { erasureRequestRoute, erasureStatusRoute } from './http/erasure-routes';

/** The one list of features: each contributes write routes, read routes and read models. */
export interface CommandFeatureDeps {
  deps: CommandDeps;
  /** Per-minute counters (rate limits, collision budget). */
  counters: WindowCounter;
  secret: Buffer;
  pages: Paginator;
  /** Read models, for the documented counting ports of the write path (folder contents, namespace usage). */
  sql: Sql;
  /** Uploaded files and document text. */
  blobs: BlobStore;
  /** Lifetime of presigned storage URLs (default 15 minutes). */
  storageUrlTtlMs?: number;
  /** The object store's own presigned URLs (OBJECT_STORE_URL); else the /storage routes serve them. */
  presigned?: PresignedBlobUrls;
}
export interface QueryFeatureDeps {
  /** Set only when the projector runs in this process (exact invalidation). */
  recordCache?: ReadCache<RecordRow>;
  pageCache?: ReadCache<unknown>;
  sql: Sql;
  store: EventStore;
  secret: Buffer;
  pages: Paginator;
  tenancy: TenancyReads;
  /** The first folder call of a context, a read included, creates the context root folder. */
  deps: CommandDeps;
  blobs: BlobStore;
  storageUrlTtlMs?: number;
  presigned?: PresignedBlobUrls;
  /** Content search engines (text index, vectors, embeddings, catalogue). */
  search?: SearchEngines;
}

/** Presigned storage grants: one key, derived for this purpose only. */
export const storageGrants = (secret: Buffer, ttlMs = DEFAULT_URL_TTL_MS) => new StorageGrants(deriveKey(secret, 'storage'), ttlMs);

/**
 * The embedded storage endpoint behind presigned URLs (`/storage/...`). Its
 * routes read the raw request stream: register them where no body parser runs.
 */
export const storageRouteSpecs = (f: { deps: CommandDeps; secret: Buffer; blobs: BlobStore; storageUrlTtlMs?: number }): RouteSpec[] =>
  storageRoutes({ deps: f.deps, blobs: f.blobs, grants: storageGrants(f.secret, f.storageUrlTtlMs) });

/** Reactors beside the read models: document extraction, STORED for store-only documents, text discard (own checkpoint). */
export const documentWorker = (o: { store: EventStore; sql: Sql; blobs: BlobStore; log?: (msg: string) => void }) => new DocumentWorker(o);

export function commandRoutes(f: CommandFeatureDeps): RouteSpec[] {
  return [
    ...tenancyCommandRoutes(f.deps, sqlRootKeyIndex(f.sql), sqlTenantContexts(f.sql)),
    ...schemaCommandRoutes(f.deps),
    ...recordCommandRoutes(f.deps),
    batchWriteRoute(f.deps, f.counters),
    ...folderCommandRoutes(f.deps, sqlFolderContents(f.sql)),
    ...identityCommandRoutes(f.deps, sqlNamespaceUsage(f.sql)),
    ...documentCommandRoutes({ deps: f.deps, sealer: f.deps.sealer, blobs: f.blobs, grants: storageGrants(f.secret, f.storageUrlTtlMs), presigned: f.presigned, ensureRoot: rootFolderGuard(f.deps) }),
    erasureRequestRoute(),
  ];
}

export function queryRoutes(f: QueryFeatureDeps): RouteSpec[] {
  const schemas = new SchemaReads(f.sql);
  const history = new HistoryReads(f.sql);
  const records = new RecordReads(f.sql, f.recordCache);
  const ensureRoot = rootFolderGuard(f.deps);
  const documents = new DocumentReads(f.sql);
  return [
    ...tenancyQueryRoutes(f.tenancy, f.pages),
    ...schemaQueryRoutes(schemas, f.pages),
    ...historyRoutes(history, 'schema', 'schemas:r', { tombstone: false, visible: canSeeSchema }),
    ...recordQueryRoutes(f.sql, records, schemas, f.pages, deriveKey(f.secret, 'blind-index'), f.pageCache),
    ...historyRoutes(history, 'record', 'records:r', { tombstone: true, liveOwner: (id) => records.byId(id) }),
    ...folderQueryRoutes(new FolderReads(f.sql), f.pages, ensureRoot),
    ...withRootFolder(ensureRoot, historyRoutes(history, 'folder', 'folders:r', { tombstone: true })),
    ...identityQueryRoutes(new IdentityReads(f.sql), schemas, f.pages),
    ...documentQueryRoutes({ sql: f.sql, documents, schemas, pages: f.pages, blindKey: deriveKey(f.secret, 'blind-index'), blobs: f.blobs, grants: storageGrants(f.secret, f.storageUrlTtlMs), presigned: f.presigned }),
    ...historyRoutes(history, 'document', 'documents:r', { tombstone: true, liveOwner: (id) => documents.byId(id) }),
    ...(f.search ? meteredSearch(searchRoutes(f.sql, f.search), f.deps.meter) : []),
    ...usageRoutes(new UsageReads(f.sql, f.deps.meter?.prices ?? DEFAULT_PRICES)),
    ...exportRoutes(f.store),
    ...activityLogRoutes(new ActivityLogStore(f.sql)),
    erasureStatusRoute(),
  ];
}

/** Order matters inside a batch: history reads each entity as it was before the event. */
export const readModelProjections = (o: { onCredentialChange: () => void; onRecordsChanged?: (ids: string[] | null) => void; onUsageChange?: (accountId?: string) => void }): SqlProjection[] => [
  tenancyProjection(o.onCredentialChange),
  historyProjection(),
  schemasProjection(),
  recordsProjection(o.onRecordsChanged),
  foldersProjection(),
  identityProjection(),
  documentsProjection(),
  usageProjection(o.onUsageChange),
];
