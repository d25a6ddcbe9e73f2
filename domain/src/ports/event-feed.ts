import type { StoredEvent } from './event-store';

/**
 * Where a subscriber of the log (read-model runner, search projector, document
 * worker) gets its events from. Every feed has the contract of `catchUp`:
 * deliver events with position > `from`, strictly in global-log order, hand
 * each batch to `handle` (which returns the position now checkpointed), retry
 * a failed batch, never skip one. The subscriber keeps its own checkpoint; the
 * feed only transports.
 *
 * - `catchUpFeed` (projectors/src/runtime/feed.ts): reads the event store's global log (default), through the
 *   process's one shared reader of that store (projectors/src/runtime/log-tail.ts): subscribers near
 *   the head share each read and its parsed events.
 * - `KafkaFeed` (projectors/src/kafka/feed.ts): consumes the topic the relay
 *   publishes, as a consumer group per subscriber (KAFKA_BROKERS).
 */
export interface EventFeed {
  readonly kind: 'catch-up' | 'kafka';
  /** Runs until `o.signal` aborts. `name` is the subscriber (its checkpoint name; the consumer group with Kafka). */
  follow(name: string, o: CatchUpOptions): Promise<void>;
  /** Transport details for /readyz and /metrics (Kafka: consumer lag in messages). */
  status?(name: string): FeedStatus | undefined;
}

export interface FeedStatus {
  transport: 'catch-up' | 'kafka';
  [key: string]: unknown;
}

/** What a subscriber hands its feed (and `catchUp`, projectors/src/runtime/catch-up.ts). */
export interface CatchUpOptions {
  /** Deliver events with position > from. */
  from: number;
  batchSize?: number;
  signal: AbortSignal;
  /** Applies a batch; returns the position now checkpointed. Throwing retries the same batch after a backoff. */
  handle: (events: StoredEvent[]) => Promise<number>;
  onError?: (error: unknown, attempt: number) => void;
  /** Safety poll when no append notification arrives (e.g. another process wrote). */
  pollMs?: number;
}
