/**
 * `tsx tests/bench/profile-search.ts [inject|http] [seconds] [chunks]` (defaults: inject 8 100000):
 * POST /v1/search (SEARCH_PROFILE_MODE, default TEXT; SEARCH_PROFILE_DIR: a kept bench data directory
 * with vectors, BENCH_KEEP=1, instead of the text-only one built here) (rotating queries of the relevance corpus, limit
 * 20, 16 clients) on the embedded default (SERVICE_ROLE=all, PGlite + the in-memory BM25 index) over `chunks` passages
 * loaded the way tests/bench/search.ts loads them (PgTextIndex.replaceItem + SearchCatalogue.put, 100 passages per
 * item, service stopped; text leg only, no vectors). The loaded data directory is kept in
 * .cache/profile-search-<chunks> and reused (delete it to reload).
 *
 *  inject: the service built in this process, requests through app.inject; CPU profile
 *          (node:inspector) of the measured phase: self time by area and hottest functions
 *          (raw profile in .cache/bench-search-text.cpuprofile). SEARCH_PROFILE_SEQ=1 adds a
 *          sequential (1 client) run.
 *  dump:   `dump 0 <chunks> <file.json>`: results of every query in every text mode, to diff two builds.
 *  engine: MemoryTextIndex alone on the same data: search (limit 100) and hydrate (20) per query
 *          (SEARCH_ENGINE_PER_QUERY=1: each query's time and matches; SEARCH_ENGINE_TOTAL=1: exact totals;
 *          SEARCH_ENGINE_LIMIT: another k than 100).
 *  http:   `npm start` in a child process (as the bench does), 16 undici clients, then 1 client;
 *          SEARCH_PROFILE_CPU=1 prints the service's CPU profile of the 16-client phase.
 */
import { Session } from 'node:inspector/promises';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'undici';
import { buildService, loadConfig, openSql } from '@svc/deploy';
import { MemoryTextIndex, PgTextIndex, SearchCatalogue } from '@svc/search';
import type { CatalogueItem, Passage, TextSearch } from '@svc/domain';
import { QUERIES } from '../src/relevance/corpus';
import { OPERATOR_TOKEN, ROOT, type Bootstrap } from '../src/support/service';
import { benchAccountInProcess } from './account';
import { printProfile, type Profile } from './cpu-profile';
import { closedLoop, type LoadResult } from './load';
import { startHttpService } from './http';
import { basePassages, SEARCH_SCHEMA, syntheticPassage } from './search';
import { stealNote } from './steal';

const mode = process.argv[2] ?? 'inject';
const seconds = Number(process.argv[3] ?? 8);
const chunks = Number(process.argv[4] ?? 100_000);
const PER_ITEM = 100;

/** A data directory with `chunks` passages in the live tenant's context (built once, then reused). */
async function dataDir(): Promise<string> {
  if (process.env.SEARCH_PROFILE_DIR) return process.env.SEARCH_PROFILE_DIR;
  const dir = join(ROOT, '.cache', `profile-search-${chunks}`);
  if (existsSync(join(dir, 'loaded.json'))) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const t0 = performance.now();
  const service = await buildService(
    loadConfig({ DATA_DIR: dir, PORT: '0', OPERATOR_TOKEN, LOG_LEVEL: 'silent' } as NodeJS.ProcessEnv),
    () => {},
  );
  const boot = JSON.parse(readFileSync(join(dir, 'bootstrap.json'), 'utf8')) as Bootstrap;
  const headers = { authorization: `Bearer ${boot.tenants.live.rootKey}`, 'content-type': 'application/json' };
  const s = await service.app.inject({
    method: 'POST',
    url: '/v1/schemas',
    headers,
    payload: JSON.stringify(SEARCH_SCHEMA),
  });
  if (s.statusCode !== 201) throw new Error(s.body);
  const schemaId = JSON.parse(s.body).id as string;
  await service.close();
  const { tenantId, contextId } = boot.tenants.live;
  const sql = await openSql({ dataDir: join(dir, 'pg-search') }); // the search side's own database (SEARCH_DB=separate)
  const text = new PgTextIndex(sql, { sqlSearch: false }); // as the service keeps it on PGlite
  const catalogue = new SearchCatalogue(sql);
  await text.init();
  await catalogue.init();
  const bases = basePassages(128);
  for (let start = 0; start < chunks; start += PER_ITEM) {
    const itemId = `bench-item-${start}`;
    const passages: Passage[] = [];
    for (let k = 0; k < PER_ITEM && start + k < chunks; k++) {
      const p = syntheticPassage(start + k, bases);
      passages.push({ chunkNo: k, chunkText: p.text, contextText: p.text });
    }
    const createdAt = new Date(Date.UTC(2024, 0, 1) + start * 1000).toISOString();
    const attrs = { typeName: SEARCH_SCHEMA.typeName, status: 'ACTIVE', schemaId, indexMode: 'HYBRID' };
    const ci: CatalogueItem = {
      itemId,
      tenantId,
      contextId,
      accountId: boot.accountId,
      sourceType: 'record',
      typeName: SEARCH_SCHEMA.typeName,
      schemaId,
      externalId: null,
      indexMode: 'HYBRID',
      folderId: null,
      userId: null,
      scopes: [],
      attrs,
      createdAt,
      metadata: {
        typeName: SEARCH_SCHEMA.typeName,
        schemaId,
        externalId: null,
        status: 'ACTIVE',
        folderId: null,
        userId: null,
        scopes: [],
        attributes: attrs,
      },
      revision: 0,
      vectors: passages.length,
    };
    await text.replaceItem({ ...ci, passages });
    await catalogue.put(ci);
  }
  await sql.close();
  writeFileSync(join(dir, 'loaded.json'), JSON.stringify({ chunks }));
  console.log(`loaded ${chunks} passages in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return dir;
}

const searchMode = process.env.SEARCH_PROFILE_MODE ?? 'TEXT';
/**
 * SEARCH_PROFILE_RAG=1: POST /v1/rag (built-in model, limit 10) instead of /v1/search, to see what an answer adds to
 * its search.
 */
const rag = !!process.env.SEARCH_PROFILE_RAG;
const path = rag ? '/v1/rag' : '/v1/search';
const body = (seq: number) => {
  const query = process.env.SEARCH_PROFILE_QUERY ?? QUERIES[seq % QUERIES.length].q;
  return JSON.stringify(
    rag ? { query, search: { mode: searchMode, limit: 10 } } : { query, mode: searchMode, limit: 20 },
  );
};
const line = (name: string, r: LoadResult) =>
  `${name}: ${Math.round(r.opsPerSec)}/s, p50 ${r.p50.toFixed(1)} p90 ${r.p90.toFixed(1)} p99 ` +
  `${r.p99.toFixed(1)} max ${r.max.toFixed(1)} ms, ${r.errors} ` +
  `errors${r.firstError ? ` (${r.firstError})` : ''}${stealNote(r.steal)}`;

async function http(src: string) {
  // A copy: the service writes to its data directory.
  const dir = `${src}-run`;
  rmSync(dir, { recursive: true, force: true });
  cpSync(src, dir, { recursive: true });
  // SEARCH_PROFILE_CPU=1: the service's CPU profile of the 16-client phase (cpu-profile-child.mjs).
  const profileOut = join(ROOT, '.cache', 'bench-search-http.cpuprofile');
  const profiling = process.env.SEARCH_PROFILE_CPU === '1';
  const tracing = !profiling && !!(process.env.SEARCH_PROFILE_TRACE_GC || process.env.SEARCH_PROFILE_STALLS);
  rmSync(profileOut, { force: true });
  const svc = await startHttpService(
    dir,
    profiling || tracing
      ? {
          ...(profiling
            ? { SVC_PROFILE_OUT: profileOut }
            : process.env.SEARCH_PROFILE_STALLS
              ? { SVC_STALLS: '1' }
              : { SVC_TRACE_GC: '1' }),
          NODE_OPTIONS:
            `${process.env.NODE_OPTIONS ?? ''} --import ${join(import.meta.dirname, 'cpu-profile-child.mjs')}`.trim(),
        }
      : {},
  );
  const pool = new Pool(svc.url, { connections: 16, pipelining: 1 });
  const headers = { authorization: `Bearer ${svc.bootstrap.tenants.live.rootKey}`, 'content-type': 'application/json' };
  let size = 0;
  /** CPU time (user + system, ms) of the service process so far, from /proc. */
  const cpu = () => {
    const f = readFileSync(`/proc/${svc.child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  };
  let cpu0 = 0;
  let client0 = process.cpuUsage();
  const measured = async (concurrency: number, warmupMs: number, durationMs: number) => {
    const r = await closedLoop({
      concurrency,
      warmupMs,
      durationMs,
      op,
      yieldEveryMs: Number(process.env.SEARCH_PROFILE_YIELD ?? 50),
      onMeasureStart: async () => {
        if ((profiling || tracing) && concurrency === 16) svc.child.kill('SIGUSR2');
        cpu0 = cpu();
        client0 = process.cpuUsage();
      },
    });
    const cpuPerReq = (cpu() - cpu0) / r.ops;
    const c = process.cpuUsage(client0);
    console.log(`load generator CPU ${((c.user + c.system) / 1000 / r.ops).toFixed(2)} ms/request`);
    if (tracing && concurrency === 16) svc.child.kill('SIGUSR2');
    if (profiling && concurrency === 16) {
      svc.child.kill('SIGUSR2');
      for (let i = 0; i < 100 && !existsSync(profileOut); i++) await new Promise((res) => setTimeout(res, 100));
      printProfile(JSON.parse(readFileSync(profileOut, 'utf8')) as Profile, r.ops, 30);
    }
    return { r, cpuPerReq };
  };
  const op = async (_w: number, seq: number) => {
    const res = await pool.request({ method: 'POST', path: '/v1/search', headers, body: body(seq) });
    const t = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${t.slice(0, 200)}`);
    size = t.length;
  };
  try {
    // SEARCH_PROFILE_FIRST=SEMANTIC: one search in that mode first (as the bench starts: the model and the vectors
    // loaded too).
    if (process.env.SEARCH_PROFILE_FIRST) {
      const res = await pool.request({
        method: 'POST',
        path: '/v1/search',
        headers,
        body: JSON.stringify({ query: 'first query after start', mode: process.env.SEARCH_PROFILE_FIRST, limit: 20 }),
      });
      await res.body.text();
    }
    const w0 = performance.now();
    await op(0, 0);
    console.log(`first ${searchMode} query (loads the context): ${Math.round(performance.now() - w0)} ms`);
    // Every query once (the query-vector cache then holds them all, as in the bench's rotating runs).
    for (let i = 1; i < QUERIES.length; i++) await op(0, i);
    const m16 = await measured(16, 1500, seconds * 1000);
    console.log(
      `${line(`HTTP ${searchMode} 16 clients, ${chunks} chunks`, m16.r)}; service CPU ` +
        `${m16.cpuPerReq.toFixed(2)} ms/request`,
    );
    const m1 = await measured(1, 500, Math.max(2000, (seconds * 1000) / 2));
    console.log(
      `${line(`HTTP ${searchMode} 1 client, ${chunks} chunks`, m1.r)}; service CPU ` +
        `${m1.cpuPerReq.toFixed(2)} ms/request`,
    );
    console.log(`response size ${size} bytes`);
    if (process.env.SEARCH_PROFILE_LOG) console.log(svc.output().slice(-3000));
    // the service's whole output (e.g. SVC_V8_FLAGS traces)
    if (process.env.SEARCH_PROFILE_OUT) writeFileSync(process.env.SEARCH_PROFILE_OUT, svc.output());
    if (process.env.SEARCH_PROFILE_STALLS)
      console.log(
        svc
          .output()
          .split('\n')
          .filter((l) => l.startsWith('STALLS'))
          .join('\n'),
      );
    if (process.env.SEARCH_PROFILE_TRACE_GC) {
      const out = svc.output();
      const lines = out
        .slice(out.indexOf('MEASURE START'), out.indexOf('MEASURE END'))
        .split('\n')
        .filter((l) => /Scavenge|Mark-Compact|Mark-sweep/i.test(l));
      const ms = (l: string) => Number(/([\d.]+) \/ [\d.]+ ms/.exec(l)?.[1] ?? 0);
      for (const kind of ['Scavenge', 'Mark-Compact']) {
        const xs = lines
          .filter((l) => l.includes(kind))
          .map(ms)
          .sort((a, b) => a - b);
        if (process.env.SEARCH_PROFILE_LOG)
          for (const l of lines.filter((x) => x.includes(kind)).slice(0, 6)) console.log(l.trim());
        console.log(
          `${kind} (16-client phase): ${xs.length} pauses, total ` +
            `${xs.reduce((a, b) => a + b, 0).toFixed(0)} ms, p50 ${xs[xs.length >> 1] ?? 0} max ` +
            `${xs.at(-1) ?? 0} ms`,
        );
      }
    }
  } finally {
    await pool.close();
    await svc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function inject(src: string) {
  const dir = `${src}-run`;
  rmSync(dir, { recursive: true, force: true });
  cpSync(src, dir, { recursive: true });
  // The operations switches pass through (METERING=0 etc.), to compare their cost in one profile.
  const switches = Object.fromEntries(
    ['METERING', 'RATE_LIMITS', 'ACTIVITY_LOG']
      .filter((k) => process.env[k] !== undefined)
      .map((k) => [k, process.env[k]]),
  );
  const service = await buildService(
    loadConfig({ DATA_DIR: dir, PORT: '0', OPERATOR_TOKEN, LOG_LEVEL: 'silent', ...switches } as NodeJS.ProcessEnv),
    () => {},
  );
  const boot = JSON.parse(readFileSync(join(dir, 'bootstrap.json'), 'utf8')) as Bootstrap;
  const headers = { authorization: `Bearer ${boot.tenants.live.rootKey}`, 'content-type': 'application/json' };
  await benchAccountInProcess(service.app, boot);
  const op = async (_w: number, seq: number) => {
    const r = await service.app.inject({ method: 'POST', url: path, headers, payload: body(seq) });
    if (r.statusCode !== 200) throw new Error(`${r.statusCode} ${r.body.slice(0, 200)}`);
  };
  const w0 = performance.now();
  await op(0, 0);
  console.log(`first ${searchMode} query (loads the context): ${Math.round(performance.now() - w0)} ms`);
  await closedLoop({ concurrency: 16, warmupMs: 0, durationMs: 2000, op, yieldEveryMs: 0 });
  if (process.env.SEARCH_PROFILE_SEQ)
    console.log(
      line(
        'inject TEXT 1 client',
        await closedLoop({ concurrency: 1, warmupMs: 0, durationMs: 3000, op, yieldEveryMs: 0 }),
      ),
    );
  const session = new Session();
  session.connect();
  // SEARCH_PROFILE_HEAP=1: allocation sites instead of CPU, bytes allocated per request by function (sampled every 16
  // KiB, kept or not).
  const heap = process.env.SEARCH_PROFILE_HEAP === '1';
  if (heap) {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 16384,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    } as never);
  } else {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
  }
  const r = await closedLoop({ concurrency: 16, warmupMs: 0, durationMs: seconds * 1000, op, yieldEveryMs: 0 });
  const { profile } = (await session.post(heap ? 'HeapProfiler.stopSampling' : 'Profiler.stop')) as unknown as {
    profile: Profile & { head: HeapNode };
  };
  session.disconnect();
  await service.close();
  rmSync(dir, { recursive: true, force: true });
  console.log(line(`inject ${searchMode} 16 clients, ${chunks} chunks${heap ? ' (heap sampling)' : ''}`, r));
  if (heap) return printHeap(profile.head, r.ops);
  writeFileSync(join(ROOT, '.cache', 'bench-search-text.cpuprofile'), JSON.stringify(profile));
  printProfile(profile, r.ops, 30);
}

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}
/** Sampled allocation per request by allocating function (self), the 30 largest. */
function printHeap(head: HeapNode, ops: number) {
  const by = new Map<string, number>();
  let total = 0;
  const walk = (n: HeapNode) => {
    const f = n.callFrame;
    const key =
      `${f.functionName || '(anonymous)'}  ` +
      `${f.url.replace(/^.*node_modules\//, '').replace(/^.*\/work\/main\//, '')}:${f.lineNumber + 1}`;
    by.set(key, (by.get(key) ?? 0) + n.selfSize);
    total += n.selfSize;
    n.children.forEach(walk);
  };
  walk(head);
  console.log(`allocated ${(total / ops / 1024).toFixed(1)} KiB per request (sampled)`);
  for (const [k, v] of [...by].sort((a, b) => b[1] - a[1]).slice(0, 30))
    console.log(`  ${(v / ops / 1024).toFixed(2).padStart(7)} KiB  ${k}`);
}

/**
 * The in-memory text index over a copy of the data directory (the service would write to the original), for the live
 * context.
 */
async function textIndexCopy(src: string) {
  const dir = `${src}-run`;
  rmSync(dir, { recursive: true, force: true });
  cpSync(src, dir, { recursive: true });
  const boot = JSON.parse(readFileSync(join(dir, 'bootstrap.json'), 'utf8')) as Bootstrap;
  const sql = await openSql({ dataDir: join(dir, 'pg-search') }); // the search side's own database (SEARCH_DB=separate)
  return {
    text: new MemoryTextIndex(new PgTextIndex(sql, { sqlSearch: false })), // as the service keeps it on PGlite
    filter: { tenantId: boot.tenants.live.tenantId, contextId: boot.tenants.live.contextId, clauses: [] },
    async close() {
      await sql.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The text index alone (no HTTP): MemoryTextIndex.search (limit 100, as the route asks) and hydrate of the first 20,
 * per query.
 */
async function engine(src: string) {
  const { text, filter, close } = await textIndexCopy(src);
  const q = (seq: number): TextSearch => ({
    filter,
    query: QUERIES[seq % QUERIES.length].q,
    textMode: 'OR',
    slop: 0,
    limit: Number(process.env.SEARCH_ENGINE_LIMIT ?? 100),
    trackTotal: process.env.SEARCH_ENGINE_TOTAL === '1',
    ...(process.env.SEARCH_ENGINE_PAGE ? { limit: 20, countUpTo: 100 } : {}),
    // SEARCH_ENGINE_PAGE=1: as the route asks a TEXT page (limit 20, countUpTo 100); the route's trackTotal: false
    // unless SEARCH_ENGINE_TOTAL=1; SEARCH_ENGINE_LIMIT: another k
  });
  let t0 = performance.now();
  await text.search(q(0));
  console.log(`shard load: ${Math.round(performance.now() - t0)} ms`);
  for (let rep = 0; rep < Number(process.env.SEARCH_ENGINE_REPS ?? 3); rep++) {
    let tS = 0;
    let tH = 0;
    let total = 0;
    const c0 = process.cpuUsage();
    for (let i = 0; i < QUERIES.length * 4; i++) {
      t0 = performance.now();
      const r = await text.search(q(i));
      const t1 = performance.now();
      await text.hydrate(r.hits.slice(0, 20), q(i));
      tS += t1 - t0;
      tH += performance.now() - t1;
      total += r.total;
    }
    const n = QUERIES.length * 4;
    const c = process.cpuUsage(c0);
    if (process.env.SEARCH_ENGINE_PER_QUERY && rep === 0)
      for (let i = 0; i < QUERIES.length; i++) {
        const a = performance.now();
        for (let j = 0; j < 5; j++) await text.search(q(i));
        const r = await text.search(q(i));
        console.log(
          `  ${((performance.now() - a) / 6).toFixed(3)} ms  ${String(r.total).padStart(6)} matches  ${QUERIES[i].q}`,
        );
      }
    console.log(
      `engine: search ${(tS / n).toFixed(3)} ms, hydrate(20) ${(tH / n).toFixed(3)} ms per query (wall); ` +
        `process CPU ${((c.user + c.system) / 1000 / n).toFixed(3)} ms per query; mean matches ` +
        `${Math.round(total / n)}`,
    );
  }
  await close();
}

/**
 * Every query in every text mode (and a few COMPLEX forms): hits, totals, page text and snippets, as JSON to argv[5]
 * (to diff two builds).
 */
async function dump(src: string, out: string) {
  const { text, filter, close } = await textIndexCopy(src);
  const res: unknown[] = [];
  for (const { q: query } of QUERIES) {
    const w = query.split(/\s+/);
    const complex = [
      `${w[0]} -${w[w.length - 1]}`,
      `"${w.slice(0, 2).join(' ')}" OR ${w[w.length - 1]}`,
      `(${w[0]} OR ${w[1] ?? 'x'}) AND NOT ${w[2] ?? 'y'}`,
    ];
    const runs: Array<[TextSearch['textMode'], string, number]> = [
      ['OR', query, 0],
      ['AND', query, 0],
      ['PHRASE', query, 0],
      ['PHRASE', query, 3],
      ['AND', w.slice(0, 2).join(' '), 0],
      ['PHRASE', w.slice(0, 2).join(' '), 1],
      ...complex.map((c) => ['COMPLEX', c, 0] as [TextSearch['textMode'], string, number]),
    ];
    for (const [textMode, qq, slop] of runs) {
      const ts: TextSearch = { filter, query: qq, textMode, slop, limit: 100 };
      const r = await text.search(ts);
      await text.hydrate(r.hits.slice(0, 20), ts);
      res.push({ textMode, qq, slop, total: r.total, hits: r.hits });
    }
  }
  writeFileSync(out, JSON.stringify(res, null, 1));
  console.log(`wrote ${res.length} searches to ${out}`);
  await close();
}

async function main() {
  const src = await dataDir();
  if (mode === 'dump') return dump(src, process.argv[5]);
  if (mode === 'http') await http(src);
  else if (mode === 'engine') await engine(src);
  else await inject(src);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
