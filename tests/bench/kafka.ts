import { randomBytes, randomUUID } from 'node:crypto';
import { Admin, compatibilityPartitioner, Consumer, Producer } from '@platformatic/kafka';
import pg from 'pg';
import { Pool } from 'undici';
import { deriveKey, EVENT_SCHEMA_VERSION, type EventMetadata } from '@svc/contracts';
import { PayloadSealer } from '@svc/command-api';
import { openSql, PostgresEventStore } from '@svc/deploy';
import { type CommandDeps, commit, streams } from '@svc/domain';
import { freshPostgresSchema, tempDir } from '../src/support/engines';
import { freePort, spawnService, type Bootstrap } from '../src/support/service';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { type RoleProcess, Topology } from '../src/kafka/topology';
import { OPERATOR_TOKEN } from '../src/support/service';
import { BENCH_ACCOUNT_TERMS } from './account';
import { children, HOT_SET } from './http';
import { closedLoop, percentile, sumLoads, type LoadResult } from './load';
import { treeCpuSeconds } from './process-tree';
import { noteBody, noteSchema } from './searchable';
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
 *  RKk the Kafka client alone (@platformatic/kafka): N messages of about the relay's size (key, ~300 B value,
 *      the relay's 11 headers) through an idempotent acks=all producer (batches
 *      of 500, one request in flight, as the relay) to a consumer group.
 *  K2  sustained writes: POST /v1/records at a fixed rate (open loop) to the
 *      command role; the response waits for the read models (read-your-writes),
 *      so its latency is write -> visible. Every 100 ms a sampler reads the head
 *      of the log and the read-models checkpoint: lag in events, and in time
 *      (age of the oldest unapplied event, from the sample at which the head
 *      first passed the checkpoint; 100 ms resolution).
 *  K3  each stage alone on one backlog of N events in the same topology
 *      (backlogStages): event store append with nothing reading, the relay's
 *      publish rate, Kafka's own consume rate (a raw @platformatic/kafka consumer on the
 *      same messages of the topology's topic) and the projector's apply rate.
 *  X   the query role scaled out: writes/s, reads by id/s and TEXT searches/s
 *      through the shipped router with one and with two query replicas
 *      (scaleOut), with the CPU each role and the machine used meanwhile.
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
  /** K3: append, relay, Kafka consume and projector, each alone on one backlog. */
  backlog: BacklogResult;
  /** X: the router with one, then two query replicas (fresh topologies); empty with BENCH_KAFKA_SCALE=0. */
  scale: ScaleResult[];
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
  /** X: clients, measured and warm-up ms per phase, searchable records, query replica counts (in order; [] skips X). */
  concurrency: number;
  scaleMs: number;
  scaleWarmupMs: number;
  notes: number;
  replicas: number[];
  /** Alternating slices per side in the two-replica topology (router to one replica vs to all); 0 skips them. */
  slices: number;
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
    `SELECT '$head' AS name, coalesce(max(position), 0)::bigint AS position FROM es_events UNION ALL ` +
      `SELECT name, position FROM proj_checkpoints`,
  );
  const cp: Record<string, number> = {};
  for (const r of rows) cp[r.name] = Number(r.position);
  return { head: cp.$head, cp };
}

/** The event store port on `url` and a command context around it (commit() without a read-model wait). */
async function openCommitter(url: string) {
  const sql = await openSql({ databaseUrl: url, poolSize: 8 });
  const store = await PostgresEventStore.open(sql);
  const secret = Buffer.from('bench-secret');
  const deps: CommandDeps = {
    store,
    barrier: { waitFor: async () => true },
    ids: { newId: () => randomUUID() },
    sealer: new PayloadSealer(deriveKey(secret, 'payload-seal'), deriveKey(secret, 'blind-index')),
  };
  const schemaId = randomUUID();
  return {
    deps,
    schemaId,
    /** Appends the bench schema's SchemaCreated; its position. */
    createSchema: () =>
      commit(deps, metadata(), [
        {
          streamId: streams.schema(schemaId),
          events: [
            { type: 'SchemaCreated', data: { schemaId, typeName: BENCH_SCHEMA.typeName, definition: BENCH_SCHEMA } },
          ],
          expectedRevision: 'no_stream',
        },
      ]),
    /**
     * Appends `events` RecordCreated (one new stream each) from `committers` concurrent committers; `progress` counts
     * them.
     */
    append: async (events: number, committers = 32, progress?: { seq: number }) => {
      const p = progress ?? { seq: 0 };
      const appender = async () => {
        while (p.seq < events) {
          const n = p.seq++;
          const recordId = randomUUID();
          const data = {
            recordId,
            schemaId,
            schemaVersion: 1,
            typeName: BENCH_SCHEMA.typeName,
            payload: benchPayload(n),
            status: 'ACTIVE',
            folderId: null,
            userId: null,
            scopes: [],
            externalId: null,
            indexMode: 'NONE',
          };
          await commit(deps, metadata(), [
            {
              streamId: streams.record(recordId),
              events: [{ type: 'RecordCreated', data }] as never,
              expectedRevision: 'no_stream',
            },
          ]);
        }
      };
      await Promise.all(Array.from({ length: committers }, appender));
    },
    close: async () => {
      await store.close();
      await sql.close();
    },
  };
}

/**
 * Appends `events` RecordCreated (after one SchemaCreated, applied first) to the
 * schema at `url` and times the subscribers in another process until the
 * read-models checkpoint reaches the head.
 */
async function appendAndWait(
  url: string,
  events: number,
  withRelay: boolean,
  log: (m: string) => void,
): Promise<E2eResult> {
  const c = await openCommitter(url);
  const probe = new pg.Client({ connectionString: url });
  await probe.connect();
  try {
    const first = await c.createSchema();
    // Warm: the subscribers have applied the schema (and, with Kafka, the group is joined and assigned).
    const warmBy = Date.now() + 120_000;
    while (((await checkpoints(probe)).cp['read-models'] ?? -1) < first) {
      if (Date.now() > warmBy) throw new Error('the projector did not apply the first event within 120 s');
      await sleep(50);
    }
    const progress = { seq: 0 };
    const t0 = performance.now();
    let appendEnd = 0;
    const appending = c.append(events, 32, progress).then(() => {
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
        log(
          `  head ${head}, relay ${cp['kafka-relay'] ?? '-'}, read-models ` +
            `${cp['read-models']}${appended ? '' : ` (appending, ${progress.seq}/${events})`}`,
        );
      }
      if (now - t0 > 600_000)
        throw new Error(
          `read models did not reach the head within 600 s (head ${head}, read-models ${cp['read-models']})`,
        );
    }
    await appending;
    return {
      events,
      appendSeconds: (appendEnd - t0) / 1000,
      relaySeconds: (relayAt - t0) / 1000,
      seconds: (doneAt - t0) / 1000,
    };
  } finally {
    await probe.end().catch(() => {});
    await c.close();
  }
}

/** RKf: a projector process without Kafka (catch-up subscription) on its own schema. */
async function rawFeed(databaseUrl: string, events: number, log: (m: string) => void): Promise<E2eResult> {
  const schema = await freshPostgresSchema(databaseUrl);
  const dir = tempDir('svc-bench-kproj-');
  const s = await spawnService(dir.dir, await freePort(), {
    DATABASE_URL: schema.url,
    SERVICE_ROLE: 'projector',
    SERVICE_SECRET: `secret-${randomUUID()}`,
  });
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

/**
 * RKk: the service's Kafka client alone (@platformatic/kafka): producer -> consumer group round trip of `n` relay-sized
 * messages.
 */
async function rawKafka(
  brokers: string,
  n: number,
): Promise<{ messages: number; valueBytes: number; seconds: number }> {
  const bootstrapBrokers = brokers.split(',');
  const topic = `bench.${randomUUID().slice(0, 8)}.raw`;
  const admin = new Admin({ clientId: 'svc-bench', bootstrapBrokers });
  await admin.createTopics({ topics: [topic], partitions: 3, replicas: -1 });
  await waitForLeaders(admin, topic);
  const consumer = new Consumer({
    clientId: 'svc-bench',
    bootstrapBrokers,
    groupId: `${topic}.group`,
    sessionTimeout: 10_000,
    autocommit: false,
  });
  const producer = new Producer({
    clientId: 'svc-bench',
    bootstrapBrokers,
    idempotent: true,
    acks: -1,
    partitioner: compatibilityPartitioner,
  });
  const valueBytes = 300;
  try {
    let got = 0;
    let doneAt = 0;
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    // consume() resolves once the group is joined and the stream set up.
    const stream = await consumer.consume({ topics: [topic], mode: 'earliest', maxWaitTime: 500 });
    stream.on('data', () => {
      got += 1;
      if (got >= n && !doneAt) {
        doneAt = performance.now();
        resolveDone();
      }
    });
    const value = randomBytes(valueBytes);
    const meta = randomBytes(120);
    const t0 = performance.now();
    for (let i = 0; i < n; i += 500) {
      const messages = [];
      for (let j = i; j < Math.min(n, i + 500); j++) {
        const id = randomUUID();
        const headers: Record<string, string | Buffer> = {
          'content-type': 'avro/binary',
          'svc-event-type': 'RecordCreated',
          'svc-schema-fingerprint': '0123456789abcdef',
          'svc-metadata': meta,
          'svc-metadata-fingerprint': '0123456789abcdef',
          'svc-event-id': id,
          'svc-stream-id': `record-${id}`,
          'svc-revision': '0',
          'svc-position': String(j + 1),
          'svc-prev-position': String(j),
        };
        messages.push({
          topic,
          key: Buffer.from(`record-${id}`),
          value,
          headers: new Map(Object.entries(headers).map(([k, v]) => [Buffer.from(k), Buffer.from(v)])),
        });
      }
      await producer.send({ acks: -1, messages });
    }
    await Promise.race([
      done,
      sleep(300_000).then(() => Promise.reject(new Error(`raw kafka: ${got}/${n} consumed after 300 s`))),
    ]);
    await stream.close().catch(() => {});
    return { messages: n, valueBytes, seconds: (doneAt - t0) / 1000 };
  } finally {
    await producer.close(true).catch(() => {});
    await consumer.close(true).catch(() => {});
    await admin.deleteTopics({ topics: [topic] }).catch(() => {});
    await admin.close().catch(() => {});
  }
}

async function waitForLeaders(admin: Admin, topic: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const t = (await admin.metadata({ topics: [topic], forceUpdate: true }).catch(() => undefined))?.topics.get(topic);
    if (t && t.partitions.length && t.partitions.every((p) => p && p.leader >= 0)) return;
    await sleep(100);
  }
}

/** RK2: the same sustained load on the service as one process without Kafka. */
async function sustainedWithoutKafka(o: KafkaBenchOptions): Promise<LagResult> {
  const schema = await freshPostgresSchema(o.databaseUrl);
  const dir = tempDir('svc-bench-kall-');
  const s = await spawnService(dir.dir, await freePort(), {
    DATABASE_URL: schema.url,
    SERVICE_SECRET: `secret-${randomUUID()}`,
  });
  children.add(s.child);
  try {
    const boot = JSON.parse(readFileSync(join(dir.dir, 'bootstrap.json'), 'utf8')) as Bootstrap;
    return await sustained(
      {
        rootKey: boot.tenants.live.rootKey,
        accountId: boot.accountId,
        commandUrl: s.api.baseUrl,
        projectorUrl: s.api.baseUrl,
      },
      schema.url,
      o.rate,
      o.seconds,
    );
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
async function sustained(
  t: { rootKey: string; accountId: string; commandUrl: string; projectorUrl: string },
  url: string,
  rate: number,
  seconds: number,
): Promise<LagResult> {
  const headers = { authorization: `Bearer ${t.rootKey}`, 'content-type': 'application/json' };
  const commandUrl = t.commandUrl;
  const pool = new Pool(commandUrl, { connections: MAX_IN_FLIGHT, pipelining: 1 });
  const probe = new pg.Client({ connectionString: url });
  await probe.connect();
  try {
    // The bench's account terms (as every HTTP section): without them the account's burst limit (1,200 counted
    // requests a minute in the run of 2026-12-06) answered 429 to the load itself, and K2 / RK2 measured that limit.
    const a = await pool.request({
      method: 'PATCH',
      path: `/operator/accounts/${t.accountId}`,
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(BENCH_ACCOUNT_TERMS),
    });
    const at = await a.body.text();
    if (a.statusCode !== 200) throw new Error(`bench account update failed: ${a.statusCode} ${at}`);
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
    const readyz = await fetch(`${t.projectorUrl}/readyz`)
      .then((r) => r.json())
      .catch(() => null);
    return {
      targetRate: rate,
      seconds,
      create: {
        ops: latencies.length,
        seconds: sentSeconds,
        opsPerSec: latencies.length / sentSeconds,
        p50: percentile(sorted, 0.5),
        p90: percentile(sorted, 0.9),
        p99: percentile(sorted, 0.99),
        max: sorted.length ? sorted[sorted.length - 1] : NaN,
        errors,
        firstError,
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

/**
 * K3, each stage of the pipeline alone on one backlog (the topology of K1/K2): the relay and the projector are
 * stopped (SIGTERM), `events` RecordCreated are appended by 32 committers (the event store's append rate on
 * PostgreSQL with no subscriber reading), the relay is started and drains them to Kafka (its publish rate), a raw
 * @platformatic/kafka consumer (a fresh group, no decoding, nothing applied) reads exactly those messages from the
 * topology's own topic (Kafka's consume rate here), then the projector is started and its read models reach the head
 * (its apply rate: Avro decoding, the global-order chain, SQL transactions). Rates are from the first observed progress
 * to the head (the process start and the group join apart, reported as `startSeconds`).
 */
export interface StageResult {
  events: number;
  /** Events (or messages) per second from the first observed progress to the end. */
  perSec: number;
  /** From the process start (or consumer run) to the end, seconds. */
  totalSeconds: number;
  /** From the process start to its /healthz (or, for the raw consumer, to its first message), seconds. */
  startSeconds: number;
}

export interface BacklogResult {
  events: number;
  append: { seconds: number; perSec: number };
  relay: StageResult;
  kafka: StageResult;
  projector: StageResult;
  /** The projector's search-index subscriber on the same backlog, at the same time (seconds from start to head). */
  searchIndexSeconds: number;
  partitions: number;
}

type Positions = Array<{ partition: number; offset: string }>;
const topicEnd = async (offsets: Consumer, topic: string): Promise<Positions> =>
  ((await offsets.listOffsets({ topics: [topic] })).get(topic) ?? []).map((high, partition) => ({
    partition,
    offset: String(high),
  }));

/** Events in the log with a position in (from, to]. */
async function eventsBetween(probe: pg.Client, from: number, to: number): Promise<number> {
  const { rows } = await probe.query<{ n: string }>(
    'SELECT count(*) AS n FROM es_events WHERE position > $1 AND position <= $2',
    [from, to],
  );
  return Number(rows[0].n);
}

/**
 * Runs `start` (a role's start) and follows the `checkpoint` row until it reaches `head`; `others` are other
 * checkpoints whose time to the head is noted too (the clock of the whole stage waits for them).
 */
async function drainTo(
  probe: pg.Client,
  checkpoint: string,
  head: number,
  start: () => Promise<unknown>,
  others: string[] = [],
): Promise<StageResult & { others: Record<string, number> }> {
  const p0 = (await checkpoints(probe)).cp[checkpoint] ?? 0;
  const t0 = performance.now();
  let readyAt = NaN;
  const starting = start().then(() => {
    readyAt = performance.now();
  });
  let first: { t: number; at: number } | undefined;
  let doneAt = NaN;
  const othersAt: Record<string, number> = {};
  for (;;) {
    const { cp } = await checkpoints(probe);
    const now = performance.now();
    const at = cp[checkpoint] ?? 0;
    if (!first && at > p0) first = { t: now, at };
    if (Number.isNaN(doneAt) && at >= head) doneAt = now;
    for (const o of others) if (othersAt[o] === undefined && (cp[o] ?? 0) >= head) othersAt[o] = (now - t0) / 1000;
    if (!Number.isNaN(doneAt) && others.every((o) => othersAt[o] !== undefined)) break;
    if (now - t0 > 600_000) throw new Error(`${checkpoint} did not reach ${head} within 600 s (at ${at})`);
    await sleep(20);
  }
  await starting;
  const events = await eventsBetween(probe, p0, head);
  // Steady rate: from the first sample that saw progress (the start and the group join behind it) to the head.
  const steady =
    first && first.at < head && doneAt > first.t
      ? (await eventsBetween(probe, first.at, head)) / ((doneAt - first.t) / 1000)
      : events / ((doneAt - t0) / 1000);
  return {
    events,
    perSec: steady,
    totalSeconds: (doneAt - t0) / 1000,
    startSeconds: (readyAt - t0) / 1000,
    others: othersAt,
  };
}

/**
 * Kafka's own consume rate: a fresh consumer group reads the messages of `topic` between `from` and `to` (per
 * partition), decoding nothing.
 */
async function rawConsume(brokers: string[], topic: string, from: Positions, to: Positions): Promise<StageResult> {
  const start = new Map(from.map((p) => [p.partition, BigInt(p.offset)]));
  const end = new Map(to.map((p) => [p.partition, BigInt(p.offset)]));
  const want = [...end].reduce((a, [k, v]) => a + Number(v - (start.get(k) ?? 0n)), 0);
  const consumer = new Consumer({
    clientId: 'svc-bench-raw',
    bootstrapBrokers: brokers,
    groupId: `${topic}.bench-raw-${randomUUID().slice(0, 8)}`,
    sessionTimeout: 10_000,
    autocommit: false,
  });
  const reached = new Set<number>();
  let got = 0;
  let firstAt = NaN;
  let doneAt = NaN;
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  try {
    const t0 = performance.now();
    // Straight to the backlog's first offsets (a fresh group would otherwise read the topic from its start).
    const stream = await consumer.consume({
      topics: [topic],
      mode: 'manual',
      offsets: from.map((p) => ({ topic, partition: p.partition, offset: BigInt(p.offset) })),
      maxWaitTime: 500,
    });
    stream.on('data', (m) => {
      const lo = start.get(m.partition) ?? 0n;
      const hi = end.get(m.partition) ?? 0n;
      if (m.offset >= lo && m.offset < hi) got += 1;
      if (m.offset + 1n >= hi) reached.add(m.partition);
      if (got > 0 && Number.isNaN(firstAt)) firstAt = performance.now();
      if (Number.isNaN(doneAt) && [...end].every(([k, v]) => v <= (start.get(k) ?? 0n) || reached.has(k))) {
        doneAt = performance.now();
        resolveDone();
      }
    });
    await Promise.race([
      done,
      sleep(300_000).then(() => Promise.reject(new Error(`raw consume: ${got}/${want} after 300 s`))),
    ]);
    await stream.close().catch(() => {});
    return {
      events: got,
      perSec: got / ((doneAt - firstAt) / 1000),
      totalSeconds: (doneAt - t0) / 1000,
      startSeconds: (firstAt - t0) / 1000,
    };
  } finally {
    await consumer.close(true).catch(() => {});
  }
}

async function backlogStages(t: Topology, events: number, log: (m: string) => void): Promise<BacklogResult> {
  const url = t.env.DATABASE_URL;
  const topic = t.env.KAFKA_TOPIC;
  const brokers = t.env.KAFKA_BROKERS.split(',');
  // Only for the topic's end offsets (no group is joined).
  const offsets = new Consumer({
    clientId: 'svc-bench-backlog',
    bootstrapBrokers: brokers,
    groupId: `${topic}.bench-offsets`,
  });
  const c = await openCommitter(url);
  const probe = new pg.Client({ connectionString: url });
  await probe.connect();
  const track = (p: RoleProcess) => {
    children.add(p.child);
    return p;
  };
  try {
    // Everything before the backlog published and applied, so each stage below has exactly the backlog to do.
    const first = await c.createSchema();
    const by = Date.now() + 120_000;
    for (;;) {
      const { head, cp } = await checkpoints(probe);
      if (
        head >= first &&
        (cp['kafka-relay'] ?? 0) >= head &&
        (cp['read-models'] ?? 0) >= head &&
        (cp['search-index'] ?? 0) >= head
      )
        break;
      if (Date.now() > by)
        throw new Error(`the topology did not settle before the backlog within 120 s: ${JSON.stringify(cp)}`);
      await sleep(50);
    }
    await t.kill('projector', 'SIGTERM');
    await t.kill('relay', 'SIGTERM');
    const from = await topicEnd(offsets, topic);
    const a0 = performance.now();
    await c.append(events, 32);
    const appendSeconds = (performance.now() - a0) / 1000;
    const { head } = await checkpoints(probe);
    log(
      `K3a ${events} appends with the relay and the projector stopped: ` +
        `${Math.round(events / appendSeconds)} ev/s (${appendSeconds.toFixed(1)} s)`,
    );
    const relay = await drainTo(probe, 'kafka-relay', head, async () => track(await t.startRole('relay')));
    log(
      `K3r relay from a ${relay.events}-event backlog: ${Math.round(relay.perSec)} ev/s once publishing ` +
        `(spawn to head ${relay.totalSeconds.toFixed(1)} s, /healthz up at ${relay.startSeconds.toFixed(1)} s)`,
    );
    const to = await topicEnd(offsets, topic);
    const kafkaRead = await rawConsume(brokers, topic, from, to);
    log(
      `K3k raw @platformatic/kafka consumer, the same ${kafkaRead.events} messages from the topology's ` +
        `topic (${to.length} partitions): ${Math.round(kafkaRead.perSec)} msg/s from the first message (join ` +
        `+ first fetch ${kafkaRead.startSeconds.toFixed(1)} s)`,
    );
    const proj = await drainTo(probe, 'read-models', head, async () => track(await t.startRole('projector')), [
      'search-index',
    ]);
    log(
      `K3p projector read models from the same backlog through Kafka: ${Math.round(proj.perSec)} ev/s ` +
        `once applying (spawn to head ${proj.totalSeconds.toFixed(1)} s, /healthz up at ` +
        `${proj.startSeconds.toFixed(1)} s; search-index at head ${proj.others['search-index']?.toFixed(1)} s)`,
    );
    return {
      events,
      append: { seconds: appendSeconds, perSec: events / appendSeconds },
      relay,
      kafka: kafkaRead,
      projector: proj,
      searchIndexSeconds: proj.others['search-index'],
      partitions: to.length,
    };
  } finally {
    await offsets.close().catch(() => {});
    await probe.end().catch(() => {});
    await c.close();
  }
}

/**
 * X, scale-out of the query role: a fresh topology with `replicas` query processes behind the shipped router,
 * driven only through the router's URL by `concurrency` clients (the closed loop of load.ts, as the HTTP sections):
 * writes (POST /v1/records, answered once the read models have them), then reads by id over a working set of the
 * first HOT_SET created ids, then TEXT search over `notes` searchable records (Elasticsearch when
 * ELASTICSEARCH_URL is set). During each measured phase the CPU the machine spent (/proc/stat: cores busy, of
 * whatever ran on it) and the CPU of each role's process are sampled.
 */
export interface ScalePhase extends LoadResult {
  /** Cores busy on the whole machine during the phase (other work included), and the machine's cores. */
  machineCores: number;
  cpus: number;
  /** Cores used by each role's processes during the phase (query replicas summed under `query`). */
  roleCores: Record<string, number>;
  /** Cores used by each process (relay, projector, command, query-1, query-2, ...). */
  procCores: Record<string, number>;
}

/**
 * The same reads on one topology in alternating slices: the router sending to query-1 only (query-2 running, out of its
 * upstreams) or to every replica.
 */
export interface AlternatingReads {
  name: string;
  slices: number;
  one: ScalePhase;
  all: ScalePhase;
}

export interface ScaleResult {
  replicas: number;
  writes: ScalePhase;
  byId: ScalePhase;
  /** Mean results per page over the measured searches. */
  search: ScalePhase & { hits: number };
  hotIds: number;
  notes: number;
  /**
   * With two or more replicas: by id and TEXT search, router to one replica vs to all, alternating (empty when
   * BENCH_KAFKA_SLICES=0).
   */
  alternating: AlternatingReads[];
}

function machineTicks(): { busy: number; total: number } | undefined {
  try {
    const xs = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1, 9).map(Number);
    const total = xs.reduce((a, b) => a + b, 0);
    // idle + iowait are not busy; steal is counted as not ours either.
    return { busy: total - xs[3] - xs[4] - (xs[7] ?? 0), total };
  } catch {
    return undefined;
  }
}

/** Slices of one phase as one (sumLoads), the CPU figures weighted by each slice's time. */
function sumPhases(ps: ScalePhase[]): ScalePhase {
  const seconds = ps.reduce((a, p) => a + p.seconds, 0);
  const avg = (f: (p: ScalePhase) => number) => ps.reduce((a, p) => a + f(p) * p.seconds, 0) / seconds;
  const keys = (f: (p: ScalePhase) => Record<string, number>) => {
    const out: Record<string, number> = {};
    for (const k of new Set(ps.flatMap((p) => Object.keys(f(p))))) out[k] = avg((p) => f(p)[k] ?? 0);
    return out;
  };
  return {
    ...sumLoads(ps),
    machineCores: avg((p) => p.machineCores),
    cpus: ps[0].cpus,
    roleCores: keys((p) => p.roleCores),
    procCores: keys((p) => p.procCores),
  };
}

const SEARCH_QUERIES = [
  'harbor lantern',
  'quiet river stone',
  'golden field',
  'ancient map',
  'winter market',
  'silver bridge',
  'north tower',
  'garden path',
];

async function scaleOut(o: KafkaBenchOptions, replicas: number): Promise<ScaleResult> {
  // The edge's per-IP ceiling (20,000 a minute) would refuse the load itself: every request comes from here.
  const t = await Topology.start({
    kafkaBrokers: o.brokers,
    queryReplicas: replicas,
    env: { EDGE_RATE_LIMIT_PER_MINUTE: '0' },
  });
  for (const p of t.procs.values()) children.add(p.child);
  const pool = new Pool(t.router.url, { connections: o.concurrency, pipelining: 1 });
  const probe = new pg.Client({ connectionString: t.env.DATABASE_URL });
  await probe.connect();
  try {
    const root = t.bootstrap.tenants.live.rootKey;
    const headers = { authorization: `Bearer ${root}`, 'content-type': 'application/json' };
    const getHeaders = { authorization: headers.authorization };
    const send = async (
      method: 'GET' | 'POST' | 'PATCH',
      path: string,
      body?: string,
      h: Record<string, string> = headers,
    ) => {
      const res = await pool.request({ method, path, headers: h, body });
      return { status: res.statusCode, text: await res.body.text() };
    };
    const acct = await send(
      'PATCH',
      `/operator/accounts/${t.bootstrap.accountId}`,
      JSON.stringify(BENCH_ACCOUNT_TERMS),
      { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
    );
    if (acct.status !== 200) throw new Error(`bench account update failed: ${acct.status} ${acct.text}`);
    for (const schema of [BENCH_SCHEMA, noteSchema('TEXT')]) {
      const r = await send('POST', '/v1/schemas', JSON.stringify(schema));
      if (r.status !== 201) throw new Error(`schema ${schema.typeName}: ${r.status} ${r.text}`);
    }

    const cpus = availableParallelism();
    const measured = async (run: (onMeasureStart: () => Promise<void>) => Promise<LoadResult>): Promise<ScalePhase> => {
      let m0: ReturnType<typeof machineTicks>;
      let w0 = 0;
      let r0 = new Map<string, number>();
      const roleCpu = () => {
        const out = new Map<string, number>();
        for (const p of t.procs.values()) {
          const c = treeCpuSeconds(p.child.pid!);
          out.set(p.name, c.service + c.children);
        }
        return out;
      };
      const r = await run(async () => {
        m0 = machineTicks();
        w0 = performance.now();
        r0 = roleCpu();
      });
      const m1 = machineTicks();
      const wall = (performance.now() - w0) / 1000;
      const r1 = roleCpu();
      const procCores: Record<string, number> = {};
      const roleCores: Record<string, number> = {};
      for (const [name, v] of r1) {
        procCores[name] = (v - (r0.get(name) ?? 0)) / wall;
        const role = t.procs.get(name)!.role;
        roleCores[role] = (roleCores[role] ?? 0) + procCores[name];
      }
      const machineCores = m0 && m1 && m1.total > m0.total ? (cpus * (m1.busy - m0.busy)) / (m1.total - m0.total) : NaN;
      return { ...r, machineCores, cpus, roleCores, procCores };
    };
    const loop =
      (op: (seq: number) => Promise<void>, durationMs = o.scaleMs, warmupMs = o.scaleWarmupMs) =>
      (onMeasureStart: () => Promise<void>) =>
        closedLoop({
          concurrency: o.concurrency,
          warmupMs,
          durationMs,
          yieldEveryMs: 0,
          onMeasureStart,
          op: (_w, seq) => op(seq),
        });

    const ids: string[] = [];
    const writes = await measured(
      loop(async (seq) => {
        const r = await send('POST', '/v1/records', createBody(seq));
        if (r.status !== 201) throw new Error(`POST /v1/records ${r.status}: ${r.text.slice(0, 200)}`);
        const m = /"id":"([^"]+)"/.exec(r.text);
        if (m) ids.push(m[1]);
      }),
    );
    if (ids.length === 0) throw new Error(`no record was created: ${writes.firstError}`);

    // The searchable records (500-700 character bodies), then until the search index has them all.
    let made = 0;
    await closedLoop({
      concurrency: o.concurrency,
      warmupMs: 0,
      durationMs: 600_000,
      yieldEveryMs: 0,
      op: async (_w, seq) => {
        if (made >= o.notes) return 'stop';
        made++;
        const r = await send('POST', '/v1/records', noteBody(noteSchema('TEXT').typeName, seq));
        if (r.status !== 201) throw new Error(`POST /v1/records (TEXT) ${r.status}: ${r.text.slice(0, 200)}`);
      },
    });
    const by = Date.now() + 180_000;
    let hits = 0;
    let pages = 0;
    const searchOnce = async (seq: number) => {
      const r = await send(
        'POST',
        '/v1/search',
        JSON.stringify({ query: SEARCH_QUERIES[seq % SEARCH_QUERIES.length], mode: 'TEXT', limit: 20 }),
      );
      if (r.status !== 200) throw new Error(`POST /v1/search ${r.status}: ${r.text.slice(0, 200)}`);
      const n = r.text.split('"score":').length - 1;
      hits += n;
      pages += 1;
      return n;
    };
    for (;;) {
      const { head, cp } = await checkpoints(probe);
      if ((cp['search-index'] ?? 0) >= head && (await searchOnce(0)) > 0) break;
      if (Date.now() > by)
        throw new Error(
          `the ${o.notes} searchable records were not searchable within 180 s (head ${head}, search-index ` +
            `${cp['search-index']})`,
        );
      await sleep(200);
    }

    const hot = ids.slice(0, HOT_SET);
    // One untimed pass over the working set through the router, so every replica's caches have had their chance.
    let next = 0;
    await closedLoop({
      concurrency: o.concurrency,
      warmupMs: 0,
      durationMs: 600_000,
      yieldEveryMs: 0,
      op: async () => {
        if (next >= hot.length * replicas) return 'stop';
        await send('GET', `/v1/records/${hot[next++ % hot.length]}`, undefined, getHeaders);
      },
    });
    const getOnce = async (seq: number) => {
      const r = await send('GET', `/v1/records/${hot[seq % hot.length]}`, undefined, getHeaders);
      if (r.status !== 200) throw new Error(`GET /v1/records/:id ${r.status}: ${r.text.slice(0, 200)}`);
    };
    const byId = await measured(loop(getOnce));
    // Results per page over the measured searches only (the warm-up's pages are counted, then taken off).
    let h0 = 0;
    let p0 = 0;
    const search = await measured((start) =>
      loop(async (seq) => void (await searchOnce(seq)))(async () => {
        h0 = hits;
        p0 = pages;
        await start();
      }),
    );
    const perPage = (hits - h0) / Math.max(1, pages - p0);

    // The same topology, the router pointed at query-1 alone or at every replica, in alternating slices (the order
    // flipping every slice): the same data, caches and machine phase for both figures. query-2 keeps running while
    // it is out of the router's upstreams (its CPU in those slices shows it got nothing).
    const alternating: AlternatingReads[] = [];
    if (replicas >= 2 && o.slices > 0) {
      const addr = (name: string) => `127.0.0.1:${t.role(name).port}`;
      const upstreams = (query: string[]) => ({
        command: [addr('command')],
        query: query.map(addr),
        projector: [addr('projector')],
      });
      const sliceMs = Math.max(1000, Math.round(o.scaleMs / o.slices));
      try {
        for (const [name, op] of [
          ['GET /v1/records/:id', getOnce],
          ['POST /v1/search TEXT', async (seq: number) => void (await searchOnce(seq))],
        ] as const) {
          const got: Record<'one' | 'all', ScalePhase[]> = { one: [], all: [] };
          for (let i = 0; i < o.slices; i++)
            for (const which of i % 2 === 0 ? (['one', 'all'] as const) : (['all', 'one'] as const)) {
              await t.router.reconfigure(upstreams(which === 'one' ? ['query-1'] : t.queryNames()));
              got[which].push(await measured(loop(op, sliceMs, 500)));
            }
          alternating.push({ name, slices: o.slices, one: sumPhases(got.one), all: sumPhases(got.all) });
        }
      } finally {
        await t.router.reconfigure(upstreams(t.queryNames()));
      }
    }
    return {
      replicas,
      writes,
      byId,
      search: { ...search, hits: perPage },
      hotIds: hot.length,
      notes: made,
      alternating,
    };
  } catch (e) {
    console.error(t.output());
    throw e;
  } finally {
    await probe.end().catch(() => {});
    await pool.close();
    const procs = [...t.procs.values()].map((p) => p.child);
    await t.stop();
    for (const c of procs) children.delete(c);
  }
}

export async function benchKafka(o: KafkaBenchOptions): Promise<KafkaBenchResult> {
  o.log(`K raw: @platformatic/kafka producer -> consumer, ${o.events} messages`);
  const rk = await rawKafka(o.brokers, o.events);
  o.log(
    `RKk @platformatic/kafka round trip: ${Math.round(rk.messages / rk.seconds)} msg/s (${rk.seconds.toFixed(1)} s)`,
  );

  o.log(`K raw: ${o.events} appends, projector process without Kafka (catch-up)`);
  const rf = await rawFeed(o.databaseUrl, o.events, o.log);
  o.log(
    `RKf catch-up feed: ${Math.round(rf.events / rf.seconds)} ev/s end to end (append ` +
      `${rf.appendSeconds.toFixed(1)} s, applied at ${rf.seconds.toFixed(1)} s)`,
  );

  o.log(`K raw: sustained ${o.rate} creates/s for ${o.seconds} s, one process (SERVICE_ROLE=all) without Kafka`);
  const rawLag = await sustainedWithoutKafka(o);
  o.log(
    `RK2 ${Math.round(rawLag.create.opsPerSec)} creates/s, write->visible p50 ` +
      `${rawLag.create.p50.toFixed(0)} ms p99 ${rawLag.create.p99.toFixed(0)} ms; lag p50 ` +
      `${rawLag.lagEvents.p50} / p99 ${rawLag.lagEvents.p99} events`,
  );

  o.log('K topology: relay, projector, query, command on PostgreSQL + Kafka');
  const t = await Topology.start({ kafkaBrokers: o.brokers });
  let k: Omit<KafkaBenchResult, 'scale'>;
  for (const p of t.procs.values()) children.add(p.child);
  try {
    const e2e = await appendAndWait(t.env.DATABASE_URL, o.events, true, o.log);
    o.log(
      `K1 relay + Kafka: ${Math.round(e2e.events / e2e.seconds)} ev/s end to end (append ` +
        `${e2e.appendSeconds.toFixed(1)} s, relay at head ${e2e.relaySeconds.toFixed(1)} s, read models at ` +
        `head ${e2e.seconds.toFixed(1)} s)`,
    );
    o.log(`K2 sustained: ${o.rate} creates/s for ${o.seconds} s to the command role`);
    const port = (r: 'command' | 'projector') => `http://127.0.0.1:${t.role(r).port}`;
    const lag = await sustained(
      {
        rootKey: t.bootstrap.tenants.live.rootKey,
        accountId: t.bootstrap.accountId,
        commandUrl: port('command'),
        projectorUrl: port('projector'),
      },
      t.env.DATABASE_URL,
      o.rate,
      o.seconds,
    );
    o.log(
      `K2 ${Math.round(lag.create.opsPerSec)} creates/s, write->visible p50 ${lag.create.p50.toFixed(0)} ` +
        `ms p99 ${lag.create.p99.toFixed(0)} ms; lag p50 ${lag.lagEvents.p50} / p99 ${lag.lagEvents.p99} ` +
        `events, ${lag.lagMs.p50.toFixed(0)} / ${lag.lagMs.p99.toFixed(0)} ms (${lag.samples} samples)`,
    );
    o.log(
      `K3 backlog of ${o.events} events: each stage alone (relay and projector stopped, then started one ` +
        `after the other)`,
    );
    const backlog = await backlogStages(t, o.events, o.log);
    k = { e2e, rawFeed: rf, rawKafka: rk, lag, rawLag, backlog };
  } catch (e) {
    console.error(t.output());
    throw e;
  } finally {
    const procs = [...t.procs.values()].map((p) => p.child);
    await t.stop();
    for (const c of procs) children.delete(c);
  }

  const scale: ScaleResult[] = [];
  for (const replicas of o.replicas) {
    o.log(
      `X scale-out: a fresh topology with ${replicas} query replica(s) behind the router, ` +
        `${o.concurrency} clients, ${o.scaleMs / 1000} s a phase`,
    );
    const x = await scaleOut(o, replicas);
    const cpu = (p: ScalePhase) =>
      `machine ${p.machineCores.toFixed(2)} of ${p.cpus} cores busy; query ` +
      `${(p.roleCores.query ?? 0).toFixed(2)}, command ${(p.roleCores.command ?? 0).toFixed(2)}, projector ` +
      `${(p.roleCores.projector ?? 0).toFixed(2)}, relay ${(p.roleCores.relay ?? 0).toFixed(2)}`;
    const line = (p: LoadResult) =>
      `${Math.round(p.opsPerSec)}/s, p50 ${p.p50.toFixed(1)} ms, p99 ${p.p99.toFixed(1)} ` +
      `ms${p.errors ? `, ${p.errors} errors: ${p.firstError}` : ''}`;
    o.log(`X${replicas}w writes POST /v1/records: ${line(x.writes)} (${cpu(x.writes)})`);
    o.log(`X${replicas}g reads GET /v1/records/:id (${x.hotIds}-id working set): ${line(x.byId)} (${cpu(x.byId)})`);
    o.log(
      `X${replicas}s TEXT search over ${x.notes} records: ${line(x.search)}, ${x.search.hits.toFixed(1)} ` +
        `results/page (${cpu(x.search)})`,
    );
    const procs = (p: ScalePhase) =>
      Object.entries(p.procCores)
        .filter(([n]) => n.startsWith('query'))
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([n, c]) => `${n} ${c.toFixed(2)}`)
        .join(', ');
    for (const a of x.alternating)
      o.log(
        `XA ${a.name}, ${a.slices} alternating slices each: router to query-1 only ${line(a.one)} ` +
          `(${procs(a.one)}; machine ${a.one.machineCores.toFixed(2)}) / to both ${line(a.all)} ` +
          `(${procs(a.all)}; machine ${a.all.machineCores.toFixed(2)}): ` +
          `${(a.all.opsPerSec / a.one.opsPerSec).toFixed(2)}×`,
      );
    scale.push(x);
  }
  return { ...k, scale };
}
