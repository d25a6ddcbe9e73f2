import { type Area, deriveKey, type Paginator, type RouteSpec } from '@svc/contracts';
import {
  type BlobStore,
  type CommandDeps,
  DEFAULT_PRICES,
  type EventStore,
  type PresignedBlobUrls,
  type SearchEngines,
  type Sql,
  storageGrants,
} from '@svc/domain';
import { activityLogRoutes } from './activity/routes';
import { ActivityLogStore } from './activity/store';
import type { ChangeFeed } from './changes/feed';
import { changeRoutes } from './changes/routes';
import { DocumentReads } from './documents/reads';
import { documentQueryRoutes } from './documents/routes';
import { erasureStatusRoute } from './erasure/routes';
import { exportRoutes } from './export/routes';
import { FolderReads } from './folders/reads';
import { folderHistoryRoutes, folderQueryRoutes } from './folders/routes';
import { HistoryReads } from './history/reads';
import { historyRoutes } from './history/routes';
import { IdentityReads } from './identity/reads';
import { identityQueryRoutes } from './identity/routes';
import { ModelCatalog, searchBuiltinModel } from './inference/models';
import { inferenceRoutes } from './inference/routes';
import type { ReadCache } from './read-cache';
import type { RecentRecords } from './records/recent';
import { RecordReads, type RecordRow } from './records/reads';
import { recordQueryRoutes } from './records/routes';
import { SchemaReads } from './schemas/reads';
import { schemaHistoryRoutes, schemaQueryRoutes } from './schemas/routes';
import { scriptQueryRoutes } from './scripts/routes';
import { searchRoutes } from './search/routes';
import type { TenancyReads } from './tenancy/contexts';
import { tenancyQueryRoutes } from './tenancy/routes';
import { triggerQueryRoutes } from './triggers/routes';
import { UsageReads } from './usage/report';
import { usageRoutes } from './usage/routes';
import { meteredSearch } from './usage/search-metering';
import { webhookQueryRoutes } from './webhooks/routes';

/** What the read side's areas are built from (deploy fills it). */
export interface QueryFeatureDeps {
  /** Set only when the projector runs in this process (exact invalidation). */
  recordCache?: ReadCache<RecordRow>;
  recentRecords?: RecentRecords;
  pageCache?: ReadCache<unknown>;
  /** Schema reads with their definition cache, as the role keeps it (caches.ts); else one of their own. */
  schemas?: SchemaReads;
  sql: Sql;
  /** Where the activity log lives (the embedded default's second database; else `sql`). */
  activitySql?: Sql;
  store: EventStore;
  secret: Buffer;
  pages: Paginator;
  tenancy: TenancyReads;
  /** The write side's dependencies, for metering reads (`deps.meter`). */
  deps: CommandDeps;
  blobs: BlobStore;
  storageUrlTtlMs?: number;
  presigned?: PresignedBlobUrls;
  /** Content search engines (text index, vectors, embeddings, catalogue). */
  search?: SearchEngines;
  /** The inference models (decisions §8); the built-in extractive model when not given. */
  models?: ModelCatalog;
  /** The change stream's follower of the log (GET /v1/changes); without it the route is not served. */
  changes?: ChangeFeed;
  log?: (message: string) => void;
}

/** The read side, area by area (as commandAreas, command-api): the one list a capability's read routes are added to. */
export function queryAreas(f: QueryFeatureDeps): Area[] {
  const schemas = f.schemas ?? new SchemaReads(f.sql, { versioned: !f.recordCache });
  const history = new HistoryReads(f.sql);
  const records = new RecordReads(f.sql, f.recordCache, f.recentRecords);
  const folders = new FolderReads(f.sql);
  const documents = new DocumentReads(f.sql);
  return [
    { name: 'tenancy', routes: tenancyQueryRoutes(f.tenancy, f.pages) },
    { name: 'schemas', routes: [...schemaQueryRoutes(schemas, f.pages), ...schemaHistoryRoutes(history, schemas)] },
    {
      name: 'records',
      routes: [
        ...recordQueryRoutes(f.sql, records, schemas, f.pages, deriveKey(f.secret, 'blind-index'), f.pageCache),
        ...historyRoutes(history, 'record', 'records:r', { tombstone: true, liveOwner: (id) => records.byId(id) }),
      ],
    },
    { name: 'folders', routes: [...folderQueryRoutes(folders, f.pages), ...folderHistoryRoutes(history, folders)] },
    { name: 'identity', routes: identityQueryRoutes(new IdentityReads(f.sql), schemas, f.pages) },
    {
      name: 'documents',
      routes: [
        ...documentQueryRoutes({
          sql: f.sql,
          documents,
          schemas,
          pages: f.pages,
          blindKey: deriveKey(f.secret, 'blind-index'),
          blobs: f.blobs,
          grants: storageGrants(f.secret, f.storageUrlTtlMs),
          presigned: f.presigned,
        }),
        ...historyRoutes(history, 'document', 'documents:r', {
          tombstone: true,
          liveOwner: (id) => documents.byId(id),
        }),
      ],
    },
    { name: 'changes', routes: f.changes ? changeRoutes({ feed: f.changes, meter: f.deps.meter }) : [] },
    { name: 'search', routes: f.search ? meteredSearch(searchRoutes(f.sql, f.search), f.deps.meter) : [] },
    { name: 'usage', routes: usageRoutes(new UsageReads(f.sql, f.deps.meter?.prices ?? DEFAULT_PRICES)) },
    {
      name: 'inference',
      routes: inferenceRoutes({
        sql: f.sql,
        catalog: f.models ?? new ModelCatalog([searchBuiltinModel(f.search)]),
        search: f.search,
        documents,
        blobs: f.blobs,
        account: (id) => f.tenancy.account(id),
        meter: f.deps.meter,
        log: f.log,
      }),
    },
    { name: 'export', routes: exportRoutes(f.store) },
    { name: 'scripts', routes: scriptQueryRoutes(f.store, f.pages) },
    { name: 'triggers', routes: triggerQueryRoutes(f.sql, f.pages) },
    { name: 'activity', routes: activityLogRoutes(new ActivityLogStore(f.activitySql ?? f.sql)) },
    { name: 'erasure', routes: [erasureStatusRoute()] },
    { name: 'webhooks', routes: webhookQueryRoutes(f.sql, f.pages) },
  ];
}

export const queryRoutes = (f: QueryFeatureDeps): RouteSpec[] => queryAreas(f).flatMap((a) => a.routes);
