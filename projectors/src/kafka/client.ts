import { AssignerProtocol, Kafka, logLevel, type Admin, type LogEntry, type PartitionAssigner } from 'kafkajs';

/**
 * Kafka settings of the relay and the Kafka feed (KAFKA_BROKERS and friends,
 * deploy/src/config.ts). The client is kafkajs 2.2.4: it speaks the protocol
 * versions Kafka 4 kept after KIP-896 (tested here against Kafka 4.1,
 * deploy/engines/kafka.sh).
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

/** kafkajs logs errors through our log, each distinct message at most once per 30 s (reconnect storms are loud). */
function logCreator(log: (msg: string) => void) {
  const seen = new Map<string, number>();
  return () =>
    ({ level, log: entry, namespace }: LogEntry) => {
      if (level > logLevel.ERROR) return;
      // Concurrent topic creation by the relay and the consumers: handled in ensureTopic.
      if (/CreateTopics/.test(entry.message)) return;
      const msg = `kafka ${namespace}: ${entry.message}${entry.error ? ` (${entry.error})` : ''}`;
      const now = Date.now();
      if ((seen.get(msg) ?? 0) > now - 30_000) return;
      seen.set(msg, now);
      if (seen.size > 200) seen.clear();
      log(msg);
    };
}

export function createKafka(s: KafkaSettings, clientId: string): Kafka {
  return new Kafka({
    clientId: s.clientId ? `${s.clientId}-${clientId}` : clientId,
    brokers: s.brokers,
    connectionTimeout: 3_000,
    requestTimeout: 30_000,
    // Each call retries a little; the relay and the feed have their own outer retry loops with backoff.
    retry: { initialRetryTime: 200, maxRetryTime: 3_000, retries: 5 },
    logLevel: logLevel.ERROR,
    logCreator: logCreator(s.log ?? (() => {})),
  });
}

/** Creates the event topic when it does not exist (the relay and every consumer call it, whoever starts first). */
export async function ensureTopic(admin: Admin, s: KafkaSettings): Promise<void> {
  const existing = await admin.listTopics();
  if (existing.includes(s.topic)) return;
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic: s.topic,
          numPartitions: s.partitions,
          // Batches of large events (documents' payloads) still fit; the event store stays the source of truth, so no compaction.
          configEntries: [
            { name: 'max.message.bytes', value: String(16 * 1024 * 1024) },
            { name: 'cleanup.policy', value: 'delete' },
          ],
        },
      ],
    });
  } catch (e) {
    // TOPIC_ALREADY_EXISTS from a concurrent creator is fine.
    if (!/already exists/i.test(String((e as Error)?.message ?? e)) && !(await admin.listTopics()).includes(s.topic)) throw e;
  }
}

export const ASSIGNER = 'SvcSingleActive';

/**
 * The group's partition assignment: every partition of the topic to ONE member
 * (the others are hot standbys). The projections need the global order of the
 * whole log, which no subset of partitions carries, so splitting partitions
 * across members would make each see holes. Sticky: a member that holds the
 * partitions says so in its metadata and keeps them when another joins.
 */
export const singleActiveAssigner =
  (holdsPartitions: () => boolean): PartitionAssigner =>
  ({ cluster }) => ({
    name: ASSIGNER,
    version: 1,
    async assign({ members, topics }) {
      const holder =
        members
          .filter((m) => AssignerProtocol.MemberMetadata.decode(m.memberMetadata)?.userData?.toString() === 'active')
          .map((m) => m.memberId)
          .sort()[0] ?? members.map((m) => m.memberId).sort()[0];
      const all: Record<string, number[]> = {};
      for (const t of topics) all[t] = cluster.findTopicPartitionMetadata(t).map((p) => p.partitionId);
      return members.map((m) => ({
        memberId: m.memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: m.memberId === holder ? all : {}, userData: Buffer.alloc(0) }),
      }));
    },
    protocol({ topics }) {
      return { name: ASSIGNER, metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.from(holdsPartitions() ? 'active' : '') }) };
    },
  });
