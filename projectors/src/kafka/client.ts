import {
  Admin,
  compatibilityPartitioner,
  Consumer,
  Producer,
  type ExtendedGroupProtocolSubscription,
  type GroupPartitionsAssigner,
} from '@platformatic/kafka';

/**
 * Kafka settings of the relay and the Kafka feed (KAFKA_BROKERS and friends,
 * deploy/src/config.ts). The client is @platformatic/kafka (pure JavaScript,
 * maintained; tested here against Kafka 4.1, deploy/engines/kafka.sh). Why
 * this one and not kafkajs or @confluentinc/kafka-javascript:
 * docs/engines/kafka.md "The client".
 */
export interface KafkaSettings {
  /** host:port list. */
  brokers: string[];
  /** The event topic (default `svc.events`). */
  topic: string;
  /** Partitions when the topic is created (default 3); the key is the stream id. */
  partitions: number;
  /** Consumer groups are `${groupPrefix}${subscriber}`, e.g. `svc.events.read-models`. */
  groupPrefix: string;
  clientId?: string;
  log?: (msg: string) => void;
}

export const parseBrokers = (s: string): string[] =>
  s
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);

const clientIdOf = (s: KafkaSettings, role: string) => (s.clientId ? `${s.clientId}-${role}` : role);

/**
 * Options every client shares. Each call retries a little; the relay and the
 * feed have their own outer retry loops with backoff (a broker restart ends in
 * a fresh client there).
 */
const base = (s: KafkaSettings, role: string) => ({
  clientId: clientIdOf(s, role),
  bootstrapBrokers: s.brokers,
  connectTimeout: 3_000,
  requestTimeout: 30_000,
  timeout: 30_000,
  retries: 5,
  retryDelay: 300,
});

/**
 * The relay's producer: idempotent, and partitions chosen with the Java
 * client's murmur2 (`compatibilityPartitioner`), so a stream's partition is
 * the one any Kafka client computes. Values, keys and headers are Buffers.
 */
export function createProducer(s: KafkaSettings): Producer {
  return new Producer({
    ...base(s, 'relay'),
    idempotent: true,
    acks: -1,
    autocreateTopics: false,
    partitioner: compatibilityPartitioner,
  });
}

export function createAdmin(s: KafkaSettings, role: string): Admin {
  return new Admin(base(s, role));
}

/** Creates the event topic when it does not exist (the relay and every consumer call it, whoever starts first). */
export async function ensureTopic(s: KafkaSettings, role: string): Promise<void> {
  const admin = createAdmin(s, role);
  try {
    if ((await admin.listTopics()).includes(s.topic)) return;
    try {
      await admin.createTopics({
        topics: [s.topic],
        partitions: s.partitions,
        replicas: -1,
        // Batches of large events (documents' payloads) still fit; the event store stays the source of truth, so no
        // compaction.
        configs: [
          { name: 'max.message.bytes', value: String(16 * 1024 * 1024) },
          { name: 'cleanup.policy', value: 'delete' },
        ],
      });
    } catch (e) {
      // TOPIC_ALREADY_EXISTS from a concurrent creator is fine.
      if (!(await admin.listTopics()).includes(s.topic)) throw e;
    }
    await waitForLeaders(admin, s.topic);
  } finally {
    await admin.close().catch(() => {});
  }
}

/** A topic just created has no leader for a moment; producing to it or joining a group on it before then fails. */
async function waitForLeaders(admin: Admin, topic: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const md = await admin.metadata({ topics: [topic], forceUpdate: true }).catch(() => undefined);
    const t = md?.topics.get(topic);
    if (t && t.partitions.length && t.partitions.every((p) => p && p.leader >= 0)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const ASSIGNER = 'SvcSingleActive';

/** What a member says when it joins: whether it holds the partitions now (the assignment is sticky to it). */
export const memberUserData = (holdsPartitions: boolean): Buffer => Buffer.from(holdsPartitions ? 'active' : '');

/**
 * The group's partition assignment: every partition of the topic to ONE member
 * (the others are hot standbys). The projections need the global order of the
 * whole log, which no subset of partitions carries, so splitting partitions
 * across members would make each see holes. Sticky: a member that holds the
 * partitions says so in its metadata (`memberUserData`) and keeps them when
 * another joins.
 */
export const singleActiveAssigner: GroupPartitionsAssigner = (_current, members, topics, metadata) => {
  const ids = [...members.keys()].sort();
  const active = (m: ExtendedGroupProtocolSubscription) => {
    const d = (m as { metadata?: Buffer | string }).metadata;
    return d !== undefined && d !== null && d.toString() === 'active';
  };
  const holder = ids.find((id) => active(members.get(id)!)) ?? ids[0];
  return ids.map((memberId) => {
    const assignments = new Map<string, { topic: string; partitions: number[] }>();
    if (memberId === holder)
      for (const topic of topics) {
        const count = metadata.topics.get(topic)?.partitionsCount ?? 0;
        assignments.set(topic, { topic, partitions: Array.from({ length: count }, (_, i) => i) });
      }
    return { memberId, assignments };
  });
};

/** A consumer-group member of the feed, with the single-active assignment (`holdsPartitions` is asked at each join). */
export function createConsumer(
  s: KafkaSettings,
  role: string,
  groupId: string,
  holdsPartitions: () => boolean,
): Consumer {
  return new Consumer({
    ...base(s, role),
    groupId,
    sessionTimeout: 10_000,
    rebalanceTimeout: 15_000,
    heartbeatInterval: 1_000,
    maxWaitTime: 500,
    // A fetch of a few MB, not the client's 50 MB: a backlog arrives in steps the feed decodes between heartbeats, with
    // every partition in each step (the feed needs them all to follow the log's order).
    maxBytes: 4 * 1024 * 1024,
    maxBytesPerPartition: 512 * 1024,
    autocommit: false,
    autocreateTopics: false,
    protocols: [{ name: ASSIGNER, version: 1 }],
    protocolsMetadata: () => memberUserData(holdsPartitions()),
    partitionAssigner: singleActiveAssigner,
  });
}
