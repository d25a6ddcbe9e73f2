/**
 * `tsx tests/bench/profile-ops.ts [on|off] [seconds]`: the service's own CPU profile (cpu-profile-child.mjs)
 * of record creates over HTTP, 32 connections, as the operations bench sends them, with metering, burst
 * limits and the activity log on or off. Prints self time per area and per function in ms per create, to
 * find what the operations features cost over HTTP (`BENCH_ONLY=operations`) beyond what an in-process
 * profile shows. OPS_HEAP=1: bytes allocated per create by function instead (V8's sampling heap profiler). The raw
 * profile goes to .cache/bench-ops-<on|off>.cpuprofile.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'undici';
import { OPERATOR_TOKEN, ROOT } from '../src/support/service';
import { tempDir } from '../src/support/engines';
import { printHeapProfileFile, printProfileFile, printSqlCensus, threadCpu } from './cpu-profile';
import { startHttpService } from './http';
import { closedLoop } from './load';
import { BENCH_SCHEMA, createBody } from './workload';
import { noteBody, noteSchema } from './searchable';
import { stealNote } from './steal';

const on = (process.argv[2] ?? 'on') === 'on';
const seconds = Number(process.argv[3] ?? 8);
/** OPS_ON: which switches "on" turns on (default all three), to take one feature at a time. */
/**
 * OPS_NOTE=NONE|TEXT: the searchable bench's note schema and 500-700 character bodies instead of the records bench's.
 */
const OPS_NOTE = process.env.OPS_NOTE as 'NONE' | 'TEXT' | undefined;
const onSet = (process.env.OPS_ON ?? 'METERING,RATE_LIMITS,ACTIVITY_LOG').split(',');
const flag = (k: string) => (on && onSet.includes(k) ? '1' : '0');
const out = join(ROOT, '.cache', `bench-ops-${on ? 'on' : 'off'}.cpuprofile`);
rmSync(out, { force: true });
const d = tempDir('svc-prof-ops-');
const svc = await startHttpService(d.dir, {
  METERING: flag('METERING'),
  RATE_LIMITS: flag('RATE_LIMITS'),
  ACTIVITY_LOG: flag('ACTIVITY_LOG'),
  EDGE_RATE_LIMIT_PER_MINUTE: '0',
  ...(process.env.OPS_TRACE_GC ? { SVC_TRACE_GC: '1' } : {}),
  ...(process.env.OPS_STALLS ? { SVC_STALLS: '1', SVC_STALLS_LIST: '1' } : {}),
  ...(process.env.OPS_SQL_CENSUS ? { SVC_SQL_CENSUS: '1' } : {}),
  ...(process.env.SVC_V8_FLAGS ? { SVC_V8_FLAGS: process.env.SVC_V8_FLAGS } : {}),
  ...(process.env.OPS_HEAP ? { SVC_HEAP_PROFILE: '1' } : {}),
  ...{
    SVC_PROFILE_OUT: out,
    NODE_OPTIONS:
      `${process.env.NODE_OPTIONS ?? ''} --import ${join(import.meta.dirname, 'cpu-profile-child.mjs')}`.trim(),
  },
});
let t0 = new Map<string, number>();
/** The projection runners' batches and events so far (/readyz): events per batch is how much group commit batches. */
const runners = async () => {
  const res = await pool.request({ method: 'GET', path: '/readyz' });
  const body = (await res.body.json()) as { projections?: Array<{ name?: string; batches: number; events: number }> };
  return body.projections ?? [];
};
let r0: Awaited<ReturnType<typeof runners>> = [];
const pool = new Pool(svc.url, { connections: 32, pipelining: 1 });
try {
  const acct = await pool.request({
    method: 'POST',
    path: '/operator/accounts',
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ plan: 'enterprise', rateLimitPerMinute: 100_000_000, creditLimit: 1_000_000_000_000 }),
  });
  const root = JSON.parse(await acct.body.text()).tenants.live.rootKey as string;
  const headers = { authorization: `Bearer ${root}`, 'content-type': 'application/json' };
  const s = await pool.request({
    method: 'POST',
    path: '/v1/schemas',
    headers,
    body: JSON.stringify(OPS_NOTE ? noteSchema(OPS_NOTE) : BENCH_SCHEMA),
  });
  if (s.statusCode !== 201) throw new Error(await s.body.text());
  await s.body.text();
  const r = await closedLoop({
    concurrency: 32,
    warmupMs: 1500,
    durationMs: seconds * 1000,
    onMeasureStart: async () => {
      t0 = threadCpu(svc.child.pid!);
      r0 = await runners();
      if (
        !process.env.OPS_NO_PROFILE ||
        process.env.OPS_TRACE_GC ||
        process.env.OPS_SQL_CENSUS ||
        process.env.OPS_STALLS
      )
        svc.child.kill('SIGUSR2');
    },
    op: async (_w, seq) => {
      const res = await pool.request({
        method: 'POST',
        path: '/v1/records',
        headers,
        body: OPS_NOTE ? noteBody(noteSchema(OPS_NOTE).typeName, seq) : createBody(seq),
      });
      const t = await res.body.text();
      if (res.statusCode !== 201) throw new Error(`${res.statusCode} ${t.slice(0, 200)}`);
    },
  });
  if (svc.child.exitCode !== null) throw new Error(`service exited: ${svc.output().slice(-2000)}`);
  const t1 = threadCpu(svc.child.pid!);
  const r1 = await runners();
  const ran = r1.map(
    (x, i) =>
      `${x.name ?? i}: ${x.events - (r0[i]?.events ?? 0)} events in ${x.batches - (r0[i]?.batches ?? 0)} batches`,
  );
  console.log(`projection runners: ${ran.join('; ')}`);
  if (!process.env.OPS_NO_PROFILE || process.env.OPS_TRACE_GC || process.env.OPS_SQL_CENSUS || process.env.OPS_STALLS)
    svc.child.kill('SIGUSR2');
  const per = [...t1]
    .map(([k, v]) => [k, (v - (t0.get(k) ?? 0)) / r.ops] as const)
    .filter(([, v]) => v > 0.001)
    .sort((a, b) => b[1] - a[1]);
  console.log(
    `service threads, CPU ms per create: ${per.map(([k, v]) => `${k} ${v.toFixed(3)}`).join(', ')}; total ` +
      `${per.reduce((a, [, v]) => a + v, 0).toFixed(3)}`,
  );
  console.log(
    `features ${on ? 'on' : 'off'}: ${Math.round(r.opsPerSec)}/s, p50 ${r.p50.toFixed(1)} p99 ` +
      `${r.p99.toFixed(1)} ms${stealNote(r.steal)}`,
  );
  if (process.env.OPS_SQL_CENSUS) {
    await printSqlCensus(svc.output, r.ops, 'create');
  } else if (process.env.OPS_STALLS) {
    await new Promise((res) => setTimeout(res, 300));
    for (const l of svc
      .output()
      .split('\n')
      .filter((x) => /^STALL/.test(x)))
      console.log(l);
  } else if (process.env.OPS_TRACE_GC) {
    await new Promise((res) => setTimeout(res, 300));
    const o = svc.output();
    const lines = o.slice(o.indexOf('MEASURE START'), o.indexOf('MEASURE END')).split('\n');
    const ms = (l: string) => Number(/([\d.]+) \/ [\d.]+ ms/.exec(l)?.[1] ?? 0);
    for (const kind of ['Scavenge', 'Mark-Compact']) {
      const xs = lines.filter((l) => l.includes(kind)).map(ms);
      console.log(
        `${kind}: ${xs.length} pauses, ${xs.reduce((a, b) => a + b, 0).toFixed(0)} ms in all, ` +
          `${(xs.reduce((a, b) => a + b, 0) / r.ops).toFixed(3)} ms per create`,
      );
    }
  } else if (process.env.OPS_HEAP) {
    await printHeapProfileFile(out, r.ops);
  } else if (!process.env.OPS_NO_PROFILE) {
    await printProfileFile(out, r.ops);
  }
} finally {
  await pool.close();
  await svc.stop();
  d.remove();
}
