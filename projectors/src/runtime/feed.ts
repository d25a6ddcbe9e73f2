import type { EventStore } from '@svc/domain';
import { catchUp, type CatchUpOptions } from './catch-up';
import { logTailOf } from './log-tail';

/**
 * Where a subscriber of the log (read-model runner, search projector, document
 * worker) gets its events from. Every feed has the contract of `catchUp`:
 * deliver events with position > `from`, strictly in global-log order, hand
 * each batch to `handle` (which returns the position now checkpointed), retry
 * a failed batch, never skip one. The subscriber keeps its own checkpoint; the
 * feed only transports.
 *
 * - `catchUpFeed`: reads the event store's global log (default), through the
 *   process's one shared reader of that store (log-tail.ts): subscribers near
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

/** `shared: false` reads the store on its own (one read per subscriber and batch, as before the shared reader). */
export const catchUpFeed = (store: EventStore, o: { shared?: boolean } = {}): EventFeed => ({
  kind: 'catch-up',
  follow: (_name, co) => (o.shared === false ? catchUp(store, co) : catchUp(store, co, logTailOf(store).read)),
});
