import { deriveKey, type Paginator, type RouteSpec } from '@svc/contracts';
import {
  type BlobStore,
  DEFAULT_PRICES,
  DEFAULT_URL_TTL_MS,
  type EventStore,
  type PresignedBlobUrls,
  type SearchEngines,
  type Sql,
  StorageGrants,
  type StoredEvent,
  type CommandDeps,
} from '@svc/domain';
import {
  batchWriteRoute,
  type ScriptRouteDeps,
  scriptCommandRoutes,
  type WebhookCommandDeps,
  webhookCommandRoutes,
  webhookDomainRoutes,
  webhookRetryRoute,
  documentCommandRoutes,
  folderCommandRoutes,
  identityCommandRoutes,
  jwtIssuerCommandRoutes,
  recordCommandRoutes,
  rootFolderGuard,
  schemaCommandRoutes,
  storageRoutes,
  tenancyCommandRoutes,
  triggerCommandRoutes,
  type WindowCounter,
} from '@svc/command-api';
import {
  documentsProjection,
  DocumentWorker,
  foldersProjection,
  historyProjection,
  identityProjection,
  recordsProjection,
  schemasProjection,
  sqlFolderContents,
  sqlNamespaceUsage,
  type RevocationHooks,
  type SqlProjection,
  sqlRootKeyIndex,
  sqlTenantContexts,
  sqlTenantDirectory,
  tenancyProjection,
  TriggerRunner,
  type TriggerRunnerOptions,
  triggersProjection,
  usageProjection,
  webhooksProjection,
} from '@svc/projectors';
import { traceModel } from './tracing';
import {
  activityLogRoutes,
  ActivityLogStore,
  builtinModel,
  type ChangeFeed,
  changeRoutes,
  documentQueryRoutes,
  inferenceRoutes,
  scriptQueryRoutes,
  ModelCatalog,
  openAiModel,
  DocumentReads,
  exportRoutes,
  folderHistoryRoutes,
  folderQueryRoutes,
  FolderReads,
  HistoryReads,
  historyRoutes,
  identityQueryRoutes,
  IdentityReads,
  meteredSearch,
  type ReadCache,
  type RecentRecords,
  recordQueryRoutes,
  RecordReads,
  type RecordRow,
  schemaHistoryRoutes,
  schemaQueryRoutes,
  SchemaReads,
  searchRoutes,
  tenancyQueryRoutes,
  type TenancyReads,
  triggerQueryRoutes,
  UsageReads,
  usageRoutes,
  webhookQueryRoutes,
} from '@svc/query-api';
import type { Config } from './config';
import type { Area } from './http/areas';
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
  /** Webhooks (docs/webhooks.md): the resolver, the address policy and the key that seals signing secrets. */
  webhooks?: Omit<WebhookCommandDeps, 'deps' | 'sql'>;
  /** Scripts (docs/scripts.md): the sandbox executor, source checks and Idempotency-Key records. */
  scripts?: Omit<ScriptRouteDeps, 'deps'>;
}
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

/**
 * The models this deployment serves: the built-in extractive model (ranking sentences with the search's embedder)
 * and, with LLM_URL, each of LLM_MODELS on that endpoint, the first of them the default.
 */
export function defaultModels(search?: SearchEngines, llm?: Config['llm'], traced = false): ModelCatalog {
  // Without an embedding model (BUILTIN_EMBEDDINGS_MODEL=none) sentences are chosen by their words alone.
  const embedder = search && search.embedder.unavailable === undefined ? search.embedder : undefined;
  const builtin = builtinModel({ embedder, embedQuery: embedder ? (q) => search!.embedQuery(q) : undefined });
  const remote = (llm?.models ?? []).map((id) =>
    openAiModel({ url: llm!.url, apiKey: llm!.apiKey, id, contextWindow: llm!.contextWindow, stallMs: llm!.stallMs }),
  );
  // With traces on (OTEL_EXPORTER_OTLP_ENDPOINT), a span per model call.
  return new ModelCatalog([...remote, builtin].map((m) => (traced ? traceModel(m) : m)));
}

/** Presigned storage grants: one key, derived for this purpose only. */
export const storageGrants = (secret: Buffer, ttlMs = DEFAULT_URL_TTL_MS) =>
  new StorageGrants(deriveKey(secret, 'storage'), ttlMs);

/**
 * The embedded storage endpoint behind presigned URLs (`/storage/...`). Its
 * routes read the raw request stream: register them where no body parser runs.
 */
export const storageRouteSpecs = (f: {
  deps: CommandDeps;
  secret: Buffer;
  blobs: BlobStore;
  storageUrlTtlMs?: number;
}): RouteSpec[] => storageRoutes({ deps: f.deps, blobs: f.blobs, grants: storageGrants(f.secret, f.storageUrlTtlMs) });

/**
 * Reactors beside the read models: document extraction, STORED for store-only documents, text discard (own checkpoint).
 */
export const documentWorker = (o: { store: EventStore; sql: Sql; blobs: BlobStore; log?: (msg: string) => void }) =>
  new DocumentWorker(o);

/**
 * The trigger runner (docs/triggers.md): fires rules on record events through the script executor (own checkpoint,
 * 'trigger-runner').
 */
export const triggerRunner = (o: TriggerRunnerOptions) => new TriggerRunner(o);

/** The write side, area by area (each registered as one fastify plugin; flattened, the order of /openapi.json). */
export function commandAreas(f: CommandFeatureDeps): Area[] {
  return [
    {
      name: 'tenancy',
      routes: [
        ...tenancyCommandRoutes(f.deps, sqlRootKeyIndex(f.sql), sqlTenantContexts(f.sql)),
        ...jwtIssuerCommandRoutes(f.deps, sqlTenantDirectory(f.sql)),
      ],
    },
    { name: 'schemas', routes: schemaCommandRoutes(f.deps) },
    { name: 'records', routes: [...recordCommandRoutes(f.deps), batchWriteRoute(f.deps, f.counters)] },
    { name: 'folders', routes: folderCommandRoutes(f.deps, sqlFolderContents(f.sql)) },
    { name: 'identity', routes: identityCommandRoutes(f.deps, sqlNamespaceUsage(f.sql)) },
    {
      name: 'documents',
      routes: documentCommandRoutes({
        deps: f.deps,
        sealer: f.deps.sealer,
        blobs: f.blobs,
        grants: storageGrants(f.secret, f.storageUrlTtlMs),
        presigned: f.presigned,
        ensureRoot: rootFolderGuard(f.deps),
      }),
    },
    { name: 'scripts', routes: f.scripts ? scriptCommandRoutes({ deps: f.deps, ...f.scripts }) : [] },
    { name: 'triggers', routes: triggerCommandRoutes(f.deps) },
    { name: 'erasure', routes: [erasureRequestRoute()] },
    { name: 'webhooks', routes: f.webhooks ? webhookFeatureRoutes({ ...f.webhooks, deps: f.deps, sql: f.sql }) : [] },
  ];
}

export const commandRoutes = (f: CommandFeatureDeps): RouteSpec[] => commandAreas(f).flatMap((a) => a.routes);

/** Webhook registrations, domains and manual retry (developer portal; the operator's domain verification). */
const webhookFeatureRoutes = (w: WebhookCommandDeps): RouteSpec[] => [
  ...webhookCommandRoutes(w),
  ...webhookDomainRoutes(w),
  webhookRetryRoute(w),
];

/** The read side, area by area (as commandAreas). */
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
        catalog: f.models ?? defaultModels(f.search),
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

/** Order matters inside a batch: history reads each entity as it was before the event. */
export const readModelProjections = (o: {
  revocations?: RevocationHooks;
  onRecordsChanged?: (ids: string[] | null, created: StoredEvent<'RecordCreated'>[]) => void;
  onUsageChange?: (accountId?: string, totals?: ReadonlyMap<string, number>) => void;
}): SqlProjection[] => [
  tenancyProjection(o.revocations),
  historyProjection(),
  schemasProjection(),
  recordsProjection(o.onRecordsChanged),
  foldersProjection(),
  identityProjection(),
  documentsProjection(),
  usageProjection(o.onUsageChange),
  webhooksProjection(),
  triggersProjection(),
];
