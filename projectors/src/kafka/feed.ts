import type { Consumer, Message, MessagesStream } from '@platformatic/kafka';
import {
  type CatchUpOptions,
  type EventFeed,
  type EventStore,
  type FeedStatus,
  readCheckpoint,
  type Sql,
  type StoredEvent,
} from '@svc/domain';
import { createConsumer, ensureTopic, type KafkaSettings } from './client';
import { fromMessage, H, type FeedEvent } from './messages';

export interface KafkaFeedOptions {
  settings: KafkaSettings;
  /** The source of truth, read only to heal a hole the topic cannot fill (see `gapMs`). */
  store: EventStore;
  /** Where the subscribers keep their checkpoints (re-read when this process takes the partitions over). */
  sql: Sql;
  /**
   * How long buffered events may wait for a missing predecessor before it is read from the event store (default 5 s).
   */
  gapMs?: number;
  /** Messages buffered in one partition before the consumer is paused (default 5,000). */
  maxBuffered?: number;
  log?: (msg: string) => void;
}

/**
 * The Kafka feed: each subscriber (read models, search index, document worker)
 * is its own consumer group `${groupPrefix}${name}` on the event topic, and
 * the batches it is handed are exactly what the catch-up subscription would
 * hand it: events with position > checkpoint, in global-log order.
 *
 * Why global order and not per-partition order: projections read across
 * streams (a record's schema, a context deletion touching every record in it,
 * reservations), so applying one partition ahead of another would apply a
 * RecordCreated before its SchemaCreated. Partitions carry each stream in
 * order; every message also carries the position of the event before it in
 * the global log (`svc-prev-position`), so the consumer re-sequences the
 * partitions into the log exactly: it applies the buffered event whose
 * predecessor is the checkpoint, then the next, and so on.
 *
 * Idempotence: the checkpoint (global position, in PostgreSQL, written with
 * the work) is the dedupe. A redelivered message (consumer restart, relay
 * re-publishing after its own crash, rebalance) has a position at or below the
 * checkpoint and is dropped before it reaches a projection. Offsets are
 * committed only after the checkpoint moved past them, so Kafka never skips
 * what the projection has not applied.
 *
 * Holes: if buffered events wait for a predecessor longer than `gapMs` (an
 * undecodable message, retention, a consumer group that is ahead of a reset
 * checkpoint), the missing events are read from the event store and applied,
 * then the topic takes over again. When Kafka is silent (down), nothing is
 * applied: the lag grows and shows in /readyz and /metrics until it returns.
 *
 * One active member: the group's assignor gives every partition to one member
 * (client.ts), the others stand by; a member that takes over re-reads the
 * checkpoint first.
 *
 * Backpressure: past `maxBuffered` messages buffered in a partition the
 * consumer is paused until every partition drained below half of that. The
 * client pauses all partitions at once, so it pauses only while the event the
 * checkpoint waits for is buffered (there is work to drain), and resumes as
 * soon as the chain waits for an event not received yet: that event may be in
 * a partition that is behind.
 */
export class KafkaFeed implements EventFeed {
  readonly kind = 'kafka' as const;
  private readonly subs = new Map<string, Subscription>();

  constructor(private readonly o: KafkaFeedOptions) {}

  follow(name: string, co: CatchUpOptions): Promise<void> {
    const s = new Subscription(name, this.o, co);
    this.subs.set(name, s);
    return s.run();
  }

  status(name: string): FeedStatus | undefined {
    return this.subs.get(name)?.status();
  }

  /** Every subscriber's status (for /metrics). */
  statuses(): Array<FeedStatus & { name: string }> {
    return [...this.subs.entries()].map(([name, s]) => ({ name, ...s.status() }));
  }
}

interface PartitionState {
  /** Offsets received and not yet committed, with their event positions (-1: undecodable, done at once). */
  entries: Array<{ offset: string; position: number }>;
  /** Next offset to commit (last applied + 1), and the one last committed. */
  want: string | null;
  committed: string | null;
  /** The partition's high watermark at the last fetch. */
  high: string | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Messages decoded in one go before the feed lets the event loop run. */
const YIELD_EVERY = 500;
const backoff = (attempt: number) => Math.min(5000, 50 * 2 ** Math.min(attempt, 7));

class Subscription {
  private current: number;
  private readonly buffer = new Map<number, FeedEvent>();
  /** prev-position -> position of the buffered event that follows it. */
  private readonly byPrev = new Map<number, number>();
  private readonly parts = new Map<number, PartitionState>();
  private consumer: Consumer | undefined;
  private stream: MessagesStream<Buffer, Buffer, Buffer, Buffer> | undefined;
  private paused = false;
  /**
   * Messages received in this tick: trimmed and woken for once, when the tick ends (the client hands them one by one).
   */
  private tickScheduled = false;
  private tickMessages = 0;
  /**
   * Paused for the rest of this tick: a fetch's messages arrive synchronously, and decoding thousands at once would
   * block heartbeats and the apply loop.
   */
  private yielding = false;
  private assigned = false;
  /** Set when this member (re)gains the partitions: the checkpoint is re-read before anything is applied. */
  private resync = false;
  private gapSince: number | null = null;
  private wakeUp: (() => void) | null = null;
  /** A wake-up that came while the apply loop was busy: its next wait returns at once. */
  private woken = false;
  private commits: Promise<void> = Promise.resolve();
  private committing = false;
  private commitAgain = false;
  private readonly groupId: string;
  private readonly s = {
    received: 0,
    fromKafka: 0,
    fromStore: 0,
    duplicates: 0,
    gapFills: 0,
    undecodable: 0,
    joins: 0,
    lastError: null as string | null,
  };

  constructor(
    private readonly name: string,
    private readonly o: KafkaFeedOptions,
    private readonly co: CatchUpOptions,
  ) {
    this.current = co.from;
    this.groupId = `${o.settings.groupPrefix}${name}`;
  }

  private get topic() {
    return this.o.settings.topic;
  }
  private log(msg: string) {
    this.o.log?.(`kafka feed ${this.name}: ${msg}`);
  }

  async run(): Promise<void> {
    const abort = () => this.wake();
    this.co.signal.addEventListener('abort', abort, { once: true });
    try {
      const applying = this.applyLoop();
      await Promise.all([this.sessions(applying), applying]);
    } finally {
      this.co.signal.removeEventListener('abort', abort);
    }
  }

  status(): FeedStatus {
    let lag = 0;
    const partitions: Array<{ partition: number; committed: string | null; high: string | null }> = [];
    for (const [partition, p] of this.parts) {
      const base = p.want ?? p.entries[0]?.offset ?? p.high;
      if (p.high !== null && base !== null) lag += Math.max(0, Number(p.high) - Number(base));
      partitions.push({ partition, committed: p.committed, high: p.high });
    }
    return {
      transport: 'kafka',
      topic: this.topic,
      groupId: this.groupId,
      active: this.assigned,
      position: this.current,
      lagMessages: lag,
      buffered: this.buffer.size,
      partitions,
      ...this.s,
    };
  }

  // ---- the consumer: one group member, recreated after any failure (a broker restart ends its stream)

  private async sessions(applying: Promise<void>): Promise<void> {
    let attempt = 0;
    while (!this.co.signal.aborted) {
      let highs: ReturnType<typeof setInterval> | undefined;
      try {
        await ensureTopic(this.o.settings, `feed-${this.name}`);
        const consumer = createConsumer(this.o.settings, `feed-${this.name}`, this.groupId, () => this.assigned);
        this.consumer = consumer;
        let ended!: (why: string) => void;
        const over = new Promise<string>((r) => (ended = r));
        const failed = (what: string) => (e: unknown) => {
          this.s.lastError = `${what}: ${e instanceof Error ? e.message : String(e)}`;
          this.log(`${this.s.lastError}; the consumer is recreated`);
          ended('crash');
        };
        consumer.on('consumer:group:join', (e) =>
          this.joined(e.assignments?.find((a) => a.topic === this.topic)?.partitions ?? []),
        );
        consumer.on('consumer:heartbeat:stalled', (e) =>
          failed('heartbeat stalled')(e.lastError ?? `${e.stalledFor} ms`),
        );
        consumer.on('error', failed('consumer'));
        const onAbort = () => ended('stop');
        this.co.signal.addEventListener('abort', onAbort, { once: true });
        try {
          // From the group's committed offsets; a group without any starts at the beginning of the topic.
          const stream = await consumer.consume({
            topics: [this.topic],
            mode: 'committed',
            fallbackMode: 'earliest',
            autocommit: false,
            maxWaitTime: 500,
          });
          this.stream = stream;
          stream.on('data', (m) => this.receive(m));
          stream.on('error', failed('stream'));
          stream.on('close', () => ended('closed'));
          highs = setInterval(() => void this.refreshHighs(), 2_000);
          attempt = 0;
          await over;
        } finally {
          this.co.signal.removeEventListener('abort', onAbort);
        }
      } catch (e) {
        this.s.lastError = e instanceof Error ? e.message : String(e);
        attempt += 1;
        if (attempt === 1 || attempt % 10 === 0) this.log(`consumer failed (attempt ${attempt}): ${this.s.lastError}`);
      }
      clearInterval(highs);
      if (this.co.signal.aborted) {
        // The batch in flight finishes first; then the offsets behind the final checkpoint are committed.
        await applying;
        await this.commits;
        await this.commit();
      }
      const c = this.consumer;
      const st = this.stream;
      this.consumer = undefined;
      this.stream = undefined;
      this.paused = false;
      // Without a live member this process holds nothing: another member may take the partitions over meanwhile.
      this.joined([]);
      this.s.joins -= 1;
      await st?.close().catch(() => {});
      await c?.close(true).catch(() => {});
      if (!this.co.signal.aborted) await sleep(backoff(Math.max(attempt, 3)));
    }
  }

  /** The partitions' high watermarks, for the lag in status() (the client's messages do not carry them). */
  private async refreshHighs(): Promise<void> {
    const c = this.consumer;
    if (!c || !this.assigned) return;
    try {
      const offsets = await c.listOffsets({ topics: [this.topic] });
      (offsets.get(this.topic) ?? []).forEach((high, partition) => {
        if (this.parts.has(partition) || this.assigned) this.part(partition).high = String(high);
      });
    } catch {
      // Best effort: the next round tries again.
    }
  }

  /**
   * A (re)join: the assignment may have moved, so per-partition bookkeeping starts again from the committed offsets.
   */
  private joined(partitions: number[]): void {
    this.s.joins += 1;
    const was = this.assigned;
    this.assigned = partitions.length > 0;
    this.dropPartitions();
    if (!this.assigned) {
      // Standby: another member applies; nothing buffered here may be applied any more.
      this.buffer.clear();
      this.byPrev.clear();
      this.gapSince = null;
    } else if (!was) this.resync = true;
    this.wake();
  }

  private dropPartitions(): void {
    this.parts.clear();
  }

  private part(partition: number): PartitionState {
    let p = this.parts.get(partition);
    if (!p) {
      p = { entries: [], want: null, committed: null, high: null };
      this.parts.set(partition, p);
    }
    return p;
  }

  private receive(m: Message<Buffer, Buffer, Buffer, Buffer>): void {
    if (!this.assigned) return;
    const p = this.part(m.partition);
    const offset = String(m.offset);
    this.s.received += 1;
    const headers: Record<string, Buffer> = {};
    for (const [k, v] of m.headerEntries) headers[k.toString('utf8')] = v;
    let fe: FeedEvent | undefined;
    try {
      fe = fromMessage({ key: m.key, value: m.value ?? null, headers });
    } catch (e) {
      // Not applicable here (a schema this build does not know): the hole it leaves is read from the event store.
      this.s.undecodable += 1;
      const pos = Number(headers[H.position]?.toString() ?? -1);
      p.entries.push({ offset, position: Number.isFinite(pos) ? pos : -1 });
      this.log(
        `message at offset ${offset} of partition ${m.partition} not decodable: ` +
          `${e instanceof Error ? e.message : String(e)}`,
      );
    }
    if (fe) {
      const pos = fe.event.position;
      p.entries.push({ offset, position: pos });
      if (pos <= this.current || this.buffer.has(pos)) this.s.duplicates += 1;
      else {
        this.buffer.set(pos, fe);
        this.byPrev.set(fe.prev, pos);
      }
    }
    const max = this.o.maxBuffered ?? 5000;
    if (!this.paused && p.entries.length > max && this.stream && this.byPrev.has(this.current)) {
      this.paused = true;
      this.stream.pause();
    }
    if (++this.tickMessages >= YIELD_EVERY && !this.yielding && this.stream) {
      this.yielding = true;
      this.stream.pause();
    }
    if (this.tickScheduled) return;
    this.tickScheduled = true;
    setImmediate(() => {
      this.tickScheduled = false;
      this.tickMessages = 0;
      // Redelivered offsets the checkpoint already covers are committed right away.
      this.trim();
      this.wake();
      if (this.yielding) {
        this.yielding = false;
        if (!this.paused) this.stream?.resume();
      }
    });
  }

  // ---- applying, strictly in global order

  private wake(): void {
    this.woken = true;
    const w = this.wakeUp;
    this.wakeUp = null;
    w?.();
  }

  private wait(ms: number): Promise<void> {
    if (this.co.signal.aborted || this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wakeUp = null;
        resolve();
      }, ms);
      this.wakeUp = () => {
        clearTimeout(t);
        this.woken = false;
        resolve();
      };
    });
  }

  private async applyLoop(): Promise<void> {
    const gapMs = this.o.gapMs ?? 5000;
    const size = this.co.batchSize ?? 500;
    while (!this.co.signal.aborted) {
      if (!this.assigned) {
        await this.wait(1000);
        continue;
      }
      if (this.resync) {
        try {
          this.current = Math.max(this.current, await readCheckpoint(this.o.sql, this.name));
          this.resync = false;
          this.sweep();
        } catch (e) {
          this.s.lastError = e instanceof Error ? e.message : String(e);
          await this.wait(1000);
          continue;
        }
      }
      const batch: StoredEvent[] = [];
      for (let cur = this.current; batch.length < size;) {
        const pos = this.byPrev.get(cur);
        const fe = pos === undefined ? undefined : this.buffer.get(pos);
        if (!fe) break;
        batch.push(fe.event);
        cur = pos!;
      }
      if (batch.length) {
        this.gapSince = null;
        if (await this.apply(batch)) this.s.fromKafka += batch.length;
        continue;
      }
      if (this.buffer.size === 0) {
        this.gapSince = null;
        await this.wait(1000);
        continue;
      }
      // The next event is not buffered: it has to come from Kafka, so fetching goes on whatever is buffered.
      this.resumeFetching();
      this.gapSince ??= Date.now();
      const left = this.gapSince + gapMs - Date.now();
      if (left > 0) {
        await this.wait(left);
        continue;
      }
      await this.fillGap(size);
    }
  }

  /** Hands a batch to the subscriber, retrying it (bounded backoff) until it is applied or the feed stops. */
  private async apply(events: StoredEvent[]): Promise<boolean> {
    for (let attempt = 0; !this.co.signal.aborted;) {
      try {
        const position = await this.co.handle(events);
        this.advance(position);
        return true;
      } catch (e) {
        attempt += 1;
        this.co.onError?.(e, attempt);
        await sleep(backoff(attempt));
      }
    }
    return false;
  }

  /** The buffered events wait for a predecessor Kafka did not deliver: read the hole from the event store. */
  private async fillGap(size: number): Promise<void> {
    let next = Infinity;
    for (const fe of this.buffer.values()) if (fe.event.position > this.current) next = Math.min(next, fe.prev);
    if (next === Infinity) return this.sweep();
    let events: StoredEvent[];
    try {
      events = await this.o.store.readAll(this.current, size);
    } catch (e) {
      this.s.lastError = e instanceof Error ? e.message : String(e);
      await this.wait(1000);
      return;
    }
    this.s.gapFills += 1;
    this.log(
      `events after position ${this.current} did not arrive from Kafka (the next buffered one follows ` +
        `${next}); reading them from the event store`,
    );
    let take = events.filter((e) => e.position <= next);
    if (!take.length) take = events; // the chain does not meet the checkpoint: the store decides
    if (!take.length) {
      // The store has nothing after the checkpoint: what is buffered is not of this log.
      this.buffer.clear();
      this.byPrev.clear();
      return;
    }
    if (await this.apply(take)) this.s.fromStore += take.length;
    this.sweep();
  }

  /**
   * Moves the checkpoint: drops what it covers from the buffer, commits the offsets behind it, resumes drained
   * partitions.
   */
  private advance(position: number): void {
    this.current = position;
    for (const [pos, fe] of this.buffer) {
      if (pos > position) continue;
      this.buffer.delete(pos);
      if (this.byPrev.get(fe.prev) === pos) this.byPrev.delete(fe.prev);
    }
    this.trim();
  }

  /** Offsets whose events the checkpoint covers: committed; partitions drained below half the limit: resumed. */
  private trim(): void {
    const max = this.o.maxBuffered ?? 5000;
    for (const p of this.parts.values()) {
      let last: string | null = null;
      while (p.entries.length && p.entries[0].position <= this.current) last = p.entries.shift()!.offset;
      if (last !== null) p.want = String(BigInt(last) + 1n);
    }
    if (this.paused && [...this.parts.values()].every((p) => p.entries.length < max / 2)) this.resumeFetching();
    void this.commit();
  }

  private resumeFetching(): void {
    if (!this.paused) return;
    this.paused = false;
    if (!this.yielding) this.stream?.resume();
  }

  private sweep(): void {
    this.advance(this.current);
    for (const [pos, fe] of this.buffer) if (pos <= this.current || fe.prev < this.current) this.buffer.delete(pos);
    this.byPrev.clear();
    for (const [pos, fe] of this.buffer) this.byPrev.set(fe.prev, pos);
  }

  /**
   * Commits every partition's offset behind the checkpoint. One commit at a
   * time; calls that come meanwhile coalesce into one more round. Best effort:
   * a failed commit only means redelivery, which the checkpoint absorbs.
   */
  private commit(): Promise<void> {
    if (this.committing) {
      this.commitAgain = true;
      return this.commits;
    }
    this.committing = true;
    this.commits = (async () => {
      try {
        do {
          this.commitAgain = false;
          await this.commitOnce();
        } while (this.commitAgain && this.consumer);
      } finally {
        this.committing = false;
      }
    })();
    return this.commits;
  }

  private async commitOnce(): Promise<void> {
    const c = this.consumer;
    if (!c) return;
    const offsets: Array<{ topic: string; partition: number; offset: bigint; leaderEpoch: number }> = [];
    for (const [partition, p] of this.parts)
      if (p.want !== null && p.want !== p.committed)
        offsets.push({ topic: this.topic, partition, offset: BigInt(p.want), leaderEpoch: -1 });
    if (!offsets.length) return;
    try {
      await c.commit({ offsets });
      for (const o of offsets) {
        const p = this.parts.get(o.partition);
        if (p) p.committed = String(o.offset);
      }
    } catch (e) {
      this.s.lastError = `commit: ${e instanceof Error ? e.message : String(e)}`;
    }
  }
}
