import type { EventStore } from '@svc/domain';
import { catchUp, type CatchUpOptions } from './catch-up';

/**
 * Where a subscriber of the log (read-model runner, search projector, document
 * worker) gets its events from. Every feed has the contract of `catchUp`:
 * deliver events with position > `from`, strictly in global-log order, hand
 * each batch to `handle` (which returns the position now checkpointed), retry
 * a failed batch, never skip one. The subscriber keeps its own checkpoint; the
 * feed only transports.
 *
 * - `catchUpFeed`: reads the event store's global log directly (default).
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

export const catchUpFeed = (store: EventStore): EventFeed => ({
  kind: 'catch-up',
  follow: (_name, o) => catchUp(store, o),
});
