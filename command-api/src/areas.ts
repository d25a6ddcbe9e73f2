import type { Area, Paginator, RouteSpec } from '@svc/contracts';
import {
  type BlobStore,
  type CommandDeps,
  type FolderContents,
  type NamespaceUsage,
  type PresignedBlobUrls,
  type RootKeyIndex,
  type Sql,
  storageGrants,
  type TenantContexts,
  type TenantDirectory,
} from '@svc/domain';
import { documentCommandRoutes } from './documents/routes';
import { erasureRequestRoute } from './erasure/routes';
import { rootFolderGuard } from './folders/load';
import { folderCommandRoutes } from './folders/routes';
import { identityCommandRoutes } from './identity/routes';
import type { WindowCounter } from './limits/window-counter';
import { batchWriteRoute } from './records/batch';
import { recordCommandRoutes } from './records/routes';
import { schemaCommandRoutes } from './schemas/routes';
import { type ScriptRouteDeps, scriptCommandRoutes } from './scripts/routes';
import { jwtIssuerCommandRoutes } from './tenancy/jwt-issuers';
import { tenancyCommandRoutes } from './tenancy/routes';
import { triggerCommandRoutes } from './triggers/routes';
import { webhookDomainRoutes } from './webhooks/domains';
import { type WebhookCommandDeps, webhookCommandRoutes } from './webhooks/registrations';
import { webhookRetryRoute } from './webhooks/retry';

/** The read models the write path counts and checks through (domain ports; deploy wires the projectors' adapters). */
export interface CommandReadPorts {
  rootKeys: RootKeyIndex;
  tenantContexts: TenantContexts;
  tenantDirectory: TenantDirectory;
  folderContents: FolderContents;
  namespaceUsage: NamespaceUsage;
}

/** What the write side's areas are built from (deploy fills it). */
export interface CommandFeatureDeps {
  deps: CommandDeps;
  /** Per-minute counters (rate limits, collision budget). */
  counters: WindowCounter;
  secret: Buffer;
  pages: Paginator;
  /** Read models, for the documented counting ports of the write path (folder contents, namespace usage). */
  ports: CommandReadPorts;
  /** The read-model database (webhook registrations read their domains there). */
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

/**
 * The write side, area by area: the one list a capability's write routes are added to (each area is registered as one
 * fastify plugin; flattened, and followed by queryAreas, this is the order of /openapi.json).
 */
export function commandAreas(f: CommandFeatureDeps): Area[] {
  return [
    {
      name: 'tenancy',
      routes: [
        ...tenancyCommandRoutes(f.deps, f.ports.rootKeys, f.ports.tenantContexts),
        ...jwtIssuerCommandRoutes(f.deps, f.ports.tenantDirectory),
      ],
    },
    { name: 'schemas', routes: schemaCommandRoutes(f.deps) },
    { name: 'records', routes: [...recordCommandRoutes(f.deps), batchWriteRoute(f.deps, f.counters)] },
    { name: 'folders', routes: folderCommandRoutes(f.deps, f.ports.folderContents) },
    { name: 'identity', routes: identityCommandRoutes(f.deps, f.ports.namespaceUsage) },
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
