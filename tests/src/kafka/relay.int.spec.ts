import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventCodec, type EventType, metadataCodec } from '@svc/contracts';
import { type StoredEvent, writeCheckpoint } from '@svc/domain';
import { H, KafkaFeed, KafkaRelay, RELAY } from '@svc/projectors';
import { eventually, startService, type TestService } from '../support/service';
import { brokers, freshTopic, readTopic, settingsFor, SKIP_REASON, type RawMessage } from './kafka-support';

/**
 * The relay against a real broker (KAFKA_BROKERS): every event of a realistic
 * log (accounts, schemas, records created / updated / deleted, folders,
 * documents) is published once, keyed by stream, in stream order within its
 * partition, its value Avro that the contracts' schemas decode to exactly the
 * stored data. A restarted relay resumes from its checkpoint without a gap; a
 * checkpoint older than what was acknowledged (a crash between the broker's
 * ack and the checkpoint write) only re-publishes, and the Kafka feed hands a
 * subscriber each event exactly once, in global order, across partitions.
 */
const h = (m: RawMessage, name: string) => m.message.headers?.[name]?.toString();

async function allEvents(svc: TestService): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  for (;;) {
    const batch = await svc.service.store.readAll(out.at(-1)?.position ?? 0, 1000);
    if (!batch.length) return out;
    out.push(...batch);
  }
}

/**
 * Waits until the service's own asynchronous subscribers (search index, document worker) have appended their outcomes:
 * the log stops growing.
 */
async function quiesce(svc: TestService): Promise<number> {
  let last = -1;
  let stableSince = Date.now();
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    const head = await svc.service.store.headPosition();
    if (head !== last) {
      last = head;
      stableSince = Date.now();
    } else if (Date.now() - stableSince > 1500 && (svc.service.searchIndexer?.current ?? head) >= head) return head;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the log did not settle');
}

async function traffic(svc: TestService, token: string, n: number): Promise<void> {
  const api = svc.api;
  const s = await api.post('/v1/schemas', token, {
    typeName: `K_${randomUUID().slice(0, 8)}`,
    displayName: 'Kafka',
    allowedSurfaces: ['record'],
    fields: [
      { fieldId: 'title', fieldType: 'string', searchable: true },
      { fieldId: 'n', fieldType: 'number' },
      { fieldId: 'tags', fieldType: 'array' },
    ],
  });
  expect(s.status, s.text).toBe(201);
  const folder = await api.post('/v1/folders', token, { name: `f-${randomUUID().slice(0, 6)}` });
  expect(folder.status, folder.text).toBe(201);
  for (let i = 0; i < n; i++) {
    const r = await api.post('/v1/records', token, {
      typeName: s.body.typeName,
      externalId: `ext-${randomUUID()}`,
      payload: { title: `Item ${i} — Zürich ✓`, n: i + 0.5, tags: ['a', { deep: [1, null] }] },
      ...(i % 3 === 0 ? { folderId: folder.body.id } : {}),
    });
    expect(r.status, r.text).toBe(201);
    if (i % 2 === 0)
      expect((await api.patch(`/v1/records/${r.body.id}`, token, { payload: { n: i * 2 } })).status).toBe(200);
    if (i % 5 === 4) expect((await api.del(`/v1/records/${r.body.id}`, token)).status).toBe(204);
  }
  const d = await api.post('/v1/documents', token, {
    title: 'Notes',
    text: 'Kafka carries the log; the event store keeps it.',
    indexMode: 'TEXT',
    payload: { k: 1 },
  });
  expect(d.status, d.text).toBe(201);
  await quiesce(svc);
}

describe.skipIf(!brokers)(`Kafka relay (${brokers ? `KAFKA_BROKERS=${brokers}` : SKIP_REASON})`, () => {
  let svc: TestService;
  let root: string;
  const topic = freshTopic('relay');
  const settings = () => settingsFor(topic, 3);

  beforeAll(async () => {
    // The embedded service makes the log; the relay under test runs beside it on the same store.
    svc = await startService();
    const acct = await svc.api.newAccount({
      plan: 'enterprise',
      rateLimitPerMinute: 1_000_000,
      creditLimit: 1_000_000_000,
    });
    root = acct.tenants.live.rootKey;
    await traffic(svc, root, 12);
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
  });

  it(
    'publishes every event once, keyed by stream, in stream order per partition, with Avro the contracts ' + 'decode',
    async () => {
      const relay = new KafkaRelay(svc.service.sql, svc.service.store, settings());
      await relay.init();
      relay.start();
      const events = await allEvents(svc);
      await eventually(async () => relay.current >= events.at(-1)!.position, 60_000);
      await relay.stop();
      const msgs = await readTopic(topic, (m) => m.length >= events.length);
      expect(msgs.length).toBe(events.length);

      const byPosition = new Map(events.map((e) => [e.position, e]));
      const perPartitionKey = new Map<string, RawMessage[]>();
      const partitionOfKey = new Map<string, number>();
      const types = new Set<string>();
      let prevChain = 0;
      for (const m of [...msgs].sort((a, b) => Number(h(a, H.position)) - Number(h(b, H.position)))) {
        const e = byPosition.get(Number(h(m, H.position)))!;
        expect(e, `position ${h(m, H.position)}`).toBeDefined();
        // key and headers
        expect(m.message.key?.toString()).toBe(e.streamId);
        expect(h(m, H.streamId)).toBe(e.streamId);
        expect(h(m, H.eventId)).toBe(e.id);
        expect(h(m, H.type)).toBe(e.type);
        expect(Number(h(m, H.revision))).toBe(e.revision);
        expect(Number(h(m, H.prev))).toBe(prevChain);
        prevChain = e.position;
        expect(h(m, H.contentType)).toBe('avro/binary');
        // the value is the contracts' Avro for the type; the fingerprint names that schema
        const codec = eventCodec(e.type as EventType);
        expect(h(m, H.fingerprint)).toBe(codec.fingerprint);
        expect(codec.decode(m.message.value!)).toEqual(e.data);
        expect(metadataCodec.decode(m.message.headers![H.metadata] as Buffer)).toEqual(e.metadata);
        types.add(e.type);
        // one partition per stream
        const p = partitionOfKey.get(e.streamId);
        if (p !== undefined) expect(m.partition, `stream ${e.streamId}`).toBe(p);
        partitionOfKey.set(e.streamId, m.partition);
      }
      for (const m of msgs) {
        const k = `${m.partition}/${m.message.key}`;
        perPartitionKey.set(k, [...(perPartitionKey.get(k) ?? []), m]);
      }
      // within a partition (read in offset order), each stream's revisions and positions only grow
      for (const list of perPartitionKey.values()) {
        const revs = list.map((m) => Number(h(m, H.revision)));
        const pos = list.map((m) => Number(h(m, H.position)));
        expect(revs).toEqual([...revs].sort((a, b) => a - b));
        expect(pos).toEqual([...pos].sort((a, b) => a - b));
        expect(new Set(revs).size).toBe(revs.length);
      }
      expect(new Set(msgs.map((m) => m.partition)).size).toBe(3);
      for (const t of [
        'AccountOpened',
        'SchemaCreated',
        'RecordCreated',
        'RecordUpdated',
        'RecordDeleted',
        'FolderCreated',
        'DocumentCreated',
      ])
        expect([...types]).toContain(t);
    },
    120_000,
  );

  it(
    'a restarted relay resumes from its checkpoint without a gap; a stale checkpoint only re-publishes; the ' +
      'feed applies each event once, in log order',
    async () => {
      const head1 = (await allEvents(svc)).at(-1)!.position;
      // More writes while no relay runs.
      await traffic(svc, root, 6);
      const r2 = new KafkaRelay(svc.service.sql, svc.service.store, settings());
      await r2.init();
      expect(r2.current).toBe(head1);
      r2.start();
      const events = await allEvents(svc);
      const head2 = events.at(-1)!.position;
      await eventually(async () => r2.current >= head2, 60_000);
      await r2.stop();

      // A crash after the ack but before the checkpoint: the checkpoint is behind what Kafka holds.
      const stale = events[Math.floor(events.length / 3)].position;
      await writeCheckpoint(svc.service.sql, RELAY, stale);
      const r3 = new KafkaRelay(svc.service.sql, svc.service.store, settings());
      await r3.init();
      r3.start();
      await eventually(async () => r3.current >= head2, 60_000);
      await r3.stop();

      const republished = events.filter((e) => e.position > stale).length;
      const msgs = await readTopic(topic, (m) => m.length >= events.length + republished);
      expect(msgs.length).toBe(events.length + republished);
      const seen = new Map<number, number>();
      for (const m of msgs) seen.set(Number(h(m, H.position)), (seen.get(Number(h(m, H.position))) ?? 0) + 1);
      for (const e of events) expect(seen.get(e.position), `position ${e.position}`).toBe(e.position > stale ? 2 : 1);

      // The feed: three partitions, duplicates, a subscriber with small batches — each event once, in the log's order,
      // all from Kafka.
      const got: StoredEvent[] = [];
      const abort = new AbortController();
      const feed = new KafkaFeed({ settings: settings(), store: svc.service.store, sql: svc.service.sql });
      const following = feed.follow('probe', {
        from: 0,
        batchSize: 7,
        signal: abort.signal,
        handle: async (batch) => {
          got.push(...batch);
          return batch.at(-1)!.position;
        },
      });
      await eventually(async () => got.at(-1)?.position === head2, 60_000);
      const status = feed.status('probe')!;
      abort.abort();
      await following;
      expect(got.map((e) => e.position)).toEqual(events.map((e) => e.position));
      expect(got.map((e) => e.id)).toEqual(events.map((e) => e.id));
      expect(got.map((e) => e.data)).toEqual(events.map((e) => e.data));
      expect(status).toMatchObject({
        transport: 'kafka',
        active: true,
        gapFills: 0,
        fromStore: 0,
        fromKafka: events.length,
        undecodable: 0,
      });
      expect(status.duplicates).toBe(republished);
    },
    180_000,
  );

  it("a subscriber whose checkpoint lags the group's committed offsets gets the gap from the event store", async () => {
    // The group 'probe' committed up to the end above; a subscriber restarting from 0 under that group (a rebuild) sees
    // only later messages.
    const got: StoredEvent[] = [];
    const abort = new AbortController();
    const feed = new KafkaFeed({ settings: settings(), store: svc.service.store, sql: svc.service.sql, gapMs: 500 });
    const following = feed.follow('probe', {
      from: 0,
      batchSize: 50,
      signal: abort.signal,
      handle: async (b) => (got.push(...b), b.at(-1)!.position),
    });
    // A new write reaches the topic through a relay; the feed finds the hole before it and fills it from the store.
    await traffic(svc, root, 1);
    const relay = new KafkaRelay(svc.service.sql, svc.service.store, settings());
    await relay.init();
    relay.start();
    const events = await allEvents(svc);
    await eventually(async () => got.at(-1)?.position === events.at(-1)!.position, 60_000);
    const status = feed.status('probe')!;
    abort.abort();
    await following;
    await relay.stop();
    expect(got.map((e) => e.position)).toEqual(events.map((e) => e.position));
    expect(Number(status.gapFills)).toBeGreaterThan(0);
    expect(Number(status.fromKafka)).toBeGreaterThan(0);
  }, 120_000);
  it(
    'two members of one group: one applies, the other stands by and takes over from the checkpoint when the ' +
      'first leaves',
    async () => {
      const name = 'takeover';
      const applied: Array<{ by: string; position: number }> = [];
      const member = (by: string) => {
        const abort = new AbortController();
        const feed = new KafkaFeed({ settings: settings(), store: svc.service.store, sql: svc.service.sql });
        const following = feed.follow(name, {
          from: 0,
          batchSize: 25,
          signal: abort.signal,
          handle: async (b) => {
            for (const e of b) applied.push({ by, position: e.position });
            await writeCheckpoint(svc.service.sql, name, b.at(-1)!.position);
            return b.at(-1)!.position;
          },
        });
        return { feed, stop: async () => (abort.abort(), await following) };
      };
      const a = member('a');
      let events = await allEvents(svc);
      await eventually(async () => applied.at(-1)?.position === events.at(-1)!.position, 60_000);
      const b = member('b');
      await eventually(
        async () => Number(b.feed.status(name)?.joins ?? 0) > 0 && Number(a.feed.status(name)?.joins ?? 0) > 1,
        60_000,
      );
      expect(a.feed.status(name)!.active).toBe(true);
      expect(b.feed.status(name)!.active).toBe(false);
      await a.stop();
      await traffic(svc, root, 2);
      const relay = new KafkaRelay(svc.service.sql, svc.service.store, settings());
      await relay.init();
      relay.start();
      events = await allEvents(svc);
      await eventually(async () => applied.at(-1)?.position === events.at(-1)!.position, 90_000);
      await relay.stop();
      const status = b.feed.status(name)!;
      await b.stop();
      expect(status.active).toBe(true);
      expect(applied.map((x) => x.position)).toEqual(events.map((e) => e.position));
      expect(applied.filter((x) => x.by === 'b').length).toBeGreaterThan(0);
    },
    180_000,
  );

  it(
    'a feed that pauses often (3 messages buffered per partition) still gets every event from Kafka, in log ' +
      'order, without waiting for the store',
    async () => {
      // The client pauses all partitions at once: pausing while the next event sits in a partition not received yet
      // would stall the feed until the store fills the hole (gapMs, here far beyond the test's time).
      const events = await allEvents(svc);
      const got: StoredEvent[] = [];
      const abort = new AbortController();
      const feed = new KafkaFeed({
        settings: settings(),
        store: svc.service.store,
        sql: svc.service.sql,
        maxBuffered: 3,
        gapMs: 600_000,
      });
      const following = feed.follow('paused', {
        from: 0,
        batchSize: 5,
        signal: abort.signal,
        handle: async (b) => (got.push(...b), b.at(-1)!.position),
      });
      await eventually(async () => (got.at(-1)?.position ?? 0) >= events.at(-1)!.position, 60_000);
      const status = feed.status('paused')!;
      abort.abort();
      await following;
      expect(got.map((e) => e.position)).toEqual(events.map((e) => e.position));
      expect(status).toMatchObject({ gapFills: 0, fromStore: 0, fromKafka: events.length });
    },
    120_000,
  );
});
