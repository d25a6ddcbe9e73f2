/**
 * Two builds side by side (BENCH_ONLY=ab): the records and search workloads run against this checkout's compiled
 * build and another checkout's (BENCH_AB_BASE, a directory holding a built clone: `npm ci` builds it), alternating
 * the order every round, each round on fresh services. It answers "did this change move the records or search
 * figures?" with both builds measured on the same machine in the same minutes, as the figures of runs an hour apart
 * cannot.
 *
 * Per round and build: 32 clients create records of a schema with one TEXT-searchable field (BENCH_AB_MS each
 * phase, default 5,000), then, once the last record is searchable, get by id over the created records and TEXT search
 * (16 clients, limit 10). Printed: each build's figures summed over the rounds and the ratio this / base.
 *
 *   BENCH_AB_BASE=/path/to/other/clone BENCH_ONLY=ab npm run bench
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { closedLoop, type LoadResult, sumLoads } from './load';
import { startHttpService } from './http';
import { clientOf, createSchema, noteBody, noteSchema } from './searchable';
import { tempDir } from '../src/support/engines';

export interface AbFigures {
  create: LoadResult;
  get: LoadResult;
  search: LoadResult;
}
export interface AbBench {
  base: string;
  rounds: number;
  here: AbFigures;
  other: AbFigures;
  ratio: { create: number; get: number; search: number };
}

const WORDS = ['protein', 'cell', 'patients', 'effect', 'gene', 'risk', 'cancer', 'expression', 'clinical', 'model'];

async function measure(root: string, phaseMs: number): Promise<AbFigures> {
  const dir = tempDir('svc-bench-ab-');
  const svc = await startHttpService(dir.dir, { SERVICE_ROOT: root });
  const c = clientOf(svc, 32);
  try {
    await createSchema(c, 'TEXT');
    const typeName = noteSchema('TEXT').typeName;
    const ids: string[] = [];
    const create = await closedLoop({
      concurrency: 32,
      warmupMs: 1000,
      durationMs: phaseMs,
      op: async (_w, seq) => {
        const r = await c.post('/v1/records', noteBody(typeName, seq));
        if (r.status !== 201) throw new Error(`POST /v1/records ${r.status}: ${r.text.slice(0, 200)}`);
        ids.push(/"id":"([^"]+)"/.exec(r.text)![1]);
      },
    });
    // Searchable before the reads are measured: the last record created is found by its title.
    const last = ids[ids.length - 1];
    const deadline = Date.now() + 120_000;
    for (;;) {
      const r = await c.get(`/v1/records/${last}`);
      if (r.status === 200 && /"indexStatus":"INDEXED"/.test(r.text)) break;
      if (Date.now() > deadline) throw new Error(`record ${last} not INDEXED within 120 s: ${r.text.slice(0, 200)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const get = await closedLoop({
      concurrency: 32,
      warmupMs: 1000,
      durationMs: phaseMs,
      op: async (_w, seq) => {
        const r = await c.get(`/v1/records/${ids[seq % ids.length]}`);
        if (r.status !== 200) throw new Error(`GET /v1/records/:id ${r.status}`);
      },
    });
    const search = await closedLoop({
      concurrency: 16,
      warmupMs: 1000,
      durationMs: phaseMs,
      op: async (_w, seq) => {
        const query = `${WORDS[seq % WORDS.length]} ${WORDS[(seq * 7 + 3) % WORDS.length]}`;
        const r = await c.post('/v1/search', JSON.stringify({ query, mode: 'TEXT', limit: 10 }));
        if (r.status !== 200) throw new Error(`POST /v1/search ${r.status}: ${r.text.slice(0, 200)}`);
      },
    });
    return { create, get, search };
  } finally {
    await c.close();
    await svc.stop();
    dir.remove();
  }
}

export async function benchAb(log: (m: string) => void = console.log): Promise<AbBench> {
  const base = process.env.BENCH_AB_BASE;
  if (!base) throw new Error('BENCH_AB_BASE: the directory of the other (built) clone to compare with');
  const other = resolve(base);
  const here = resolve(import.meta.dirname, '../..');
  for (const root of [here, other])
    if (!existsSync(join(root, 'deploy/dist/start.js')))
      throw new Error(`${root} has no compiled build (deploy/dist/start.js): run npm run build there`);
  const rounds = Number(process.env.BENCH_AB_ROUNDS ?? 4);
  const phaseMs = Number(process.env.BENCH_AB_MS ?? 5000);
  // Both builds run compiled, as `npm start` runs them.
  const runtime = process.env.SERVICE_RUNTIME;
  process.env.SERVICE_RUNTIME = 'compiled';
  const runs: Record<'here' | 'other', AbFigures[]> = { here: [], other: [] };
  try {
    for (let k = 0; k < rounds; k++) {
      const order: Array<'here' | 'other'> = k % 2 === 0 ? ['here', 'other'] : ['other', 'here'];
      for (const which of order) {
        const f = await measure(which === 'here' ? here : other, phaseMs);
        runs[which].push(f);
        const build = which === 'here' ? 'this build' : 'base';
        log(
          `ab: round ${k + 1} ${build}: create ${f.create.opsPerSec.toFixed(0)}/s, ` +
            `get ${f.get.opsPerSec.toFixed(0)}/s, TEXT search ${f.search.opsPerSec.toFixed(0)}/s`,
        );
      }
    }
  } finally {
    if (runtime === undefined) delete process.env.SERVICE_RUNTIME;
    else process.env.SERVICE_RUNTIME = runtime;
  }
  const sum = (fs: AbFigures[]): AbFigures => ({
    create: sumLoads(fs.map((f) => f.create)),
    get: sumLoads(fs.map((f) => f.get)),
    search: sumLoads(fs.map((f) => f.search)),
  });
  const h = sum(runs.here);
  const o = sum(runs.other);
  const ratio = {
    create: h.create.opsPerSec / o.create.opsPerSec,
    get: h.get.opsPerSec / o.get.opsPerSec,
    search: h.search.opsPerSec / o.search.opsPerSec,
  };
  for (const k of ['create', 'get', 'search'] as const)
    log(
      `ab: ${k}: this build ${h[k].opsPerSec.toFixed(0)}/s (p99 ${h[k].p99.toFixed(1)} ms) vs base ` +
        `${o[k].opsPerSec.toFixed(0)}/s (p99 ${o[k].p99.toFixed(1)} ms) = ${ratio[k].toFixed(3)}x ` +
        `(${Math.abs(ratio[k] - 1) <= 0.05 ? 'within' : 'OUTSIDE'} ±5%)`,
    );
  return { base: other, rounds, here: h, other: o, ratio };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  benchAb().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
