import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { PostgresEventStore } from '@svc/deploy';
import type { NewEvent } from '@svc/domain';
import { openSql } from '@svc/deploy';
import { freshPostgresSchema } from '../src/support/engines';
import { type Api, freePort, OPERATOR_TOKEN, spawnService } from '../src/support/service';
import { BENCH_ACCOUNT_TERMS } from './account';
import { children } from './http';
import type { LoadResult } from './load';

/**
 * Section 11 (BENCH_ONLY=rebuild; needs DATABASE_URL): the online rebuild of the read models on a large log.
 *
 * Three processes on a fresh PostgreSQL schema (projector, query, command; no Kafka: the projector follows the
 * event store itself). A schema with a searchable text field (BENCH_REBUILD_INDEX_MODE, default NONE: with TEXT the
 * search projector would index the same records on the same cores throughout) and a lookup field; one record
 * created through the API is the template of BENCH_REBUILD_EVENTS (default 1,000,000) RecordCreated events appended
 * straight through the event store adapter in appendMulti batches of 2,000 streams. The live projector applies them
 * (its catch-up rate is reported), then BENCH_REBUILD_CLIENTS (4) clients read the query process (GET by id of a
 * random appended record, and the first list page, alternating) for BENCH_REBUILD_QUIET_MS (15 s) before, during
 * POST /operator/rebuilds to its end, and BENCH_REBUILD_QUIET_MS after. Reported: the rebuild's events/s, the live
 * projector's pause at the switch, read latency p50/p99/max per phase, and failed reads (there must be none).
 */
export interface RebuildFigures {
  events: number;
  appendSeconds: number;
  liveCatchUp: { events: number; seconds: number };
  rebuild: {
    events: number;
    seconds: number;
    eventsPerSecond: number;
    pausedMs: number;
    state: string;
    error: string | null;
  };
  reads: Record<'before' | 'during' | 'after', { byId: LoadResult; list: LoadResult }>;
}

const envInt = (k: string, d: number) => (process.env[k] ? Number(process.env[k]) : d);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function summary(lat: number[], seconds: number, errors: number, firstError?: string): LoadResult {
  const s = [...lat].sort((a, b) => a - b);
  const q = (p: number) => (s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN);
  return {
    ops: s.length,
    seconds,
    opsPerSec: s.length / seconds,
    p50: q(0.5),
    p90: q(0.9),
    p99: q(0.99),
    max: s[s.length - 1] ?? NaN,
    errors,
    firstError,
  };
}

export async function benchRebuild(o: {
  dir: string;
  databaseUrl: string;
  log: (m: string) => void;
}): Promise<RebuildFigures> {
  const total = envInt('BENCH_REBUILD_EVENTS', 1_000_000);
  const clients = envInt('BENCH_REBUILD_CLIENTS', 4);
  const quietMs = envInt('BENCH_REBUILD_QUIET_MS', 15_000);
  const indexMode = process.env.BENCH_REBUILD_INDEX_MODE ?? 'NONE';
  const { log } = o;
  const schema = await freshPostgresSchema(o.databaseUrl);
  const env = { DATABASE_URL: schema.url, SERVICE_SECRET: `bench-${randomUUID()}`, EDGE_RATE_LIMIT_PER_MINUTE: '0' };
  const procs: ChildProcess[] = [];
  const start = async (role: string) => {
    const s = await spawnService(o.dir, await freePort(), { ...env, SERVICE_ROLE: role });
    children.add(s.child);
    procs.push(s.child);
    return s.api;
  };
  const db = new pg.Client({ connectionString: schema.url });
  await db.connect();
  const sql = await openSql({ databaseUrl: schema.url, poolSize: 4 });
  try {
    const projector = await start('projector');
    const query = await start('query');
    const command = await start('command');
    const boot = JSON.parse((await import('node:fs')).readFileSync(`${o.dir}/bootstrap.json`, 'utf8'));
    const token: string = boot.tenants.test.rootKey;
    const ok = async (p: Promise<{ status: number; text: string; body: any }>, status: number) => {
      const r = await p;
      if (r.status !== status) throw new Error(`expected ${status}, got ${r.status} ${r.text}`);
      return r.body;
    };
    await ok(
      command.call('PATCH', `/operator/accounts/${boot.accountId}`, {
        token: OPERATOR_TOKEN,
        body: BENCH_ACCOUNT_TERMS,
      }),
      200,
    );
    const typeName = 'rebuild_note';
    await ok(
      command.post('/v1/schemas', token, {
        typeName,
        displayName: 'Rebuild note',
        allowedSurfaces: ['record'],
        indexMode,
        fields: [
          { fieldId: 'title', fieldType: 'string', required: true },
          { fieldId: 'body', fieldType: 'string', searchable: indexMode !== 'NONE' },
          { fieldId: 'tag', fieldType: 'string', filterable: true },
        ],
        lookupFields: ['tag'],
      }),
      201,
    );
    const first = await ok(
      command.post('/v1/records', token, { typeName, payload: { title: 'template', body: 'x', tag: 't0' } }),
      201,
    );
    const store = await PostgresEventStore.open(sql);
    const [template] = (await store.readStream(`record-${first.id}`)).filter((e) => e.type === 'RecordCreated');

    // The log: `total` RecordCreated events, one stream each, appended in large all-or-nothing batches.
    const t0 = performance.now();
    const sample: string[] = [];
    const per = 2000;
    let appended = 0;
    let lastLog = t0;
    while (appended < total) {
      const n = Math.min(per, total - appended);
      const requests = Array.from({ length: n }, (_, i) => {
        const k = appended + i;
        const recordId = randomUUID();
        if (k % Math.max(1, Math.floor(total / 20_000)) === 0) sample.push(recordId);
        const payload = {
          title: `note ${k}`,
          body: `rebuild bench note ${k}: ${'lorem ipsum dolor sit amet '.repeat(4)}`,
          tag: `t${k % 16}`,
        };
        const event: NewEvent = {
          id: randomUUID(),
          type: 'RecordCreated',
          data: { ...(template.data as object), recordId, payload },
          metadata: { ...template.metadata, requestId: randomUUID(), occurredAt: new Date().toISOString() },
        } as NewEvent;
        return { streamId: `record-${recordId}`, events: [event], expectedRevision: 'no_stream' as const };
      });
      await store.appendMulti(requests);
      appended += n;
      if (performance.now() - lastLog > 10_000) {
        lastLog = performance.now();
        log(`R appended ${appended.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} events`);
      }
    }
    const appendSeconds = (performance.now() - t0) / 1000;
    log(`R appended ${total.toLocaleString('en-US')} events in ${appendSeconds.toFixed(1)} s`);

    // The live projector applies the backlog (a rebuild from scratch, as the serving read models are built).
    const checkpoint = async () => {
      const { rows } = await db.query(
        `SELECT (SELECT coalesce(max(position), 0) FROM es_events)::bigint AS head, (SELECT position FROM ` +
          `proj_checkpoints WHERE name = 'read-models')::bigint AS rm`,
      );
      return { head: Number(rows[0].head), rm: Number(rows[0].rm) };
    };
    const c0 = await checkpoint();
    const t1 = performance.now();
    for (let last = performance.now(); ;) {
      const c = await checkpoint();
      if (c.rm >= c.head) break;
      if (performance.now() - last > 15_000) {
        last = performance.now();
        log(`R live projector at ${c.rm.toLocaleString('en-US')} of ${c.head.toLocaleString('en-US')}`);
      }
      await sleep(500);
    }
    const liveCatchUp = { events: (await checkpoint()).rm - c0.rm, seconds: (performance.now() - t1) / 1000 };
    log(`R live projector caught up: ${liveCatchUp.events} events in ${liveCatchUp.seconds.toFixed(1)} s`);

    // Readers through the query process, by phase.
    type Phase = 'before' | 'during' | 'after';
    const lat: Record<
      Phase,
      { byId: number[]; list: number[]; errors: number; firstError?: string; startedAt: number; endedAt: number }
    > = {
      before: { byId: [], list: [], errors: 0, startedAt: 0, endedAt: 0 },
      during: { byId: [], list: [], errors: 0, startedAt: 0, endedAt: 0 },
      after: { byId: [], list: [], errors: 0, startedAt: 0, endedAt: 0 },
    };
    let phase: Phase = 'before';
    let running = true;
    lat.before.startedAt = performance.now();
    const reader = async (api: Api, k: number) => {
      for (let i = k; running; i++) {
        const p = lat[phase];
        const started = performance.now();
        const list = i % 2 === 1;
        const r = await (
          list
            ? api.get(`/v1/records?type=${typeName}&limit=50`, token)
            : api.get(`/v1/records/${sample[(i * 7919) % sample.length]}`, token)
        ).catch((e) => ({ status: 0, text: String(e) }));
        (list ? p.list : p.byId).push(performance.now() - started);
        if (r.status !== 200) {
          p.errors += 1;
          p.firstError ??= `${r.status} ${r.text.slice(0, 200)}`;
        }
      }
    };
    const readers = Array.from({ length: clients }, (_, k) => reader(query, k));
    await sleep(quietMs);
    lat.before.endedAt = lat.during.startedAt = performance.now();
    phase = 'during';
    const started = await ok(projector.post('/operator/rebuilds', OPERATOR_TOKEN, { target: 'read-models' }), 202);
    let state: any = started;
    for (let last = 0; state.state === 'building' || state.state === 'switching';) {
      await sleep(500);
      state = await ok(projector.get(`/operator/rebuilds/${started.id}`, OPERATOR_TOKEN), 200);
      if (performance.now() - last > 15_000) {
        last = performance.now();
        log(
          `R rebuild ${state.state}: ${state.position.toLocaleString('en-US')} of ` +
            `${state.head.toLocaleString('en-US')}, ${state.eventsPerSecond} events/s`,
        );
      }
    }
    lat.during.endedAt = lat.after.startedAt = performance.now();
    phase = 'after';
    await sleep(quietMs);
    lat.after.endedAt = performance.now();
    running = false;
    await Promise.all(readers);
    const seconds = (Date.parse(state.finishedAt) - Date.parse(state.startedAt)) / 1000;
    log(`R rebuild ${state.state}: ${JSON.stringify(state)}`);
    const reads = Object.fromEntries(
      (['before', 'during', 'after'] as Phase[]).map((ph) => {
        const p = lat[ph];
        const s = (p.endedAt - p.startedAt) / 1000;
        return [ph, { byId: summary(p.byId, s, p.errors, p.firstError), list: summary(p.list, s, 0) }];
      }),
    ) as RebuildFigures['reads'];
    return {
      events: total,
      appendSeconds,
      liveCatchUp,
      rebuild: {
        events: state.events,
        seconds,
        eventsPerSecond: state.eventsPerSecond,
        pausedMs: state.pausedMs,
        state: state.state,
        error: state.error,
      },
      reads,
    };
  } finally {
    for (const c of procs) {
      c.kill('SIGTERM');
      children.delete(c);
    }
    await sleep(2000);
    for (const c of procs) if (c.exitCode === null) c.kill('SIGKILL');
    await db.end();
    await sql.close();
    await schema.drop();
  }
}
