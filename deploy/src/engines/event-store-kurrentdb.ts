import {
  ANY,
  BACKWARDS,
  END,
  FORWARDS,
  KurrentDBClient,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  UnsupportedError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
  type AllStreamSubscription,
  type AppendStreamState,
  type CurrentStreamState,
  type Direction,
  type EventData,
  type ReadPosition,
  type RecordedEvent,
} from '@kurrent/kurrentdb-client';
import type { EventMetadata } from '@svc/contracts';
import { InternalError } from '@svc/contracts';
import {
  type AppendRequest,
  type AppendResult,
  asStoredEvent,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadStreamOptions,
  type StoredEvent,
  WrongExpectedRevisionError,
} from '@svc/domain';

/**
 * KurrentDB (EventStoreDB) event store. Stream revisions are the server's; the
 * global position is the commit position of an event in $all (each event of an
 * append gets its own, so positions are unique and increase in commit order).
 * System events and streams (`$…`) are invisible through this port.
 */

/** The one metadata property we write: multiStreamAppend only takes string-valued metadata. */
export const METADATA_KEY = 'svcMetadata';

/** How many events readAll walks back from the head to place a position that is not an event's. */
const TAIL_SCAN_LIMIT = 10_000;

export function toStreamState(expected: ExpectedRevision): AppendStreamState {
  switch (expected) {
    case 'any':
      return ANY;
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    default:
      if (!Number.isSafeInteger(expected) || expected < 0)
        throw new InternalError(`invalid expected revision ${expected}`);
      return BigInt(expected);
  }
}

export function toActualRevision(actual: CurrentStreamState): number | 'no_stream' {
  return actual === NO_STREAM ? 'no_stream' : Number(actual);
}

export function encodeMetadata(metadata: EventMetadata): Record<string, string> {
  return { [METADATA_KEY]: JSON.stringify(metadata) };
}

/** Reads back what encodeMetadata wrote; the server may add properties of its own (e.g. `$schema.name`). */
export function decodeMetadata(raw: unknown): EventMetadata {
  if (raw && typeof raw === 'object' && !(raw instanceof Uint8Array)) {
    const encoded = (raw as Record<string, unknown>)[METADATA_KEY];
    // An event written by another tool with a plain JSON object as metadata is taken as is.
    return (typeof encoded === 'string' ? JSON.parse(encoded) : raw) as EventMetadata;
  }
  throw new InternalError('event metadata is not a JSON object');
}

const isSystem = (e: { streamId: string; type: string }) => e.streamId.startsWith('$') || e.type.startsWith('$');

function toStored(e: RecordedEvent): StoredEvent {
  if (!e.isJson) throw new InternalError(`event ${e.id} in ${e.streamId} is not JSON`);
  if (!e.position) throw new InternalError(`event ${e.id} in ${e.streamId} has no position (server older than 22.6?)`);
  return asStoredEvent({
    id: e.id,
    type: e.type,
    data: e.data as Record<string, unknown>,
    metadata: decodeMetadata(e.metadata),
    streamId: e.streamId,
    revision: Number(e.revision),
    position: Number(e.position.commit),
  });
}

const toEventData = (e: NewEvent): EventData =>
  jsonEvent({ id: e.id, type: e.type, data: e.data, metadata: encodeMetadata(e.metadata) });

function translate(error: unknown, expectedFor: (streamId: string) => ExpectedRevision): unknown {
  if (error instanceof WrongExpectedVersionError)
    return new WrongExpectedRevisionError(
      error.streamName,
      expectedFor(error.streamName),
      toActualRevision(error.actualState),
    );
  return error;
}

const isUnsupported = (error: unknown) =>
  error instanceof UnsupportedError || (error as { code?: number } | null)?.code === 12; // gRPC UNIMPLEMENTED

export class KurrentDbEventStore implements EventStore {
  private listeners = new Set<() => void>();
  private live: AllStreamSubscription | undefined;
  private liveRetry: NodeJS.Timeout | undefined;
  private closed = false;

  private constructor(private readonly client: KurrentDBClient) {}

  /** e.g. `kurrentdb://127.0.0.1:2113?tls=false`; the client connects lazily. */
  static async open(connectionString: string): Promise<KurrentDbEventStore> {
    return new KurrentDbEventStore(KurrentDBClient.connectionString(connectionString));
  }

  async append(streamId: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    let result;
    try {
      result = await this.client.appendToStream(streamId, events.map(toEventData), {
        streamState: toStreamState(expectedRevision),
      });
    } catch (e) {
      throw translate(e, () => expectedRevision);
    }
    // Only when the connection string sets throwOnAppendFailure=false.
    if (!result.success) {
      const actual = Number(result.nextExpectedRevision);
      throw new WrongExpectedRevisionError(streamId, expectedRevision, actual < 0 ? 'no_stream' : actual);
    }
    const revision = Number(result.nextExpectedRevision);
    const position = result.position ? Number(result.position.commit) : await this.positionOf(streamId, revision);
    this.notify();
    return { nextExpectedRevision: revision, position };
  }

  async appendMulti(requests: AppendRequest[]): Promise<AppendResult[]> {
    // The server folds stream names case-insensitively within one multi-append.
    if (new Set(requests.map((r) => r.streamId.toLowerCase())).size !== requests.length)
      throw new InternalError('appendMulti: a stream may appear once');
    if (requests.length === 1)
      return [await this.append(requests[0].streamId, requests[0].events, requests[0].expectedRevision)];
    if (requests.length === 0) return [];

    let result;
    try {
      result = await this.client.multiStreamAppend(
        requests.map((r) => ({
          streamName: r.streamId,
          events: r.events.map(toEventData),
          expectedState: toStreamState(r.expectedRevision),
        })),
      );
    } catch (e) {
      if (isUnsupported(e))
        throw new InternalError('appendMulti: multi-stream append needs KurrentDB 25.1 or later', { cause: e });
      throw translate(
        e,
        (s) => requests.find((r) => r.streamId.toLowerCase() === s.toLowerCase())?.expectedRevision ?? 'any',
      );
    }
    this.notify();
    // The response carries one position for the whole write; each request's own last position is read back.
    return Promise.all(
      requests.map(async (r, i) => {
        const response = result.responses.find((x) => x.streamName === r.streamId) ?? result.responses[i];
        const revision = Number(response.revision);
        return { nextExpectedRevision: revision, position: await this.positionOf(r.streamId, revision) };
      }),
    );
  }

  private async positionOf(streamId: string, revision: number): Promise<number> {
    const [event] = await this.readStream(streamId, { fromRevision: revision, maxCount: 1 });
    if (!event) throw new InternalError(`stream ${streamId}: revision ${revision} not found after append`);
    return event.position;
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    const backwards = options.direction === 'backwards';
    const out: StoredEvent[] = [];
    try {
      for await (const r of this.client.readStream(streamId, {
        direction: backwards ? BACKWARDS : FORWARDS,
        fromRevision: options.fromRevision !== undefined ? BigInt(options.fromRevision) : backwards ? END : START,
        maxCount: options.maxCount ?? Number.MAX_SAFE_INTEGER,
      })) {
        if (r.event) out.push(toStored(r.event));
      }
    } catch (e) {
      if (e instanceof StreamNotFoundError) return [];
      throw e;
    }
    return out;
  }

  async readAll(after: number, maxCount: number): Promise<StoredEvent[]> {
    if (maxCount <= 0) return [];
    const out: StoredEvent[] = [];
    if (after <= 0) {
      await this.scanAll(FORWARDS, START, after, Math.min(maxCount + 1, 1000), (e) => out.push(e) < maxCount);
      return out;
    }
    try {
      const from = { commit: BigInt(after), prepare: BigInt(after) };
      await this.scanAll(FORWARDS, from, after, Math.min(maxCount + 1, 1000), (e) => out.push(e) < maxCount);
      return out;
    } catch (error) {
      // The server reads $all only from a record boundary. Positions we hand out are
      // boundaries; an arbitrary number (e.g. `position - 1`) is not. Find the events
      // after it by walking back from the end instead, but only near the head.
      const tail: StoredEvent[] = [];
      let reached = false;
      try {
        await this.scanAll(BACKWARDS, END, Number.POSITIVE_INFINITY, 1000, (e) => {
          if (e.position <= after) return !(reached = true);
          return tail.push(e) < TAIL_SCAN_LIMIT;
        });
      } catch {
        throw error;
      }
      if (!reached && tail.length >= TAIL_SCAN_LIMIT) throw error;
      return tail.reverse().slice(0, maxCount);
    }
  }

  async headPosition(): Promise<number> {
    let head = 0;
    await this.scanAll(BACKWARDS, END, Number.POSITIVE_INFINITY, 100, (e) => ((head = e.position), false));
    return head;
  }

  /**
   * Reads $all page by page from `from`, hands each user event to `visit` until it
   * returns false or the log ends. Filtering is done here rather than with a server
   * filter, so a short page always means the end of the log. `seen` is the position
   * already handled: forward reads include the event at their start position.
   */
  private async scanAll(
    direction: Direction,
    from: ReadPosition,
    seen: number,
    pageSize: number,
    visit: (e: StoredEvent) => boolean,
  ) {
    let cursor = from;
    let last = seen;
    for (;;) {
      let count = 0;
      for await (const r of this.client.readAll({ direction, fromPosition: cursor, maxCount: pageSize })) {
        count += 1;
        const e = r.event;
        if (!e?.position) continue;
        const position = Number(e.position.commit);
        if (direction === FORWARDS ? position <= last : position >= last) continue;
        last = position;
        cursor = e.position;
        if (!isSystem(e) && !visit(toStored(e))) return;
      }
      if (count < pageSize) return;
    }
  }

  onAppended(listener: () => void): () => void {
    this.listeners.add(listener);
    this.subscribeLive();
    return () => this.listeners.delete(listener);
  }

  private notify() {
    for (const l of this.listeners) l();
  }

  /**
   * Other processes' appends reach us through a live subscription to $all; our own
   * appends notify directly. On any failure it resubscribes after a second; the
   * catch-up loop's safety poll covers the gap.
   */
  private subscribeLive() {
    if (this.live || this.liveRetry || this.closed) return;
    const sub = this.client.subscribeToAll({ fromPosition: END, filter: excludeSystemEvents() });
    this.live = sub;
    sub.on('data', () => this.notify());
    sub.on('error', () => {
      if (this.live !== sub) return;
      this.live = undefined;
      void sub.unsubscribe().catch(() => {});
      if (!this.closed)
        this.liveRetry = setTimeout(() => {
          this.liveRetry = undefined;
          this.subscribeLive();
        }, 1000);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.liveRetry);
    const sub = this.live;
    this.live = undefined;
    await sub?.unsubscribe().catch(() => {});
    this.listeners.clear();
    await this.client.dispose();
  }
}
