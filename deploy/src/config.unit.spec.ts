import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config';

/** The search database's start-up variables: a wrong SEARCH_DB or niceness stops the start naming it. */
describe('SEARCH_DB and SEARCH_DB_NICE', () => {
  const base = { DATA_DIR: '/tmp/unused' } as NodeJS.ProcessEnv;

  it('default: the separate database at niceness 5; main and any 0-19 niceness are taken', () => {
    expect(loadConfig(base)).toMatchObject({ searchDb: 'separate', searchDbNice: 5 });
    expect(loadConfig({ ...base, SEARCH_DB: 'main', SEARCH_DB_NICE: '19' })).toMatchObject({
      searchDb: 'main',
      searchDbNice: 19,
    });
    expect(loadConfig({ ...base, SEARCH_DB_NICE: '0' }).searchDbNice).toBe(0);
  });

  it('an unknown SEARCH_DB stops the start with the variable and the values it takes', () => {
    expect(() => loadConfig({ ...base, SEARCH_DB: 'elsewhere' })).toThrow(
      'SEARCH_DB must be separate or main, not elsewhere',
    );
  });

  it.each(['-1', '20', '2.5', 'high', '1e9'])('SEARCH_DB_NICE=%s stops the start naming the variable', (v) => {
    expect(() => loadConfig({ ...base, SEARCH_DB_NICE: v })).toThrow(
      `SEARCH_DB_NICE must be a niceness from 0 to 19, not ${v}`,
    );
  });
});

/** The opening inference balance of the account created on first start (DEFAULT_INFERENCE_BALANCE_CENTS). */
describe('DEFAULT_INFERENCE_BALANCE_CENTS', () => {
  const base = { DATA_DIR: '/tmp/unused' } as NodeJS.ProcessEnv;

  it('default 1,000 cents; any whole number of cents (0 included) is taken', () => {
    expect(loadConfig(base).defaultInferenceBalanceCents).toBe(1000);
    expect(loadConfig({ ...base, DEFAULT_INFERENCE_BALANCE_CENTS: '250' }).defaultInferenceBalanceCents).toBe(250);
    expect(loadConfig({ ...base, DEFAULT_INFERENCE_BALANCE_CENTS: '0' }).defaultInferenceBalanceCents).toBe(0);
  });

  it.each(['-1', '2.5', 'lots'])('DEFAULT_INFERENCE_BALANCE_CENTS=%s stops the start naming the variable', (v) => {
    expect(() => loadConfig({ ...base, DEFAULT_INFERENCE_BALANCE_CENTS: v })).toThrow(
      /DEFAULT_INFERENCE_BALANCE_CENTS/,
    );
  });
});

/** Reverse-proxy hops whose X-Forwarded-For entries are trusted for the client address (TRUST_PROXY_HOPS). */
describe('TRUST_PROXY_HOPS', () => {
  const base = { DATA_DIR: '/tmp/unused' } as NodeJS.ProcessEnv;

  it('default 0 (X-Forwarded-For ignored); any whole number of hops is taken', () => {
    expect(loadConfig(base).trustProxyHops).toBe(0);
    expect(loadConfig({ ...base, TRUST_PROXY_HOPS: '' }).trustProxyHops).toBe(0);
    expect(loadConfig({ ...base, TRUST_PROXY_HOPS: '0' }).trustProxyHops).toBe(0);
    expect(loadConfig({ ...base, TRUST_PROXY_HOPS: '1' }).trustProxyHops).toBe(1);
    expect(loadConfig({ ...base, TRUST_PROXY_HOPS: '2' }).trustProxyHops).toBe(2);
  });

  it.each(['abc', '-1', '1.5', 'true'])('TRUST_PROXY_HOPS=%s stops the start naming the variable', (v) => {
    expect(() => loadConfig({ ...base, TRUST_PROXY_HOPS: v })).toThrow(
      `TRUST_PROXY_HOPS must be a whole number of trusted reverse-proxy hops (0 or more; 0 ignores ` +
        `X-Forwarded-For), not ${v}`,
    );
  });
});

/** The origins browsers may call the API from (CORS_ORIGINS). */
/** SERVICE_PROCESSES: several processes on one port, only for the stateless HTTP roles on a server database. */
describe('SERVICE_PROCESSES', () => {
  const base = { DATA_DIR: '/tmp/unused' } as NodeJS.ProcessEnv;
  const server = { ...base, DATABASE_URL: 'postgres://db/x' };

  it('default 1 for every role; 2 or auto (one per CPU) for the command and query roles on a server database', () => {
    expect(loadConfig(base).processes).toBe(1);
    expect(loadConfig({ ...base, SERVICE_PROCESSES: '' }).processes).toBe(1);
    expect(loadConfig({ ...base, SERVICE_PROCESSES: '1' }).processes).toBe(1);
    expect(loadConfig({ ...server, SERVICE_ROLE: 'query', SERVICE_PROCESSES: '2' }).processes).toBe(2);
    expect(loadConfig({ ...server, SERVICE_ROLE: 'command', SERVICE_PROCESSES: 'auto' }).processes).toBe(
      availableParallelism(),
    );
  });

  it.each(['0', '-1', '1.5', 'many', '257'])('SERVICE_PROCESSES=%s stops the start naming the variable', (v) => {
    expect(() => loadConfig({ ...server, SERVICE_ROLE: 'query', SERVICE_PROCESSES: v })).toThrow(
      `SERVICE_PROCESSES must be a whole number of processes from 1 to 256, or auto, not ${v}`,
    );
  });

  it.each(['all', 'projector', 'relay'])(
    'above 1 with role %s stops the start: one process keeps its state',
    (role) => {
      expect(() => loadConfig({ ...server, SERVICE_ROLE: role, SERVICE_PROCESSES: '2' })).toThrow(
        `SERVICE_PROCESSES above 1 needs SERVICE_ROLE command or query, not ${role}`,
      );
    },
  );

  it('above 1 without DATABASE_URL stops the start: the embedded database is one process', () => {
    expect(() => loadConfig({ ...base, SERVICE_ROLE: 'query', SERVICE_PROCESSES: '2' })).toThrow(
      'SERVICE_PROCESSES above 1 needs DATABASE_URL: the embedded database is open in one process only',
    );
  });
});

describe('CORS_ORIGINS', () => {
  const base = { DATA_DIR: '/tmp/unused' } as NodeJS.ProcessEnv;

  it('unset or empty: no CORS; `*`; or a comma-separated list of exact origins, spaces around commas ignored', () => {
    expect(loadConfig(base).corsOrigins).toBeUndefined();
    expect(loadConfig({ ...base, CORS_ORIGINS: '' }).corsOrigins).toBeUndefined();
    expect(loadConfig({ ...base, CORS_ORIGINS: ' * ' }).corsOrigins).toBe('*');
    expect(
      loadConfig({ ...base, CORS_ORIGINS: 'https://app.example.com, http://localhost:5173,http://[::1]:8000' })
        .corsOrigins,
    ).toEqual(['https://app.example.com', 'http://localhost:5173', 'http://[::1]:8000']);
  });

  it.each([
    ['https://app.example.com/', "write 'https://app.example.com'"],
    ['https://app.example.com/app', "write 'https://app.example.com'"],
    ['https://App.Example.com', "write 'https://app.example.com'"],
    ['https://app.example.com:443', "write 'https://app.example.com'"],
    ['app.example.com', 'is not an http(s) origin'],
    ['ftp://files.example.com', 'is not an http(s) origin'],
    ['*, https://app.example.com', "'*' is not an http(s) origin"],
    ['https://a.example.com,,https://b.example.com', "'' is not an http(s) origin"],
  ])('CORS_ORIGINS=%s stops the start: %s', (v, reason) => {
    expect(() => loadConfig({ ...base, CORS_ORIGINS: v })).toThrow(/^CORS_ORIGINS/);
    expect(() => loadConfig({ ...base, CORS_ORIGINS: v })).toThrow(reason);
  });
});

/**
 * Every variable goes through one schema: a value it cannot take is one line naming the variable, never NaN or a crash
 * later.
 */
describe('the start-up variables, parsed by one schema', () => {
  const base = { DATA_DIR: '/tmp/unused' } as NodeJS.ProcessEnv;

  it.each([
    [
      'VECTOR_INDEX_MEMORY_MB',
      '2g',
      'VECTOR_INDEX_MEMORY_MB must be a whole number of MiB (0 searches LanceDB directly), not 2g',
    ],
    ['PORT', '80a', 'PORT must be a TCP port (0-65535), not 80a'],
    ['PORT', '70000', 'PORT must be a TCP port (0-65535), not 70000'],
    ['KAFKA_TOPIC_PARTITIONS', '0', 'KAFKA_TOPIC_PARTITIONS must be a whole number of partitions (1 or more), not 0'],
    ['EMBEDDINGS_DIMENSIONS', 'big', 'EMBEDDINGS_DIMENSIONS must be a whole number of dimensions (1 or more), not big'],
    ['UPLOAD_URL_TTL_SECONDS', '-5', 'UPLOAD_URL_TTL_SECONDS must be a whole number of seconds (1 or more), not -5'],
    ['SCRIPT_TIMEOUT_MS', '50', 'SCRIPT_TIMEOUT_MS must be a whole number of milliseconds from 100 to 15000, not 50'],
    ['SERVICE_ROLE', 'writer', 'SERVICE_ROLE must be all or command or query or projector or relay, not writer'],
    ['BUILTIN_EMBEDDINGS_MODEL', 'use', 'BUILTIN_EMBEDDINGS_MODEL must be auto or bge or none, not use'],
    ['LOG_LEVEL', 'loud', 'LOG_LEVEL must be fatal or error or warn or info or debug or trace or silent, not loud'],
    ['METERING', 'no', 'METERING must be 1 (on) or 0 (off), not no'],
    [
      'WEBHOOK_RETRY_SCALE',
      '2',
      'WEBHOOK_RETRY_SCALE must be a number in (0, 1] that multiplies the retry schedule, not 2',
    ],
    [
      'WEBHOOK_CA_FILE',
      '/nonexistent/ca.pem',
      'WEBHOOK_CA_FILE must be a readable PEM file of CA certificates, not /nonexistent/ca.pem',
    ],
  ])('%s=%s stops the start: "%s"', (name, value, line) => {
    expect(() => loadConfig({ ...base, [name]: value })).toThrow(line);
  });

  it('defaults when unset or empty, and the values a user writes', () => {
    const c = loadConfig({
      ...base,
      PORT: '',
      VECTOR_INDEX_MEMORY_MB: '512',
      SCRIPT_TIMEOUT_MS: '8000',
      METERING: '0',
      LLM_URL: 'http://127.0.0.1:1/v1',
      LLM_MODELS: 'a, b',
    });
    expect(c).toMatchObject({
      port: 8080,
      vectorMemoryMb: 512,
      scripts: { timeoutMs: 8000, threads: 4 },
      metering: false,
      rateLimits: true,
      logLevel: 'info',
      logRequests: true,
    });
    expect(c.llm).toMatchObject({ url: 'http://127.0.0.1:1/v1', models: ['a', 'b'], contextWindow: 128_000 });
    expect(c.publicUrl).toBe('http://127.0.0.1:8080');
  });
});
