/**
 * `npm run eval:search -- --dataset <dir> [--mode TEXT|SEMANTIC|HYBRID|all] [--split train|test]
 *    [--url <base URL>] [--limit-queries N] [--data-dir <dir>] [--concurrency 8] [--no-title]`
 *
 * Relevance of POST /v1/search on a BEIR dataset (issue 7; e.g. SciFact), through the
 * public HTTP API only:
 *
 *  1. a service: by default the whole service built in this process (embedded
 *     engines) on a fresh temporary DATA_DIR (or --data-dir, kept, so a second run
 *     reuses the ingest); the search engine variables of this environment
 *     (ELASTICSEARCH_URL, ELASTICSEARCH_INDEX_PREFIX, EMBEDDINGS_URL/_API_KEY/_MODEL/
 *     _DIMENSIONS) pass through, no other engine does. With --url, a running
 *     service: EVAL_OPERATOR_TOKEN (or OPERATOR_TOKEN) creates a fresh account
 *     through the operator API, or EVAL_API_KEY names an existing tenant's key.
 *  2. a fresh account (POST /operator/accounts); its live tenant's root key.
 *  3. every corpus document as an inline text document (POST /v1/documents,
 *     indexMode HYBRID, or --index-mode TEXT: no embeddings, keyword search only, externalId = the corpus _id, text =
 *     title + blank line + abstract: the service never indexes a document's title), --concurrency requests at a time,
 *     with a progress bar on stderr; then waits until every document has left PENDING_INDEX and counts INDEXED /
 *     SKIPPED / FAILED.
 *  4. every query of the split that has judgments through POST /v1/search
 *     ({query, mode, limit: 100, uniqueDocuments: true, contentTypes: ['documents']}),
 *     one at a time (latency = client-side wall time), after a few untimed warm-up
 *     queries per mode.
 *  5. prints nDCG@10 and Recall@100 (tests/eval/metrics.ts, BEIR definitions), latency
 *     p50 / p99 per mode beside the published BM25 nDCG@10, and the engines used;
 *     writes .cache/eval-search-<split>.json (figures) and
 *     .cache/eval-search-<split>-runs.json (the rankings, for offline analysis).
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { loadavg, tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { buildService, loadConfig, type Service } from '@svc/deploy';
import { documentText, loadBeir, loadQrels } from './dataset';
import { evaluate, percentile } from './metrics';
import { builtinModelStats, describeEmbedder } from '@svc/search';

const ROOT = resolve(import.meta.dirname, '../..');
const MODES = ['TEXT', 'SEMANTIC', 'HYBRID'] as const;
type Mode = (typeof MODES)[number];
/** BEIR (Thakur et al. 2021, Table 2): BM25 nDCG@10 on the SciFact test split. */
const PUBLISHED: Record<string, { bm25Ndcg10: number }> = { scifact: { bm25Ndcg10: 0.665 } };
/** Search engine variables a self-started service takes from this environment; every other engine stays embedded. */
const PASS_THROUGH = [
  'ELASTICSEARCH_URL',
  'ELASTICSEARCH_INDEX_PREFIX',
  'EMBEDDINGS_URL',
  'EMBEDDINGS_API_KEY',
  'EMBEDDINGS_MODEL',
  'EMBEDDINGS_DIMENSIONS',
  'VECTOR_CAPACITY_PER_TENANT',
];
const STATE_FILE = 'eval-search-state.json';

const { values: args } = parseArgs({
  options: {
    dataset: { type: 'string' },
    mode: { type: 'string', default: 'all' },
    split: { type: 'string', default: 'test' },
    url: { type: 'string' },
    'limit-queries': { type: 'string' },
    'data-dir': { type: 'string' },
    concurrency: { type: 'string', default: '8' },
    'no-title': { type: 'boolean', default: false },
    'index-timeout-min': { type: 'string', default: '240' },
    'index-mode': { type: 'string', default: 'HYBRID' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});

const usage =
  `usage: npm run eval:search -- --dataset <dir> [--mode TEXT|SEMANTIC|HYBRID|all] [--split ` +
  `train|test]
       [--url <base URL>] [--limit-queries N] [--data-dir <dir>] [--concurrency 8] ` +
  `[--no-title] [--index-timeout-min 240]
       [--index-mode HYBRID|TEXT|SEMANTIC]
  --index-mode  ` +
  `indexMode of the ingested documents (default HYBRID). TEXT: keyword leg only, no ` +
  `embeddings
                computed (an ingest of minutes, e.g. to evaluate the Elasticsearch text leg); ` +
  `then only
                --mode TEXT is meaningful (SEMANTIC/HYBRID are refused). Recorded with the ` +
  `ingest: a --data-dir
                ingested with another index mode is refused
  --url         a ` +
  `running service (EVAL_OPERATOR_TOKEN or OPERATOR_TOKEN: fresh account; or EVAL_API_KEY: that tenant)
  ` +
  `--data-dir    DATA_DIR of the self-started service, kept; a later run with the same dir and dataset skips ` +
  `the ingest`;
if (args.help) {
  console.log(usage);
  process.exit(0);
}
if (!args.dataset) {
  console.error(usage);
  process.exit(2);
}
const modeArg = args.mode!.toUpperCase();
const modes: Mode[] =
  modeArg === 'ALL' ? [...MODES] : (MODES as readonly string[]).includes(modeArg) ? [modeArg as Mode] : [];
if (!modes.length) throw new Error(`--mode must be TEXT, SEMANTIC, HYBRID or all, not ${args.mode}`);
const indexMode = args['index-mode']!.toUpperCase();
if (!['HYBRID', 'TEXT', 'SEMANTIC'].includes(indexMode))
  throw new Error(`--index-mode must be HYBRID, TEXT or SEMANTIC, not ${args['index-mode']}`);
if (indexMode !== 'HYBRID' && modes.some((m) => m !== indexMode))
  throw new Error(`--index-mode ${indexMode} indexes for ${indexMode} search only: use --mode ${indexMode}`);
const split = args.split!;
const concurrency = Math.max(1, Number(args.concurrency));
const limitQueries = args['limit-queries'] ? Number(args['limit-queries']) : undefined;
const titleInText = !args['no-title'];

// --- progress on stderr: one redrawn line on a terminal, a line per 10% otherwise ----------------
function progress(label: string, total: number) {
  const tty = process.stderr.isTTY;
  const t0 = performance.now();
  let lastDraw = 0;
  let lastDecile = -1;
  let lastN = -1;
  const draw = (n: number, extra: string, force = false) => {
    const now = performance.now();
    const secs = (now - t0) / 1000;
    const rate = n / Math.max(secs, 1e-3);
    const eta = n && n < total ? ` eta ${fmtDuration((total - n) / rate)}` : '';
    const line =
      `${label} ${bar(n / total)} ${n}/${total} ${rate.toFixed(1)}/s ` +
      `${fmtDuration(secs)}${eta}${extra ? ` ${extra}` : ''}`;
    if (tty) {
      if (!force && now - lastDraw < 200) return;
      lastDraw = now;
      process.stderr.write(`\r${line}\x1b[K`);
    } else {
      const decile = Math.floor((10 * n) / total);
      if (decile === lastDecile && (!force || n === lastN)) return;
      lastDecile = decile;
      lastN = n;
      process.stderr.write(`${line}\n`);
    }
  };
  return {
    update: (n: number, extra = '') => draw(n, extra),
    done: (n: number, extra = '') => {
      draw(n, extra, true);
      if (tty) process.stderr.write('\n');
    },
  };
}
const bar = (f: number, width = 30) => {
  const full = Math.round(Math.min(1, Math.max(0, f)) * width);
  return `[${'#'.repeat(full)}${'-'.repeat(width - full)}]`;
};
function fmtDuration(s: number): string {
  if (!Number.isFinite(s)) return '?';
  if (s < 60) return `${s.toFixed(0)}s`;
  const m = Math.floor(s / 60);
  return m < 60
    ? `${m}m${String(Math.round(s % 60)).padStart(2, '0')}s`
    : `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const hostOf = (url: string) => {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`; // never the credentials
  } catch {
    return '(unparseable URL)';
  }
};

// --- HTTP ------------------------------------------------------------------------------------------
class Http {
  private readonly pool: Pool;
  constructor(
    readonly baseUrl: string,
    connections: number,
  ) {
    this.pool = new Pool(baseUrl, { connections, pipelining: 1 });
  }
  async call<T = any>(
    method: string,
    path: string,
    token: string | undefined,
    body?: unknown,
  ): Promise<{ status: number; body: T; text: string }> {
    const headers: Record<string, string> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await this.pool.request({
          method: method as 'GET',
          path,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.body.text();
        let json: any;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        // 429 / 503 are retried (a busy service); other answers go to the caller.
        if ((res.statusCode === 429 || res.statusCode === 503) && attempt < 6) {
          await sleep(250 * 2 ** attempt);
          continue;
        }
        return { status: res.statusCode, body: json as T, text };
      } catch (e) {
        if (attempt >= 6) throw e;
        await sleep(250 * 2 ** attempt);
      }
    }
  }
  close() {
    return this.pool.close();
  }
}

// --- the service -------------------------------------------------------------------------------------
interface Target {
  url: string;
  /** Data-plane key of the tenant the corpus goes into. */
  apiKey: string;
  engines: { text: string; embeddings: string; source: string };
  dataDir?: string;
  reused: boolean;
  stop(): Promise<void>;
}

interface State {
  corpusHash: string;
  titleInText: boolean;
  /** indexMode of the ingested documents (absent in state files written before --index-mode: HYBRID). */
  indexMode?: string;
  apiKey: string;
  accountId: string;
  documents: number;
  /** Service document id -> corpus _id. */
  ids: Record<string, string>;
  ingest: IngestFigures;
}

interface IngestFigures {
  documents: number;
  created: number;
  existing: number;
  writeSeconds: number;
  writeDocsPerSec: number;
  toSettledSeconds: number;
  settledDocsPerSec: number;
  statuses: Record<string, number>;
  failures: Record<string, number>;
  /**
   * The built-in model over the ingest (a self-started service using it): passages embedded, passages per second of
   * the ingest to settled, the share of members × ingest time they spent in model calls, and the rate had they been
   * busy all of it (members / mean ms per call).
   */
  model?: {
    passages: number;
    passagesPerSec: number;
    members: number;
    busyShare: number;
    busyPassagesPerSec: number;
    /** One-minute load average of the machine when the ingest settled (a shared machine: other work slows it). */
    load1: number;
  };
}

function enginesFromConfig(c: Service['config'], search?: Service['search']) {
  const store = c.databaseUrl ? 'DATABASE_URL server' : 'embedded PGlite';
  const text = c.elasticsearchUrl
    ? `Elasticsearch (ELASTICSEARCH_URL ${hostOf(c.elasticsearchUrl)}, BM25)`
    : c.role === 'all'
      ? `in-memory BM25 over PostgreSQL FTS tsvectors (${store}; the role-all default)`
      : `PostgreSQL FTS (${store}, BM25 in SQL)`;
  const info = search ? describeEmbedder(search.embedder) : undefined;
  const embeddings = c.embeddingsUrl
    ? `external (EMBEDDINGS_URL ${hostOf(c.embeddingsUrl)}, model ${c.embeddingsModel}, ${c.embeddingsDims ?? 1536}-d)`
    : info
      ? info.kind === 'none'
        ? `none (${info.reason}): no semantic search`
        : `built-in ${info.model} (${info.dims}-d, ${info.threads} thread(s))`
      : 'built-in (not started)';
  return { text, embeddings, source: 'the service started by this run' };
}

async function selfStarted(corpusHash: string): Promise<{ target: Target; state?: State }> {
  let dataDir: string;
  let keep = false;
  if (args['data-dir']) {
    dataDir = resolve(args['data-dir']);
    mkdirSync(dataDir, { recursive: true });
    keep = true;
  } else dataDir = mkdtempSync(join(tmpdir(), 'svc-eval-search-'));
  let state: State | undefined;
  const stateFile = join(dataDir, STATE_FILE);
  if (existsSync(stateFile)) {
    const s = JSON.parse(readFileSync(stateFile, 'utf8')) as State;
    if (s.corpusHash !== corpusHash || s.titleInText !== titleInText)
      throw new Error(`${dataDir} holds an ingest of another corpus or text shape; use a fresh --data-dir`);
    if ((s.indexMode ?? 'HYBRID') !== indexMode)
      throw new Error(
        `${dataDir} holds an ingest with indexMode ${s.indexMode ?? 'HYBRID'}, not ${indexMode}; use that ` +
          `--index-mode or a fresh --data-dir`,
      );
    state = s;
  } else if (
    keep &&
    readdirSync(dataDir).some((f) => f !== 'lost+found') &&
    !existsSync(join(dataDir, 'eval-search-partial'))
  ) {
    throw new Error(
      `--data-dir ${dataDir} is not empty and holds no ${STATE_FILE}: refusing to ingest into someone else's data`,
    );
  }
  const operatorToken = randomBytes(18).toString('base64url');
  // The ingest sends thousands of requests a minute from one account: the per-account burst limit is off for it.
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    OPERATOR_TOKEN: operatorToken,
    RATE_LIMITS: '0',
  };
  for (const k of PASS_THROUGH) if (process.env[k]) env[k] = process.env[k]!;
  const config = loadConfig(env as NodeJS.ProcessEnv);
  const service = await buildService(config, (m) => process.stderr.write(`[service] ${m}\n`));
  await service.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = service.app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const stop = async () => {
    await service.close();
    if (!keep) rmSync(dataDir, { recursive: true, force: true, maxRetries: 3 });
  };
  try {
    if (!state) {
      writeFileSync(join(dataDir, 'eval-search-partial'), '');
      const http = new Http(url, 1);
      const r = await http.call('POST', '/operator/accounts', operatorToken, {
        name: 'eval-search',
        plan: 'enterprise',
      });
      await http.close();
      if (r.status !== 201) throw new Error(`POST /operator/accounts answered ${r.status}: ${r.text.slice(0, 300)}`);
      const apiKey = r.body.tenants.live.rootKey as string;
      // The account is recorded at once so an interrupted ingest resumes into it (externalId makes re-sends
      // idempotent).
      state = {
        corpusHash,
        titleInText,
        indexMode,
        apiKey,
        accountId: r.body.accountId,
        documents: 0,
        ids: {},
        ingest: undefined as unknown as IngestFigures,
      };
      writeState(dataDir, state);
    }
    return {
      target: {
        url,
        apiKey: state.apiKey,
        engines: enginesFromConfig(service.config, service.search),
        dataDir,
        reused: !!state.ingest,
        stop,
      },
      state,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

function writeState(dir: string, s: State) {
  const f = join(dir, STATE_FILE);
  writeFileSync(f, JSON.stringify(s), { mode: 0o600 });
  chmodSync(f, 0o600);
}

async function remote(url: string): Promise<Target> {
  const base = url.replace(/\/+$/, '');
  const operatorToken = process.env.EVAL_OPERATOR_TOKEN || process.env.OPERATOR_TOKEN;
  let apiKey = process.env.EVAL_API_KEY;
  let source = `the service at ${hostOf(base)}`;
  if (!apiKey) {
    if (!operatorToken)
      throw new Error(
        '--url needs EVAL_OPERATOR_TOKEN (or OPERATOR_TOKEN) to create a fresh account, or EVAL_API_KEY ' +
          '(a root key) to use an existing tenant',
      );
    const http = new Http(base, 1);
    const r = await http.call('POST', '/operator/accounts', operatorToken, { name: 'eval-search', plan: 'enterprise' });
    await http.close();
    if (r.status !== 201) throw new Error(`POST /operator/accounts answered ${r.status}: ${r.text.slice(0, 300)}`);
    apiKey = r.body.tenants.live.rootKey as string;
    source += ', fresh account';
  } else {
    source += ', the tenant of EVAL_API_KEY (not fresh: its other documents take part in the ranking)';
  }
  // The embedder is named by the service's /readyz; the text engine is labelled from this environment's variables.
  let remoteEmbedder: string | undefined;
  try {
    const r = await fetch(`${base}/readyz`);
    const e = ((await r.json()) as { embeddings?: { model: string | null; dims: number; reason?: string } }).embeddings;
    if (e) remoteEmbedder = e.model === null ? `none (${e.reason}): no semantic search` : `${e.model} (${e.dims}-d)`;
  } catch {
    // not named
  }
  const declared = (k: string) => (process.env[k] ? `${k} set here` : `${k} not set here`);
  return {
    url: base,
    apiKey,
    engines: {
      text: process.env.ELASTICSEARCH_URL
        ? `Elasticsearch (as declared: ${declared('ELASTICSEARCH_URL')})`
        : `PostgreSQL FTS (as declared: ${declared('ELASTICSEARCH_URL')})`,
      embeddings: process.env.EMBEDDINGS_URL
        ? `external ${process.env.EMBEDDINGS_MODEL ?? ''} (as declared: ${declared('EMBEDDINGS_URL')})`
        : `${remoteEmbedder ?? 'built-in (the service did not name it in /readyz)'} (${declared('EMBEDDINGS_URL')})`,
      source,
    },
    reused: false,
    stop: async () => {},
  };
}

// --- ingest ------------------------------------------------------------------------------------------
async function ingest(
  http: Http,
  t: Target,
  docs: ReturnType<typeof loadBeir>['corpus'],
  indexTimeoutMs: number,
): Promise<{ ids: Map<string, string>; figures: IngestFigures }> {
  const ids = new Map<string, string>(); // service id -> corpus _id
  const order: string[] = []; // service ids in the order their creates completed (≈ log order)
  let created = 0;
  let existing = 0;
  let next = 0;
  let done = 0;
  const bar = progress('ingest ', docs.length);
  const m0 = { passages: 0, passageBusyMs: 0, ...builtinModelStats() };
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < docs.length) {
        const d = docs[next++];
        const body = {
          title: (d.title.trim() || d._id).slice(0, 1024),
          text: documentText(d, titleInText),
          indexMode,
          externalId: d._id,
        };
        const r = await http.call('POST', '/v1/documents', t.apiKey, body);
        if (r.status === 201) created++;
        else if (r.status === 200) existing++;
        else throw new Error(`POST /v1/documents (${d._id}) answered ${r.status}: ${r.text.slice(0, 300)}`);
        ids.set(r.body.id, d._id);
        order.push(r.body.id);
        bar.update(++done);
      }
    }),
  );
  const writeSeconds = (performance.now() - t0) / 1000;
  bar.done(done, `(${created} created, ${existing} already there)`);

  // Settled = left PENDING_INDEX. The projector indexes in log order, so the first pending id blocks the rest: poll it.
  const statuses: Record<string, number> = {};
  const failures: Record<string, number> = {};
  const wait = progress('indexed', order.length);
  const deadline = performance.now() + indexTimeoutMs;
  let settled = 0;
  let i = 0;
  const poolSize = Math.min(concurrency, 8);
  while (i < order.length) {
    // Look at a window of the next ids at once; count each that settled, stop the window at the first still pending.
    const window = order.slice(i, i + poolSize);
    const answers = await Promise.all(window.map((id) => http.call('GET', `/v1/documents/${id}`, t.apiKey)));
    let advanced = 0;
    for (const a of answers) {
      if (a.status !== 200) throw new Error(`GET /v1/documents answered ${a.status}: ${a.text.slice(0, 200)}`);
      const st = a.body.status as string;
      if (st === 'PENDING_INDEX' || st === 'PENDING_UPLOAD' || st === 'UPLOADED' || st === 'EXTRACTING') break;
      statuses[st] = (statuses[st] ?? 0) + 1;
      if (st === 'FAILED')
        failures[a.body.indexFailure?.code ?? 'unknown'] = (failures[a.body.indexFailure?.code ?? 'unknown'] ?? 0) + 1;
      advanced++;
    }
    i += advanced;
    settled += advanced;
    const summary = Object.entries(statuses)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    wait.update(settled, summary);
    if (!advanced) {
      if (performance.now() > deadline)
        throw new Error(
          `indexing did not finish in ${indexTimeoutMs / 60000} minutes (${settled}/${order.length} settled)`,
        );
      await sleep(1000);
    }
  }
  const toSettledSeconds = (performance.now() - t0) / 1000;
  wait.done(
    settled,
    Object.entries(statuses)
      .map(([k, v]) => `${k} ${v}`)
      .join(', '),
  );
  return {
    ids,
    figures: {
      documents: docs.length,
      created,
      existing,
      writeSeconds: round(writeSeconds, 1),
      writeDocsPerSec: round(docs.length / writeSeconds, 1),
      toSettledSeconds: round(toSettledSeconds, 1),
      settledDocsPerSec: round(docs.length / toSettledSeconds, 2),
      statuses,
      failures,
      model: modelFigures(m0, toSettledSeconds),
    },
  };
}

const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;

function modelFigures(m0: { passages: number; passageBusyMs: number }, seconds: number): IngestFigures['model'] {
  const m1 = builtinModelStats();
  const passages = (m1?.passages ?? 0) - m0.passages;
  if (!m1 || !passages) return undefined;
  const busyMs = m1.passageBusyMs - m0.passageBusyMs;
  return {
    passages,
    passagesPerSec: round(passages / seconds, 1),
    members: m1.threads,
    busyShare: round(busyMs / (m1.threads * seconds * 1000), 2),
    busyPassagesPerSec: round((passages * m1.threads * 1000) / busyMs, 1),
    load1: round(loadavg()[0], 2),
  };
}

// --- queries -----------------------------------------------------------------------------------------
interface Hit {
  id: string;
  score: number;
  textScore: number;
  semanticScore: number;
  chunkNo: number;
}

async function runQueries(
  http: Http,
  t: Target,
  mode: Mode,
  queries: Array<[string, string]>,
  idMap: Map<string, string>,
) {
  const runs = new Map<string, Hit[]>();
  const latencies: number[] = [];
  const serverMs: number[] = [];
  let degraded = 0;
  let unmapped = 0;
  const body = (query: string) => ({ query, mode, limit: 100, uniqueDocuments: true, contentTypes: ['documents'] });
  // Untimed warm-up: loads the query embedder, warms caches and plans.
  for (const [, q] of queries.slice(0, 3)) await http.call('POST', '/v1/search', t.apiKey, body(q));
  const bar = progress(`${mode.padEnd(8)}`, queries.length);
  for (const [qid, q] of queries) {
    const t0 = performance.now();
    const r = await http.call('POST', '/v1/search', t.apiKey, body(q.slice(0, 4000)));
    latencies.push(performance.now() - t0);
    if (r.status !== 200)
      throw new Error(`POST /v1/search (${mode}, query ${qid}) answered ${r.status}: ${r.text.slice(0, 300)}`);
    if (r.body.degraded) degraded++;
    serverMs.push(r.body.searchTimeMs);
    runs.set(
      qid,
      (
        r.body.results as Array<{
          documentId: string;
          score: number;
          textScore: number;
          semanticScore: number;
          metadata: { externalId?: string; chunkNo?: number };
        }>
      ).map((h) => {
        const id = idMap.get(h.documentId) ?? h.metadata?.externalId;
        if (!id) unmapped++;
        return {
          id: id ?? `?${h.documentId}`,
          score: h.score,
          textScore: h.textScore,
          semanticScore: h.semanticScore,
          chunkNo: h.metadata?.chunkNo ?? 0,
        };
      }),
    );
    bar.update(runs.size);
  }
  bar.done(runs.size);
  return { runs, latencies, serverMs, degraded, unmapped };
}

// --- main ----------------------------------------------------------------------------------------------
async function main() {
  const datasetDir = resolve(args.dataset!);
  const name = basename(datasetDir).toLowerCase();
  const data = loadBeir(datasetDir);
  const qrels = loadQrels(datasetDir, split);
  let queries = [...qrels.keys()]
    .filter((q) => data.queries.has(q))
    .map((q) => [q, data.queries.get(q)!] as [string, string]);
  const missing = qrels.size - queries.length;
  if (limitQueries) queries = queries.slice(0, limitQueries);
  const corpusHash = createHash('sha256')
    .update(readFileSync(join(datasetDir, 'corpus.jsonl')))
    .digest('hex')
    .slice(0, 16);
  console.error(
    `dataset ${name}: ${data.corpus.length} documents, split ${split}: ${queries.length} judged ` +
      `queries${missing ? ` (${missing} judged ids missing from queries.jsonl)` : ''}`,
  );

  const { target, state } = args.url
    ? { target: await remote(args.url), state: undefined }
    : await selfStarted(corpusHash);
  const http = new Http(target.url, concurrency);
  let stopped = false;
  const shutdown = async () => {
    if (stopped) return;
    stopped = true;
    await http.close().catch(() => {});
    await target.stop();
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => {
      console.error(`\n${sig}: stopping the service`);
      void shutdown().finally(() => process.exit(130));
    });
  try {
    console.error(
      `service: ${target.url} (${target.engines.source})${target.dataDir ? `, DATA_DIR ${target.dataDir}` : ''}`,
    );
    console.error(`text leg: ${target.engines.text}; embeddings: ${target.engines.embeddings}`);
    let ids: Map<string, string>;
    let figures: IngestFigures;
    if (state?.ingest) {
      ids = new Map(Object.entries(state.ids));
      figures = state.ingest;
      console.error(
        `reusing the ingest in ${target.dataDir} (${ids.size} documents, ingested earlier: ` +
          `${figures.writeDocsPerSec} docs/s written, settled after ${figures.toSettledSeconds} s)`,
      );
    } else {
      ({ ids, figures } = await ingest(http, target, data.corpus, Number(args['index-timeout-min']) * 60_000));
      if (state && target.dataDir) {
        writeState(target.dataDir, { ...state, documents: ids.size, ids: Object.fromEntries(ids), ingest: figures });
        rmSync(join(target.dataDir, 'eval-search-partial'), { force: true });
      }
    }
    const notIndexed = data.corpus.length - (figures.statuses.INDEXED ?? 0);
    if (notIndexed)
      console.error(
        `warning: ${notIndexed} documents are not INDEXED: ${JSON.stringify(figures.statuses)} ` +
          `${JSON.stringify(figures.failures)}`,
      );

    const published = PUBLISHED[name]?.bm25Ndcg10;
    const results: Record<string, unknown> = {};
    const allRuns: Record<string, Record<string, Hit[]>> = {};
    const rows: string[][] = [];
    for (const mode of modes) {
      const r = await runQueries(http, target, mode, queries, ids);
      const ev = evaluate(
        new Map([...r.runs].map(([q, hits]) => [q, hits.map((h) => h.id)])),
        new Map([...qrels].filter(([q]) => r.runs.has(q))),
      );
      const m = {
        ndcg10: round(ev.ndcg10, 4),
        recall100: round(ev.recall100, 4),
        queries: ev.queries,
        latencyMs: {
          p50: round(percentile(r.latencies, 50), 1),
          p99: round(percentile(r.latencies, 99), 1),
          mean: round(r.latencies.reduce((a, b) => a + b, 0) / r.latencies.length, 1),
        },
        serverSearchTimeMs: { p50: round(percentile(r.serverMs, 50), 1), p99: round(percentile(r.serverMs, 99), 1) },
        degradedAnswers: r.degraded,
        unmappedHits: r.unmapped,
      };
      results[mode] = m;
      allRuns[mode] = Object.fromEntries(r.runs);
      rows.push([
        mode,
        m.ndcg10.toFixed(3),
        m.recall100.toFixed(3),
        `${m.latencyMs.p50.toFixed(0)} ms`,
        `${m.latencyMs.p99.toFixed(0)} ms`,
        published !== undefined ? `${m.ndcg10 - published >= 0 ? '+' : ''}${(m.ndcg10 - published).toFixed(3)}` : '—',
      ]);
      if (r.degraded) console.error(`warning: ${r.degraded} ${mode} answers were degraded`);
    }

    const header = [
      'mode',
      'nDCG@10',
      'Recall@100',
      'p50',
      'p99',
      published !== undefined ? `vs BM25 ${published}${split === 'test' ? '' : ' (test)'}` : 'vs BM25',
    ];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (cells: string[]) =>
      cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
    console.log(
      `\n${name} ${split} split, ${queries.length} ` +
        `queries${limitQueries ? ` (--limit-queries ${limitQueries})` : ''}, ${data.corpus.length} documents`,
    );
    console.log(`text leg: ${target.engines.text}`);
    console.log(
      `embeddings: ${target.engines.embeddings}${indexMode === 'TEXT' ? ' (not used: --index-mode TEXT)' : ''}`,
    );
    console.log(
      `ingest: ${figures.documents} documents (indexMode ${indexMode}), written in ` +
        `${figures.writeSeconds} s (${figures.writeDocsPerSec} docs/s), all settled after ` +
        `${figures.toSettledSeconds} s (${figures.settledDocsPerSec} docs/s): ` +
        `${JSON.stringify(figures.statuses)}${target.reused ? ' (reused from an earlier run)' : ''}`,
    );
    const m = figures.model;
    if (m)
      console.log(
        `built-in model: ${m.passages} passages in the ingest's ${figures.toSettledSeconds} s = ` +
          `${m.passagesPerSec} passages/s; its ${m.members} members busy ${Math.round(m.busyShare * 100)}% of it ` +
          `(${m.busyPassagesPerSec} passages/s while busy); load average ${m.load1} at the end`,
      );
    console.log(line(header));
    for (const r of rows) console.log(line(r));
    if (published !== undefined) console.log(`published BM25 nDCG@10 (BEIR, test split): ${published}`);

    const out = {
      dataset: name,
      split,
      queries: queries.length,
      limitQueries: limitQueries ?? null,
      documents: data.corpus.length,
      titleInText,
      indexMode,
      publishedBm25Ndcg10: published ?? null,
      engines: target.engines,
      ingest: { ...figures, reused: target.reused },
      request: { limit: 100, uniqueDocuments: true, contentTypes: ['documents'], textMode: 'OR' },
      modes: results,
      command: `npm run eval:search -- ${process.argv.slice(2).join(' ')}`,
      finishedAt: new Date().toISOString(),
    };
    mkdirSync(join(ROOT, '.cache'), { recursive: true });
    const file = join(ROOT, '.cache', `eval-search-${split}.json`);
    writeFileSync(file, JSON.stringify(out, null, 2) + '\n');
    writeFileSync(join(ROOT, '.cache', `eval-search-${split}-runs.json`), JSON.stringify(allRuns));
    console.log(`figures: ${file}`);
  } finally {
    await shutdown();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e instanceof Error ? e.stack : e);
    process.exit(1);
  },
);
