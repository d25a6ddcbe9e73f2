import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { Consumer } from '@platformatic/kafka';
import type { KafkaSettings } from '@svc/projectors';
import { expect } from 'vitest';
import { ROOT, type Api } from '../support/service';
import { serverUrl } from '../support/engines';

/** KAFKA_BROKERS of the run (unset: the Kafka suites are skipped). */
export const brokers = serverUrl('kafka');
export const SKIP_REASON = 'KAFKA_BROKERS not set: start one with deploy/engines/kafka.sh start';

/** A topic (and consumer-group prefix) of its own for one test. */
export function freshTopic(prefix = 'test'): string {
  return `${prefix}.${randomUUID().slice(0, 8)}`;
}

export function settingsFor(topic: string, partitions = 3): KafkaSettings {
  return { brokers: brokers!.split(','), topic, partitions, groupPrefix: `${topic}.`, clientId: 'test' };
}

/** One message as read back (headers by name; a repeated header keeps its first value). */
export interface RawMessage {
  partition: number;
  offset: string;
  message: { key: Buffer | null; value: Buffer | null; headers: Record<string, Buffer> };
}

/**
 * Reads the whole topic from the beginning with a consumer group of its own until `until` holds (or the time runs out).
 */
export async function readTopic(
  topic: string,
  until: (msgs: RawMessage[]) => boolean,
  timeoutMs = 60_000,
): Promise<RawMessage[]> {
  const consumer = new Consumer({
    clientId: 'test-reader',
    bootstrapBrokers: brokers!.split(','),
    groupId: `reader-${randomUUID()}`,
    maxWaitTime: 200,
    autocommit: false,
  });
  const out: RawMessage[] = [];
  try {
    const stream = await consumer.consume({ topics: [topic], mode: 'earliest' });
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    stream.on('data', (m) => {
      const headers: Record<string, Buffer> = {};
      for (const [k, v] of m.headerEntries) headers[k.toString()] ??= v;
      out.push({
        partition: m.partition,
        offset: String(m.offset),
        message: { key: m.key ?? null, value: m.value ?? null, headers },
      });
      if (until(out)) done();
    });
    stream.on('error', () => done());
    const t = setTimeout(done, timeoutMs);
    await finished;
    clearTimeout(t);
    await stream.close().catch(() => {});
  } finally {
    await consumer.close(true).catch(() => {});
  }
  return out;
}

/** deploy/engines/kafka.sh with the given instance variables (e.g. KAFKA_PORT for a broker of the test's own). */
export function kafkaScript(
  cmd: 'start' | 'stop' | 'clean' | 'status',
  env: Record<string, string>,
): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      [join(ROOT, 'deploy/engines/kafka.sh'), cmd],
      { env: { ...process.env, ...env }, timeout: 300_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

/** Every record of `typeName` the token can list, following the cursor (at most `maxPages` pages of 100). */
export async function listAllRecords(api: Api, token: string, typeName: string, maxPages: number): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < maxPages; pages++) {
    const r = await api.get(
      `/v1/records?type=${typeName}&limit=100${cursor ? `&startFrom=${encodeURIComponent(cursor)}` : ''}`,
      token,
    );
    expect(r.status, r.text).toBe(200);
    out.push(...r.body.data);
    cursor = r.body.nextCursor;
    if (!cursor) break;
  }
  return out;
}
