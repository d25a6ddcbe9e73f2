import type { DomainEvent, EventMetadata, EventType } from '@svc/contracts';

/**
 * The event-store port. Streams hold one entity's events, numbered from
 * revision 0; the global log orders every event of every stream by position.
 */
export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | number;

/** An event as it is written: the store keeps `type` and `data` as given (the catalogue was checked before). */
export interface NewEvent {
  id: string;
  type: string;
  data: Record<string, unknown>;
  metadata: EventMetadata;
}

/** Where an event sits in the log. */
export interface EventEnvelope {
  id: string;
  metadata: EventMetadata;
  streamId: string;
  revision: number;
  /** Position in the global log; strictly increasing in commit order. */
  position: number;
}

/** An event as an adapter reads it back, before it is given its catalogue type. */
export interface RecordedEvent extends NewEvent, EventEnvelope {}

/**
 * A stored event of the catalogue: `type` discriminates `data` (one member per
 * event type), so a switch on `type` narrows `data` without a cast.
 * `StoredEvent<'RecordCreated'>` is the member of one type (or of several).
 */
export type StoredEvent<T extends EventType = EventType> = Extract<DomainEvent, { type: T }> & EventEnvelope;

/**
 * The one place the log's untyped rows become catalogue events. Only events the
 * command side validated against the catalogue are appended (`parseEventData`),
 * so the type is a statement about what was written; nothing is checked or
 * copied here (a read costs what it did).
 */
export const asStoredEvent = (e: RecordedEvent): StoredEvent => e as unknown as StoredEvent;

export interface AppendRequest {
  streamId: string;
  events: NewEvent[];
  expectedRevision: ExpectedRevision;
}

export interface AppendResult {
  /** Revision of the stream's last event: pass it as the next expected revision. */
  nextExpectedRevision: number;
  /** Global position of the last event written. */
  position: number;
}

export interface ReadStreamOptions {
  direction?: 'forwards' | 'backwards';
  /** Inclusive; defaults to the start (forwards) or the end (backwards). */
  fromRevision?: number;
  maxCount?: number;
}

export interface EventStore {
  append(streamId: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult>;
  /** All or nothing across streams: one failed expectation writes nothing anywhere. */
  appendMulti(requests: AppendRequest[]): Promise<AppendResult[]>;
  /** Missing streams read as empty. */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<StoredEvent[]>;
  /**
   * Optional: a whole stream, possibly from a cache. `exact` false: the cache may be behind the log (another process
   * appended), so a decision made on it must check the revision read when it appends (an append with no events and
   * `check`, DomainAppend): a stale read then fails that append, and the stream is read from the log next time.
   */
  readStreamCached?(streamId: string): Promise<{ events: StoredEvent[]; exact: boolean }>;
  /** Events with position > `after`, oldest first. */
  readAll(after: number, maxCount: number): Promise<StoredEvent[]>;
  /**
   * Optional: one tenant's events (metadata.tenantId) with position > `after`, oldest first, read
   * by an index rather than by filtering the whole log. `readTenantEvents` falls back to readAll.
   */
  readTenant?(tenantId: string, after: number, maxCount: number): Promise<StoredEvent[]>;
  /** Position of the newest event (0 when empty). */
  headPosition(): Promise<number>;
  /** Wakes `listener` after events are committed (in this process or, where the engine can tell, another). */
  onAppended(listener: () => void): () => void;
  close(): Promise<void>;
}

/**
 * One page of a tenant's events after `after` (at most `maxCount`, positions up to `until` when given):
 * the store's own `readTenant` where it has one, else pages of `readAll` filtered here. The second
 * value is where the next page starts (past events of other tenants skipped); `done` when `until`
 * (or the end of the log) was reached.
 */
export async function readTenantEvents(
  store: EventStore,
  tenantId: string,
  after: number,
  maxCount: number,
  until = Number.MAX_SAFE_INTEGER,
): Promise<{ events: StoredEvent[]; next: number; done: boolean }> {
  if (store.readTenant) {
    const page = (await store.readTenant(tenantId, after, maxCount)).filter((e) => e.position <= until);
    const full = page.length === maxCount;
    return { events: page, next: page.length ? page[page.length - 1].position : after, done: !full };
  }
  const events: StoredEvent[] = [];
  let next = after;
  // Bounded work per page: at most 10 pages of the whole log are scanned before returning what was found.
  for (let scanned = 0; scanned < 10 && events.length < maxCount; scanned++) {
    const page = await store.readAll(next, maxCount);
    for (const e of page) {
      if (e.position > until) return { events, next, done: true };
      next = e.position;
      if (e.metadata.tenantId === tenantId) {
        events.push(e);
        if (events.length === maxCount) return { events, next, done: false };
      }
    }
    if (page.length < maxCount) return { events, next, done: true };
  }
  return { events, next, done: false };
}

export class WrongExpectedRevisionError extends Error {
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    readonly actual: number | 'no_stream',
  ) {
    super(`stream ${streamId}: expected revision ${String(expected)}, actual ${String(actual)}`);
    this.name = 'WrongExpectedRevisionError';
  }
}

/** Decides whether an expectation holds for a stream whose last revision is `actual` (-1 = no stream). */
export function expectationHolds(expected: ExpectedRevision, actual: number): boolean {
  switch (expected) {
    case 'any':
      return true;
    case 'no_stream':
      return actual === -1;
    case 'stream_exists':
      return actual >= 0;
    default:
      return actual === expected;
  }
}
