import type { DestinationStream, Logger } from 'pino';
import { createLogger, logFunction } from './log';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { CursorCodec, deriveKey, Paginator, type WireVersionTable } from '@svc/contracts';
import type { CommandDeps, EventStore, ScriptExecutor, SearchEngines, Sql } from '@svc/domain';
import { PayloadSealer, UsageMeter } from '@svc/command-api';
import type { KafkaFeed, KafkaRelay, ProjectionRunner } from '@svc/projectors';
import type { IndexerEngines, SearchIndexer } from '@svc/search';
import { ActivityLogStore } from '@svc/query-api';
import { moveActivityLog } from './engines/side-db-move';
import { ActivityRecorder } from './activity/recorder';
import type { Config } from './config';
import { buildApp } from './service/app';
import { bootstrapFirstAccount } from './service/bootstrap';
import { openCaches } from './service/caches';
import { openChangeFeed } from './service/changes';
import { openEngines } from './service/engines';
import { ROLES, servesApi, servesCommands } from './service/roles';
import { openScripts } from './service/scripts';
import { OnlineRebuilds } from './service/rebuilds';
import { startProjections, startReactors } from './service/subscribers';
import { webhookSettings } from './service/webhooks';
import { startTracing, traceSearch, tracedStore } from './tracing';

export { READ_MODELS } from './service/checkpoint-names';
export { StartupError } from './service/secret';
export { ROLES, type RoleTraits } from './service/roles';
export { openCaches, type ReadCaches } from './service/caches';
export { buildApp } from './service/app';

export interface Service {
  config: Config;
  sql: Sql;
  /** The search side's database: its own embedded database (thread) in the default, `sql` on a PostgreSQL server. */
  searchSql: Sql;
  store: EventStore;
  runner: ProjectionRunner;
  /** Online rebuilds of the read models (roles with projectors). */
  rebuilds?: OnlineRebuilds;
  /** The search projector ('search-index'), when this process runs projectors. */
  searchIndexer?: SearchIndexer;
  /** The search engines, when this process serves or indexes search. */
  search?: IndexerEngines & SearchEngines;
  /**
   * Kafka (KAFKA_BROKERS): the relay (roles relay and all) and the feed of this process's projectors (roles projector
   * and all).
   */
  relay?: KafkaRelay;
  feed?: KafkaFeed;
  app: FastifyInstance;
  /** The process's logger (LOG_LEVEL): JSON lines, the HTTP edge's request lines included. */
  logger: Logger;
  /** Set when this start created the first account. */
  bootstrapFile?: string;
  /** Metering (docs/api.md "Usage"): `flush()` appends the read counts tallied so far. */
  meter: UsageMeter;
  /**
   * Scripts (docs/scripts.md): the sandbox executor (roles all, command, projector), for POST /v1/scripts/execute and
   * the trigger runner.
   */
  scripts?: ScriptExecutor;
  close(): Promise<void>;
}

/** Test seams: the clock (rate-limit windows, version sunsets, event times) and the Service-Version table. */
export interface ServiceHooks {
  now?: () => Date;
  wireVersions?: WireVersionTable;
  /** Where the JSON log lines go (default stdout). */
  logDestination?: DestinationStream;
}

/**
 * One process of the service, in its role (ROLES): opens the engines, starts the
 * log subscribers, builds the HTTP application (not listening: start.ts and the
 * tests listen) and, on an empty log, opens the first account.
 */
/** How long a stop waits for requests in flight before it cuts the connections still open. */
const CLOSE_GRACE_MS = 5_000;

export async function buildService(
  config: Config,
  logTo?: (msg: string) => void,
  hooks: ServiceHooks = {},
): Promise<Service> {
  const logger = createLogger(config.logLevel, config.role, hooks.logDestination);
  // Every message of the process goes through the logger, unless the caller (a test) takes them itself.
  const log = logTo ?? logFunction(logger);
  const role = ROLES[config.role];
  let closing = false;
  // Traces (OTEL_EXPORTER_OTLP_ENDPOINT): the store and the search engines get their spans before anything uses them.
  const tracing = await startTracing(config.otlpEndpoint, config.otelServiceName, config.role);
  const engines = await openEngines(config, role, log, () => closing);
  if (tracing) {
    engines.store = tracedStore(engines.store);
    if (engines.search) traceSearch(engines.search);
  }
  const { sql, store, secret, s3, search } = engines;
  const ids = { newId: () => randomUUID() };
  const now = hooks.now ?? (() => new Date());
  const caches = await openCaches(sql, role, { ...config.jwtKeys, log });

  const projections = await startProjections({ config, role, engines, caches, log });
  const { runner, barrier, relay, feed } = projections;
  const sealer = new PayloadSealer(deriveKey(secret, 'payload-seal'), deriveKey(secret, 'blind-index'));
  // Metering on the log (docs/api.md "Usage"): writes charge in their own append, searches once served, reads in
  // batches.
  const meter = new UsageMeter({
    store,
    barrier,
    ids,
    prices: config.prices,
    now,
    log,
    flushMs: config.usageReadsFlushMs,
  });
  meter.enabled = config.metering;
  const deps: CommandDeps = {
    store,
    barrier,
    ids,
    sealer,
    log,
    meter,
    onRevoked: () => caches.credentials.invalidate(),
  };
  const webhooks = webhookSettings(config, role, secret, log);
  const scripts = openScripts(config, role, engines, deps);
  const reactors = await startReactors({
    config,
    role,
    engines,
    projections,
    meter,
    webhooks,
    scripts: scripts?.executor,
    log,
  });
  const { worker, uploadPoller, searchIndexer, modelRebuild, dispatcher, triggers } = reactors;

  // Activity log (docs/api.md "Activity log"): every process serving /v1 records its requests, in batches off the
  // request path. On the embedded default it lives in the second database, whose own thread writes it: the API thread
  // only hands the entries over (PGlite runs statements on the thread that calls it, ~30 µs an entry).
  const activitySql = engines.searchSql;
  if (servesApi(role)) {
    await new ActivityLogStore(activitySql).init();
    if (activitySql !== sql) await moveActivityLog(sql, activitySql, log);
  }
  const activity =
    servesApi(role) && config.activityLog.enabled
      ? new ActivityRecorder({
          store: new ActivityLogStore(activitySql),
          resolve: (t) => caches.credentials.resolve(t),
          flushEveryMs: config.activityLog.flushMs,
          retentionDays: config.activityLog.retentionDays,
          clock: () => now().getTime(),
          log,
        }).start()
      : undefined;
  // Online rebuilds of the read models (POST /operator/rebuilds), beside the runner they pause at the switch.
  const rebuilds = role.projectors
    ? new OnlineRebuilds({
        databaseUrl: config.databaseUrl,
        sql,
        store,
        runner,
        dropCaches: () => caches.dropAll(),
        log,
      })
    : undefined;
  const changes = await openChangeFeed({ config, role, engines, caches, runner, log });
  const app = buildApp(role, {
    config,
    logger,
    changes,
    now,
    wireVersions: hooks.wireVersions,
    engines,
    caches,
    deps,
    meter,
    pages: new Paginator(new CursorCodec(secret)),
    webhooks,
    scripts,
    activity,
    rebuilds,
    log,
    status: {
      role: config.role,
      sql,
      searchSql: engines.searchSql,
      store,
      runner: role.projectors ? runner : undefined,
      readyzSubscribers: () =>
        role.projectors
          ? [
              runner.stats,
              ...(searchIndexer ? [searchIndexer.stats] : []),
              ...(worker ? [worker.stats] : []),
              ...(dispatcher ? [dispatcher.stats] : []),
              ...(triggers ? [triggers.stats] : []),
            ]
          : [],
      metricsSubscribers: () =>
        role.projectors
          ? [
              runner.stats,
              ...(searchIndexer ? [searchIndexer.stats] : []),
              ...(worker ? [worker.stats] : []),
              ...(triggers ? [triggers.stats] : []),
              ...(dispatcher ? [dispatcher.stats] : []),
            ]
          : [],
      relay,
      feed,
      kafkaTopic: projections.kafkaTopic,
      embedderInfo: engines.embedderInfo,
      modelRebuild,
    },
  });

  const bootstrapFile = servesCommands(role) ? await bootstrapFirstAccount(config, deps, now) : undefined;

  return {
    config,
    logger,
    sql,
    searchSql: engines.searchSql,
    store,
    runner,
    rebuilds,
    searchIndexer,
    search,
    relay,
    feed,
    app,
    bootstrapFile,
    meter,
    scripts: scripts?.executor,
    async close() {
      closing = true;
      // Open change streams end first: the server's close waits for the responses in flight.
      await changes?.close();
      // Requests in flight get a grace period; a connection still open after it (a client that went away without
      // closing its socket, a stream that never ends) is cut, so a stop never waits on a client.
      const force = setTimeout(() => app.server.closeAllConnections(), CLOSE_GRACE_MS);
      await app.close();
      clearTimeout(force);
      await rebuilds?.close();
      await activity?.close();
      await meter.close();
      // What those flushes appended is applied before the subscribers stop, so a clean stop leaves every checkpoint at
      // the head.
      const caughtUp = async (positions: () => Array<number | undefined>) => {
        const head = await store.headPosition();
        const behind = () => positions().some((p) => p !== undefined && p < head);
        for (const deadline = Date.now() + 3_000; behind() && Date.now() < deadline;)
          await new Promise((r) => setTimeout(r, 20));
        return head;
      };
      const others = () => [runner.current, worker?.stats.position, searchIndexer?.current, dispatcher?.stats.position];
      const head = role.projectors ? await caughtUp(() => [...others(), triggers?.stats.position]) : 0;
      // Runs in flight finish before the sandbox threads go; their charges are appended directly (not tallied), and
      // what they wrote fires other rules at the next start (the runner's checkpoint stays before it).
      await triggers?.stop();
      await scripts?.pool.close();
      if (role.projectors && (await store.headPosition()) > head) await caughtUp(others);
      await engines.redisCounters?.close();
      await uploadPoller?.stop();
      await dispatcher?.stop();
      await worker?.stop();
      await modelRebuild?.stop();
      await searchIndexer?.stop();
      await search?.text.close();
      await search?.vectors.close();
      await search?.embedder.close?.();
      await runner.stop();
      await relay?.stop();
      await barrier.close?.();
      await store.close();
      await caches.unwatchCredentials?.();
      if (engines.searchSql !== sql) await engines.searchSql.close();
      await sql.close();
      s3?.close();
      await tracing?.shutdown();
    },
  };
}
