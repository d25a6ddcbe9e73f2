import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { CursorCodec, deriveKey, Paginator, route, type RouteSpec, ServiceError, type WireVersionTable } from '@svc/contracts';
import type { BlobStore, EventStore, ReadModelBarrier, ScriptExecutor, SearchEngines, Sql } from '@svc/domain';
import { IdempotencyStore, readRoutesOf, SandboxPool, SandboxScriptExecutor } from '@svc/command-api';
import { AccountRateLimits, burstLimitGate, CachedStanding, type CommandDeps, creditCeilingGate, inferenceBalanceGate, InProcessWindowCounter, loadKurrentDb, openAccount, PayloadSealer, PostgresEventStore, readMeteringListener, RedisWindowCounter, UploadPoller, UsageMeter } from '@svc/command-api';
import { sqlFolderContents } from '@svc/projectors';
import { describeEmbedder, type IndexerEngines, ModelSwitchVectorIndex, VectorModelRebuild, inProcessBarrier, KafkaFeed, KafkaRelay, ProjectionRunner, remoteBarrier, SearchIndexer, sqlAccountStanding, WebhookDispatcher, WebhookSender } from '@svc/projectors';
import { ActivityLogStore, CredentialResolver, ReadCache, type RecordRow, TenancyReads } from '@svc/query-api';
import type { Config } from './config';
import { openSql } from './engines/sql';
import { createEdge, registerRoutes, type EdgeOptions } from './http/edge';
import { buildOpenApi } from './http/openapi';
import { commandRoutes, defaultModels, documentWorker, queryRoutes, readModelProjections, storageGrants, storageRouteSpecs, triggerRunner } from './features';
import { FileBlobStore } from './engines/blobs';
import { S3BlobStore } from './engines/s3-blobs';
import { openSearchEngines } from './engines/search';
import { kafkaSettings, metricsText } from './engines/kafka';
import { quarantineRoutes } from './http/quarantine-routes';
import { ActivityRecorder } from './activity/recorder';
import { webhookResolver } from './engines/webhook-dns';

export const READ_MODELS = 'read-models';

export interface Service {
  config: Config;
  sql: Sql;
  store: EventStore;
  runner: ProjectionRunner;
  /** The search projector ('search-index'), when this process runs projectors. */
  searchIndexer?: SearchIndexer;
  /** The search engines, when this process serves or indexes search. */
  search?: IndexerEngines & SearchEngines;
  /** Kafka (KAFKA_BROKERS): the relay (roles relay and all) and the feed of this process's projectors (roles projector and all). */
  relay?: KafkaRelay;
  feed?: KafkaFeed;
  app: FastifyInstance;
  /** Set when this start created the first account. */
  bootstrapFile?: string;
  /** Metering (docs/api.md "Usage"): `flush()` appends the read counts tallied so far. */
  meter: UsageMeter;
  /** Scripts (docs/scripts.md): the sandbox executor (roles all, command, projector), for POST /v1/scripts/execute and the trigger runner. */
  scripts?: ScriptExecutor;
  close(): Promise<void>;
}

/** A start-up refusal the launcher prints as one line, without a stack trace. */
export class StartupError extends Error {
  override name = 'StartupError';
}

const SECRET_FILE = 'service-secret.key';
/** SERVICE_SECRET, when set, must carry at least this much key material. */
const MIN_SECRET_CHARS = 32;

/**
 * The service secret keys cursors, blind indexes and sealed payloads: replacing
 * it silently would make every sealed field unreadable and every sensitive
 * lookup miss. So a key is generated only for a log that is still empty; with
 * data present a missing or corrupt key file stops the start, naming the file.
 */
function loadSecret(config: Config, hasData: boolean): Buffer {
  if (config.serviceSecret) {
    if (config.serviceSecret.length < MIN_SECRET_CHARS) throw new StartupError(`SERVICE_SECRET is too short: give at least ${MIN_SECRET_CHARS} characters of random key material`);
    return Buffer.from(config.serviceSecret, 'utf8');
  }
  const file = join(config.dataDir, SECRET_FILE);
  let stat;
  try {
    stat = statSync(file);
  } catch {
    stat = undefined;
  }
  if (!stat) {
    if (hasData)
      throw new StartupError(
        `${file} is missing but ${config.dataDir} already holds data: restore the key file from backup (or set SERVICE_SECRET to the key in use). A new key would make sealed fields, sensitive lookups and cursors unreadable.`,
      );
    writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600 });
  } else if (!stat.isFile()) throw new StartupError(`${file} is not a file: remove what is there (a new key is generated only for an empty data directory) or restore the key file`);
  const text = readFileSync(file, 'utf8').trim();
  if (!/^[0-9a-f]{64}$/i.test(text))
    throw new StartupError(`${file} is corrupt: it must hold 64 hexadecimal characters (32 bytes); restore it from backup${hasData ? '' : ', or delete it on this empty data directory to generate a new one'}`);
  return Buffer.from(text, 'hex');
}

async function openEventStore(config: Config, sql: Sql): Promise<EventStore> {
  if (config.eventStoreUrl) {
    const { KurrentDbEventStore } = await loadKurrentDb();
    return KurrentDbEventStore.open(config.eventStoreUrl);
  }
  return PostgresEventStore.open(sql);
}

/** Test seams: the clock (rate-limit windows, version sunsets, event times) and the Service-Version table. */
export interface ServiceHooks {
  now?: () => Date;
  wireVersions?: WireVersionTable;
}

export async function buildService(config: Config, log: (msg: string) => void = (m) => console.log(m), hooks: ServiceHooks = {}): Promise<Service> {
  mkdirSync(config.dataDir, { recursive: true });
  const sql = await openSql({ databaseUrl: config.databaseUrl, dataDir: join(config.dataDir, 'pg') });
  const store = await openEventStore(config, sql);
  let secret: Buffer;
  try {
    secret = loadSecret(config, (await store.headPosition()) > 0);
  } catch (e) {
    await store.close();
    await sql.close();
    throw e;
  }

  const ids = { newId: () => randomUUID() };
  const now = hooks.now ?? (() => new Date());
  // Revocations reach the credential cache from this process's projector (exactly) and, on PostgreSQL, from any
  // other process's through NOTIFY; the TTL is the backstop, short where no projector runs beside the cache.
  const credentials = new CredentialResolver(sql, { ttlMs: config.role === 'all' || config.role === 'projector' ? 5000 : 1000 });
  const unwatchCredentials = sql.kind === 'postgres' ? await credentials.watch() : undefined;
  const tenancy = new TenancyReads(sql);
  // Each account's burst limit (its plan), from the read model; dropped by this process's projector when an account changes.
  const accountLimits = new AccountRateLimits((id) => tenancy.account(id), config.role === 'all' ? 5000 : 1000);
  const pages = new Paginator(new CursorCodec(secret));

  const runsProjector = config.role === 'all' || config.role === 'projector';
  // Kafka: the relay publishes the log (roles relay and all); the projectors consume the topic instead of the store's catch-up subscription.
  const kafka = kafkaSettings(config, log);
  if (config.role === 'relay' && !kafka) throw new Error('SERVICE_ROLE=relay publishes to Kafka: set KAFKA_BROKERS');
  const feed = kafka && runsProjector ? new KafkaFeed({ settings: kafka, store, sql, log }) : undefined;
  const relay = kafka && (config.role === 'all' || config.role === 'relay') ? new KafkaRelay(sql, store, kafka, { log }) : undefined;
  if (relay) {
    await relay.init();
    relay.start();
  }
  // By-id caches are exact only beside an in-process projector that invalidates them.
  const recordCache = config.role === 'all' ? new ReadCache<RecordRow>() : undefined;
  const onRecordsChanged = (ids: string[] | null) => (ids ? recordCache?.invalidate(ids) : recordCache?.clear());
  // The credit gate's view of each account (plan terms, usage of the period): kept briefly, dropped by this process's projector when it moves.
  const standing = new CachedStanding(sqlAccountStanding(sql), config.role === 'all' ? 5000 : 1000);
  const runner = new ProjectionRunner(READ_MODELS, sql, store, readModelProjections({ onCredentialChange: () => credentials.invalidate(), onRecordsChanged, onUsageChange: (accountId, totals) => (accountId && totals ? totals.forEach((used, period) => standing.moved(accountId, period, used)) : standing.invalidate(accountId)) }), (m, e) =>
    log(`${m}: ${e instanceof Error ? e.message : String(e)}`),
  );
  await runner.init();
  // Lookup and list pages are cached only beside the in-process projector, and dropped whenever records or schemas change.
  const pageCache = config.role === 'all' ? new ReadCache<unknown>(5_000) : undefined;
  runner.onCommitted = (events) => {
    if (events.some((e) => /^(Record|Schema|Context|Tenant)/.test(e.type) && !/^Record(Indexed|IndexFailed)$/.test(e.type))) pageCache?.clear();
    if (events.some((e) => e.type === 'AccountChanged')) accountLimits.invalidate();
  };
  let barrier: ReadModelBarrier & { close?: () => Promise<void> };
  if (runsProjector) {
    runner.feed = feed;
    runner.start();
    barrier = inProcessBarrier(runner);
  } else {
    barrier = await remoteBarrier(sql, READ_MODELS);
  }
  const sealer = new PayloadSealer(deriveKey(secret, 'payload-seal'), deriveKey(secret, 'blind-index'));
  // Metering on the log (docs/api.md "Usage"): writes charge in their own append, searches once served, reads in batches.
  const meter = new UsageMeter({ store, barrier, ids, prices: config.prices, now, log, flushMs: config.usageReadsFlushMs });
  meter.enabled = config.metering;
  const deps: CommandDeps = { store, barrier, ids, sealer, log, meter };
  // Blobs: files under DATA_DIR, or an S3-compatible store when OBJECT_STORE_URL is set (which then serves the presigned URLs itself).
  const storageUrlTtlMs = config.uploadUrlTtlSeconds * 1000;
  const s3 = config.objectStoreUrl ? S3BlobStore.fromUrl(config.objectStoreUrl, config.uploadUrlTtlSeconds) : undefined;
  await s3?.check();
  const blobs: BlobStore = s3 ?? new FileBlobStore(join(config.dataDir, 'blobs'));
  const worker = runsProjector ? documentWorker({ store, sql, blobs, log }) : undefined;
  if (worker) {
    await worker.init();
    worker.feed = feed;
    worker.start();
  }
  // With an object store the client's PUT never reaches this service: pending uploads are polled beside the worker.
  const uploadPoller = s3 && runsProjector ? new UploadPoller({ store, sql, objects: s3, urlTtlMs: storageUrlTtlMs, log, meter }) : undefined;
  uploadPoller?.start();

  // Search: its own projector and checkpoint ('search-index'), outside the read-your-writes barrier.
  const search = config.role === 'command' || config.role === 'relay' ? undefined : await openSearchEngines(config, sql);
  // The first semantic query would otherwise wait for the built-in model to load (about 1 s): load it now, in its thread.
  let closing = false;
  // The embedder in use is named at start, in /readyz and in /metrics (the built-in default falls back to USE when its model is not installed).
  const embedderInfo = search ? describeEmbedder(search.embedder) : undefined;
  if (embedderInfo?.fallbackReason) log(`embeddings: ${embedderInfo.fallbackReason}`);
  if (search && (config.role === 'all' || config.role === 'query'))
    search.embedder.warm?.().catch((e) => closing || log(`embedding model warm-up failed: ${e instanceof Error ? e.message : String(e)}`));
  const searchIndexer = search && runsProjector ? new SearchIndexer(sql, store, search, { vectorCapacity: config.vectorCapacity, blobs, log: (m, e) => log(`${m}: ${e instanceof Error ? e.message : String(e)}`) }) : undefined;
  // A change of embedding model: contexts recorded with another model are rebuilt in the background, the old vectors answering meanwhile.
  const modelRebuild =
    searchIndexer && search!.vectors instanceof ModelSwitchVectorIndex
      ? new VectorModelRebuild({ index: search!.vectors, indexer: searchIndexer, sql, store, blobs, catalogue: search!.catalogue, log: (m, e) => log(e ? `${m}: ${e instanceof Error ? e.message : String(e)}` : m) })
      : undefined;
  if (searchIndexer) {
    await searchIndexer.init();
    searchIndexer.feed = feed;
    searchIndexer.start();
    modelRebuild?.start();
  }

  // Webhooks (docs/webhooks.md): the dispatcher runs where the projectors run, with its own checkpoint ('webhook-dispatcher').
  const webhookPolicy = { allowPrivate: config.webhooks.allowPrivateTargets };
  const resolver = webhookResolver(config.webhooks.testDnsFile);
  const webhookSealKey = deriveKey(secret, 'webhook-secret');
  if (webhookPolicy.allowPrivate && (config.role === 'all' || config.role === 'command' || runsProjector))
    log('WARNING: WEBHOOK_ALLOW_PRIVATE_TARGETS=1: webhooks may target loopback and RFC 1918 private addresses (development only)');
  const dispatcher = runsProjector
    ? new WebhookDispatcher({
        store,
        sql,
        barrier,
        sealKey: webhookSealKey,
        retryScale: config.webhooks.retryScale,
        sender: new WebhookSender({ resolver, policy: webhookPolicy, ca: config.webhooks.caFile ? readFileSync(config.webhooks.caFile, 'utf8') : undefined }),
        log,
      })
    : undefined;
  if (dispatcher) {
    await dispatcher.init();
    dispatcher.feed = feed;
    dispatcher.start();
  }

  // Per-minute counters: in process by default; Redis (shared by every process) when REDIS_URL is set, failing open.
  const redisCounters = config.redisUrl ? new RedisWindowCounter(config.redisUrl, log) : undefined;
  if (redisCounters && !(await redisCounters.ready())) log(`Redis at REDIS_URL did not answer at start; counters fail open until it does`);
  const counters = redisCounters ?? new InProcessWindowCounter();
  // Pre-flight gates of data-plane requests, in the spec's order.
  const preflight: NonNullable<EdgeOptions['preflight']> = [];
  preflight.push(creditCeilingGate({ standing, prices: config.prices, enabled: () => meter.enabled })); // 1. monthly credit ceiling (402): metering
  if (config.rateLimits) preflight.push(burstLimitGate({ counters, limits: accountLimits, log })); // 2. per-account burst limit (429)
  // The inference billing gate (402 INSUFFICIENT_BALANCE) comes after the burst limit; it applies to the inference routes only.
  preflight.push(inferenceBalanceGate({ standing }));
  const edgeOpts: EdgeOptions = {
    preflight,
    resolveCredential: (t: string) => credentials.resolve(t),
    contextExists: (tenantId: string, contextId: string) => tenancy.contextExists(tenantId, contextId),
    operatorToken: config.operatorToken,
    logger: config.logRequests,
    now,
    wireVersions: hooks.wireVersions,
    ipRateLimitPerMinute: config.edgeRateLimitPerMinute,
  };
  // Activity log (docs/api.md "Activity log"): every process serving /v1 records its requests, in batches off the request path.
  const servesApi = config.role === 'all' || config.role === 'command' || config.role === 'query';
  if (servesApi) await new ActivityLogStore(sql).init();
  const activity =
    servesApi && config.activityLog.enabled
      ? new ActivityRecorder({ store: new ActivityLogStore(sql), resolve: (t) => credentials.resolve(t), flushEveryMs: config.activityLog.flushMs, retentionDays: config.activityLog.retentionDays, clock: () => now().getTime(), log }).start()
      : undefined;
  if (activity) {
    const before = edgeOpts.onResponse;
    edgeOpts.onResponse = before ? (req, reply, ms) => (before(req, reply, ms), activity.onResponse(req, reply, ms)) : activity.onResponse;
  }
  // Read metering: successful data-plane reads are counted per context and appended in batches (docs/api.md "Usage").
  if (config.role === 'all' || config.role === 'command' || config.role === 'query') {
    const countReads = readMeteringListener(meter, () => all, now);
    const before = edgeOpts.onResponse;
    edgeOpts.onResponse = before ? (req, reply, ms) => (before(req, reply, ms), countReads(req, reply)) : countReads;
  }
  const app = createEdge(edgeOpts);
  const routes: RouteSpec[] = [];
  // Scripts (docs/scripts.md): sandbox threads started on first use, the executor (also for the trigger runner), Idempotency-Key records.
  const scriptPool = config.role === 'all' || config.role === 'command' || config.role === 'projector' ? new SandboxPool({ threads: config.scripts.threads }) : undefined;
  const scripts = scriptPool
    ? new SandboxScriptExecutor({
        deps,
        pool: scriptPool,
        limits: { timeoutMs: config.scripts.timeoutMs },
        documents: { blobs, grants: storageGrants(secret, storageUrlTtlMs), presigned: s3 },
        folderContents: sqlFolderContents(sql),
        // KurrentDB: only written streams are expected at their revision (an empty append is no check there).
        checkReads: !config.eventStoreUrl,
      })
    : undefined;
  // Triggers (docs/triggers.md): the trigger runner runs where the projectors run, with its own checkpoint ('trigger-runner'), through the executor.
  const triggers = runsProjector && scripts ? triggerRunner({ store, sql, executor: scripts, rulesReady: (position) => barrier.waitFor(position, 30_000), retryScale: config.webhooks.retryScale, log }) : undefined;
  if (triggers) {
    await triggers.init();
    triggers.feed = feed;
    triggers.start();
  }
  const scriptRoutes = scripts && scriptPool ? { executor: scripts, checker: scriptPool, idempotency: new IdempotencyStore(sql, config.scripts.timeoutMs + 60_000) } : undefined;
  if (config.role === 'all' || config.role === 'command') routes.push(...commandRoutes({ deps, secret, pages, counters, sql, blobs, storageUrlTtlMs, presigned: s3, scripts: scriptRoutes, webhooks: { resolver, policy: webhookPolicy, sealKey: webhookSealKey } }));
  if (config.role === 'all' || config.role === 'query') routes.push(...queryRoutes({ sql, secret, pages, tenancy, store, deps, recordCache, pageCache, blobs, storageUrlTtlMs, presigned: s3, search, log, models: defaultModels(search, config.llm) }));
  const system: RouteSpec[] = [
    route({ method: 'GET', url: '/healthz', operationId: 'getLiveness', auth: 'none', summary: 'Liveness', handler: async () => ({ status: 'ok', role: config.role }) }),
    route({
      method: 'GET',
      url: '/readyz',
      operationId: 'getReadiness',
      errors: [503],
      auth: 'none',
      summary: 'Readiness: the database answers, the read models are caught up within 10,000 events, and no projection is failing or holds quarantined events',
      handler: async () => {
        try {
          await sql.query('SELECT 1');
        } catch {
          throw new ServiceError('UNAVAILABLE', 'The database is not reachable');
        }
        const head = await store.headPosition();
        const lag = runsProjector ? head - runner.current : 0;
        if (lag > 10_000) throw new ServiceError('UNAVAILABLE', `Read models are ${lag} events behind`);
        if (runsProjector && runner.stats.quarantined > 0)
          throw new ServiceError('UNAVAILABLE', `Read models hold ${runner.stats.quarantined} quarantined event(s): ${runner.stats.lastError ?? ''} (GET /operator/projections/quarantine)`);
        if (runsProjector && runner.stats.failing >= 5) throw new ServiceError('UNAVAILABLE', `Read models are failing: ${runner.stats.lastError ?? ''}`);
        const relayLag = relay ? head - relay.current : 0;
        if (relayLag > 10_000) throw new ServiceError('UNAVAILABLE', `The Kafka relay is ${relayLag} events behind`);
        const subscriber = (s: { name: string; position: number }) => ({ ...s, lag: Math.max(0, head - s.position), ...(feed ? { feed: feed.status(s.name) } : {}) });
        return {
          status: 'ready',
          role: config.role,
          headPosition: head,
          projections: runsProjector ? [runner.stats, ...(searchIndexer ? [searchIndexer.stats] : []), ...(worker ? [worker.stats] : []), ...(dispatcher ? [dispatcher.stats] : []), ...(triggers ? [triggers.stats] : [])].map(subscriber) : [],
          ...(relay ? { relay: { ...relay.stats, lag: Math.max(0, relayLag), topic: kafka!.topic } } : {}),
          ...(embedderInfo ? { embeddings: { ...embedderInfo, ...(modelRebuild ? { rebuild: modelRebuild.status() } : {}) } } : {}),
        };
      },
    }),
    route({
      method: 'GET',
      url: '/metrics',
      operationId: 'getMetrics',
      contentType: 'text/plain',
      auth: 'none',
      summary: 'Prometheus metrics: head of the log, position and lag of each log subscriber, Kafka consumer lag',
      handler: async ({ reply }) => {
        const head = await store.headPosition();
        const subscribers = [...(runsProjector ? [runner.stats, ...(searchIndexer ? [searchIndexer.stats] : []), ...(worker ? [worker.stats] : []), ...(triggers ? [triggers.stats] : []), ...(dispatcher ? [dispatcher.stats] : [])] : []), ...(relay ? [relay.stats] : [])];
        reply.type('text/plain; version=0.0.4; charset=utf-8');
        const info = embedderInfo
          ? `# HELP svc_embeddings_model The embedding model in use (1); fallback="true" when the built-in default could not be loaded\n# TYPE svc_embeddings_model gauge\nsvc_embeddings_model{role="${config.role}",model="${embedderInfo.model.replace(/["\\]/g, '_')}",dims="${embedderInfo.dims}",kind="${embedderInfo.kind}",fallback="${embedderInfo.fallbackReason ? 'true' : 'false'}"} 1\n`
          : '';
        return metricsText({ role: config.role, head, subscribers, kafka: feed?.statuses() ?? [] }) + info;
      },
    }),
  ];
  if (runsProjector) system.push(...quarantineRoutes(runner));
  const all = [...routes, ...system];
  // Scripts' list and lookup calls run the REST read routes of this process.
  if (scripts) scripts.reads = readRoutesOf(all);
  const openapi = buildOpenApi(all, { publicUrl: config.publicUrl });
  all.push(route({ method: 'GET', url: '/openapi.json', auth: 'none', summary: 'This API description', handler: async () => openapi }));
  registerRoutes(app, all, edgeOpts, now);
  if ((config.role === 'all' || config.role === 'command') && !s3) {
    const storage = storageRouteSpecs({ deps, secret, blobs, storageUrlTtlMs });
    // The storage endpoint streams request bodies itself: no body parser runs in its scope.
    app.register(async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
      registerRoutes(scope, storage, edgeOpts, now);
    });
  }

  let bootstrapFile: string | undefined;
  if ((config.role === 'all' || config.role === 'command') && (await store.headPosition()) === 0) {
    const plan = (['free', 'starter', 'pro', 'scale', 'enterprise'].includes(config.defaultPlan) ? config.defaultPlan : 'free') as 'free';
    const system = { credentialId: 'bootstrap', kind: 'operator' as const, accountId: '', tenantId: null, environment: null, contextId: null, crossContext: true, allowedActions: ['*'], dataScope: null, userId: null, wireVersionPin: null };
    const account = await openAccount(deps, { plan, name: 'bootstrap' }, { requestId: randomUUID(), principal: system, now: now() });
    bootstrapFile = join(config.dataDir, 'bootstrap.json');
    writeFileSync(bootstrapFile, JSON.stringify(account, null, 2) + '\n', { mode: 0o600 });
    chmodSync(bootstrapFile, 0o600);
  }

  return {
    config,
    sql,
    store,
    runner,
    searchIndexer,
    search,
    relay,
    feed,
    app,
    bootstrapFile,
    meter,
    scripts,
    async close() {
      closing = true;
      await app.close();
      await activity?.close();
      await meter.close();
      // What those flushes appended is applied before the subscribers stop, so a clean stop leaves every checkpoint at the head.
      const caughtUp = async (positions: () => Array<number | undefined>) => {
        const head = await store.headPosition();
        const behind = () => positions().some((p) => p !== undefined && p < head);
        for (const deadline = Date.now() + 3_000; behind() && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
        return head;
      };
      const others = () => [runner.current, worker?.stats.position, searchIndexer?.current, dispatcher?.stats.position];
      const head = runsProjector ? await caughtUp(() => [...others(), triggers?.stats.position]) : 0;
      // Runs in flight finish before the sandbox threads go; their charges are appended directly (not tallied), and
      // what they wrote fires other rules at the next start (the runner's checkpoint stays before it).
      await triggers?.stop();
      await scriptPool?.close();
      if (runsProjector && (await store.headPosition()) > head) await caughtUp(others);
      await redisCounters?.close();
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
      await unwatchCredentials?.();
      await sql.close();
      s3?.close();
    },
  };
}
