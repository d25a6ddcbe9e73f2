import { readFileSync } from 'node:fs';
import type { ReadModelBarrier, ScriptExecutor } from '@svc/domain';
import { UploadPoller, type UsageMeter } from '@svc/command-api';
import {
  catchUpFeed,
  type DocumentWorker,
  inProcessBarrier,
  KafkaFeed,
  KafkaRelay,
  ProjectionRunner,
  readModelProjections,
  remoteBarrier,
  type TriggerRunner,
  WebhookDispatcher,
  WebhookSender,
} from '@svc/projectors';
import { ModelSwitchVectorIndex, SearchIndexer, VectorModelRebuild } from '@svc/search';
import type { Config } from '../config';
import { kafkaSettings } from '../engines/kafka';
import { moveSearchTables } from '../engines/side-db-move';
import { documentWorker, triggerRunner } from '../features';
import type { ReadCaches } from './caches';
import { READ_MODELS } from './checkpoint-names';
import type { Engines } from './engines';
import type { RoleTraits } from './roles';
import type { WebhookSettings } from './webhooks';

type Log = (msg: string) => void;

/** The read models' runner, the barrier the write side waits on, and the Kafka relay and feed. */
export interface Projections {
  runner: ProjectionRunner;
  barrier: ReadModelBarrier & { close?: () => Promise<void> };
  /**
   * Kafka (KAFKA_BROKERS): the relay (its role's `relay`) and the feed of this process's subscribers (roles with
   * projectors).
   */
  relay?: KafkaRelay;
  feed?: KafkaFeed;
  kafkaTopic?: string;
}

/**
 * Starts the relay and the projection runner (every role opens the runner's
 * checkpoint; only roles with projectors run it, the others wait on it through
 * the remote barrier).
 */
export async function startProjections(o: {
  config: Config;
  role: RoleTraits;
  engines: Engines;
  caches: ReadCaches;
  log: Log;
}): Promise<Projections> {
  const { config, role, log } = o;
  const { sql, store } = o.engines;
  // Kafka: the relay publishes the log; the projectors consume the topic instead of the store's catch-up subscription.
  const kafka = kafkaSettings(config, log);
  if (role.relay === 'required' && !kafka) throw new Error('SERVICE_ROLE=relay publishes to Kafka: set KAFKA_BROKERS');
  const feed = kafka && role.projectors ? new KafkaFeed({ settings: kafka, store, sql, log }) : undefined;
  const relay = kafka && role.relay ? new KafkaRelay(sql, store, kafka, { log }) : undefined;
  if (relay) {
    await relay.init();
    relay.start();
  }
  const caches = o.caches;
  const runner = new ProjectionRunner(
    READ_MODELS,
    sql,
    store,
    readModelProjections({
      revocations: caches.revocations,
      onRecordsChanged: caches.onRecordsChanged,
      onUsageChange: caches.onUsageChange,
    }),
    (m, e) => log(`${m}: ${e instanceof Error ? e.message : String(e)}`),
  );
  await runner.init();
  runner.onCommitted = caches.onCommitted;
  let barrier: Projections['barrier'];
  if (role.projectors) {
    runner.feed = feed;
    runner.start();
    barrier = inProcessBarrier(runner);
  } else {
    barrier = await remoteBarrier(sql, READ_MODELS);
  }
  return { runner, barrier, relay, feed, kafkaTopic: kafka?.topic };
}

/** The log subscribers beside the read models, each with its own checkpoint (roles with projectors). */
export interface Reactors {
  worker?: DocumentWorker;
  uploadPoller?: UploadPoller;
  searchIndexer?: SearchIndexer;
  modelRebuild?: VectorModelRebuild;
  dispatcher?: WebhookDispatcher;
  triggers?: TriggerRunner;
}

export async function startReactors(o: {
  config: Config;
  role: RoleTraits;
  engines: Engines;
  projections: Projections;
  meter: UsageMeter;
  webhooks: WebhookSettings;
  /** The script executor the trigger runner fires rules through (roles with scripts). */
  scripts?: ScriptExecutor;
  log: Log;
}): Promise<Reactors> {
  if (!o.role.projectors) return {};
  const { config, log } = o;
  const { sql, searchSql, store, blobs, s3, search } = o.engines;
  const { feed, barrier } = o.projections;
  // Document extraction, STORED for store-only documents, text discard.
  const worker = documentWorker({ store, sql, blobs, log });
  await worker.init();
  worker.feed = feed;
  worker.start();
  // With an object store the client's PUT never reaches this service: pending uploads are polled beside the worker.
  const uploadPoller = s3
    ? new UploadPoller({ store, sql, objects: s3, urlTtlMs: config.uploadUrlTtlSeconds * 1000, log, meter: o.meter })
    : undefined;
  uploadPoller?.start();

  // Search: its own projector and checkpoint ('search-index'), outside the read-your-writes barrier.
  const searchIndexer = search
    ? new SearchIndexer(searchSql, store, search, {
        vectorCapacity: config.vectorCapacity,
        blobs,
        feed: feed ?? catchUpFeed(store),
        log: (m, e) => log(e === undefined ? m : `${m}: ${e instanceof Error ? e.message : String(e)}`),
      })
    : undefined;
  // A change of embedding model: contexts recorded with another model are rebuilt in the background, the old vectors
  // answering meanwhile.
  const modelRebuild =
    searchIndexer && search!.vectors instanceof ModelSwitchVectorIndex
      ? new VectorModelRebuild({
          index: search!.vectors,
          indexer: searchIndexer,
          sql: searchSql,
          store,
          blobs,
          catalogue: search!.catalogue,
          log: (m, e) => log(e ? `${m}: ${e instanceof Error ? e.message : String(e)}` : m),
        })
      : undefined;
  if (searchIndexer) {
    await searchIndexer.init();
    // A data directory from before the search side had its own database: its tables move over once (then read again).
    if (searchSql !== sql && (await moveSearchTables(sql, searchSql, log))) await searchIndexer.init();
    searchIndexer.start();
    modelRebuild?.start();
  }

  // Webhooks (docs/webhooks.md): the dispatcher has its own checkpoint ('webhook-dispatcher').
  const w = o.webhooks;
  const dispatcher = new WebhookDispatcher({
    store,
    sql,
    barrier,
    sealKey: w.sealKey,
    retryScale: config.webhooks.retryScale,
    sender: new WebhookSender({
      resolver: w.resolver,
      policy: w.policy,
      ca: config.webhooks.caFile ? readFileSync(config.webhooks.caFile, 'utf8') : undefined,
    }),
    log,
  });
  await dispatcher.init();
  dispatcher.feed = feed;
  dispatcher.start();

  // Triggers (docs/triggers.md): its own checkpoint ('trigger-runner'), through the script executor.
  const triggers = o.scripts
    ? triggerRunner({
        store,
        sql,
        executor: o.scripts,
        rulesReady: (position) => barrier.waitFor(position, 30_000),
        retryScale: config.webhooks.retryScale,
        log,
      })
    : undefined;
  if (triggers) {
    await triggers.init();
    triggers.feed = feed;
    triggers.start();
  }
  return { worker, uploadPoller, searchIndexer, modelRebuild, dispatcher, triggers };
}
