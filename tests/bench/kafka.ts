import { randomBytes, randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { Pool } from 'undici';
import { deriveKey, EVENT_SCHEMA_VERSION, type EventMetadata } from '@svc/contracts';
import { type CommandDeps, commit, PayloadSealer, PostgresEventStore } from '@svc/command-api';
import { openSql } from '@svc/deploy';
import { streams } from '@svc/domain';
import { freshPostgresSchema, tempDir } from '../src/support/engines';
import { freePort, spawnService, type Bootstrap } from '../src/support/service';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Topology } from '../src/kafka/topology';
import { children } from './http';
import { percentile, type LoadResult } from './load';
import { BENCH_SCHEMA, benchPayload, createBody } from './workload';

/**
 * Section 5 (`BENCH_ONLY=kafka`, needs KAFKA_BROKERS and DATABASE_URL): the
 * relay and the Kafka feed on PostgreSQL.
 *
 *  K1  end to end: N RecordCreated events appended through the event store
 *      port (commit(), 32 concurrent committers, no read-model wait) into a
 *      fresh schema while the split-role topology runs (relay, projector,
 *      query, command as processes: tests/src/kafka/topology.ts); the clock
 *      runs from the first append to the projector's `read-models` checkpoint
 *      reaching the head of the log.
 *  RKf the same appends with a projector process without Kafka (catch-up
 *      subscription on the store): the same projection work, no relay, no broker.
 *  RKk kafkajs alone: N messages of about the relay's size (key, ~300 B value,
 *      the relay's 11 headers) through an idempotent acks=all producer (batches
 *      of 500, one request in flight, as the relay) to a consumer group.
 *  K2  sustained writes: POST /v1/records at a fixed rate (open loop) to the
 *      command role; the response waits for the read models (read-your-writes),
 *      so its latency is write -> visible. Every 100 ms a sampler reads the head
 *      of the log and the read-models checkpoint: lag in events, and in time
 *      (age of the oldest unapplied event, from the sample at which the head
 *      first passed the checkpoint; 100 ms resolution).
 */
export interface E2eResult {
  events: number;
  appendSeconds: number;
  /** First append -> relay checkpoint at head (Kafka acknowledged everything); NaN without a relay. */
  relaySeconds: number;
  /** First append -> read-models checkpoint at head. */
  seconds: number;
}

export interface KafkaBenchResult {
  e2e: E2eResult;
  rawFeed: E2eResult;
  rawKafka: { messages: number; valueBytes: number; seconds: number };
  lag: LagResult;
  /** K2 without Kafka: the service as one process (SERVICE_ROLE=all, catch-up projections) on its own schema. */
  rawLag: LagResult;
}

export interface LagResult {
    targetRate: number;
    seconds: number;
    create: LoadResult;
    lagEvents: { p50: number; p99: number; max: number };
    lagMs: { p50: number; p99: number; max: number };
    samples: number;
    projectorFeed: unknown;
}

export interface KafkaBenchOptions {
  brokers: string;
  databaseUrl: string;
  events: number;
  rate: number;
  seconds: number;
  log: (m: string) => void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const metadata = (): EventMetadata => ({
  tenantId: 'bench-tenant',
  contextId: 'bench-context',
  accountId: 'bench-account',
  actorKeyId: 'bench-key',
  userId: null,
  requestId: randomUUID(),
  occurredAt: new Date().toISOString(),
  schemaVersion: EVENT_SCHEMA_VERSION,
});

async function checkpoints(c: pg.Client): Promise<{ head: number; cp: Record<string, number> }> {
  const { rows } = await c.query<{ name: string; position: string }>(
    `SELECT '$head' AS name, coalesce(max(position), 0)::bigint AS position FROM es_events UNION ALL SELECT name, position FROM proj_checkpoints`,
  );
  const cp: Record<string, number> = {};
  for (const r of rows) cp[r.name] = Number(r.position);
  return { head: cp.$head, cp };
}

/**
 * Appends `events` RecordCreated (after one SchemaCreated, applied first) to the
 * schema at `url` and times the subscribers in another process until the
 * read-models checkpoint reaches the head.
 */
async function appendAndWait(url: string, events: number, withRelay: boolean, log: (m: string) => void): Promise<E2eResult> {
  const sql = await openSql({ databaseUrl: url, poolSize: 8 });
  const store = await PostgresEventStore.open(sql);
  const probe = new pg.Client({ connectionString: url });
  await probe.connect();
  try {
    const secret = Buffer.from('bench-secret');
    const deps: CommandDeps = {
      store,
      barrier: { waitFor: async () => true },
      ids: { newId: () => randomUUID() },
      sealer: new PayloadSealer(deriveKey(secret, 'payload-seal'), deriveKey(secret, 'blind-index')),
    };
    const schemaId = randomUUID();
    const first = await commit(deps, metadata(), [
      { streamId: streams.schema(schemaId), events: [{ type: 'SchemaCreated', data: { schemaId, typeName: BENCH_SCHEMA.typeName, definition: BENCH_SCHEMA } }], expectedRevision: 'no_stream' },
    ]);
    // Warm: the subscribers have applied the schema (and, with Kafka, the group is joined and assigned).
    const warmBy = Date.now() + 120_000;
    while (((await checkpoints(probe)).cp['read-models'] ?? -1) < first) {
      if (Date.now() > warmBy) throw new Error('the projector did not apply the first event within 120 s');
      await sleep(50);
    }
    let seq = 0;
    const t0 = performance.now();
    let appendEnd = 0;
    const appender = async () => {
      while (seq < events) {
        const n = seq++;
        const recordId = randomUUID();
        const data = {
          recordId, schemaId, schemaVersion: 1, typeName: BENCH_SCHEMA.typeName, payload: benchPayload(n),
          status: 'ACTIVE', folderId: null, userId: null, scopes: [], externalId: null, indexMode: 'NONE',
        };
        await commit(deps, metadata(), [{ streamId: streams.record(recordId), events: [{ type: 'RecordCreated', data }] as never, expectedRevision: 'no_stream' }]);
      }
    };
    const appending = Promise.all(Array.from({ length: 32 }, appender)).then(() => {
      appendEnd = performance.now();
    });
    let relayAt = NaN;
    let doneAt = 0;
    let lastLog = t0;
    for (;;) {
      await sleep(20);
      const { head, cp } = await checkpoints(probe);
      const now = performance.now();
      const appended = appendEnd > 0;
      if (appended && withRelay && Number.isNaN(relayAt) && (cp['kafka-relay'] ?? 0) >= head) relayAt = now;
      if (appended && (cp['read-models'] ?? 0) >= head) {
        doneAt = now;
        break;
      }
      if (now - lastLog > 5000) {
        lastLog = now;
        log(`  head ${head}, relay ${cp['kafka-relay'] ?? '-'}, read-models ${cp['read-models']}${appended ? '' : ` (appending, ${seq}/${events})`}`);
      }
      if (now - t0 > 600_000) throw new Error(`read models did not reach the head within 600 s (head ${head}, read-models ${cp['read-models']})`);
    }
    await appending;
    return { events, appendSeconds: (appendEnd - t0) / 1000, relaySeconds: (relayAt - t0) / 1000, seconds: (doneAt - t0) / 1000 };
  } finally {
    await probe.end().catch(() => {});
    await store.close();
    await sql.close();
  }
}

/** RKf: a projector process without Kafka (catch-up subscription) on its own schema. */
async function rawFeed(databaseUrl: string, events: number, log: (m: string) => void): Promise<E2eResult> {
  const schema = await freshPostgresSchema(databaseUrl);
  const dir = tempDir('svc-bench-kproj-');
  const s = await spawnService(dir.dir, await freePort(), { DATABASE_URL: schema.url, SERVICE_ROLE: 'projector', SERVICE_SECRET: `secret-${randomUUID()}` });
  children.add(s.child);
  try {
    return await appendAndWait(schema.url, events, false, log);
  } finally {
    const exited = new Promise<void>((r) => (s.child.exitCode !== null ? r() : s.child.once('exit', () => r())));
    s.child.kill('SIGTERM');
    const t = setTimeout(() => s.child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(t);
    children.delete(s.child);
    await schema.drop().catch(() => {});
    dir.remove();
  }
}

/** RKk: kafkajs producer -> consumer group round trip of `n` relay-sized messages. */
async function rawKafka(brokers: string, n: number): Promise<{ messages: number; valueBytes: number; seconds: number }> {
  const kafka = new Kafka({ clientId: 'svc-bench', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
  const topic = `bench.${randomUUID().slice(0, 8)}.raw`;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
  const consumer = kafka.consumer({ groupId: `${topic}.group`, sessionTimeout: 10_000 });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  const valueBytes = 300;
  try {
    let got = 0;
    let doneAt = 0;
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    const joined = new Promise<void>((r) => consumer.on(consumer.events.GROUP_JOIN, () => r()));
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachBatch: async ({ batch }) => {
        got += batch.messages.length;
        if (got >= n && !doneAt) {
          doneAt = performance.now();
          resolveDone();
        }
      },
    });
    await joined;
    await producer.connect();
    const value = randomBytes(valueBytes);
    const meta = randomBytes(120);
    const t0 = performance.now();
    for (let i = 0; i < n; i += 500) {
      const messages = [];
      for (let j = i; j < Math.min(n, i + 500); j++) {
        const id = randomUUID();
        messages.push({
          key: `record-${id}`,
          value,
          headers: {
            'content-type': 'avro/binary', 'svc-event-type': 'RecordCreated', 'svc-schema-fingerprint': '0123456789abcdef', 'svc-metadata': meta,
            'svc-metadata-fingerprint': '0123456789abcdef', 'svc-event-id': id, 'svc-stream-id': `record-${id}`, 'svc-revision': '0',
            'svc-position': String(j + 1), 'svc-prev-position': String(j),
          },
        });
      }
      await producer.send({ topic, acks: -1, messages });
    }
    await Promise.race([done, sleep(300_000).then(() => Promise.reject(new Error(`raw kafka: ${got}/${n} consumed after 300 s`)))]);
    return { messages: n, valueBytes, seconds: (doneAt - t0) / 1000 };
  } finally {
    await producer.disconnect().catch(() => {});
    await consumer.disconnect().catch(() => {});
    await admin.deleteTopics({ topics: [topic] }).catch(() => {});
    await admin.disconnect().catch(() => {});
  }
}

/** RK2: the same sustained load on the service as one process without Kafka. */
async function sustainedWithoutKafka(o: KafkaBenchOptions): Promise<LagResult> {
  const schema = await freshPostgresSchema(o.databaseUrl);
  const dir = tempDir('svc-bench-kall-');
  const s = await spawnService(dir.dir, await freePort(), { DATABASE_URL: schema.url, SERVICE_SECRET: `secret-${randomUUID()}` });
  children.add(s.child);
  try {
    const boot = JSON.parse(readFileSync(join(dir.dir, 'bootstrap.json'), 'utf8')) as Bootstrap;
    return await sustained({ rootKey: boot.tenants.live.rootKey, commandUrl: s.api.baseUrl, projectorUrl: s.api.baseUrl }, schema.url, o.rate, o.seconds);
  } finally {
    const exited = new Promise<void>((r) => (s.child.exitCode !== null ? r() : s.child.once('exit', () => r())));
    s.child.kill('SIGTERM');
    const t = setTimeout(() => s.child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(t);
    children.delete(s.child);
    await schema.drop().catch(() => {});
    dir.remove();
  }
}

/**
 * Open loop, bounded: at most this many writes in flight (one connection each,
 * so they queue in the service, not in the client); a write due while the bound
 * is reached is not sent and counted as an error. Each write holds its answer
 * until the read models have it, so the lag in events cannot exceed this bound.
 */
export const MAX_IN_FLIGHT = 256;

/** K2: creates at `rate`/s for `seconds` to the command role, lag sampled every 100 ms. */
async function sustained(t: { rootKey: string; commandUrl: string; projectorUrl: string }, url: string, rate: number, seconds: number): Promise<LagResult> {
  const headers = { authorization: `Bearer ${t.rootKey}`, 'content-type': 'application/json' };
  const commandUrl = t.commandUrl;
  const pool = new Pool(commandUrl, { connections: MAX_IN_FLIGHT, pipelining: 1 });
  const probe = new pg.Client({ connectionString: url });
  await probe.connect();
  try {
    const s = await pool.request({ method: 'POST', path: '/v1/schemas', headers, body: JSON.stringify(BENCH_SCHEMA) });
    const st = await s.body.text();
    if (s.statusCode !== 201) throw new Error(`schema create failed: ${s.statusCode} ${st}`);

    const latencies: number[] = [];
    let errors = 0;
    let firstError: string | undefined;
    let inFlight = 0;
    let skipped = 0;
    const pending = new Set<Promise<void>>();
    const write = async (seq: number) => {
      const a = performance.now();
      inFlight += 1;
      try {
        const res = await pool.request({ method: 'POST', path: '/v1/records', headers, body: createBody(seq) });
        const text = await res.body.text();
        if (res.statusCode !== 201) throw new Error(`POST /v1/records ${res.statusCode}: ${text.slice(0, 200)}`);
        latencies.push(performance.now() - a);
      } catch (e) {
        errors += 1;
        firstError ??= e instanceof Error ? e.message : String(e);
      } finally {
        inFlight -= 1;
      }
    };

    const lagEvents: number[] = [];
    const lagMs: number[] = [];
    const heads: Array<{ t: number; head: number }> = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const now = performance.now();
        const { head, cp } = await checkpoints(probe);
        heads.push({ t: now, head });
        const rm = cp['read-models'] ?? 0;
        lagEvents.push(Math.max(0, head - rm));
        // Age of the oldest unapplied event: when did a sample first see the head past the checkpoint?
        const since = rm >= head ? undefined : heads.find((h) => h.head > rm);
        lagMs.push(since ? now - since.t : 0);
        await sleep(Math.max(0, 100 - (performance.now() - now)));
      }
    })();

    const t0 = performance.now();
    const end = t0 + seconds * 1000;
    let seq = 0;
    while (performance.now() < end) {
      const due = Math.floor(((performance.now() - t0) / 1000) * rate);
      while (seq < due) {
        // Bound the open loop so an overloaded service is not buried (counted, reported).
        if (inFlight >= MAX_IN_FLIGHT) {
          skipped += due - seq;
          seq = due;
          break;
        }
        const p = write(seq++);
        pending.add(p);
        void p.finally(() => pending.delete(p));
      }
      await sleep(2);
    }
    await Promise.all(pending);
    const sentSeconds = (performance.now() - t0) / 1000;
    // Let the sampler see the tail settle.
    await sleep(300);
    sampling = false;
    await sampler;
    if (skipped) {
      errors += skipped;
      firstError ??= `${skipped} writes not sent: ${MAX_IN_FLIGHT} in flight`;
    }
    const sorted = Float64Array.from(latencies).sort();
    const sEv = Float64Array.from(lagEvents).sort();
    const sMs = Float64Array.from(lagMs).sort();
    const readyz = await fetch(`${t.projectorUrl}/readyz`).then((r) => r.json()).catch(() => null);
    return {
      targetRate: rate,
      seconds,
      create: {
        ops: latencies.length, seconds: sentSeconds, opsPerSec: latencies.length / sentSeconds,
        p50: percentile(sorted, 0.5), p90: percentile(sorted, 0.9), p99: percentile(sorted, 0.99), max: sorted.length ? sorted[sorted.length - 1] : NaN,
        errors, firstError,
      },
      lagEvents: { p50: percentile(sEv, 0.5), p99: percentile(sEv, 0.99), max: sEv.length ? sEv[sEv.length - 1] : NaN },
      lagMs: { p50: percentile(sMs, 0.5), p99: percentile(sMs, 0.99), max: sMs.length ? sMs[sMs.length - 1] : NaN },
      samples: lagEvents.length,
      projectorFeed: readyz,
    };
  } finally {
    await probe.end().catch(() => {});
    await pool.close();
  }
}

export async function benchKafka(o: KafkaBenchOptions): Promise<KafkaBenchResult> {
  o.log(`K raw: kafkajs producer -> consumer, ${o.events} messages`);
  const rk = await rawKafka(o.brokers, o.events);
  o.log(`RKk kafkajs round trip: ${Math.round(rk.messages / rk.seconds)} msg/s (${rk.seconds.toFixed(1)} s)`);

  o.log(`K raw: ${o.events} appends, projector process without Kafka (catch-up)`);
  const rf = await rawFeed(o.databaseUrl, o.events, o.log);
  o.log(`RKf catch-up feed: ${Math.round(rf.events / rf.seconds)} ev/s end to end (append ${rf.appendSeconds.toFixed(1)} s, applied at ${rf.seconds.toFixed(1)} s)`);

  o.log(`K raw: sustained ${o.rate} creates/s for ${o.seconds} s, one process (SERVICE_ROLE=all) without Kafka`);
  const rawLag = await sustainedWithoutKafka(o);
  o.log(`RK2 ${Math.round(rawLag.create.opsPerSec)} creates/s, write->visible p50 ${rawLag.create.p50.toFixed(0)} ms p99 ${rawLag.create.p99.toFixed(0)} ms; lag p50 ${rawLag.lagEvents.p50} / p99 ${rawLag.lagEvents.p99} events`);

  o.log('K topology: relay, projector, query, command on PostgreSQL + Kafka');
  const t = await Topology.start({ kafkaBrokers: o.brokers });
  for (const p of t.procs.values()) children.add(p.child);
  try {
    const e2e = await appendAndWait(t.env.DATABASE_URL, o.events, true, o.log);
    o.log(`K1 relay + Kafka: ${Math.round(e2e.events / e2e.seconds)} ev/s end to end (append ${e2e.appendSeconds.toFixed(1)} s, relay at head ${e2e.relaySeconds.toFixed(1)} s, read models at head ${e2e.seconds.toFixed(1)} s)`);
    o.log(`K2 sustained: ${o.rate} creates/s for ${o.seconds} s to the command role`);
    const port = (r: 'command' | 'projector') => `http://127.0.0.1:${t.role(r).port}`;
    const lag = await sustained({ rootKey: t.bootstrap.tenants.live.rootKey, commandUrl: port('command'), projectorUrl: port('projector') }, t.env.DATABASE_URL, o.rate, o.seconds);
    o.log(`K2 ${Math.round(lag.create.opsPerSec)} creates/s, write->visible p50 ${lag.create.p50.toFixed(0)} ms p99 ${lag.create.p99.toFixed(0)} ms; lag p50 ${lag.lagEvents.p50} / p99 ${lag.lagEvents.p99} events, ${lag.lagMs.p50.toFixed(0)} / ${lag.lagMs.p99.toFixed(0)} ms (${lag.samples} samples)`);
    return { e2e, rawFeed: rf, rawKafka: rk, lag, rawLag };
  } catch (e) {
    console.error(t.output());
    throw e;
  } finally {
    const procs = [...t.procs.values()].map((p) => p.child);
    await t.stop();
    for (const c of procs) children.delete(c);
  }
}
