import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BlobStore, EventStore, SearchEngines, Sql } from '@svc/domain';
import { InProcessWindowCounter, RedisWindowCounter, type WindowCounter } from '@svc/command-api';
import { describeEmbedder, type IndexerEngines } from '@svc/search';
import type { Config } from '../config';
import { FileBlobStore } from '../engines/blobs';
import { PostgresEventStore } from '../engines/event-store-postgres';
import { loadKurrentDb } from '../engines/load-kurrentdb';
import { S3BlobStore } from '../engines/s3-blobs';
import { openSearchEngines } from '../engines/search';
import { openSql } from '../engines/sql';
import { openPgliteThread } from '../engines/sql-thread';
import type { RoleTraits } from './roles';
import { loadSecret } from './secret';

/** The storage and search engines a process opens before anything reads or writes. */
export interface Engines {
  sql: Sql;
  /**
   * The search side's tables (catalogue, text index, vector jobs, its checkpoint). Embedded default: a second
   * PGlite in its own thread (DATA_DIR/pg-search), so indexing runs beside the API instead of on its connection;
   * on a PostgreSQL server: the same pool as `sql`.
   */
  searchSql: Sql;
  store: EventStore;
  /** The service secret (cursors, blind indexes, sealed payloads, storage grants). */
  secret: Buffer;
  blobs: BlobStore;
  /** The object store (OBJECT_STORE_URL), which then serves the presigned URLs itself. */
  s3?: S3BlobStore;
  /** The search engines, when this process serves or indexes search. */
  search?: IndexerEngines & SearchEngines;
  /** The embedder in use, named at start, in /readyz and in /metrics. */
  embedderInfo?: ReturnType<typeof describeEmbedder>;
  /** Per-minute counters (rate limits, collision budget). */
  counters: WindowCounter;
  /** Set when the counters are Redis's (REDIS_URL): closed with the service. */
  redisCounters?: RedisWindowCounter;
}

async function openEventStore(config: Config, sql: Sql): Promise<EventStore> {
  if (config.eventStoreUrl) {
    const { KurrentDbEventStore } = await loadKurrentDb();
    return KurrentDbEventStore.open(config.eventStoreUrl);
  }
  const store = await PostgresEventStore.open(sql);
  // PG_STREAM_CACHE=off: a create's schema reads go to the server (the path before the checked cache, kept for
  // benchmark comparisons).
  if (sql.kind === 'postgres' && process.env.PG_STREAM_CACHE === 'off')
    Object.assign(store, { readStreamCached: undefined });
  return store;
}

/** Whether the search catalogue holds any item (false before its table exists: a first start). */
async function holdsSearchables(sql: Sql): Promise<boolean> {
  try {
    return (await sql.query(`SELECT 1 FROM si_items LIMIT 1`)).rows.length > 0;
  } catch {
    return false;
  }
}

/** `isClosing` silences a model warm-up that fails because the service is already stopping. */
export async function openEngines(
  config: Config,
  role: RoleTraits,
  log: (msg: string) => void,
  isClosing: () => boolean,
): Promise<Engines> {
  mkdirSync(config.dataDir, { recursive: true });
  // EMBEDDED_DB_THREAD=1: the read models' embedded database in a thread of its own, as the search side's is. Kept
  // for benchmark comparisons only (docs/benchmarks.md, Cores): it frees the API thread but makes creates slower.
  const sql =
    !config.databaseUrl && process.env.EMBEDDED_DB_THREAD === '1'
      ? await openPgliteThread(join(config.dataDir, 'pg'))
      : await openSql({ databaseUrl: config.databaseUrl, dataDir: join(config.dataDir, 'pg') });
  const store = await openEventStore(config, sql);
  let searchSql = sql;
  try {
    if (role.search && !config.databaseUrl && config.searchDb === 'separate')
      searchSql = await openPgliteThread(join(config.dataDir, 'pg-search'), { nice: config.searchDbNice });
    const secret = loadSecret(config, (await store.headPosition()) > 0);
    // Blobs: files under DATA_DIR, or an S3-compatible store when OBJECT_STORE_URL is set (which then serves the
    // presigned URLs itself).
    const s3 = config.objectStoreUrl
      ? S3BlobStore.fromUrl(config.objectStoreUrl, config.uploadUrlTtlSeconds)
      : undefined;
    await s3?.check();
    const blobs: BlobStore = s3 ?? new FileBlobStore(join(config.dataDir, 'blobs'));
    const search = role.search ? await openSearchEngines(config, searchSql, log) : undefined;
    const embedderInfo = search ? describeEmbedder(search.embedder) : undefined;
    if (embedderInfo?.kind === 'none')
      log(
        `embeddings: no model (${embedderInfo.reason}): semantic search is off; SEMANTIC searches are ` +
          `refused, HYBRID answers from keywords alone`,
      );
    // The built-in model's process (about 150 MB resident) starts on the first embedding need. It is loaded now only
    // when the search index already holds something to search, so that first semantic query does not wait for it
    // (about 1-3 s); an empty service stays without it. /readyz says which (embeddings.loaded).
    if (search?.embedder.warm && role.warmEmbedder)
      void holdsSearchables(searchSql)
        .then((yes) => (yes && !isClosing() ? search.embedder.warm!() : undefined))
        .catch(
          (e) => isClosing() || log(`embedding model warm-up failed: ${e instanceof Error ? e.message : String(e)}`),
        );
    // Per-minute counters: in process by default; Redis (shared by every process) when REDIS_URL is set, failing open.
    const redisCounters = config.redisUrl ? new RedisWindowCounter(config.redisUrl, log) : undefined;
    if (redisCounters && !(await redisCounters.ready()))
      log(`Redis at REDIS_URL did not answer at start; counters fail open until it does`);
    return {
      sql,
      searchSql,
      store,
      secret,
      blobs,
      s3,
      search,
      embedderInfo,
      counters: redisCounters ?? new InProcessWindowCounter(),
      redisCounters,
    };
  } catch (e) {
    await store.close();
    if (searchSql !== sql) await searchSql.close();
    await sql.close();
    throw e;
  }
}
