import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildService, loadConfig, type Service, type ServiceHooks } from '@svc/deploy';
import { createClient, type ClientOptions, type ServiceClient } from '@svc/client';
import { describedAnswers, descriptionOf, forgetDescription } from './described';
import { freshPostgresSchema, serverUrl, tempDir } from './engines';

export const ROOT = resolve(import.meta.dirname, '../../..');
export const OPERATOR_TOKEN = 'test-operator-token';

export interface Bootstrap {
  accountId: string;
  plan: string;
  developerToken: string;
  tenants: {
    live: { tenantId: string; contextId: string; rootKey: string };
    test: { tenantId: string; contextId: string; rootKey: string };
  };
}

/** Per-request options of `Api.call`. */
export interface CallOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** A request body sent as is (content-type application/json unless `headers` say otherwise). */
  raw?: string;
  /**
   * Skips the description check of the answer. ONLY for requests the description cannot hold on purpose
   * (hostile paths, malformed HTTP, floods, undocumented transport routes); see `Api.unchecked`.
   */
  unchecked?: boolean;
  signal?: AbortSignal;
}

/** What a suite gets back: the status, headers, the body text and, when it is JSON, the parsed body. */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

/** A client of `baseUrl` for `token`, whose answers are checked against the service's /openapi.json. */
export function checkedClient(baseUrl: string, options: Omit<ClientOptions, 'baseUrl'> = {}): ServiceClient {
  const client = createClient({ baseUrl, ...options });
  client.use(describedAnswers(baseUrl));
  return client;
}

/**
 * The black-box suites' HTTP helper. Every request is sent by the typed client (@svc/client, openapi-fetch)
 * and every answer is checked against the served description (support/described.ts): an undescribed
 * operation, an undocumented status or a body outside the documented schema fails the request's test.
 */
export class Api {
  private readonly http: ServiceClient;
  private readonly check: boolean;

  constructor(
    readonly baseUrl: string,
    opts: { unchecked?: boolean } = {},
  ) {
    this.check = !opts.unchecked;
    this.http = this.check ? checkedClient(baseUrl) : createClient({ baseUrl });
  }

  /** The same helper without the description check: ONLY for what the description cannot hold on purpose. */
  get unchecked(): Api {
    return new Api(this.baseUrl, { unchecked: true });
  }

  async call(method: string, path: string, opts: CallOptions = {}): Promise<Answer> {
    if (opts.unchecked && this.check) return this.unchecked.call(method, path, { ...opts, unchecked: false });
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let refusal: Response | undefined;
    // The concrete path is the "template" (no path parameters): openapi-fetch sends it as is.
    const request = this.http.request as unknown as (
      method: string,
      url: string,
      init: Record<string, unknown>,
    ) => Promise<{ response: Response; data?: unknown }>;
    const { response, data } = await request(method, path, {
      headers,
      body: opts.raw ?? opts.body,
      ...(opts.raw !== undefined ? { bodySerializer: (b: string) => b } : {}),
      signal: opts.signal,
      parseAs: 'text',
      // openapi-fetch parses a refusal's body itself: keep a copy of its text (read in full, so the copy never stalls).
      middleware: [
        { onResponse: ({ response: r }: { response: Response }) => void (r.ok ? undefined : (refusal = r.clone())) },
      ],
    });
    const text = refusal ? await refusal.text() : typeof data === 'string' ? data : '';
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, text, body: json };
  }

  /**
   * The answer as a `Response` with its body unread (SSE and NDJSON streams), checked like `call` (the body of a
   * stream is not read by the check).
   */
  async fetch(method: string, path: string, opts: Omit<CallOptions, 'raw'> = {}): Promise<Response> {
    if (opts.unchecked && this.check) return this.unchecked.fetch(method, path, { ...opts, unchecked: false });
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let refusal: Response | undefined;
    const request = this.http.request as unknown as (
      method: string,
      url: string,
      init: Record<string, unknown>,
    ) => Promise<{ response: Response }>;
    const { response } = await request(method, path, {
      headers,
      body: opts.body,
      signal: opts.signal,
      parseAs: 'stream',
      // openapi-fetch reads a refusal's body itself: keep a copy for the caller. A success is not copied (a stream).
      middleware: [
        { onResponse: ({ response: r }: { response: Response }) => void (r.ok ? undefined : (refusal = r.clone())) },
      ],
    });
    return refusal ?? response;
  }

  get = (path: string, token?: string, headers?: Record<string, string>) => this.call('GET', path, { token, headers });
  post = (path: string, token: string | undefined, body?: unknown, headers?: Record<string, string>) =>
    this.call('POST', path, { token, body, headers });
  put = (path: string, token: string | undefined, body?: unknown) => this.call('PUT', path, { token, body });
  patch = (path: string, token: string | undefined, body?: unknown) => this.call('PATCH', path, { token, body });
  del = (path: string, token?: string) => this.call('DELETE', path, { token });

  /** Creates a new account through the operator API. */
  async newAccount(body: Record<string, unknown> = {}): Promise<Bootstrap> {
    const r = await this.post('/operator/accounts', OPERATOR_TOKEN, body);
    if (r.status !== 201) throw new Error(`operator account create failed: ${r.status} ${r.text}`);
    return r.body;
  }
}

export interface TestService {
  api: Api;
  /**
   * A typed client (@svc/client) for `token` (default: the bootstrap test tenant's root key), checked against the
   * description.
   */
  client(token?: string, options?: Omit<ClientOptions, 'baseUrl' | 'token'>): ServiceClient;
  url: string;
  service: Service;
  bootstrap: Bootstrap;
  dataDir: string;
  stop(): Promise<void>;
}

/**
 * Starts the whole service in this process on a fresh data directory (embedded
 * engines), or on a fresh PostgreSQL schema when `engine: 'postgres'`. The
 * bootstrap account is on the enterprise plan (1,200 counted requests a minute)
 * unless `env.DEFAULT_PLAN` says otherwise; `hooks` injects a clock or a
 * Service-Version table, `log` hears the service's log lines.
 */
export async function startService(
  opts: {
    env?: Record<string, string>;
    engine?: 'embedded' | 'postgres';
    dataDir?: string;
    hooks?: ServiceHooks;
    log?: (msg: string) => void;
  } = {},
): Promise<TestService> {
  if (THROUGH_ROUTER) return startTopologyService(opts);
  const tmp = opts.dataDir ? { dir: opts.dataDir, remove: () => {} } : tempDir('svc-e2e-');
  let dropSchema: (() => Promise<void>) | undefined;
  // LOG_LEVEL silent: an in-process service's JSON log would interleave with the runner's output (a test sets it to
  // read it).
  const env: Record<string, string> = {
    DATA_DIR: tmp.dir,
    PORT: '0',
    OPERATOR_TOKEN,
    DEFAULT_PLAN: 'enterprise',
    LOG_LEVEL: 'silent',
    ...(opts.env ?? {}),
  };
  if (opts.engine === 'postgres') {
    const base = serverUrl('postgres');
    if (!base) throw new Error('DATABASE_URL is not set');
    const s = await freshPostgresSchema(base);
    env.DATABASE_URL = s.url;
    dropSchema = s.drop;
  }
  const config = loadConfig(env as NodeJS.ProcessEnv);
  const service = await buildService(config, opts.log, opts.hooks);
  await service.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = service.app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const bootstrap = JSON.parse(readFileSync(join(tmp.dir, 'bootstrap.json'), 'utf8')) as Bootstrap;
  // Fetched before any test request, so no suite's counters see it.
  await descriptionOf(url);
  return {
    api: new Api(url),
    client: (token = bootstrap.tenants.test.rootKey, options = {}) => checkedClient(url, { token, ...options }),
    url,
    service,
    bootstrap,
    dataDir: tmp.dir,
    async stop() {
      forgetDescription(url);
      await service.close();
      await dropSchema?.();
      tmp.remove();
    },
  };
}

/**
 * `E2E_TARGET=router`: every suite's service is the split deployment behind the shipped router (support/router.ts,
 * kafka/topology.ts: relay, projector, two query replicas and command on PostgreSQL and Kafka, with Elasticsearch
 * and Redis when their variables are set), so the black-box suites run through it unchanged. A suite that needs the
 * process itself (`service`, injected hooks, its data directory as its own) says so with `inProcessOnly`.
 */
export const THROUGH_ROUTER = process.env.E2E_TARGET === 'router';
/** Why a test cannot run through the router (undefined when it can): for `it.skipIf(!!inProcessOnly)`. */
export const inProcessOnly: string | undefined = THROUGH_ROUTER
  ? 'needs the service in the test process (E2E_TARGET=router)'
  : undefined;

async function startTopologyService(opts: {
  env?: Record<string, string>;
  dataDir?: string;
  hooks?: ServiceHooks;
  log?: (msg: string) => void;
}): Promise<TestService> {
  if (opts.hooks || opts.dataDir)
    throw new Error(
      `E2E_TARGET=router: this suite passes ${opts.hooks ? 'hooks' : 'its own dataDir'} to the service, ` +
        `which only an in-process service takes`,
    );
  const brokers = serverUrl('kafka');
  if (!brokers) throw new Error('E2E_TARGET=router needs KAFKA_BROKERS (and DATABASE_URL)');
  // Imported here: the topology imports this module.
  const { Topology } = await import('../kafka/topology');
  const t = await Topology.start({
    kafkaBrokers: brokers,
    env: { OPERATOR_TOKEN, DEFAULT_PLAN: 'enterprise', ...(opts.env ?? {}) },
    log: opts.log,
  });
  const url = t.router.url;
  await descriptionOf(url);
  return {
    api: t.api,
    client: (token = t.bootstrap.tenants.test.rootKey, options = {}) => checkedClient(url, { token, ...options }),
    url,
    get service(): Service {
      throw new Error(
        'E2E_TARGET=router: the service runs as separate processes behind the router (mark the test with ' +
          'inProcessOnly)',
      );
    },
    bootstrap: t.bootstrap,
    dataDir: t.dataDir,
    async stop() {
      forgetDescription(url);
      await t.stop();
    },
  };
}

/**
 * Server-engine variables blanked for a child unless the caller passes them: an embedded run never drifts onto a
 * server.
 */
const ENGINE_VARS = [
  'DATABASE_URL',
  'EVENTSTORE_URL',
  'KAFKA_BROKERS',
  'ELASTICSEARCH_URL',
  'LANCEDB_URI',
  'REDIS_URL',
  'OBJECT_STORE_URL',
  'EMBEDDINGS_URL',
  'LLM_URL',
];
const embeddedEnv = () => Object.fromEntries(ENGINE_VARS.map((v) => [v, '']));

/**
 * How a spawned service runs: the sources through tsx (default), or, with SERVICE_RUNTIME=compiled, the
 * compiled build `npm start` runs (deploy/dist, built by `npm run build`; `npm ci` builds it).
 */
export const serviceCommand = (entry: 'start' | 'rebuild' | 'export', root = ROOT): string[] =>
  process.env.SERVICE_RUNTIME === 'compiled'
    ? ['--conditions=compiled', join(root, `deploy/dist/${entry}.js`)]
    : ['--import', 'tsx', join(root, `deploy/src/${entry}.ts`)];

/** Starts `npm start` as a child process (for kill/restart tests). Resolves once /healthz answers. */
export async function spawnService(
  dataDir: string,
  port: number,
  env: Record<string, string> = {},
  log?: (line: string) => void,
): Promise<{ child: ChildProcess; api: Api; output: () => string }> {
  let out = '';
  // SERVICE_ROOT: another checkout's service (the bench's comparison of two builds).
  const root = env.SERVICE_ROOT ?? ROOT;
  // SERVICE_CPUS: the service and every process it starts confined to those CPUs (taskset -c; the bench's cores
  // section).
  const cpus = env.SERVICE_CPUS;
  const file = cpus ? 'taskset' : process.execPath;
  const args = cpus ? ['-c', cpus, process.execPath, ...serviceCommand('start', root)] : serviceCommand('start', root);
  const child = spawn(file, args, {
    cwd: root,
    env: {
      ...process.env,
      ...embeddedEnv(),
      DATA_DIR: dataDir,
      PORT: String(port),
      OPERATOR_TOKEN,
      DEFAULT_PLAN: 'enterprise',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  if (log) for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream }).on('line', log);
  const api = new Api(`http://127.0.0.1:${port}`);
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited early: ${out}`);
    try {
      const r = await fetch(`${api.baseUrl}/healthz`);
      if (r.ok) break;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`service did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  // A restarted service on the same port may describe itself anew.
  forgetDescription(api.baseUrl);
  await descriptionOf(api.baseUrl);
  return { child, api, output: () => out };
}

/**
 * The variables of processes of a split deployment sharing one PostgreSQL schema and one SERVICE_SECRET, without
 * Kafka, Elasticsearch or Redis (the log read by catch-up subscription, keyword search in PostgreSQL).
 */
export const splitRolesEnv = (databaseUrl: string): Record<string, string> => ({
  DATABASE_URL: databaseUrl,
  SERVICE_SECRET: `secret-${randomUUID()}`,
  KAFKA_BROKERS: '',
  ELASTICSEARCH_URL: '',
  REDIS_URL: '',
});

/** SIGTERM to each child still running; SIGKILL to one that has not exited after `timeoutMs`. */
export async function stopChildren(children: Iterable<ChildProcess>, timeoutMs = 30_000): Promise<void> {
  for (const c of children) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    c.kill('SIGTERM');
    await waitForExit(c, timeoutMs).catch(() => c.kill('SIGKILL'));
  }
}

/** Polls `fn` until it returns a truthy value or the time runs out. */
export async function eventually<T>(fn: () => Promise<T>, timeoutMs = 10_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(`condition not met in ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A port that was free a moment ago on loopback (for child services). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Resolves when the child has exited (rejects after `timeoutMs`). */
export function waitForExit(child: ChildProcess, timeoutMs = 30_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`child ${child.pid} did not exit in ${timeoutMs} ms`)), timeoutMs);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
  });
}
