import { type KafkaSettings, parseBrokers } from '@svc/projectors';
import type { Config } from '../config';

/** Kafka settings from the configuration, or undefined when KAFKA_BROKERS is unset (the catch-up feed then serves the projectors). */
export function kafkaSettings(config: Config, log: (msg: string) => void): KafkaSettings | undefined {
  if (!config.kafkaBrokers) return undefined;
  const brokers = parseBrokers(config.kafkaBrokers);
  if (!brokers.length) throw new Error('KAFKA_BROKERS has no broker (expected host:port[,host:port...])');
  if (!Number.isInteger(config.kafkaPartitions) || config.kafkaPartitions < 1) throw new Error('KAFKA_TOPIC_PARTITIONS must be a positive integer');
  return { brokers, topic: config.kafkaTopic, partitions: config.kafkaPartitions, groupPrefix: config.kafkaGroupPrefix, clientId: `svc-${config.role}`, log };
}

export interface SubscriberGauge {
  name: string;
  position: number;
  /** Events held in quarantine (SQL projections). */
  quarantined?: number;
}

/** Prometheus text exposition of the log subscribers' positions and lags (GET /metrics). */
export function metricsText(o: { role: string; head: number; subscribers: SubscriberGauge[]; kafka: Array<{ name: string; groupId?: unknown; lagMessages?: unknown; buffered?: unknown; gapFills?: unknown; active?: unknown }> }): string {
  const lines: string[] = [];
  const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
  const gauge = (name: string, help: string, rows: Array<[Record<string, string>, number]>) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
    for (const [labels, v] of rows) {
      const l = Object.entries({ role: o.role, ...labels }).map(([k, x]) => `${k}="${esc(x)}"`).join(',');
      lines.push(`${name}{${l}} ${Number.isFinite(v) ? v : 0}`);
    }
  };
  gauge('svc_event_store_head_position', 'Position of the newest event in the global log', [[{}, o.head]]);
  gauge('svc_subscriber_position', 'Last global position a log subscriber (projection, worker, relay) has applied or published', o.subscribers.map((s) => [{ subscriber: s.name }, s.position]));
  gauge('svc_subscriber_lag_events', 'Events between the head of the log and the subscriber', o.subscribers.map((s) => [{ subscriber: s.name }, Math.max(0, o.head - s.position)]));
  const quarantining = o.subscribers.filter((s) => s.quarantined !== undefined);
  if (quarantining.length)
    gauge('svc_projection_quarantined_events', 'Events a projection could not apply, with the later events of their streams, held until an operator retries or skips them', quarantining.map((s) => [{ subscriber: s.name }, s.quarantined ?? 0]));
  if (o.kafka.length) {
    gauge('svc_kafka_consumer_lag_messages', 'Messages between the partitions\' high watermarks and the offsets applied (Kafka feed)', o.kafka.map((k) => [{ subscriber: k.name, group: String(k.groupId) }, Number(k.lagMessages ?? 0)]));
    gauge('svc_kafka_consumer_buffered_events', 'Events received from Kafka that wait for their predecessor in the global log', o.kafka.map((k) => [{ subscriber: k.name, group: String(k.groupId) }, Number(k.buffered ?? 0)]));
    gauge('svc_kafka_consumer_gap_fills', 'Times a hole in the topic was read from the event store instead', o.kafka.map((k) => [{ subscriber: k.name, group: String(k.groupId) }, Number(k.gapFills ?? 0)]));
    gauge('svc_kafka_consumer_active', '1 when this process holds the group\'s partitions, 0 on standby', o.kafka.map((k) => [{ subscriber: k.name, group: String(k.groupId) }, k.active ? 1 : 0]));
  }
  return lines.join('\n') + '\n';
}
