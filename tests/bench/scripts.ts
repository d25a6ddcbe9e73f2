/**
 * Script execution benchmark (issue 18): executions per second (p50 / p99, 16 clients) of a script that reads one
 * record and writes one, against the same two REST calls (GET then PATCH) from the same clients; and the cold-start
 * cost of an isolate: a sandbox thread's start, and a fresh QuickJS runtime + context per execution (a trivial
 * script's wall clock inside the thread, and its round trip through the pool).
 *
 *   npx tsx tests/bench/scripts.ts        (BENCH_SCRIPT_MS, default 5000; BENCH_SCRIPT_CLIENTS, default 16)
 *
 * The service runs in this process on the embedded engines (RATE_LIMITS=0). Results: .cache/bench-scripts.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxPool } from '@svc/command-api';
import { ROOT, startService, type Api } from '../src/support/service';

const envInt = (k: string, d: number) => (process.env[k] ? Number(process.env[k]) : d);
const DURATION = envInt('BENCH_SCRIPT_MS', 5000);
const CLIENTS = envInt('BENCH_SCRIPT_CLIENTS', 16);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

interface Row {
  name: string;
  ops: number;
  opsPerSec: number;
  p50: number;
  p99: number;
  errors: number;
}

async function load(name: string, op: (client: number, i: number) => Promise<boolean>): Promise<Row> {
  const latencies: number[] = [];
  let errors = 0;
  const end = Date.now() + DURATION;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; Date.now() < end; i++) {
        const t = performance.now();
        if (await op(c, i)) latencies.push(performance.now() - t);
        else errors++;
      }
    }),
  );
  const secs = (Date.now() - started) / 1000;
  return {
    name,
    ops: latencies.length,
    opsPerSec: Math.round(latencies.length / secs),
    p50: +pct(latencies, 50).toFixed(1),
    p99: +pct(latencies, 99).toFixed(1),
    errors,
  };
}

async function coldStart() {
  const limits = { timeoutMs: 15_000, memoryBytes: 64 << 20, stackBytes: 512 << 10, maxHostCalls: 1000 };
  const host = { methods: {}, call: async () => undefined };
  const pool = new SandboxPool({ threads: 1 });
  try {
    const t0 = performance.now();
    const first = await pool.run('export default () => 1', '{}', limits, host);
    const threadStartMs = performance.now() - t0;
    const inside: number[] = [];
    const roundTrip: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t = performance.now();
      const r = await pool.run('export default (input) => input.n + 1', JSON.stringify({ n: i }), limits, host);
      roundTrip.push(performance.now() - t);
      inside.push(r.durationMs);
    }
    return {
      threadStartMs: +threadStartMs.toFixed(1),
      firstOk: first.ok,
      runtimePerExecutionP50Ms: pct(inside, 50),
      roundTripP50Ms: +pct(roundTrip, 50).toFixed(2),
      roundTripP99Ms: +pct(roundTrip, 99).toFixed(2),
    };
  } finally {
    await pool.close();
  }
}

export interface ScriptBench {
  clients: number;
  durationMs: number;
  rows: Row[];
  ratio: number;
  coldStart: Awaited<ReturnType<typeof coldStart>>;
}

/** Runs both loads and the cold-start probe; `npm run bench` (tests/bench/run.ts, section 8) prints the rows. */
export async function benchScripts(): Promise<ScriptBench> {
  const svc = await startService({ env: { RATE_LIMITS: '0' } });
  try {
    const api: Api = svc.api;
    const root = svc.bootstrap.tenants.live.rootKey;
    // At most 4 executions run at once per app context: the clients are spread over one context per 4 clients,
    // each with its schema, its script and, per client, a record to read and one to write (no contention).
    const contexts: string[] = [];
    for (let k = 0; k < Math.ceil(CLIENTS / 4); k++) {
      const ctx = await api.post('/v1/contexts', root, { name: `bench-${k}` });
      if (ctx.status !== 201) throw new Error(ctx.text);
      contexts.push(ctx.body.id);
    }
    const call = (c: number, method: string, path: string, body?: unknown) =>
      api.call(method, path, { token: root, body, headers: { 'x-context-id': contexts[Math.floor(c / 4)] } });
    for (let k = 0; k < contexts.length; k++) {
      const schema = await call(k * 4, 'POST', '/v1/schemas', {
        typeName: 'BenchScript',
        displayName: 'Bench',
        allowedSurfaces: ['record'],
      });
      if (schema.status !== 201) throw new Error(schema.text);
      const push = await call(k * 4, 'POST', '/v1/scripts', {
        name: 'bench-copy',
        source:
          `export default async (input) => { const r = await records.get(input.params.from); await ` +
          `records.patch(input.params.to, { payload: { n: r.payload.n + input.params.i } }); return 1 }`,
      });
      if (push.status !== 201) throw new Error(push.text);
    }
    const pairs: Array<{ from: string; to: string }> = [];
    for (let c = 0; c < CLIENTS; c++) {
      const from = await call(c, 'POST', '/v1/records', { typeName: 'BenchScript', payload: { n: c } });
      const to = await call(c, 'POST', '/v1/records', { typeName: 'BenchScript', payload: { n: 0 } });
      pairs.push({ from: from.body.id, to: to.body.id });
    }
    const exec = await load('POST /v1/scripts/execute (get + patch in the script)', async (c, i) => {
      const r = await call(c, 'POST', '/v1/scripts/execute', {
        scriptRef: { name: 'bench-copy' },
        input: { ...pairs[c], i },
      });
      return r.status === 200;
    });
    const rest = await load('GET /v1/records/:id then PATCH /v1/records/:id', async (c, i) => {
      const g = await call(c, 'GET', `/v1/records/${pairs[c].from}`);
      if (g.status !== 200) return false;
      const p = await call(c, 'PATCH', `/v1/records/${pairs[c].to}`, { payload: { n: g.body.payload.n + i } });
      return p.status === 200;
    });
    const cold = await coldStart();
    const out = {
      clients: CLIENTS,
      durationMs: DURATION,
      rows: [exec, rest],
      ratio: +(exec.opsPerSec / Math.max(1, rest.opsPerSec)).toFixed(2),
      coldStart: cold,
    };
    mkdirSync(join(ROOT, '.cache'), { recursive: true });
    writeFileSync(join(ROOT, '.cache', 'bench-scripts.json'), JSON.stringify(out, null, 2));
    return out;
  } finally {
    await svc.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await benchScripts(), null, 2));
