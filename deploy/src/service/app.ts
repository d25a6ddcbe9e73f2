import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { type Area, type Paginator, route, type WireVersionTable } from '@svc/contracts';
import { type ChangeFeed, queryAreas } from '@svc/query-api';
import { noteRequest } from '@svc/search';
import {
  burstLimitGate,
  commandAreas,
  creditCeilingGate,
  inferenceBalanceGate,
  readMetering,
  readRoutesOf,
  type UsageMeter,
} from '@svc/command-api';
import type { CommandDeps } from '@svc/domain';
import type { ActivityRecorder } from '../activity/recorder';
import type { Config } from '../config';
import { commandReadPorts, defaultModels, storageRouteSpecs } from '../features';
import { areaPlugin, byArea } from '../http/areas';
import { deploymentRoutes } from '../http/catalogue';
import { docsRoutes } from '../http/docs-page';
import { consoleRoutes, consoleUploadOrigins } from '../http/console-page';
import { createEdge, type EdgeOptions } from '../http/edge';
import { buildOpenApi } from '../http/openapi';
import { quarantineRoutes } from '../http/quarantine-routes';
import { rebuildRoutes } from '../http/rebuild-routes';
import { ServiceMetrics } from '../http/metrics';
import { logSourcesOf, systemRoutes, type SystemStatus } from '../http/system-routes';
import type { ReadCaches } from './caches';
import type { Engines } from './engines';
import { type RoleTraits, servesApi, servesCommands, servesQueries } from './roles';
import type { OnlineRebuilds } from './rebuilds';
import type { Scripts } from './scripts';
import type { WebhookSettings } from './webhooks';

export interface AppParts {
  config: Config;
  /** The process's logger: the edge logs each request and every unhandled error through it. */
  logger: Logger;
  now: () => Date;
  /** Published Service-Version values (default: WIRE_VERSION_TABLE). */
  wireVersions?: WireVersionTable;
  engines: Engines;
  caches: ReadCaches;
  deps: CommandDeps;
  meter: UsageMeter;
  pages: Paginator;
  webhooks: WebhookSettings;
  scripts?: Scripts;
  /** The activity log's listener (processes serving the API, ACTIVITY_LOG on). */
  activity?: ActivityRecorder;
  /** Online rebuilds of the read models (roles with projectors). */
  rebuilds?: OnlineRebuilds;
  /** The change stream's follower of the log (roles serving reads). */
  changes?: ChangeFeed;
  /** Health, readiness and metrics; its runner also serves the quarantine routes (roles with projectors). */
  status: SystemStatus;
  log: (msg: string) => void;
}

/**
 * The HTTP application of a role, not listening: the edge, then one plugin per
 * area of the routes the role serves, the system routes and /openapi.json
 * (built from the same route list, in the same order).
 */
export function buildApp(role: RoleTraits, p: AppParts): FastifyInstance {
  const { config, engines, caches, deps, meter, now } = p;
  const { sql, store, secret, blobs, s3, search } = engines;
  const storageUrlTtlMs = config.uploadUrlTtlSeconds * 1000;

  // Pre-flight gates of data-plane requests, in the spec's order.
  const preflight: NonNullable<EdgeOptions['preflight']> = [];
  // 1. monthly credit ceiling (402): metering
  preflight.push(creditCeilingGate({ standing: caches.standing, prices: config.prices, enabled: () => meter.enabled }));
  if (config.rateLimits)
    // 2. per-account burst limit (429)
    preflight.push(burstLimitGate({ counters: engines.counters, limits: caches.accountLimits, log: p.log }));
  // The inference billing gate (402 INSUFFICIENT_BALANCE) comes after the burst limit; it applies to the inference
  // routes only.
  preflight.push(inferenceBalanceGate({ standing: caches.standing }));
  const edgeOpts: EdgeOptions = {
    preflight,
    resolveCredential: (t: string) => caches.credentials.resolve(t),
    contextExists: (tenantId: string, contextId: string) => caches.tenancy.contextExists(tenantId, contextId),
    operatorToken: config.operatorToken,
    logger: p.logger,
    logRequests: config.logRequests,
    now,
    wireVersions: p.wireVersions,
    ipRateLimitPerMinute: config.edgeRateLimitPerMinute,
    trustProxyHops: config.trustProxyHops,
    corsOrigins: config.corsOrigins,
    traceRequests: !!config.otlpEndpoint,
    noteRequest,
  };
  const activity = p.activity;
  // Read metering: successful data-plane reads are counted per context and appended in batches (docs/api.md "Usage").
  let meterStreamedReads: ReturnType<typeof readMetering>['onSend'] | undefined;
  if (servesApi(role)) {
    const reads = readMetering(meter, () => all, now);
    meterStreamedReads = reads.onSend;
    edgeOpts.onResponse = activity
      ? (req, reply, ms) => (activity.onResponse(req, reply, ms), reads.onResponse(req, reply))
      : reads.onResponse;
  } else if (activity) edgeOpts.onResponse = activity.onResponse;
  // Prometheus metrics of this process: every answer observed after the activity log and read metering saw it.
  const metrics = new ServiceMetrics(p.status.role, logSourcesOf(p.status));
  const observed = edgeOpts.onResponse;
  edgeOpts.onResponse = observed
    ? (req, reply, ms) => (observed(req, reply, ms), metrics.onResponse(req, reply, ms))
    : metrics.onResponse;
  const app = createEdge(edgeOpts);
  app.addHook('onRequest', async (req, reply) => metrics.onRequest(req, reply));
  if (meterStreamedReads) app.addHook('onSend', meterStreamedReads);

  const areas: Area[] = [];
  if (servesCommands(role))
    areas.push(
      ...commandAreas({
        deps,
        secret,
        pages: p.pages,
        counters: engines.counters,
        ports: commandReadPorts(sql),
        sql,
        blobs,
        storageUrlTtlMs,
        presigned: s3,
        scripts: p.scripts?.routes,
        webhooks: p.webhooks,
      }),
    );
  const readAreas = () =>
    queryAreas({
      sql,
      activitySql: engines.searchSql,
      secret,
      pages: p.pages,
      tenancy: caches.tenancy,
      schemas: caches.schemas,
      store,
      deps,
      recordCache: caches.recordCache,
      recentRecords: caches.recentRecords,
      pageCache: caches.pageCache,
      blobs,
      storageUrlTtlMs,
      presigned: s3,
      search,
      log: p.log,
      models: defaultModels(search, config.llm, config.prices.inference, !!config.otlpEndpoint),
      changes: p.changes,
    });
  if (servesQueries(role)) areas.push(...readAreas());
  areas.push({ name: 'system', routes: systemRoutes(p.status, metrics) });
  if (role.projectors && p.status.runner)
    areas.push({
      name: 'projections',
      routes: [...quarantineRoutes(p.status.runner), ...(p.rebuilds ? rebuildRoutes(p.rebuilds) : [])],
    });
  const all = areas.flatMap((a) => a.routes);
  // Scripts' list and lookup calls run the REST read routes in this process, also where it does not serve them
  // over HTTP (role command: a script runs where its POST /v1/scripts/execute lands).
  if (p.scripts)
    p.scripts.executor.reads = readRoutesOf(servesQueries(role) ? all : readAreas().flatMap((a) => a.routes));
  // A split role describes the whole API of the deployment (the router's one API), not only its own routes.
  const openapi = buildOpenApi(servesCommands(role) && servesQueries(role) ? all : deploymentRoutes(all), {
    publicUrl: config.publicUrl,
  });
  const description = route({
    method: 'GET',
    url: '/openapi.json',
    auth: 'none',
    summary: 'This API description',
    handler: async () => openapi,
  });
  all.push(description);
  areas.push({
    name: 'openapi',
    routes: [
      description,
      ...docsRoutes(),
      ...consoleRoutes({ uploadOrigins: consoleUploadOrigins(config.objectStoreUrl) }),
    ],
  });
  // The embedded storage endpoint (presigned URLs without an object store) streams request bodies itself.
  if (servesCommands(role) && !s3)
    areas.push({ name: 'storage', routes: storageRouteSpecs({ deps, secret, blobs, storageUrlTtlMs }), rawBody: true });
  for (const area of byArea(areas)) app.register(areaPlugin(area, edgeOpts, now));
  return app;
}
