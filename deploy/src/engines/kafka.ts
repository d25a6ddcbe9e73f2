import { type KafkaSettings, parseBrokers } from '@svc/projectors';
import type { Config } from '../config';

/**
 * Kafka settings from the configuration, or undefined when KAFKA_BROKERS is unset (the catch-up feed then serves the
 * projectors).
 */
export function kafkaSettings(config: Config, log: (msg: string) => void): KafkaSettings | undefined {
  if (!config.kafkaBrokers) return undefined;
  const brokers = parseBrokers(config.kafkaBrokers);
  if (!brokers.length) throw new Error('KAFKA_BROKERS has no broker (expected host:port[,host:port...])');
  if (!Number.isInteger(config.kafkaPartitions) || config.kafkaPartitions < 1)
    throw new Error('KAFKA_TOPIC_PARTITIONS must be a positive integer');
  return {
    brokers,
    topic: config.kafkaTopic,
    partitions: config.kafkaPartitions,
    groupPrefix: config.kafkaGroupPrefix,
    clientId: `svc-${config.role}`,
    log,
  };
}
