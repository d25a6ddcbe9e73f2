import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Pool } from 'undici';
import type { Principal } from '@svc/contracts/http/principal';
import { openPglite } from '@svc/deploy/engines/sql';
import { ActivityRecorder } from '@svc/deploy/activity/recorder';
import { ActivityLogStore } from '@svc/query-api/activity/store';
import { OPERATOR_TOKEN } from '../src/support/service';
import { startHttpService } from './http';
import { closedLoop, type LoadResult } from './load';
import type { Timing } from './raw';
import { BENCH_SCHEMA, createBody } from './workload';

/**
 * Cost of the activity log (BENCH_ONLY=activity-log): record create over HTTP
 * (the H2 workload: 32 connections, one small record a request) against a
 * service with the log on and one with ACTIVITY_LOG=0, each a fresh child
 * process on a fresh data directory. Variants alternate over `rounds` (off/on,
 * then on/off, ...) so drift in the machine's load falls on both; the ratio is
 * of the summed throughput. Target: the log costs under 10 % of throughput.
 */
export interface ActivityBench {
  on: LoadResult;
  off: LoadResult;
  /** on / off throughput. */
  ratio: number;
  rounds: Array<{ on: LoadResult; off: LoadResult }>;
  /** Entries the log held for the measured creates of the last "on" run (at least; the query caps at 500), and for an "off" run. */
  logged: { on: number; off: number };
  /** The recorder alone, in this process on PGlite: CPU time per entry on the request's thread (onResponse) and to write it (batched INSERTs). */
  micro: { entries: number; onResponseUs: number; writeUs: number };
}

/**
 * The recorder alone, in this process, on an embedded database: microseconds
 * per entry for `onResponse` (what every request pays after its response) and
 * for the batched write (paid once per 500 entries, off the request path).
 * Measured in CPU time (process.cpuUsage: PGlite runs on this thread), so
 * other load on the machine does not inflate it, unlike the HTTP ratio.
 */
export async function recorderMicro(dir: string, entries = 20_000) {
  const sql = await openPglite(join(dir, 'pg'));
  try {
    const store = new ActivityLogStore(sql);
    await store.init();
    const rec = new ActivityRecorder({ store, flushEveryMs: 3_600_000, maxBuffered: entries * 2 });
    const p = { credentialId: randomUUID(), kind: 'root', accountId: 'a', tenantId: randomUUID(), environment: 'live', contextId: randomUUID(), crossContext: true, allowedActions: ['*'], dataScope: null, userId: null, wireVersionPin: null } as Principal;
    const reqs = Array.from({ length: 1000 }, () => ({ url: '/v1/records', method: 'POST', id: randomUUID(), headers: {}, principal: p }) as unknown as FastifyRequest);
    const reply = { statusCode: 201 } as FastifyReply;
    // The batch trigger would flush during the loop: measure the hand-off alone, then the writes.
    let handoff = 0;
    let write = 0;
    const cpu = (c: NodeJS.CpuUsage) => c.user + c.system;
    for (let done = 0; done < entries; done += 500) {
      const t0 = process.cpuUsage();
      for (let i = 0; i < 500; i++) rec.onResponse(reqs[(done + i) % reqs.length], reply, 3.2);
      handoff += cpu(process.cpuUsage(t0));
      const t1 = process.cpuUsage();
      await rec.flush();
      write += cpu(process.cpuUsage(t1));
    }
    await rec.close();
    return { entries, onResponseUs: handoff / entries, writeUs: write / entries };
  } finally {
    await sql.close();
  }
}

async function oneRun(dataDir: string, on: boolean, t: Timing & { createMs: number }, childEnv: Record<string, string>) {
  // No per-IP ceiling and no per-account burst limit in the way: an enterprise account with a negotiated limit far above the load.
  const svc = await startHttpService(dataDir, { ...childEnv, ACTIVITY_LOG: on ? '1' : '0', EDGE_RATE_LIMIT_PER_MINUTE: '0' });
  const pool = new Pool(svc.url, { connections: t.concurrency, pipelining: 1 });
  try {
    const acct = await pool.request({
      method: 'POST',
      path: '/operator/accounts',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ plan: 'enterprise', rateLimitPerMinute: 100_000_000, creditLimit: 1_000_000_000_000 }),
    });
    const acctText = await acct.body.text();
    if (acct.statusCode !== 201) throw new Error(`account create failed: ${acct.statusCode} ${acctText}`);
    const root = JSON.parse(acctText).tenants.live.rootKey as string;
    const headers = { authorization: `Bearer ${root}`, 'content-type': 'application/json' };
    const s = await pool.request({ method: 'POST', path: '/v1/schemas', headers, body: JSON.stringify(BENCH_SCHEMA) });
    const sText = await s.body.text();
    if (s.statusCode !== 201) throw new Error(`schema create failed: ${s.statusCode} ${sText}`);
    const create = await closedLoop({
      concurrency: t.concurrency,
      warmupMs: t.warmupMs,
      durationMs: t.createMs,
      op: async (_w, seq) => {
        const res = await pool.request({ method: 'POST', path: '/v1/records', headers, body: createBody(seq) });
        const text = await res.body.text();
        if (res.statusCode !== 201) throw new Error(`POST /v1/records ${res.statusCode}: ${text.slice(0, 200)}`);
      },
    });
    // The entries of the run (the log lags by a flush period): on, there are many; off, none.
    await new Promise((r) => setTimeout(r, 1000));
    const l = await pool.request({ method: 'GET', path: '/v1/admin/logs?resource=records&method=POST&limit=500', headers: { authorization: headers.authorization } });
    const body = (await l.body.json()) as { entries?: unknown[] };
    if (l.statusCode !== 200) throw new Error(`GET /v1/admin/logs ${l.statusCode}: ${JSON.stringify(body)}`);
    return { create, logged: body.entries?.length ?? 0 };
  } catch (e) {
    console.error(svc.output().slice(-4000));
    throw e;
  } finally {
    await pool.close();
    await svc.stop();
  }
}

const sum = (rs: LoadResult[]): LoadResult => {
  const ops = rs.reduce((a, r) => a + r.ops, 0);
  const seconds = rs.reduce((a, r) => a + r.seconds, 0);
  const mean = (k: 'p50' | 'p90' | 'p99') => rs.reduce((a, r) => a + r[k], 0) / rs.length;
  return {
    ops,
    seconds,
    opsPerSec: ops / seconds,
    p50: mean('p50'),
    p90: mean('p90'),
    p99: mean('p99'),
    max: Math.max(...rs.map((r) => r.max)),
    errors: rs.reduce((a, r) => a + r.errors, 0),
    firstError: rs.find((r) => r.firstError)?.firstError,
  };
};

export async function benchActivityLog(o: {
  newDir: (prefix: string) => string;
  timing: Timing & { createMs: number };
  rounds: number;
  childEnv?: Record<string, string>;
  log: (m: string) => void;
}): Promise<ActivityBench> {
  const rounds: ActivityBench['rounds'] = [];
  const logged = { on: 0, off: 0 };
  for (let i = 0; i < o.rounds; i++) {
    const order = i % 2 === 0 ? [false, true] : [true, false];
    const got: Partial<Record<'on' | 'off', LoadResult>> = {};
    for (const on of order) {
      const r = await oneRun(o.newDir(on ? 'al-on-' : 'al-off-'), on, o.timing, o.childEnv ?? {});
      got[on ? 'on' : 'off'] = r.create;
      logged[on ? 'on' : 'off'] = r.logged;
      const c = r.create;
      o.log(`A${i + 1} create, activity log ${on ? 'on ' : 'off'}: ${Math.round(c.opsPerSec)} ops/s, p50 ${c.p50.toFixed(1)} ms, p99 ${c.p99.toFixed(1)} ms (${c.ops} ops${c.errors ? `, ${c.errors} errors: ${c.firstError}` : ''}); log entries seen: ${r.logged}`);
    }
    rounds.push({ on: got.on!, off: got.off! });
  }
  const micro = await recorderMicro(o.newDir('al-micro-'));
  o.log(`A recorder alone: onResponse ${micro.onResponseUs.toFixed(2)} µs/entry, batched write ${micro.writeUs.toFixed(2)} µs/entry (${micro.entries} entries, PGlite)`);
  if (rounds.length === 0) return { on: sum([]), off: sum([]), ratio: NaN, rounds, logged, micro };
  const on = sum(rounds.map((r) => r.on));
  const off = sum(rounds.map((r) => r.off));
  return { on, off, ratio: on.opsPerSec / off.opsPerSec, rounds, logged, micro };
}
