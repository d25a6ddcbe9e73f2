import { conflict, type DomainEvent, EVENT_SCHEMA_VERSION, type EventMetadata, parseEventData, type RequestMeta } from '@svc/contracts';
import { type AppendRequest, type EventStore, type ExpectedRevision, type IdGenerator, type NewEvent, type ReadModelBarrier, type StoredEvent, WrongExpectedRevisionError } from '@svc/domain';
import { contended } from './contention';
import type { PayloadSealer } from './records/sealing';
import type { UsageMeter } from './usage/meter';

export interface CommandDeps {
  store: EventStore;
  barrier: ReadModelBarrier;
  ids: IdGenerator;
  /** Seals sensitive payload values before they enter an event; blind-indexes them. */
  sealer: PayloadSealer;
  log?: (message: string) => void;
  /** Metering (docs/api.md "Usage"): writes carry their charge in their commit (DomainAppend.charge). Absent: nothing is metered. */
  meter?: UsageMeter;
}

export function metadataFor(meta: RequestMeta, tenantId = meta.principal.tenantId, contextId = meta.principal.contextId): EventMetadata {
  const p = meta.principal;
  return {
    tenantId,
    contextId,
    accountId: p.accountId || null,
    actorKeyId: p.kind === 'operator' ? null : p.credentialId,
    userId: p.userId,
    requestId: meta.requestId,
    occurredAt: meta.now.toISOString(),
    schemaVersion: EVENT_SCHEMA_VERSION,
  };
}

/** Validates each event against the catalogue and stamps id and metadata. */
export function toNewEvents(ids: IdGenerator, events: DomainEvent[], metadata: EventMetadata): NewEvent[] {
  return events.map((e) => ({ id: ids.newId(), type: e.type, data: parseEventData(e.type, e.data) as Record<string, unknown>, metadata }));
}

/** Domain events bound for one stream; `metadata` overrides the command's (e.g. another tenant id). */
export interface DomainAppend {
  streamId: string;
  events: DomainEvent[];
  expectedRevision: ExpectedRevision;
  metadata?: EventMetadata;
  /**
   * The write's charge (usage/meter.ts `writeCharge`): an entry with no events of its own, carried in the
   * metadata of the commit's first event (EventMetadata.charge), so charging a write appends nothing more.
   */
  charge?: NonNullable<EventMetadata['charge']>;
}

/** Appends atomically to every stream, then waits until the read models have applied it (read-your-writes). */
export async function commit(deps: CommandDeps, metadata: EventMetadata, appends: DomainAppend[]): Promise<number> {
  const requests: AppendRequest[] = appends
    .filter((a) => a.events.length > 0)
    .map((a) => ({ streamId: a.streamId, events: toNewEvents(deps.ids, a.events, a.metadata ?? metadata), expectedRevision: a.expectedRevision }));
  const charge = appends.flatMap((a) => a.charge ?? []);
  if (charge.length && requests.length) {
    const [first, ...rest] = requests[0].events;
    requests[0] = { ...requests[0], events: [{ ...first, metadata: { ...first.metadata, charge } }, ...rest] };
  }
  const results = await deps.store.appendMulti(requests);
  const position = Math.max(0, ...results.map((r) => r.position));
  // The write is durable once appended. If the projector is stalled past the barrier's timeout we still answer
  // (a retried create would duplicate) and say so in the log; reads catch up when the projector does.
  if (position > 0 && !(await deps.barrier.waitFor(position))) deps.log?.(`read models did not reach position ${position} in time; answering anyway`);
  return position;
}

export interface Aggregate<S> {
  initialState(): S;
  /** `metadata` gives time and actor to states that show them (createdAt, createdBy). */
  evolve(state: S, event: DomainEvent, metadata?: EventMetadata): S;
}

export async function loadAggregate<S>(store: EventStore, streamId: string, agg: Aggregate<S>): Promise<{ state: S; revision: number }> {
  const events = await store.readStream(streamId);
  const state = events.reduce((s, e: StoredEvent) => agg.evolve(s, e, e.metadata), agg.initialState());
  return { state, revision: events.length ? events[events.length - 1].revision : -1 };
}

export interface Decision {
  events: DomainEvent[];
  /** Other streams written in the same atomic append (uniqueness reservations). */
  also?: DomainAppend[];
}

/**
 * load -> decide -> append with the expected revision, retried (for a bounded
 * time) only when another writer got in between; then waits for the
 * read models. Returns the state after the new events.
 */
export async function handleCommand<S>(
  deps: CommandDeps,
  streamId: string,
  agg: Aggregate<S>,
  decide: (state: S) => Decision,
  metadata: EventMetadata,
): Promise<{ state: S; events: DomainEvent[]; position: number }> {
  for await (const _attempt of contended()) {
    const { state, revision } = await loadAggregate(deps.store, streamId, agg);
    const decision = decide(state);
    try {
      const position = await commit(deps, metadata, [{ streamId, events: decision.events, expectedRevision: revision < 0 ? 'no_stream' : revision }, ...(decision.also ?? [])]);
      return { state: decision.events.reduce((s, e) => agg.evolve(s, e, metadata), state), events: decision.events, position };
    } catch (e) {
      if (e instanceof WrongExpectedRevisionError && e.streamId === streamId) continue;
      throw e;
    }
  }
  throw conflict('The entity changed concurrently; retry');
}
