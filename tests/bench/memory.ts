import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'undici';
import { BuiltinEmbedder } from '@svc/search';
import { freePort, ROOT, type Bootstrap } from '../src/support/service';
import { closedLoop } from './load';
import { children, type HttpService } from './http';
import { processTree } from './process-tree';
import { basePassages, baseVectors, loadDirect, SEARCH_SCHEMA } from './search';
import { BENCH_SCHEMA, createBody } from './workload';

/**
 * Section 13 (BENCH_ONLY=memory; issue 46): resident memory of the service and of every process it started (the
 * built-in model's processes), read from /proc/<pid>/smaps_rollup, for the build `npm start` runs (deploy/dist).
 *
 *  (a) idle on an empty data directory, BENCH_MEMORY_IDLE_MS after /readyz answered: the 400 MB target;
 *  (b) the same service after BENCH_MEMORY_RECORDS records created over HTTP (not searchable), idle again: the
 *      growth, extrapolated linearly to 100,000 records;
 *  (c) a second service after a first TEXT and SEMANTIC query (the model loaded, the keyword and vector indexes of
 *      the context in memory), then again after BENCH_MEMORY_PASSAGES passages were loaded through the adapters
 *      (search.ts's loadDirect, service stopped) and the same queries: the growth, extrapolated to 100,000 passages.
 */
export interface ProcessMemory {
  pid: number;
  /** 'service' (the process `npm start` runs) or 'model' (a built-in embedding model process) or 'other'. */
  kind: 'service' | 'model' | 'other';
  threads: number;
  rssMb: number;
  anonMb: number;
  fileMb: number;
  /** Proportional set size: shared pages (the node binary of the model processes) split between their users. */
  pssMb: number;
}
export interface TreeMemory {
  processes: ProcessMemory[];
  rssMb: number;
  pssMb: number;
}

const kb = (text: string, field: string) =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) / 1024;

/** The resident memory of `root` and every process below it, now. */
export function treeMemory(root: number): TreeMemory {
  const processes: ProcessMemory[] = [];
  for (const pid of processTree(root)) {
    try {
      const s = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      const threads = Number(/^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      const kind = pid === root ? 'service' : cmd.includes('embed-worker') ? 'model' : 'other';
      processes.push({
        pid,
        kind,
        threads,
        rssMb: kb(s, 'Rss'),
        anonMb: kb(s, 'Anonymous'),
        fileMb: kb(s, 'Pss_File'),
        pssMb: kb(s, 'Pss'),
      });
    } catch {
      /* exited meanwhile */
    }
  }
  return {
    processes,
    rssMb: processes.reduce((n, p) => n + p.rssMb, 0),
    pssMb: processes.reduce((n, p) => n + p.pssMb, 0),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Idle for `ms`, then the median of five samples a second apart (a GC or a timer can move one sample). */
async function idleMemory(svc: HttpService, ms: number): Promise<TreeMemory> {
  await sleep(ms);
  const samples: TreeMemory[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(treeMemory(svc.child.pid!));
    await sleep(1000);
  }
  return samples.sort((a, b) => a.rssMb - b.rssMb)[2];
}

async function ready(svc: HttpService): Promise<Record<string, unknown>> {
  for (const deadline = Date.now() + 180_000; ;) {
    const r = await fetch(`${svc.url}/readyz`);
    if (r.ok) return (await r.json()) as Record<string, unknown>;
    if (Date.now() > deadline) throw new Error(`/readyz did not answer 200: ${r.status} ${await r.text()}`);
    await sleep(200);
  }
}

/** The malloc setting `npm start` gives the service (package.json), which the bench gives it too. */
export function startMallocEnv(): Record<string, string> {
  const start = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
    .scripts.start;
  const m = /MALLOC_MMAP_THRESHOLD_=\$\{MALLOC_MMAP_THRESHOLD_:-(\d+)\}/.exec(start);
  if (!m) throw new Error(`package.json's start script sets no MALLOC_MMAP_THRESHOLD_: ${start}`);
  return { MALLOC_MMAP_THRESHOLD_: process.env.MALLOC_MMAP_THRESHOLD_ ?? m[1] };
}

/**
 * The service as `npm start` runs it (the compiled build, with its malloc setting) on `dataDir`. Its own spawn rather
 * than spawnService's: a start on a loaded two-core machine can take over a minute. Writes are not limited
 * (RATE_LIMITS=0, no edge ceiling): the bench writes from one address and one key.
 */
async function startCompiled(dataDir: string): Promise<HttpService> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    DEFAULT_PLAN: 'enterprise',
    RATE_LIMITS: '0',
    EDGE_RATE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: 'warn',
    ...startMallocEnv(),
  };
  for (const v of [
    'DATABASE_URL',
    'EVENTSTORE_URL',
    'KAFKA_BROKERS',
    'ELASTICSEARCH_URL',
    'LANCEDB_URI',
    'REDIS_URL',
    'OBJECT_STORE_URL',
    'EMBEDDINGS_URL',
    'LLM_URL',
  ])
    delete env[v];
  const child = spawn(process.execPath, ['--conditions=compiled', join(ROOT, 'deploy/dist/start.js')], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  child.stdout!.on('data', (d) => (out = (out + d).slice(-20_000)));
  child.stderr!.on('data', (d) => (out = (out + d).slice(-20_000)));
  const url = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 300_000; ; await sleep(250)) {
    if (child.exitCode !== null) throw new Error(`service exited early: ${out}`);
    if (Date.now() > deadline) throw new Error(`service did not start in 300 s: ${out}`);
    if (
      await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
  }
  return {
    url,
    dataDir,
    child,
    bootstrap: JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')) as Bootstrap,
    output: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((r) => child.once('exit', () => r()));
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(t);
      }
      children.delete(child);
    },
  };
}

export interface MemoryResults {
  idle: TreeMemory;
  /** Whether /readyz said the built-in model was loaded while idle. */
  modelLoadedIdle: boolean;
  records: { from: number; to: number; before: TreeMemory; after: TreeMemory; per100kMb: number };
  passages: { count: number; before: TreeMemory; after: TreeMemory; per100kMb: number };
  idleMs: number;
}

const search = async (svc: HttpService, key: string, mode: string) => {
  const r = await fetch(`${svc.url}/v1/search`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query: 'glacier history of the town', mode, limit: 20 }),
  });
  if (r.status !== 200) throw new Error(`search ${mode}: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { results?: unknown[] }).results ?? [];
};

export async function benchMemory(o: {
  newDir: (prefix: string) => string;
  idleMs: number;
  records: number;
  passages: number;
  log: (m: string) => void;
}): Promise<MemoryResults> {
  const proc = (p: ProcessMemory) =>
    `${p.kind} ${p.rssMb.toFixed(0)}: anon ${p.anonMb.toFixed(0)}, ${p.threads} threads`;
  const line = (t: TreeMemory) =>
    `${t.rssMb.toFixed(0)} MB RSS (${t.processes.map(proc).join('; ')}; PSS ${t.pssMb.toFixed(0)})`;

  // (a) + (b): one service on an empty data directory, then with records.
  let svc = await startCompiled(o.newDir('memory-'));
  let idle: TreeMemory;
  let modelLoadedIdle: boolean;
  let records: MemoryResults['records'];
  try {
    const r = await ready(svc);
    modelLoadedIdle = Boolean((r.embeddings as { loaded?: boolean } | undefined)?.loaded);
    idle = await idleMemory(svc, o.idleMs);
    o.log(`M0 idle, empty data directory: ${line(idle)}; model loaded: ${modelLoadedIdle}`);
    const root = svc.bootstrap.tenants.live.rootKey;
    const headers = { authorization: `Bearer ${root}`, 'content-type': 'application/json' };
    const pool = new Pool(svc.url, { connections: 8, pipelining: 1 });
    try {
      const s = await pool.request({
        method: 'POST',
        path: '/v1/schemas',
        headers,
        body: JSON.stringify(BENCH_SCHEMA),
      });
      if (s.statusCode !== 201) throw new Error(`schema create failed: ${s.statusCode} ${await s.body.text()}`);
      await s.body.text();
      // Creates until `upTo` records exist ('stop' ends a worker once they do).
      let n = 0;
      const createUpTo = async (upTo: number) => {
        const res = await closedLoop({
          concurrency: 8,
          warmupMs: 0,
          durationMs: 600_000,
          op: async () => {
            if (n >= upTo) return 'stop';
            const i = n++;
            const c = await pool.request({ method: 'POST', path: '/v1/records', headers, body: createBody(i) });
            await c.body.text();
            if (c.statusCode !== 201) throw new Error(`create ${c.statusCode}`);
          },
        });
        if (res.errors) throw new Error(`${res.errors} record creates failed: ${res.firstError}`);
        await ready(svc);
        return idleMemory(svc, o.idleMs);
      };
      // The first records also pay what does not grow with them (code compiled on the write path, caches and the
      // databases' buffer caches filling): the growth is measured from a fifth of the records to all of them.
      const first = Math.round(o.records / 5);
      const mid = await createUpTo(first);
      o.log(`M1a idle after ${first.toLocaleString('en-US')} records: ${line(mid)}`);
      const after = await createUpTo(o.records);
      records = {
        from: first,
        to: o.records,
        before: mid,
        after,
        per100kMb: ((after.rssMb - mid.rssMb) / (o.records - first)) * 100_000,
      };
      o.log(
        `M1 idle after ${o.records.toLocaleString('en-US')} records: ${line(after)}: ` +
          `${records.per100kMb.toFixed(0)} MB per 100,000 records (from ${first.toLocaleString('en-US')} to ` +
          `${o.records.toLocaleString('en-US')}, extrapolated linearly)`,
      );
    } finally {
      await pool.close();
    }
  } finally {
    await svc.stop();
  }

  // (c): passages, on a second data directory.
  const dir = o.newDir('memory-passages-');
  svc = await startCompiled(dir);
  const live = svc.bootstrap.tenants.live;
  let schemaId: string;
  let before: TreeMemory;
  try {
    await ready(svc);
    const s = await fetch(`${svc.url}/v1/schemas`, {
      method: 'POST',
      headers: { authorization: `Bearer ${live.rootKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(SEARCH_SCHEMA),
    });
    if (s.status !== 201) throw new Error(`schema create failed: ${s.status} ${await s.text()}`);
    schemaId = ((await s.json()) as { id: string }).id;
    await search(svc, live.rootKey, 'TEXT');
    await search(svc, live.rootKey, 'SEMANTIC');
    before = await idleMemory(svc, o.idleMs);
    o.log(`M2 idle after a first TEXT and SEMANTIC query, no passages (model loaded): ${line(before)}`);
  } finally {
    await svc.stop();
  }
  const bases = basePassages(128);
  const e = new BuiltinEmbedder();
  const vectors = await baseVectors(e, bases, o.log);
  await e.close();
  await loadDirect(dir, 0, o.passages, {
    tenantId: live.tenantId,
    contextId: live.contextId,
    accountId: svc.bootstrap.accountId,
    schemaId,
    bases,
    vectors,
  });
  svc = await startCompiled(dir);
  let after: TreeMemory;
  try {
    await ready(svc);
    const hits = [await search(svc, live.rootKey, 'TEXT'), await search(svc, live.rootKey, 'SEMANTIC')];
    if (hits.some((h) => h.length === 0))
      throw new Error('the loaded passages are not found: the measure would be of an empty index');
    after = await idleMemory(svc, o.idleMs);
  } finally {
    await svc.stop();
  }
  const passages = {
    count: o.passages,
    before,
    after,
    per100kMb: ((after.rssMb - before.rssMb) / o.passages) * 100_000,
  };
  o.log(
    `M3 idle after ${o.passages.toLocaleString('en-US')} passages (500-700 characters, 384-d vectors) and ` +
      `the same queries: ${line(after)}: ${passages.per100kMb.toFixed(0)} MB per 100,000 passages ` +
      `(extrapolated)`,
  );
  return { idle, modelLoadedIdle, records, passages, idleMs: o.idleMs };
}
