/**
 * `tsx tests/bench/profile.ts [create|byid|list] [seconds]` (BENCH_WHATIF=... to try a fix,
 * BENCH_TRACE=1 to print a slice of the statement sequence; METERING=0 RATE_LIMITS=0 ACTIVITY_LOG=0
 * for the operations features off, as the service reads them; PROFILE_INDEX_MODE=TEXT|HYBRID|NONE creates the
 * searchable bench's notes, 500-700 character bodies, instead of the small bench item):
 * CPU profile (node:inspector) of one scenario, measured phase only, with the
 * service built in this process and requests through app.inject (the HTTP
 * numbers track the in-process ones: the cost is in the service, not the
 * socket). Prints self time by area and the hottest functions; the raw
 * .cpuprofile goes to .cache/bench-<scenario>.cpuprofile (open in Chrome
 * DevTools / speedscope).
 */
import { Session } from 'node:inspector/promises';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildService, loadConfig } from '@svc/deploy';
import { OPERATOR_TOKEN, ROOT, type Bootstrap } from '../src/support/service';
import { tempDir } from '../src/support/engines';
import { benchAccountInProcess } from './account';
import { printProfile, type Profile } from './cpu-profile';
import { closedLoop } from './load';
import { type IndexMode, noteBody, noteSchema } from './searchable';
import { BENCH_SCHEMA, createBody } from './workload';
import './whatif'; // BENCH_WHATIF=defer-flush|yield-sql|both applies a candidate fix first

const scenario = process.argv[2] ?? 'create';
const seconds = Number(process.argv[3] ?? 6);

async function main() {
  const d = tempDir('svc-bench-prof-');
  // Every request comes from one address: no per-IP flood ceiling (as every bench service), or `byid` gets 429s.
  const service = await buildService(
    loadConfig({
      EDGE_RATE_LIMIT_PER_MINUTE: '0',
      ...process.env,
      DATA_DIR: d.dir,
      PORT: '0',
      OPERATOR_TOKEN,
      LOG_LEVEL: 'silent',
    } as NodeJS.ProcessEnv),
    () => {},
  );
  const boot = JSON.parse(readFileSync(join(d.dir, 'bootstrap.json'), 'utf8')) as Bootstrap;
  const headers = { authorization: `Bearer ${boot.tenants.live.rootKey}`, 'content-type': 'application/json' };
  await benchAccountInProcess(service.app, boot);
  const mode = process.env.PROFILE_INDEX_MODE as IndexMode | undefined;
  const schema = mode ? noteSchema(mode) : BENCH_SCHEMA;
  const bodyOf = mode ? (seq: number) => noteBody(schema.typeName, seq) : createBody;
  const s = await service.app.inject({ method: 'POST', url: '/v1/schemas', headers, payload: JSON.stringify(schema) });
  if (s.statusCode !== 201) throw new Error(s.body);
  const ids: string[] = [];
  const create = async (seq: number) => {
    const r = await service.app.inject({ method: 'POST', url: '/v1/records', headers, payload: bodyOf(seq) });
    if (r.statusCode !== 201) throw new Error(`${r.statusCode} ${r.body}`);
    ids.push(JSON.parse(r.body).id);
  };
  // Statement census: wrap the service's Sql object (every adapter calls through it).
  const census = new Map<string, number>();
  let counting = false;
  const key = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 90);
  const trace: string[] = [];
  const count = (text: string) => {
    if (!counting) return;
    census.set(key(text), (census.get(key(text)) ?? 0) + 1);
    if (process.env.BENCH_TRACE && trace.length < 400)
      trace.push(`${performance.now().toFixed(2)} ${key(text).slice(0, 70)}`);
  };
  const sql = service.sql as unknown as Record<string, any>;
  const wrapQ = (q: Record<string, any>) => {
    const query = q.query.bind(q);
    const exec = q.exec.bind(q);
    return {
      ...q,
      query: (t: string, p?: unknown[]) => (count(t), batchOf(t, p), query(t, p)),
      exec: (t: string) => (count(t), exec(t)),
    };
  };
  // Group-commit and projection batch sizes.
  const appendBatches: number[] = [];
  const projectBatches: number[] = [];
  /**
   * Every read of the global log (empty ones too): with one shared reader, about one per batch whatever the number of
   * subscribers.
   */
  let logReads = 0;
  const batchOf = (t: string, p?: unknown[]) =>
    counting && t.includes('INSERT INTO es_events') && appendBatches.push((p?.[0] as unknown[]).length);
  const store = service.store as unknown as Record<string, any>;
  const readAll0 = store.readAll.bind(store);
  store.readAll = async (after: number, max: number) => {
    const ev = await readAll0(after, max);
    if (counting) logReads += 1;
    if (counting && ev.length) projectBatches.push(ev.length);
    return ev;
  };
  const { query: q0, exec: e0, tx: tx0 } = sql;
  sql.query = (t: string, p?: unknown[]) => (count(t), q0(t, p));
  sql.exec = (t: string) => (count(t), e0(t));
  sql.tx = (fn: (q: unknown) => Promise<unknown>) => (
    count('<tx BEGIN..COMMIT>'),
    tx0((q: Record<string, any>) => fn(wrapQ(q)))
  );

  if (process.env.BENCH_WHATIF) console.log(`what-if: ${process.env.BENCH_WHATIF} (tests/bench/whatif.ts)`);

  if (scenario !== 'create')
    for (let i = 0; i < 2000; i += 32) await Promise.all(Array.from({ length: 32 }, (_, k) => create(i + k)));
  const op =
    scenario === 'create'
      ? (_w: number, seq: number) => create(seq)
      : scenario === 'byid'
        ? async (_w: number, seq: number) => {
            const r = await service.app.inject({ method: 'GET', url: `/v1/records/${ids[seq % ids.length]}`, headers });
            if (r.statusCode !== 200) throw new Error(r.body);
          }
        : async () => {
            const r = await service.app.inject({
              method: 'GET',
              url: `/v1/records?type=${schema.typeName}&limit=20`,
              headers,
            });
            if (r.statusCode !== 200) throw new Error(r.body);
          };
  // The load yields to the event loop every PROFILE_YIELD_MS (default 50): inject answers in microtasks alone, so
  // without it timers and setImmediate never run during the measurement and the service's periodic work (the
  // activity log's batched writes, read metering's flushes) is left out of the profile. 0: no yield (as before
  // 2026-11-27; it made the operations features look 3x cheaper in process than over HTTP).
  const yieldEveryMs = Number(process.env.PROFILE_YIELD_MS ?? 50);
  // Warm up, then profile the measured phase only.
  await closedLoop({ concurrency: 32, warmupMs: 0, durationMs: 1500, op, yieldEveryMs });
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  counting = true;
  const r = await closedLoop({ concurrency: 32, warmupMs: 0, durationMs: seconds * 1000, op, yieldEveryMs });
  counting = false;
  const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
  session.disconnect();
  await service.close();
  d.remove();

  mkdirSync(join(ROOT, '.cache'), { recursive: true });
  writeFileSync(join(ROOT, '.cache', `bench-${scenario}.cpuprofile`), JSON.stringify(profile));
  console.log(
    `${scenario}: ${Math.round(r.opsPerSec)} ops/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ` +
      `ms, ${r.errors} errors${r.firstError ? ` (${r.firstError})` : ''}`,
  );

  if (process.env.BENCH_TRACE) console.log(trace.slice(200, 260).join('\n'));
  const checkpointWrites = () =>
    [...census].filter(([k]) => /^INSERT INTO (proj_)?checkpoints/i.test(k)).reduce((a, [, n]) => a + n, 0);
  const statements = [...census.values()].reduce((a, b) => a + b, 0);
  console.log(
    `\nSQL statements per op: ${(statements / r.ops).toFixed(2)} (incl. tx wrappers; BEGIN/COMMIT are 2 ` +
      `more round trips each)`,
  );
  const avg = (a: number[]) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : 0).toFixed(2);
  console.log(
    `log reads per op: ${(logReads / r.ops).toFixed(3)} (store.readAll calls, empty ones included); ` +
      `checkpoint writes per op: ${(checkpointWrites() / r.ops).toFixed(3)}`,
  );
  console.log(
    `append group-commit: ${appendBatches.length} transactions, ${avg(appendBatches)} events each (max ` +
      `${Math.max(0, ...appendBatches)}); projection: ${projectBatches.length} non-empty reads, ` +
      `${avg(projectBatches)} events each (max ${Math.max(0, ...projectBatches)})`,
  );
  for (const [k, n] of [...census].sort((x, y) => y[1] - x[1]).slice(0, 20))
    console.log(`  ${(n / r.ops).toFixed(2).padStart(6)}/op  ${k}`);

  printProfile(profile, r.ops);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
