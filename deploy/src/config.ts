import { resolve } from 'node:path';
import { LOG_LEVELS, type LogLevel } from './log';
import { loadPrices, type PriceTable } from '@svc/domain';
import type { CorsOrigins } from './http/cors';

export type Role = 'all' | 'command' | 'query' | 'projector' | 'relay';

/** Start-up contract (decisions §3): every engine is switched on by its own variable. */
export interface Config {
  port: number;
  host: string;
  /** The base URL clients reach this service at (PUBLIC_URL; default http://<HOST>:<PORT>): the `servers` entry of /openapi.json. */
  publicUrl: string;
  dataDir: string;
  role: Role;
  databaseUrl?: string;
  eventStoreUrl?: string;
  kafkaBrokers?: string;
  /** Kafka (KAFKA_BROKERS set): the event topic, its partitions when the relay creates it, the consumer-group prefix (docs/engines/kafka.md). */
  kafkaTopic: string;
  kafkaPartitions: number;
  kafkaGroupPrefix: string;
  elasticsearchUrl?: string;
  lancedbUri?: string;
  redisUrl?: string;
  objectStoreUrl?: string;
  operatorToken?: string;
  defaultPlan: string;
  /** Opening inference balance (cents) of the account created on first start (DEFAULT_INFERENCE_BALANCE_CENTS, default 1,000). */
  defaultInferenceBalanceCents: number;
  /** Secret for cursors, blind indexes and payload encryption; generated into DATA_DIR when unset. */
  serviceSecret?: string;
  /** LOG_REQUESTS: one log line per request (default on; `0` turns it off). */
  logRequests: boolean;
  /** LOG_LEVEL: fatal, error, warn, info (default), debug, trace or silent. */
  logLevel: LogLevel;
  /** Search: OpenAI-compatible embeddings (else the built-in model), the per-tenant vector capacity, the Elasticsearch index prefix. */
  embeddingsUrl?: string;
  embeddingsApiKey?: string;
  embeddingsModel?: string;
  embeddingsDims?: number;
  /** The built-in model (BUILTIN_EMBEDDINGS_MODEL): auto (default: bge-small-en-v1.5 when installed, else USE), bge, or use. */
  builtinEmbeddingsModel: 'auto' | 'bge' | 'use';
  vectorCapacity: number;
  /** Passages the in-memory keyword index keeps loaded (role all, PostgreSQL FTS), least recently searched contexts dropped first. */
  textMemoryPassages: number;
  /** Memory (MiB) for vectors searched in process (role all): least recently searched contexts dropped first; 0 searches LanceDB directly. */
  vectorMemoryMb: number;
  /**
   * Embedded default: where the search side's tables live (SEARCH_DB): `separate`, a second embedded database
   * in its own thread (DATA_DIR/pg-search), or `main`, the one embedded database beside the read models.
   */
  searchDb: 'separate' | 'main';
  /** Thread niceness (Linux, 0-19) of that separate database's thread (SEARCH_DB_NICE). */
  searchDbNice: number;
  elasticsearchIndexPrefix: string;
  /** Lifetime of presigned upload and download URLs (UPLOAD_URL_TTL_SECONDS, default 900 = 15 minutes). */
  uploadUrlTtlSeconds: number;
  /** The price table (decisions §5 defaults; PRICES_JSON overrides any part) and how often read counts are appended (USAGE_READS_FLUSH_MS, default 1,000). */
  prices: PriceTable;
  usageReadsFlushMs: number;
  /** Activity log (docs/api.md "Activity log"): recording on (ACTIVITY_LOG, `0` turns it off), flush period, retention. */
  activityLog: { enabled: boolean; flushMs: number; retentionDays: number };
  /** Edge per-IP flood ceiling, requests per IP per minute (EDGE_RATE_LIMIT_PER_MINUTE, default 20,000; 0 disables). */
  edgeRateLimitPerMinute: number;
  /**
   * Reverse proxies in front of this process whose X-Forwarded-For entries are trusted (TRUST_PROXY_HOPS, default 0):
   * the client address (the per-IP ceiling's key) is the one this many hops from the right of the chain whose last
   * entry is the TCP peer. 0 ignores X-Forwarded-For entirely; the shipped router (deploy/k8s/router.nginx.conf) is 1.
   */
  trustProxyHops: number;
  /**
   * Keys of tenants' identity providers (docs/identity.md "Sign in with your identity provider"): JWT_KEYS_REFETCH_MS,
   * least time between two fetches prompted by an unknown `kid` (default 60 s); JWT_KEYS_MAX_AGE_MS, how long fetched
   * keys are used before they are fetched again (default 10 min). Lowered by tests of key rotation.
   */
  jwtKeys: { refetchMs: number; maxAgeMs: number };
  /** CORS_ORIGINS: `*` or the exact origins browsers may call the API from; unset, no CORS headers (docs/api.md "CORS"). */
  corsOrigins?: CorsOrigins;
  /**
   * Metering and the per-account burst limits are on unless METERING=0 / RATE_LIMITS=0 (docs/operations.md):
   * the switches exist for the benchmark that measures their cost and for trusted single-tenant installs.
   */
  metering: boolean;
  rateLimits: boolean;
  /** Most open change streams (GET /v1/changes) per context in each process serving reads (CHANGE_STREAMS_PER_CONTEXT, default 1,000); then 429. */
  changeStreamsPerContext: number;
  /** Scripts (docs/scripts.md): wall-clock budget per execution (SCRIPT_TIMEOUT_MS, default 15,000; tests lower it) and sandbox threads (SCRIPT_THREADS, default 4). */
  scripts: { timeoutMs: number; threads: number };
  /** Inference (decisions §8; docs/inference.md): an OpenAI-compatible chat-completions endpoint and the model ids it serves; else the built-in model alone. */
  llm?: { url: string; apiKey?: string; models: string[]; contextWindow: number; stallMs: number };
  /**
   * Webhooks (docs/webhooks.md): WEBHOOK_ALLOW_PRIVATE_TARGETS=1 opens loopback and RFC 1918 targets (development; a warning
   * at start), WEBHOOK_CA_FILE adds a CA to trust, WEBHOOK_RETRY_SCALE multiplies the retry schedule (default 1: 30 s ... 8 h),
   * WEBHOOK_TEST_DNS_FILE (tests only) answers DNS from a JSON file.
   */
  webhooks: { allowPrivateTargets: boolean; caFile?: string; retryScale: number; testDnsFile?: string };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const role = (env.SERVICE_ROLE ?? 'all') as Role;
  if (!['all', 'command', 'query', 'projector', 'relay'].includes(role)) throw new Error(`SERVICE_ROLE must be all|command|query|projector|relay, not ${role}`);
  return {
    port: Number(env.PORT ?? 8080),
    host: env.HOST ?? '127.0.0.1',
    publicUrl: publicUrl(env),
    dataDir: resolve(env.DATA_DIR ?? './data'),
    role,
    databaseUrl: env.DATABASE_URL || undefined,
    eventStoreUrl: env.EVENTSTORE_URL || undefined,
    kafkaBrokers: env.KAFKA_BROKERS || undefined,
    kafkaTopic: env.KAFKA_TOPIC || 'svc.events',
    kafkaPartitions: env.KAFKA_TOPIC_PARTITIONS ? Number(env.KAFKA_TOPIC_PARTITIONS) : 3,
    kafkaGroupPrefix: env.KAFKA_GROUP_PREFIX ?? `${env.KAFKA_TOPIC || 'svc.events'}.`,
    elasticsearchUrl: env.ELASTICSEARCH_URL || undefined,
    lancedbUri: env.LANCEDB_URI || undefined,
    redisUrl: env.REDIS_URL || undefined,
    objectStoreUrl: env.OBJECT_STORE_URL || undefined,
    operatorToken: env.OPERATOR_TOKEN || undefined,
    defaultPlan: env.DEFAULT_PLAN ?? 'free',
    defaultInferenceBalanceCents: wholeNumber(env.DEFAULT_INFERENCE_BALANCE_CENTS, 1000, 'DEFAULT_INFERENCE_BALANCE_CENTS', 'a whole number of cents (0 or more)'),
    serviceSecret: env.SERVICE_SECRET || undefined,
    logRequests: env.LOG_REQUESTS !== '0',
    logLevel: oneOf(env.LOG_LEVEL, LOG_LEVELS, 'LOG_LEVEL') ?? 'info',
    embeddingsUrl: env.EMBEDDINGS_URL || undefined,
    embeddingsApiKey: env.EMBEDDINGS_API_KEY || undefined,
    embeddingsModel: env.EMBEDDINGS_MODEL || undefined,
    embeddingsDims: env.EMBEDDINGS_DIMENSIONS ? Number(env.EMBEDDINGS_DIMENSIONS) : undefined,
    builtinEmbeddingsModel: builtinModel(env.BUILTIN_EMBEDDINGS_MODEL),
    vectorCapacity: env.VECTOR_CAPACITY_PER_TENANT ? Number(env.VECTOR_CAPACITY_PER_TENANT) : 5_000_000,
    textMemoryPassages: env.TEXT_INDEX_MEMORY_PASSAGES ? Number(env.TEXT_INDEX_MEMORY_PASSAGES) : 2_000_000,
    vectorMemoryMb: env.VECTOR_INDEX_MEMORY_MB ? Number(env.VECTOR_INDEX_MEMORY_MB) : 2048,
    searchDb: oneOf(env.SEARCH_DB, ['separate', 'main'] as const, 'SEARCH_DB') ?? 'separate',
    searchDbNice: niceness(env.SEARCH_DB_NICE, 5),
    elasticsearchIndexPrefix: env.ELASTICSEARCH_INDEX_PREFIX ?? 'svc-',
    uploadUrlTtlSeconds: env.UPLOAD_URL_TTL_SECONDS ? Number(env.UPLOAD_URL_TTL_SECONDS) : 900,
    prices: loadPrices(env.PRICES_JSON),
    usageReadsFlushMs: env.USAGE_READS_FLUSH_MS ? Number(env.USAGE_READS_FLUSH_MS) : 1000,
    activityLog: {
      enabled: env.ACTIVITY_LOG !== '0',
      flushMs: env.ACTIVITY_LOG_FLUSH_MS ? Number(env.ACTIVITY_LOG_FLUSH_MS) : 250,
      retentionDays: env.ACTIVITY_LOG_RETENTION_DAYS ? Number(env.ACTIVITY_LOG_RETENTION_DAYS) : 30,
    },
    edgeRateLimitPerMinute: wholeNumber(env.EDGE_RATE_LIMIT_PER_MINUTE, 20_000, 'EDGE_RATE_LIMIT_PER_MINUTE', 'a whole number of requests per minute (0 disables)'),
    trustProxyHops: wholeNumber(env.TRUST_PROXY_HOPS, 0, 'TRUST_PROXY_HOPS', 'a whole number of trusted reverse-proxy hops (0 or more; 0 ignores X-Forwarded-For)'),
    corsOrigins: corsOrigins(env.CORS_ORIGINS),
    jwtKeys: {
      refetchMs: wholeNumber(env.JWT_KEYS_REFETCH_MS, 60_000, 'JWT_KEYS_REFETCH_MS', 'a whole number of milliseconds'),
      maxAgeMs: wholeNumber(env.JWT_KEYS_MAX_AGE_MS, 600_000, 'JWT_KEYS_MAX_AGE_MS', 'a whole number of milliseconds'),
    },
    metering: env.METERING !== '0',
    rateLimits: env.RATE_LIMITS !== '0',
    changeStreamsPerContext: wholeNumber(env.CHANGE_STREAMS_PER_CONTEXT, 1000, 'CHANGE_STREAMS_PER_CONTEXT', 'a whole number of open change streams per context'),
    scripts: {
      timeoutMs: env.SCRIPT_TIMEOUT_MS ? Math.min(15_000, Math.max(100, Number(env.SCRIPT_TIMEOUT_MS))) : 15_000,
      threads: env.SCRIPT_THREADS ? Math.max(1, Number(env.SCRIPT_THREADS)) : 4,
    },
    webhooks: {
      allowPrivateTargets: env.WEBHOOK_ALLOW_PRIVATE_TARGETS === '1',
      caFile: env.WEBHOOK_CA_FILE || undefined,
      retryScale: retryScale(env.WEBHOOK_RETRY_SCALE),
      testDnsFile: testDnsFile(env),
    },
    llm: env.LLM_URL
      ? {
          url: env.LLM_URL,
          apiKey: env.LLM_API_KEY || undefined,
          models: (env.LLM_MODELS ?? '').split(',').map((m) => m.trim()).filter(Boolean),
          contextWindow: env.LLM_CONTEXT_WINDOW ? Number(env.LLM_CONTEXT_WINDOW) : 128_000,
          stallMs: env.LLM_STALL_MS ? Number(env.LLM_STALL_MS) : 30_000,
        }
      : undefined,
  };
}

/** PUBLIC_URL without a trailing slash; unset, the address the service listens on (a wildcard HOST read as loopback). */
function publicUrl(env: NodeJS.ProcessEnv): string {
  if (env.PUBLIC_URL) return env.PUBLIC_URL.replace(/\/+$/, '');
  const host = env.HOST && !['0.0.0.0', '::', '[::]'].includes(env.HOST) ? env.HOST : '127.0.0.1';
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${Number(env.PORT ?? 8080)}`;
}

/**
 * CORS_ORIGINS: `*`, or comma-separated origins each written exactly as a browser sends it in `Origin` (scheme, host
 * in lower case, port unless the scheme's default; no path, no trailing slash), so a list entry never silently fails
 * to match. Anything else stops the start naming the entry.
 */
function corsOrigins(v: string | undefined): CorsOrigins | undefined {
  if (v === undefined || v.trim() === '') return undefined;
  if (v.trim() === '*') return '*';
  const list = v.split(',').map((o) => o.trim());
  for (const o of list) {
    let url: URL | undefined;
    try {
      url = new URL(o);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw new Error(`CORS_ORIGINS must be * or comma-separated origins like https://app.example.com; '${o}' is not an http(s) origin`);
    if (url.origin !== o) throw new Error(`CORS_ORIGINS: '${o}' is not an origin as browsers send it; write '${url.origin}' (scheme, host and port only)`);
  }
  return [...new Set(list)];
}

/** The test-only resolver seam (docs/webhooks.md) is refused under NODE_ENV=production. */
function testDnsFile(env: NodeJS.ProcessEnv): string | undefined {
  if (!env.WEBHOOK_TEST_DNS_FILE) return undefined;
  if (env.NODE_ENV === 'production') throw new Error('WEBHOOK_TEST_DNS_FILE is a test seam and is refused with NODE_ENV=production');
  return env.WEBHOOK_TEST_DNS_FILE;
}

function retryScale(v: string | undefined): number {
  if (v === undefined || v === '') return 1;
  const n = Number(v);
  if (!(n > 0 && n <= 1)) throw new Error(`WEBHOOK_RETRY_SCALE must be a number in (0, 1] that multiplies the retry schedule, not ${v}`);
  return n;
}

/** A whole number (0 or more) from the environment, `fallback` when unset; anything else stops the start, naming the variable. */
function wholeNumber(v: string | undefined, fallback: number, name: string, what: string): number {
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be ${what}, not ${v}`);
  return n;
}

function builtinModel(v: string | undefined): 'auto' | 'bge' | 'use' {
  if (!v || v === 'auto' || v === 'bge' || v === 'use') return (v || 'auto') as 'auto' | 'bge' | 'use';
  throw new Error(`BUILTIN_EMBEDDINGS_MODEL must be auto, bge or use (got ${v})`);
}

/** A scheduling niceness (0-19) from the environment, else `fallback`. */
function niceness(v: string | undefined, fallback: number): number {
  const n = Number(v);
  return v !== undefined && v !== '' && Number.isInteger(n) && n >= 0 && n <= 19 ? n : fallback;
}

/** One of `values`, or undefined when unset; anything else stops the start with the variable's name. */
function oneOf<T extends string>(v: string | undefined, values: readonly T[], name: string): T | undefined {
  if (v === undefined || v === '') return undefined;
  if ((values as readonly string[]).includes(v)) return v as T;
  throw new Error(`${name} must be ${values.join(' or ')}, not ${v}`);
}
