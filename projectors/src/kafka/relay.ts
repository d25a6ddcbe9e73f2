import type { Producer } from '@platformatic/kafka';
import {
  ensureCheckpoints,
  type EventStore,
  readCheckpoint,
  type Sql,
  type StoredEvent,
  writeCheckpoint,
} from '@svc/domain';
import { catchUp } from '../runtime/catch-up';
import { traceBatch } from '../runtime/trace';
import type { FollowerStats } from '../runtime/runner';
import { createProducer, ensureTopic, type KafkaSettings } from './client';
import { toMessage, type OutMessage } from './messages';

export const RELAY = 'kafka-relay';

/**
 * Largest sum of message values sent in one produce request (the topic accepts 16 MB batches; this keeps requests
 * small).
 */
const MAX_REQUEST_BYTES = 900 * 1024;

/** `position` is the last event the broker acknowledged. */
export type RelayStats = FollowerStats;

/**
 * The relay (SERVICE_ROLE=relay): follows the event store's global log from its
 * own checkpoint ('kafka-relay' in proj_checkpoints) and publishes every event
 * to the event topic, keyed by stream id (docs/engines/kafka.md).
 *
 * At-least-once: a batch is sent with acks=all by an idempotent producer (one
 * request in flight, so a partition never reorders), and the checkpoint moves
 * only after the broker acknowledged the whole batch. A crash in between
 * publishes the batch again on restart; consumers drop what they already
 * applied by global position. A failed send (Kafka down) is retried with a
 * bounded backoff from the same position, on a fresh producer: nothing is
 * skipped, so a restart leaves no gap.
 */
export class KafkaRelay {
  private position = 0;
  private abort = new AbortController();
  private loop: Promise<void> | undefined;
  private producer: Producer | undefined;
  private topicReady = false;
  readonly stats: RelayStats = { name: RELAY, position: 0, batches: 0, events: 0, errors: 0, lastError: null };

  constructor(
    private readonly sql: Sql,
    private readonly store: EventStore,
    private readonly settings: KafkaSettings,
    private readonly o: { batchSize?: number; log?: (msg: string) => void } = {},
  ) {}

  get name() {
    return RELAY;
  }
  get current() {
    return this.position;
  }

  async init(): Promise<void> {
    await ensureCheckpoints(this.sql);
    this.position = await readCheckpoint(this.sql, RELAY);
    this.stats.position = this.position;
  }

  start(): void {
    if (this.loop) return;
    this.abort = new AbortController();
    this.loop = catchUp(this.store, {
      from: this.position,
      batchSize: this.o.batchSize ?? 500,
      signal: this.abort.signal,
      handle: (events) => traceBatch(RELAY, events, () => this.publish(events), 'kafka publish'),
      onError: (e, attempt) => {
        this.stats.errors += 1;
        this.stats.lastError = e instanceof Error ? e.message : String(e);
        if (attempt === 1 || attempt % 10 === 0)
          this.o.log?.(
            `kafka relay: publish after position ${this.position} failed (attempt ${attempt}), retrying: ` +
              `${this.stats.lastError}`,
          );
      },
    });
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    this.loop = undefined;
    await this.reset();
  }

  private async connect(): Promise<Producer> {
    if (this.producer) return this.producer;
    if (!this.topicReady) {
      await ensureTopic(this.settings, 'relay');
      this.topicReady = true;
    }
    // Idempotent, acks=all, Java-compatible murmur2 partitioning on the key (client.ts). One send at a time (publish
    // awaits each request), so a partition never reorders.
    const producer = createProducer(this.settings);
    // A connection error surfaces in the send that fails; this only keeps an emitted one from crashing the process.
    producer.on('error', () => {});
    this.producer = producer;
    return producer;
  }

  /** Drops the producer after a failure, so the retry starts on a fresh connection and producer id. */
  private async reset(): Promise<void> {
    const p = this.producer;
    this.producer = undefined;
    await p?.close(true).catch(() => {});
  }

  private async publish(events: StoredEvent[]): Promise<number> {
    let prev = this.position;
    const messages = events.map((e) => {
      const m = toMessage(e, prev);
      prev = e.position;
      return m;
    });
    try {
      const producer = await this.connect();
      const topic = this.settings.topic;
      for (const chunk of chunks(messages))
        await producer.send({
          acks: -1,
          messages: chunk.map((m) => ({
            topic,
            key: Buffer.from(m.key),
            value: m.value,
            headers: new Map(
              Object.entries(m.headers).map(([k, v]) => [Buffer.from(k), Buffer.isBuffer(v) ? v : Buffer.from(v)]),
            ),
          })),
        });
    } catch (e) {
      await this.reset();
      throw e;
    }
    const last = events[events.length - 1].position;
    await writeCheckpoint(this.sql, RELAY, last);
    this.position = last;
    this.stats.position = last;
    this.stats.batches += 1;
    this.stats.events += events.length;
    return last;
  }
}

function* chunks(messages: OutMessage[]): Generator<OutMessage[]> {
  let out: OutMessage[] = [];
  let bytes = 0;
  for (const m of messages) {
    const size = m.value.length + 256;
    if (out.length && bytes + size > MAX_REQUEST_BYTES) {
      yield out;
      out = [];
      bytes = 0;
    }
    out.push(m);
    bytes += size;
  }
  if (out.length) yield out;
}
