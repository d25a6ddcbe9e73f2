/**
 * Peers (BENCH_ONLY=peers; issue 46, item 7): the service next to the engines it is measured against.
 *
 *  1. TEXT search on the BEIR SciFact corpus (BENCH_PEERS_DATASET, default /work/shared/datasets/scifact): the
 *     service as a child process (embedded engines) loaded as tests/eval/search.ts loads it (documents, indexMode
 *     TEXT, externalId = corpus _id, text = title + blank line + abstract), against Elasticsearch started with
 *     deploy/engines/elasticsearch.sh on a free port and a temporary state dir, holding the same texts (bulk API),
 *     analysed as the service's own Elasticsearch adapter analyses (the analysis settings of an index that
 *     search/src/engines/es.ts creates: standard tokenizer, lowercase, PostgreSQL's English stop words, Snowball
 *     English stemmer). 16 closed-loop clients, limit 10, the test split's queries rotating, in alternating rounds
 *     (service, ES title + snippet, ES ids + titles, ...) after a warm-up of each.
 *  2. Record create on PostgreSQL (DATABASE_URL, a fresh schema) vs the embedded engines, 32 clients, alternating
 *     slices; then get by id cold (each id once) vs hot (a 2,000-id working set) on the embedded service,
 *     alternating slices.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { Client } from '@elastic/elasticsearch';
import { Pool } from 'undici';
import { loadElasticsearch } from '@svc/search';
import { RECENT_RECORDS_KEPT } from '@svc/query-api';
import { documentText, loadBeir, loadQrels } from '../eval/dataset';
import { freshPostgresSchema } from '../src/support/engines';
import { freePort, ROOT } from '../src/support/service';
import { HOT_SET, startHttpService, type HttpService } from './http';
import { closedLoop, sumLoads, type LoadResult } from './load';
import { treeCpuSeconds } from './process-tree';
import { BENCH_SCHEMA, createBody } from './workload';

const SCRIPT = `${ROOT}/deploy/engines/elasticsearch.sh`;
const ES_INDEX = 'peers-scifact';

export interface PeersOptions {
  newDir: (prefix: string) => string;
  log: (m: string) => void;
  dataset: string;
  /** Rounds of each search target (service, ES a, ES b), and of each create / read slice. */
  rounds: number;
  roundMs: number;
  warmupMs: number;
  createSliceMs: number;
  readSliceMs: number;
  /** Ids a cold by-id slice reads at most (each once). */
  coldPerSlice: number;
  databaseUrl?: string;
  childEnv?: Record<string, string>;
  /**
   * A second PostgreSQL service (its own fresh schema) with these variables too, in the create slices' alternation
   * (BENCH_PEERS_PG_COMPARE, e.g. `PG_PIPELINE=off`): an old path against the new one on the same server and load.
   */
  compareEnv?: Record<string, string>;
}

export interface PeersSearch {
  docs: number;
  queries: number;
  ingestSeconds: number;
  esLoadSeconds: number;
  stemmer: string;
  esVersion: string;
  /** Mean hits per answer of each target (all three should answer 10). */
  hits: { service: number; snippet: number; titles: number };
  service: LoadResult;
  /** (a) title + one highlighted snippet. */
  esSnippet: LoadResult;
  /** (b) ids + titles, no highlight. */
  esTitles: LoadResult;
  rounds: Array<{ service: LoadResult; esSnippet: LoadResult; esTitles: LoadResult }>;
  /**
   * CPU milliseconds per query of the answering side (the service's process tree; the Elasticsearch JVM), over all
   * rounds.
   */
  cpuMsPerQuery: { service: number; snippet: number; titles: number };
}

export interface PeersRecords {
  embedded: LoadResult;
  postgres: LoadResult;
  /** The BENCH_PEERS_PG_COMPARE service's slices. */
  compare?: LoadResult;
  slices: number;
}

export interface PeersReads {
  hot: LoadResult;
  cold: LoadResult;
  slices: number;
  coldIds: number;
}

export interface PeersResult {
  search?: PeersSearch;
  searchSkipped?: string;
  records?: PeersRecords;
  recordsSkipped?: string;
  reads?: PeersReads;
}

/** A JDK the script can run Elasticsearch 9 with (its own rule: 21+ under /usr/lib/jvm, JAVA_HOME or ES_JAVA_HOME). */
export function javaForElasticsearch(): string | undefined {
  if (process.env.ES_JAVA_HOME) return process.env.ES_JAVA_HOME;
  const dirs = [
    process.env.JAVA_HOME,
    ...(existsSync('/usr/lib/jvm') ? readdirSync('/usr/lib/jvm').map((d) => `/usr/lib/jvm/${d}`) : []),
  ].filter(Boolean) as string[];
  for (const d of dirs) {
    try {
      const release = execFileSync('sed', ['-n', 's/^JAVA_VERSION="\\([0-9]*\\).*/\\1/p', `${d}/release`], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
      if (Number(release) >= 21 && existsSync(`${d}/bin/java`)) return d;
    } catch {
      /* not a JDK */
    }
  }
  return undefined;
}

const run = (args: string[], env: Record<string, string>, timeoutMs: number) =>
  new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
    execFile(
      'bash',
      [SCRIPT, ...args],
      { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 16 * 2 ** 20 },
      (err, stdout, stderr) =>
        err
          ? reject(
              Object.assign(
                new Error(
                  `${SCRIPT} ${args.join(' ')} failed: ${String(stderr).trim().split('\n').slice(-8).join(' | ')}`,
                ),
                { stderr },
              ),
            )
          : resolve({ stdout, stderr }),
    );
  });

/** Elasticsearch from the repo's script; `clean` on stop and on exit (the node is a daemon, not our child). */
async function startElasticsearch(
  stateDir: string,
  log: (m: string) => void,
): Promise<{ url: string; pid: number; stop: () => Promise<void> }> {
  const port = await freePort();
  let tport = await freePort();
  while (tport === port) tport = await freePort();
  const env = { ES_PORT: String(port), ES_TRANSPORT_PORT: String(tport), ES_STATE_DIR: stateDir };
  let stopped = false;
  const onExit = () => {
    if (!stopped) execFileSync('bash', [SCRIPT, 'clean'], { env: { ...process.env, ...env }, stdio: 'ignore' });
  };
  process.on('exit', onExit);
  const t = performance.now();
  let url: string;
  try {
    url = (await run(['start'], env, 15 * 60_000)).stdout.trim().split('\n').pop()!;
  } catch (e) {
    await run(['clean'], env, 120_000).catch(() => {});
    stopped = true;
    process.off('exit', onExit);
    throw e;
  }
  log(
    `Elasticsearch up at ${url} in ${((performance.now() - t) / 1000).toFixed(1)} s ` +
      `(deploy/engines/elasticsearch.sh, state ${stateDir})`,
  );
  return {
    url,
    pid: Number(readFileSync(`${stateDir}/elasticsearch.pid`, 'utf8').trim()),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      process.off('exit', onExit);
      await run(['clean'], env, 120_000);
    },
  };
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

/** The corpus into the service as tests/eval/search.ts sends it, then wait until every document left PENDING_INDEX. */
export async function ingestService(
  svc: HttpService,
  docs: ReturnType<typeof loadBeir>['corpus'],
  log: (m: string) => void,
): Promise<number> {
  const key = svc.bootstrap.tenants.live.rootKey;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const pool = new Pool(svc.url, { connections: 8, pipelining: 1 });
  const t0 = performance.now();
  try {
    const ids: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < docs.length) {
          const d = docs[next++];
          const body = {
            title: (d.title.trim() || d._id).slice(0, 1024),
            text: documentText(d),
            indexMode: 'TEXT',
            externalId: d._id,
          };
          const r = await pool.request({ method: 'POST', path: '/v1/documents', headers, body: JSON.stringify(body) });
          const text = await r.body.text();
          if (r.statusCode !== 201 && r.statusCode !== 200)
            throw new Error(`POST /v1/documents (${d._id}) ${r.statusCode}: ${text.slice(0, 300)}`);
          ids.push((JSON.parse(text) as { id: string }).id);
        }
      }),
    );
    log(
      `peers: ${ids.length} documents written to the service in ` +
        `${((performance.now() - t0) / 1000).toFixed(1)} s; waiting for indexing`,
    );
    // Settled = left PENDING_INDEX (the projector indexes in log order: walk the ids, waiting at the first pending
    // one).
    const deadline = performance.now() + 20 * 60_000;
    let i = 0;
    const statuses: Record<string, number> = {};
    while (i < ids.length) {
      const window = ids.slice(i, i + 16);
      const answers = await Promise.all(
        window.map(async (id) => {
          const r = await pool.request({
            method: 'GET',
            path: `/v1/documents/${id}`,
            headers: { authorization: headers.authorization },
          });
          return (await r.body.json()) as { status: string };
        }),
      );
      let advanced = 0;
      for (const a of answers) {
        if (['PENDING_INDEX', 'PENDING_UPLOAD', 'UPLOADED', 'EXTRACTING'].includes(a.status)) break;
        statuses[a.status] = (statuses[a.status] ?? 0) + 1;
        advanced++;
      }
      i += advanced;
      if (!advanced) {
        if (performance.now() > deadline)
          throw new Error(`service indexing did not finish in 20 minutes (${i}/${ids.length})`);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    const secs = (performance.now() - t0) / 1000;
    log(`peers: service indexed ${ids.length} documents in ${secs.toFixed(1)} s (${JSON.stringify(statuses)})`);
    if (statuses.INDEXED !== ids.length) throw new Error(`not every document was INDEXED: ${JSON.stringify(statuses)}`);
    return secs;
  } finally {
    await pool.close();
  }
}

/**
 * The same texts into Elasticsearch. The analysis is the service's adapter's own: ElasticsearchTextIndex creates its
 * index (whichever English stemmer this server has), and this index takes that index's analysis settings.
 */
async function loadElasticsearchIndex(
  url: string,
  docs: ReturnType<typeof loadBeir>['corpus'],
  log: (m: string) => void,
): Promise<{ seconds: number; stemmer: string; version: string }> {
  const client = new Client({ node: url, requestTimeout: 120_000 });
  try {
    const t0 = performance.now();
    // The integ-test distribution has no GET / (the main module): the version from the nodes info API.
    const nodes = await client.nodes.info({ filter_path: ['nodes.*.version'] });
    const version = Object.values(nodes.nodes ?? {})[0]?.version ?? 'unknown';
    const { ElasticsearchTextIndex } = await loadElasticsearch();
    const probe = new ElasticsearchTextIndex({ url, index: 'peers-adapter-probe', client, log });
    await probe.init();
    const settings = await client.indices.getSettings({ index: 'peers-adapter-probe' });
    const analysis = Object.values(settings)[0]?.settings?.index?.analysis;
    if (!analysis) throw new Error('the adapter index has no analysis settings');
    await client.indices.delete({ index: 'peers-adapter-probe' });
    await client.indices.create({
      index: ES_INDEX,
      settings: { number_of_shards: 1, number_of_replicas: 0, analysis },
      mappings: {
        dynamic: 'strict',
        properties: { title: { type: 'keyword', index: false }, text: { type: 'text', analyzer: 'svc_english' } },
      },
    });
    for (let i = 0; i < docs.length; i += 1000) {
      const operations = docs
        .slice(i, i + 1000)
        .flatMap((d) => [
          { index: { _index: ES_INDEX, _id: d._id } },
          { title: d.title.trim() || d._id, text: documentText(d) },
        ]);
      const r = await client.bulk({ operations });
      if (r.errors)
        throw new Error(
          `Elasticsearch bulk errors: ` +
            `${JSON.stringify(r.items.find((x) => x.index?.error)?.index?.error).slice(0, 300)}`,
        );
    }
    await client.indices.refresh({ index: ES_INDEX });
    await client.indices.forcemerge({ index: ES_INDEX, max_num_segments: 1 });
    const count = (await client.count({ index: ES_INDEX })).count;
    if (count !== docs.length) throw new Error(`Elasticsearch holds ${count} documents, not ${docs.length}`);
    const seconds = (performance.now() - t0) / 1000;
    log(
      `peers: Elasticsearch ${version} loaded with ${count} documents in ${seconds.toFixed(1)} s (stemmer ` +
        `${probe.stemmer}, one shard, force-merged)`,
    );
    return { seconds, stemmer: probe.stemmer, version };
  } finally {
    await client.close();
  }
}

async function benchSearchPeers(o: PeersOptions): Promise<PeersSearch> {
  const ds = loadBeir(o.dataset);
  const qrels = loadQrels(o.dataset, 'test');
  const queries = [...qrels.keys()].map((q) => ds.queries.get(q)).filter((q): q is string => !!q);
  if (!queries.length) throw new Error(`no test queries in ${o.dataset}`);
  const es = await startElasticsearch(o.newDir('es-'), o.log);
  let svc: HttpService | undefined;
  try {
    const loaded = await loadElasticsearchIndex(es.url, ds.corpus, o.log);
    svc = await startHttpService(o.newDir('peers-search-'), o.childEnv);
    const ingestSeconds = await ingestService(svc, ds.corpus, o.log);

    const key = svc.bootstrap.tenants.live.rootKey;
    const svcHeaders = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const svcPool = new Pool(svc.url, { connections: 16, pipelining: 1 });
    const esPool = new Pool(es.url, { connections: 16, pipelining: 1 });
    const hits = { service: [] as number[], snippet: [] as number[], titles: [] as number[] };
    // Hits counted on the first answers only (parsing every answer would load the shared CPU).
    const note = (arr: number[], text: string, count: (j: any) => number) => {
      if (arr.length < 200) arr.push(count(JSON.parse(text)));
    };
    const service = async (_w: number, seq: number) => {
      const r = await svcPool.request({
        method: 'POST',
        path: '/v1/search',
        headers: svcHeaders,
        body: JSON.stringify({ query: queries[seq % queries.length], mode: 'TEXT', limit: 10 }),
      });
      const text = await r.body.text();
      if (r.statusCode !== 200) throw new Error(`POST /v1/search ${r.statusCode}: ${text.slice(0, 200)}`);
      note(hits.service, text, (j) => j.results.length);
    };
    const esSearch = (body: (q: string) => object, arr: number[]) => async (_w: number, seq: number) => {
      const r = await esPool.request({
        method: 'POST',
        path: `/${ES_INDEX}/_search`,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body(queries[seq % queries.length])),
      });
      const text = await r.body.text();
      if (r.statusCode !== 200) throw new Error(`Elasticsearch _search ${r.statusCode}: ${text.slice(0, 200)}`);
      note(arr, text, (j) => j.hits.hits.length);
    };
    // (a) title + one highlighted snippet (the service's fragment size); (b) ids + titles only. No total count, as the
    // service's adapter asks Elasticsearch (track_total_hits false: the service's /v1/search does not count either).
    const esSnippet = esSearch(
      (q) => ({
        size: 10,
        track_total_hits: false,
        query: { match: { text: { query: q, operator: 'or' } } },
        _source: ['title'],
        highlight: { fields: { text: { number_of_fragments: 1, fragment_size: 240, no_match_size: 240 } } },
      }),
      hits.snippet,
    );
    const esTitles = esSearch(
      (q) => ({
        size: 10,
        track_total_hits: false,
        query: { match: { text: { query: q, operator: 'or' } } },
        _source: ['title'],
      }),
      hits.titles,
    );
    try {
      const loop = (op: (w: number, seq: number) => Promise<void>, warmupMs: number, durationMs: number) =>
        closedLoop({ concurrency: 16, warmupMs, durationMs, op });
      for (const op of [service, esSnippet, esTitles]) await loop(op, 0, o.warmupMs);
      const rounds: PeersSearch['rounds'] = [];
      // CPU seconds of the answering side over the rounds (no per-round warm-up: the connections are open, the code
      // warm).
      const cpu = { service: 0, snippet: 0, titles: 0 };
      const svcPid = svc.child.pid!;
      const measured = async (k: keyof typeof cpu, op: (w: number, seq: number) => Promise<void>) => {
        const at = () => (k === 'service' ? treeCpuSeconds(svcPid) : treeCpuSeconds(es.pid));
        const c0 = at();
        const res = await loop(op, 0, o.roundMs);
        const c1 = at();
        cpu[k] += c1.service + c1.children - (c0.service + c0.children);
        return res;
      };
      for (let r = 0; r < o.rounds; r++) {
        const s = await measured('service', service);
        const a = await measured('snippet', esSnippet);
        const b = await measured('titles', esTitles);
        rounds.push({ service: s, esSnippet: a, esTitles: b });
        o.log(
          `peers round ${r + 1}/${o.rounds}: service ${Math.round(s.opsPerSec)}/s p99 ${s.p99.toFixed(1)} ` +
            `ms; ES title+snippet ${Math.round(a.opsPerSec)}/s p99 ${a.p99.toFixed(1)} ms; ES ids+titles ` +
            `${Math.round(b.opsPerSec)}/s p99 ${b.p99.toFixed(1)} ms`,
        );
      }
      return {
        docs: ds.corpus.length,
        queries: queries.length,
        ingestSeconds,
        esLoadSeconds: loaded.seconds,
        stemmer: loaded.stemmer,
        esVersion: loaded.version,
        hits: { service: mean(hits.service), snippet: mean(hits.snippet), titles: mean(hits.titles) },
        service: sumLoads(rounds.map((r) => r.service)),
        esSnippet: sumLoads(rounds.map((r) => r.esSnippet)),
        esTitles: sumLoads(rounds.map((r) => r.esTitles)),
        rounds,
        cpuMsPerQuery: {
          service: (1000 * cpu.service) / rounds.reduce((n, r) => n + r.service.ops, 0),
          snippet: (1000 * cpu.snippet) / rounds.reduce((n, r) => n + r.esSnippet.ops, 0),
          titles: (1000 * cpu.titles) / rounds.reduce((n, r) => n + r.esTitles.ops, 0),
        },
      };
    } finally {
      await svcPool.close();
      await esPool.close();
    }
  } finally {
    await svc?.stop();
    await es.stop();
  }
}

/** POST /v1/records on PostgreSQL vs embedded (alternating slices), then cold vs hot by id on the embedded service. */
async function benchRecordPeers(
  o: PeersOptions,
  databaseUrl: string,
): Promise<{ records: PeersRecords; reads: PeersReads }> {
  const schema = await freshPostgresSchema(databaseUrl);
  const pg = await startHttpService(o.newDir('peers-pg-'), { ...o.childEnv, DATABASE_URL: schema.url });
  let emb: HttpService | undefined;
  let cmp: { schema: Awaited<ReturnType<typeof freshPostgresSchema>>; svc?: HttpService } | undefined;
  const pools: Pool[] = [];
  try {
    emb = await startHttpService(o.newDir('peers-emb-'), o.childEnv);
    if (o.compareEnv) {
      cmp = { schema: await freshPostgresSchema(databaseUrl) };
      cmp.svc = await startHttpService(o.newDir('peers-pgc-'), {
        ...o.childEnv,
        ...o.compareEnv,
        DATABASE_URL: cmp.schema.url,
      });
    }
    const targets = [emb, pg, ...(cmp?.svc ? [cmp.svc] : [])].map((svc) => {
      const headers = {
        authorization: `Bearer ${svc.bootstrap.tenants.live.rootKey}`,
        'content-type': 'application/json',
      };
      const pool = new Pool(svc.url, { connections: 32, pipelining: 1 });
      pools.push(pool);
      return { svc, headers, pool, ids: [] as string[] };
    });
    for (const t of targets) {
      const s = await t.pool.request({
        method: 'POST',
        path: '/v1/schemas',
        headers: t.headers,
        body: JSON.stringify(BENCH_SCHEMA),
      });
      const text = await s.body.text();
      if (s.statusCode !== 201) throw new Error(`schema create failed: ${s.statusCode} ${text}`);
    }
    const create = (t: (typeof targets)[number]) => async (_w: number, seq: number) => {
      const res = await t.pool.request({
        method: 'POST',
        path: '/v1/records',
        headers: t.headers,
        body: createBody(seq),
      });
      const text = await res.body.text();
      if (res.statusCode !== 201) throw new Error(`POST /v1/records ${res.statusCode}: ${text.slice(0, 200)}`);
      const m = /"id":"([^"]+)"/.exec(text);
      if (m) t.ids.push(m[1]);
    };
    const [e, p, c] = targets;
    for (const t of targets) await closedLoop({ concurrency: 32, warmupMs: 0, durationMs: o.warmupMs, op: create(t) });
    const slices = { embedded: [] as LoadResult[], postgres: [] as LoadResult[], compare: [] as LoadResult[] };
    const slice = (t: (typeof targets)[number]) =>
      closedLoop({ concurrency: 32, warmupMs: 300, durationMs: o.createSliceMs, op: create(t) });
    const figures = (l: LoadResult) => `${Math.round(l.opsPerSec)}/s p99 ${l.p99.toFixed(1)} ms`;
    for (let r = 0; r < o.rounds; r++) {
      slices.embedded.push(await slice(e));
      // The compared service goes first in every other round: neither PostgreSQL service always follows the other.
      if (c && r % 2 === 1) slices.compare.push(await slice(c));
      slices.postgres.push(await slice(p));
      if (c && r % 2 === 0) slices.compare.push(await slice(c));
      const d = slices.compare[r];
      o.log(
        `peers create slice ${r + 1}/${o.rounds}: embedded ${figures(slices.embedded[r])}; ` +
          `PostgreSQL ${figures(slices.postgres[r])}` +
          (d ? `; compared (${JSON.stringify(o.compareEnv)}) ${figures(d)}` : ''),
      );
    }
    const records = {
      embedded: sumLoads(slices.embedded),
      postgres: sumLoads(slices.postgres),
      ...(c ? { compare: sumLoads(slices.compare) } : {}),
      slices: o.rounds,
    };
    if (records.compare)
      o.log(
        `peers create summed: embedded ${figures(records.embedded)}; PostgreSQL ${figures(records.postgres)}; ` +
          `compared ${figures(records.compare)}`,
      );
    await pg.stop();
    await cmp?.svc?.stop();

    // Cold vs hot by id, embedded (the records section's definitions: a fixed HOT_SET working set; cold = each id
    // once).
    const getHeaders = { authorization: e.headers.authorization };
    const get = async (id: string) => {
      const res = await e.pool.request({ method: 'GET', path: `/v1/records/${id}`, headers: getHeaders });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`GET /v1/records/:id ${res.statusCode}: ${text.slice(0, 200)}`);
    };
    // Enough ids for every cold slice (each reads at most coldPerSlice ids, each once): topped up with untimed creates.
    // The newest RECENT_RECORDS_KEPT are not read cold: the service serves their first read from the rows its
    // projector kept, without a query, and this line measures a read that needs one.
    const want = HOT_SET + o.rounds * o.coldPerSlice + RECENT_RECORDS_KEPT;
    const short = want - e.ids.length;
    if (short > 0) {
      const t0 = performance.now();
      await closedLoop({
        concurrency: 32,
        warmupMs: 0,
        durationMs: 10 * 60_000,
        op: async (w, seq) => (e.ids.length >= want ? 'stop' : create(e)(w, seq)),
      });
      o.log(
        `peers: ${short} more records created on the embedded service for the cold reads in ` +
          `${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
    }
    const hotIds = e.ids.slice(0, HOT_SET);
    let next = hotIds.length;
    let sliceEnd = next;
    const hotOp = (_w: number, seq: number) => get(hotIds[seq % hotIds.length]);
    const coldOp = async () => {
      if (next >= sliceEnd) return 'stop' as const;
      await get(e.ids[next++]);
    };
    await closedLoop({ concurrency: 32, warmupMs: 0, durationMs: o.warmupMs, op: hotOp });
    const reads = { hot: [] as LoadResult[], cold: [] as LoadResult[] };
    const coldEnd = e.ids.length - RECENT_RECORDS_KEPT;
    for (let r = 0; r < o.rounds && next < coldEnd; r++) {
      reads.hot.push(await closedLoop({ concurrency: 32, warmupMs: 0, durationMs: o.readSliceMs, op: hotOp }));
      sliceEnd = Math.min(coldEnd, next + o.coldPerSlice);
      reads.cold.push(await closedLoop({ concurrency: 32, warmupMs: 0, durationMs: o.readSliceMs, op: coldOp }));
      const [h, c] = [reads.hot[r], reads.cold[r]];
      o.log(
        `peers by-id slice ${r + 1}: hot ${Math.round(h.opsPerSec)}/s p99 ${h.p99.toFixed(1)} ms; cold ` +
          `${Math.round(c.opsPerSec)}/s p99 ${c.p99.toFixed(1)} ms (${c.ops} ids)`,
      );
    }
    return {
      records,
      reads: {
        hot: sumLoads(reads.hot),
        cold: sumLoads(reads.cold),
        slices: reads.hot.length,
        coldIds: next - hotIds.length,
      },
    };
  } finally {
    for (const pool of pools) await pool.close();
    await emb?.stop();
    await pg.stop();
    await cmp?.svc?.stop();
    await schema.drop().catch(() => {});
    await cmp?.schema.drop().catch(() => {});
  }
}

export async function benchPeers(o: PeersOptions): Promise<PeersResult> {
  const out: PeersResult = {};
  if (!existsSync(`${o.dataset}/corpus.jsonl`))
    out.searchSkipped = `no BEIR dataset at ${o.dataset} (BENCH_PEERS_DATASET)`;
  else if (!javaForElasticsearch())
    out.searchSkipped = 'no JDK 21+ (under /usr/lib/jvm, JAVA_HOME or ES_JAVA_HOME) to run Elasticsearch 9 with';
  else {
    try {
      out.search = await benchSearchPeers(o);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      // Elasticsearch that cannot start is a skip (said so); any other failure is the bench's.
      if (/elasticsearch\.sh start failed/.test(msg)) out.searchSkipped = `Elasticsearch did not start: ${msg}`;
      else throw e;
    }
  }
  if (!o.databaseUrl)
    out.recordsSkipped =
      'DATABASE_URL is not set (the PostgreSQL service needs a server; e.g. ' +
      'DATABASE_URL=postgres://postgres@127.0.0.1:5432/test)';
  else {
    const r = await benchRecordPeers(o, o.databaseUrl);
    out.records = r.records;
    out.reads = r.reads;
  }
  return out;
}
