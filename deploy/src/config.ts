import { statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { z } from 'zod';
import { LOG_LEVELS, type LogLevel } from './log';
import { loadPrices, type PriceTable } from '@svc/domain';
import type { CorsOrigins } from './http/cors';

export type Role = 'all' | 'command' | 'query' | 'projector' | 'relay';

/** Start-up contract (decisions §3): every engine is switched on by its own variable. */
export interface Config {
  port: number;
  host: string;
  /**
   * The base URL clients reach this service at (PUBLIC_URL; default http://<HOST>:<PORT>): the `servers` entry of
   * /openapi.json.
   */
  publicUrl: string;
  dataDir: string;
  role: Role;
  /**
   * Processes serving this role on one port (SERVICE_PROCESSES; `auto`: one per CPU): more than one only for the
   * command and query roles on a server database. The first process started supervises them and serves nothing.
   */
  processes: number;
  databaseUrl?: string;
  eventStoreUrl?: string;
  kafkaBrokers?: string;
  /**
   * Kafka (KAFKA_BROKERS set): the event topic, its partitions when the relay creates it, the consumer-group prefix
   * (docs/engines/kafka.md).
   */
  kafkaTopic: string;
  kafkaPartitions: number;
  kafkaGroupPrefix: string;
  elasticsearchUrl?: string;
  lancedbUri?: string;
  redisUrl?: string;
  objectStoreUrl?: string;
  operatorToken?: string;
  defaultPlan: string;
  /**
   * Opening inference balance (cents) of the account created on first start (DEFAULT_INFERENCE_BALANCE_CENTS, default
   * 1,000).
   */
  defaultInferenceBalanceCents: number;
  /** Secret for cursors, blind indexes and payload encryption; generated into DATA_DIR when unset. */
  serviceSecret?: string;
  /** LOG_REQUESTS: one log line per request (default on; `0` turns it off). */
  logRequests: boolean;
  /** LOG_LEVEL: fatal, error, warn, info (default), debug, trace or silent. */
  logLevel: LogLevel;
  /**
   * Traces (docs/operations.md "Traces"): OTEL_EXPORTER_OTLP_ENDPOINT, the OTLP/HTTP base URL (unset: no traces);
   * OTEL_SERVICE_NAME (default svc).
   */
  otlpEndpoint?: string;
  otelServiceName: string;
  /**
   * Search: OpenAI-compatible embeddings (else the built-in model), the per-tenant vector capacity, the Elasticsearch
   * index prefix.
   */
  embeddingsUrl?: string;
  embeddingsApiKey?: string;
  embeddingsModel?: string;
  embeddingsDims?: number;
  /**
   * The built-in model (BUILTIN_EMBEDDINGS_MODEL): auto (default) and bge both mean bge-small-en-v1.5; none runs
   * without semantic search.
   */
  builtinEmbeddingsModel: 'auto' | 'bge' | 'none';
  vectorCapacity: number;
  /**
   * Passages the in-memory keyword index keeps loaded (role all, PostgreSQL FTS), least recently searched contexts
   * dropped first.
   */
  textMemoryPassages: number;
  /**
   * Memory (MiB) for vectors searched in process (role all): least recently searched contexts dropped first; 0 searches
   * LanceDB directly.
   */
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
  /**
   * The price table (decisions §5 defaults; PRICES_JSON overrides any part) and how often read counts are appended
   * (USAGE_READS_FLUSH_MS, default 1,000).
   */
  prices: PriceTable;
  usageReadsFlushMs: number;
  /**
   * Activity log (docs/api.md "Activity log"): recording on (ACTIVITY_LOG, `0` turns it off), flush period, retention.
   */
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
  /**
   * CORS_ORIGINS: `*` or the exact origins browsers may call the API from; unset, no CORS headers (docs/api.md "CORS").
   */
  corsOrigins?: CorsOrigins;
  /**
   * Metering and the per-account burst limits are on unless METERING=0 / RATE_LIMITS=0 (docs/operations.md):
   * the switches exist for the benchmark that measures their cost and for trusted single-tenant installs.
   */
  metering: boolean;
  rateLimits: boolean;
  /**
   * Most open change streams (GET /v1/changes) per context in each process serving reads (CHANGE_STREAMS_PER_CONTEXT,
   * default 1,000); then 429.
   */
  changeStreamsPerContext: number;
  /**
   * Scripts (docs/scripts.md): wall-clock budget per execution (SCRIPT_TIMEOUT_MS, default 15,000; tests lower it) and
   * sandbox threads (SCRIPT_THREADS, default 4).
   */
  scripts: { timeoutMs: number; threads: number };
  /**
   * Inference (decisions §8; docs/inference.md): an OpenAI-compatible chat-completions endpoint and the model ids it
   * serves; else the built-in model alone.
   */
  llm?: { url: string; apiKey?: string; models: string[]; contextWindow: number; stallMs: number };
  /**
   * Webhooks (docs/webhooks.md): WEBHOOK_ALLOW_PRIVATE_TARGETS=1 opens loopback and RFC 1918 targets (development; a
   * warning at start), WEBHOOK_CA_FILE adds a CA to trust, WEBHOOK_RETRY_SCALE multiplies the retry schedule (default
   * 1: 30 s ... 8 h), WEBHOOK_TEST_DNS_FILE (tests only) answers DNS from a JSON file.
   */
  webhooks: { allowPrivateTargets: boolean; caFile?: string; retryScale: number; testDnsFile?: string };
}

/**
 * Every start-up variable, parsed by one zod schema: each entry turns the variable's text (or its absence) into its
 * value, and a value it cannot take stops the start with one line naming the variable, what it takes and what it got.
 */
const startupVariables = z.object({
  SERVICE_ROLE: choice(['all', 'command', 'query', 'projector', 'relay'] as const, 'all'),
  SERVICE_PROCESSES: optional().transform((v, ctx): number => {
    if (v === undefined) return 1;
    if (v.trim() === 'auto') return availableParallelism();
    const n = /^\d+$/.test(v.trim()) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n) || n < 1 || n > 256) {
      ctx.addIssue({ code: 'custom', message: 'a whole number of processes from 1 to 256, or auto' });
      return z.NEVER;
    }
    return n;
  }),
  PORT: whole('a TCP port (0-65535)', 8080, 65_535),
  HOST: text('127.0.0.1'),
  DATA_DIR: text('./data'),
  DATABASE_URL: optional(),
  EVENTSTORE_URL: optional(),
  KAFKA_BROKERS: optional(),
  KAFKA_TOPIC: text('svc.events'),
  KAFKA_TOPIC_PARTITIONS: whole('a whole number of partitions (1 or more)', 3, undefined, 1),
  KAFKA_GROUP_PREFIX: optional(),
  ELASTICSEARCH_URL: optional(),
  LANCEDB_URI: optional(),
  REDIS_URL: optional(),
  OBJECT_STORE_URL: optional(),
  OPERATOR_TOKEN: optional(),
  DEFAULT_PLAN: text('free'),
  DEFAULT_INFERENCE_BALANCE_CENTS: whole('a whole number of cents (0 or more)', 1000),
  SERVICE_SECRET: optional(),
  LOG_REQUESTS: flag(true),
  LOG_LEVEL: choice(LOG_LEVELS, 'info'),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(),
  OTEL_SERVICE_NAME: text('svc'),
  EMBEDDINGS_URL: optional(),
  EMBEDDINGS_API_KEY: optional(),
  EMBEDDINGS_MODEL: optional(),
  EMBEDDINGS_DIMENSIONS: whole('a whole number of dimensions (1 or more)', undefined, 65_536, 1),
  BUILTIN_EMBEDDINGS_MODEL: choice(['auto', 'bge', 'none'] as const, 'auto'),
  VECTOR_CAPACITY_PER_TENANT: whole('a whole number of vectors', 5_000_000),
  TEXT_INDEX_MEMORY_PASSAGES: whole('a whole number of passages', 2_000_000),
  VECTOR_INDEX_MEMORY_MB: whole('a whole number of MiB (0 searches LanceDB directly)', 2048),
  SEARCH_DB: choice(['separate', 'main'] as const, 'separate'),
  SEARCH_DB_NICE: whole('a niceness from 0 to 19', 5, 19),
  ELASTICSEARCH_INDEX_PREFIX: text('svc-'),
  UPLOAD_URL_TTL_SECONDS: whole('a whole number of seconds (1 or more)', 900, undefined, 1),
  PRICES_JSON: optional(),
  USAGE_READS_FLUSH_MS: whole('a whole number of milliseconds (1 or more)', 1000, undefined, 1),
  ACTIVITY_LOG: flag(true),
  ACTIVITY_LOG_FLUSH_MS: whole('a whole number of milliseconds (1 or more)', 250, undefined, 1),
  ACTIVITY_LOG_RETENTION_DAYS: whole('a whole number of days (1 or more)', 30, undefined, 1),
  EDGE_RATE_LIMIT_PER_MINUTE: whole('a whole number of requests per minute (0 disables)', 20_000),
  TRUST_PROXY_HOPS: whole('a whole number of trusted reverse-proxy hops (0 or more; 0 ignores X-Forwarded-For)', 0),
  CORS_ORIGINS: optional().transform((v, ctx) => {
    try {
      return corsOrigins(v);
    } catch (e) {
      ctx.addIssue({ code: 'custom', message: (e as Error).message, params: { whole: true } });
      return z.NEVER;
    }
  }),
  JWT_KEYS_REFETCH_MS: whole('a whole number of milliseconds', 60_000),
  JWT_KEYS_MAX_AGE_MS: whole('a whole number of milliseconds', 600_000),
  METERING: flag(true),
  RATE_LIMITS: flag(true),
  CHANGE_STREAMS_PER_CONTEXT: whole('a whole number of open change streams per context', 1000),
  SCRIPT_TIMEOUT_MS: whole('a whole number of milliseconds from 100 to 15000', 15_000, 15_000, 100),
  SCRIPT_THREADS: whole('a whole number of threads (1 or more)', 4, 256, 1),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: flag(false),
  WEBHOOK_CA_FILE: optional().refine((f) => f === undefined || isReadableFile(f), {
    message: 'a readable PEM file of CA certificates',
  }),
  WEBHOOK_RETRY_SCALE: decimal('a number in (0, 1] that multiplies the retry schedule', 1, (n) => n > 0 && n <= 1),
  WEBHOOK_TEST_DNS_FILE: optional(),
  NODE_ENV: optional(),
  PUBLIC_URL: optional(),
  LLM_URL: optional(),
  LLM_API_KEY: optional(),
  LLM_MODELS: text(''),
  LLM_CONTEXT_WINDOW: whole('a whole number of tokens (1 or more)', 128_000, undefined, 1),
  LLM_STALL_MS: whole('a whole number of milliseconds (1 or more)', 30_000, undefined, 1),
});

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = startupVariables.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue.path[0]);
    // One line: the variable, what it takes, what it got (a message that is already a whole sentence stands alone).
    const whole = issue.code === 'custom' && (issue as { params?: { whole?: boolean } }).params?.whole;
    throw new Error(whole ? issue.message : `${name} must be ${issue.message}, not ${env[name]}`);
  }
  const v = parsed.data;
  // Several processes share the port only where nothing is kept in one process: the stateless HTTP roles on a server
  // database (the embedded database, the projector and the relay are one process's each).
  if (v.SERVICE_PROCESSES > 1 && v.SERVICE_ROLE !== 'command' && v.SERVICE_ROLE !== 'query')
    throw new Error(
      `SERVICE_PROCESSES above 1 needs SERVICE_ROLE command or query, not ${v.SERVICE_ROLE}: that role keeps the ` +
        `log's single writer or its projector in one process`,
    );
  if (v.SERVICE_PROCESSES > 1 && !v.DATABASE_URL)
    throw new Error('SERVICE_PROCESSES above 1 needs DATABASE_URL: the embedded database is open in one process only');
  if (v.WEBHOOK_TEST_DNS_FILE && v.NODE_ENV === 'production')
    throw new Error('WEBHOOK_TEST_DNS_FILE is a test seam and is refused with NODE_ENV=production');
  return {
    port: v.PORT,
    host: v.HOST,
    publicUrl: publicUrl(v.PUBLIC_URL, v.HOST, v.PORT),
    dataDir: resolve(v.DATA_DIR),
    role: v.SERVICE_ROLE,
    processes: v.SERVICE_PROCESSES,
    databaseUrl: v.DATABASE_URL,
    eventStoreUrl: v.EVENTSTORE_URL,
    kafkaBrokers: v.KAFKA_BROKERS,
    kafkaTopic: v.KAFKA_TOPIC,
    kafkaPartitions: v.KAFKA_TOPIC_PARTITIONS,
    kafkaGroupPrefix: env.KAFKA_GROUP_PREFIX ?? `${v.KAFKA_TOPIC}.`,
    elasticsearchUrl: v.ELASTICSEARCH_URL,
    lancedbUri: v.LANCEDB_URI,
    redisUrl: v.REDIS_URL,
    objectStoreUrl: v.OBJECT_STORE_URL,
    operatorToken: v.OPERATOR_TOKEN,
    defaultPlan: v.DEFAULT_PLAN,
    defaultInferenceBalanceCents: v.DEFAULT_INFERENCE_BALANCE_CENTS,
    serviceSecret: v.SERVICE_SECRET,
    logRequests: v.LOG_REQUESTS,
    logLevel: v.LOG_LEVEL,
    otlpEndpoint: v.OTEL_EXPORTER_OTLP_ENDPOINT,
    otelServiceName: v.OTEL_SERVICE_NAME,
    embeddingsUrl: v.EMBEDDINGS_URL,
    embeddingsApiKey: v.EMBEDDINGS_API_KEY,
    embeddingsModel: v.EMBEDDINGS_MODEL,
    embeddingsDims: v.EMBEDDINGS_DIMENSIONS,
    builtinEmbeddingsModel: v.BUILTIN_EMBEDDINGS_MODEL,
    vectorCapacity: v.VECTOR_CAPACITY_PER_TENANT,
    textMemoryPassages: v.TEXT_INDEX_MEMORY_PASSAGES,
    vectorMemoryMb: v.VECTOR_INDEX_MEMORY_MB,
    searchDb: v.SEARCH_DB,
    searchDbNice: v.SEARCH_DB_NICE,
    elasticsearchIndexPrefix: v.ELASTICSEARCH_INDEX_PREFIX,
    uploadUrlTtlSeconds: v.UPLOAD_URL_TTL_SECONDS,
    prices: loadPrices(v.PRICES_JSON),
    usageReadsFlushMs: v.USAGE_READS_FLUSH_MS,
    activityLog: {
      enabled: v.ACTIVITY_LOG,
      flushMs: v.ACTIVITY_LOG_FLUSH_MS,
      retentionDays: v.ACTIVITY_LOG_RETENTION_DAYS,
    },
    edgeRateLimitPerMinute: v.EDGE_RATE_LIMIT_PER_MINUTE,
    trustProxyHops: v.TRUST_PROXY_HOPS,
    corsOrigins: v.CORS_ORIGINS,
    jwtKeys: { refetchMs: v.JWT_KEYS_REFETCH_MS, maxAgeMs: v.JWT_KEYS_MAX_AGE_MS },
    metering: v.METERING,
    rateLimits: v.RATE_LIMITS,
    changeStreamsPerContext: v.CHANGE_STREAMS_PER_CONTEXT,
    scripts: { timeoutMs: v.SCRIPT_TIMEOUT_MS, threads: v.SCRIPT_THREADS },
    webhooks: {
      allowPrivateTargets: v.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      caFile: v.WEBHOOK_CA_FILE,
      retryScale: v.WEBHOOK_RETRY_SCALE,
      testDnsFile: v.WEBHOOK_TEST_DNS_FILE,
    },
    llm: v.LLM_URL
      ? {
          url: v.LLM_URL,
          apiKey: v.LLM_API_KEY,
          models: v.LLM_MODELS.split(',')
            .map((m) => m.trim())
            .filter(Boolean),
          contextWindow: v.LLM_CONTEXT_WINDOW,
          stallMs: v.LLM_STALL_MS,
        }
      : undefined,
  };
}

/** An unset or empty variable: undefined. */
function optional() {
  return z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === '' ? undefined : v));
}

/** Text with a default for unset or empty. */
function text(fallback: string) {
  return optional().transform((v) => v ?? fallback);
}

/** A whole number within [min, max], `fallback` when unset or empty. */
function whole<F extends number | undefined>(what: string, fallback: F, max = Number.MAX_SAFE_INTEGER, min = 0) {
  return optional().transform((v, ctx): number | F => {
    if (v === undefined) return fallback;
    const n = /^\d+$/.test(v.trim()) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      ctx.addIssue({ code: 'custom', message: what });
      return z.NEVER;
    }
    return n;
  });
}

/** A decimal number `ok` accepts, `fallback` when unset or empty. */
function decimal(what: string, fallback: number, ok: (n: number) => boolean) {
  return optional().transform((v, ctx) => {
    if (v === undefined) return fallback;
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || !ok(n)) {
      ctx.addIssue({ code: 'custom', message: what });
      return z.NEVER;
    }
    return n;
  });
}

/** One of `values`, `fallback` when unset or empty. */
function choice<T extends string>(values: readonly T[], fallback: T) {
  return optional().transform((v, ctx): T => {
    if (v === undefined) return fallback;
    if ((values as readonly string[]).includes(v)) return v as T;
    ctx.addIssue({ code: 'custom', message: values.join(' or ') });
    return z.NEVER;
  });
}

/** A switch: `1` on, `0` off, `fallback` when unset or empty. */
function flag(fallback: boolean) {
  return optional().transform((v, ctx) => {
    if (v === undefined) return fallback;
    if (v === '1' || v === '0') return v === '1';
    ctx.addIssue({ code: 'custom', message: '1 (on) or 0 (off)' });
    return z.NEVER;
  });
}

function isReadableFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * PUBLIC_URL without a trailing slash; unset, the address the service listens on (a wildcard HOST read as loopback).
 */
function publicUrl(configured: string | undefined, listenHost: string, port: number): string {
  if (configured) return configured.replace(/\/+$/, '');
  const host = !['0.0.0.0', '::', '[::]'].includes(listenHost) ? listenHost : '127.0.0.1';
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
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
      throw new Error(
        `CORS_ORIGINS must be * or comma-separated origins like https://app.example.com; '${o}' is not an ` +
          `http(s) origin`,
      );
    if (url.origin !== o)
      throw new Error(
        `CORS_ORIGINS: '${o}' is not an origin as browsers send it; write '${url.origin}' (scheme, host and port only)`,
      );
  }
  return [...new Set(list)];
}
