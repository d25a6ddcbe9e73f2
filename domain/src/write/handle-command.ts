import { conflict, type DomainEvent, type EventMetadata } from '@svc/contracts';
import {
  type AppendRequest,
  type EventStore,
  type ReadStreamOptions,
  type StoredEvent,
  WrongExpectedRevisionError,
} from '../ports/event-store';
import type { ReadModelBarrier } from '../ports/read-model-barrier';
import type { IdGenerator } from '../ports/runtime';
import type { WriteCharges } from '../ports/write-charges';
import type { PayloadSealing } from '../shared/sealing';
import { encodeCharge } from '../usage/charges';
import { REVOKING_EVENTS } from '../tenancy/credentials';
import { type DomainAppend, toNewEvents } from './appends';
import { contended } from './contention';

export { type DomainAppend, toNewEvents } from './appends';
export { metadataFor, systemMetadata } from './metadata';

/**
 * What the handler itself needs: the log, the barrier it waits on after an append, ids. Writers that are not a request
 * (reactors, workers) give only these.
 */
export interface WriteDeps {
  store: EventStore;
  /** Reactors that do not answer anyone pass one that does not wait (`NO_WAIT`). */
  barrier: ReadModelBarrier;
  ids: IdGenerator;
  log?: (message: string) => void;
  /**
   * Called once a write that revoked credentials (REVOKING_EVENTS) has reached the read models, before it is
   * answered: this process's credential cache forgets, whether or not its projector or a notification got there first.
   */
  onRevoked?: () => void;
}

/** A barrier that does not wait: for writers off the request path, whom no reader is waiting on. */
export const NO_WAIT: ReadModelBarrier = { waitFor: async () => true };

/** The request path's dependencies: the handler's, and the ports its commands use (sealing, charges). */
export interface CommandDeps extends WriteDeps {
  /** Seals sensitive payload values before they enter an event; blind-indexes them (the sealing port). */
  sealer: PayloadSealing;
  /**
   * Metering (docs/api.md "Usage", the charges port): writes carry their charge in their commit (DomainAppend.charge).
   * Absent: nothing is metered.
   */
  meter?: WriteCharges;
}

/** Appends atomically to every stream, then waits until the read models have applied it (read-your-writes). */
export async function commit(deps: WriteDeps, metadata: EventMetadata, appends: DomainAppend[]): Promise<number> {
  const requests: AppendRequest[] = appends
    .filter((a) => a.events.length > 0 || a.check)
    .map((a) => ({
      streamId: a.streamId,
      events: toNewEvents(deps.ids, a.events, a.metadata ?? metadata),
      expectedRevision: a.expectedRevision,
    }));
  const charge = appends.flatMap((a) => a.charge ?? []);
  // The charge rides on the first event written (checks have none).
  const charged = requests.findIndex((r) => r.events.length > 0);
  if (charge.length && charged >= 0) {
    const [first, ...rest] = requests[charged].events;
    requests[charged] = {
      ...requests[charged],
      events: [{ ...first, metadata: { ...first.metadata, chargeCode: encodeCharge(charge) } }, ...rest],
    };
  }
  const results = await deps.store.appendMulti(requests);
  const position = Math.max(0, ...results.map((r) => r.position));
  // The write is durable once appended. If the projector is stalled past the barrier's timeout we still answer
  // (a retried create would duplicate) and say so in the log; reads catch up when the projector does.
  if (position > 0 && !(await deps.barrier.waitFor(position)))
    deps.log?.(`read models did not reach position ${position} in time; answering anyway`);
  if (deps.onRevoked && requests.some((r) => r.events.some((e) => REVOKING_EVENTS.has(e.type)))) deps.onRevoked();
  return position;
}

/**
 * Commits a transaction the handler staged (a script's writes: each decided by its decider through handleCommand
 * on a staging store, so their events are already checked and stamped): every request at the revision its command
 * read, atomically, then the read models are waited for as `commit` does. A lost race is answered, not thrown:
 * `{ conflict }` names the stream that moved (the caller refuses or re-runs the whole transaction).
 */
export async function commitStaged(
  deps: WriteDeps,
  requests: AppendRequest[],
): Promise<{ position: number } | { conflict: string }> {
  let position: number;
  try {
    const results = await deps.store.appendMulti(requests);
    position = Math.max(0, ...results.map((r) => r.position));
  } catch (e) {
    if (e instanceof WrongExpectedRevisionError) return { conflict: e.streamId };
    throw e;
  }
  if (position > 0 && !(await deps.barrier.waitFor(position)))
    deps.log?.(`read models did not reach position ${position} in time; answering anyway`);
  return { position };
}

export interface Aggregate<S> {
  initialState(): S;
  /** `metadata` gives time and actor to states that show them (createdAt, createdBy). */
  evolve(state: S, event: DomainEvent, metadata?: EventMetadata): S;
}

/** An entity's state from its stream; `options` reads part of it (`maxCount`: the state after that many events). */
export async function loadAggregate<S>(
  store: EventStore,
  streamId: string,
  agg: Aggregate<S>,
  options?: ReadStreamOptions,
): Promise<{ state: S; revision: number }> {
  const events = await store.readStream(streamId, options);
  const state = events.reduce((s, e: StoredEvent) => agg.evolve(s, e, e.metadata), agg.initialState());
  return { state, revision: events.length ? events[events.length - 1].revision : -1 };
}

/**
 * What a command decided: events for the entity's stream, other streams written with them, an answer for the caller.
 */
export interface Decision<R = never> {
  events: DomainEvent[];
  /** Other streams written in the same atomic append (uniqueness reservations, a charge). */
  also?: DomainAppend[];
  /**
   * Handed back to the caller (e.g. the existing holder of an externalId); with nothing to append, nothing is written.
   */
  answer?: R;
}

/**
 * One command for `handleCommand`: the entity's stream and how its state
 * evolves, the async reads the decision needs (`prepare`, re-run on every
 * attempt), the decision itself (sync: the aggregate's decider is called here),
 * the reads and checks that depend on what was decided (`beforeAppend`), and
 * what a lost race for another stream means (`onConflict`).
 */
export interface Command<S, P = undefined, R = never> {
  streamId: string;
  aggregate: Aggregate<S>;
  /**
   * The events' metadata; a function of the state read when it depends on it (a worker writes in the document's
   * tenant).
   */
  metadata: EventMetadata | ((state: S) => EventMetadata);
  /** The stream is new (a fresh id): it is not read, and is appended with expected revision 'no_stream'. */
  fresh?: boolean;
  /**
   * A fresh stream that another writer created first (an id agreed on by several processes, as the first account's):
   * the answer instead of a conflict. Absent: the error is rethrown.
   */
  onTaken?: () => R;
  /**
   * The stream is an append-only log no decision reads (a tenant's usage): it is not read, the decision is made
   * on the initial state, and it is appended with expected revision 'any' (never a conflict).
   */
  appendOnly?: boolean;
  prepare?: (state: S, attempt: number) => Promise<P>;
  decide: (state: S, prepared: P) => Decision<R>;
  /**
   * When the decision has events for the entity: reads and checks that depend on them (the reservations of the values
   * they claim or release, a folder moved into); returns more appends.
   */
  beforeAppend?: (decided: { state: S; next: S; events: DomainEvent[] }, prepared: P) => Promise<DomainAppend[] | void>;
  /**
   * A version conflict on another stream: 'retry' (the next attempt re-reads), `{ answer }`, or throw (conflict(...) is
   * a 409). Absent: the error is rethrown.
   */
  onConflict?: (on: DomainAppend, prepared: P) => 'retry' | { answer: R } | Promise<'retry' | { answer: R }>;
  /** Undoes what `beforeAppend` did outside the log (a blob put) when that attempt's append does not happen. */
  undo?: (prepared: P) => Promise<void>;
  /**
   * Runs every read and check (prepare, decide, beforeAppend) and appends nothing: a refusal throws as it
   * would, otherwise the result is what the write would give, at position 0 (the batch write's collision probe).
   */
  dryRun?: boolean;
}

export interface CommandResult<S, P = undefined, R = never> {
  /** The state after the decided events (as a reload would give it). */
  state: S;
  events: DomainEvent[];
  /** Log position of the append (0 when nothing was written). */
  position: number;
  prepared: P;
  answer?: R;
}

type LegacyDecide<S> = (state: S) => Decision;

/**
 * The command handler, the write side's one retry loop: load -> prepare ->
 * decide -> append with the expected revisions, retried (for a bounded time,
 * contended()) when another writer got in between; then waits for the read
 * models (commit). The positional form is the single-stream shorthand.
 */
export function handleCommand<S, P = undefined, R = never>(
  deps: WriteDeps,
  cmd: Command<S, P, R>,
): Promise<CommandResult<S, P, R>>;
export function handleCommand<S>(
  deps: WriteDeps,
  streamId: string,
  agg: Aggregate<S>,
  decide: LegacyDecide<S>,
  metadata: EventMetadata,
): Promise<CommandResult<S, undefined, never>>;
export function handleCommand<S, P, R>(
  deps: WriteDeps,
  cmd: Command<S, P, R> | string,
  agg?: Aggregate<S>,
  decide?: LegacyDecide<S>,
  metadata?: EventMetadata,
) {
  if (typeof cmd !== 'string') return run(deps, cmd);
  return run<S, undefined, never>(deps, {
    streamId: cmd,
    aggregate: agg!,
    decide: (s) => decide!(s),
    metadata: metadata!,
  });
}

async function run<S, P, R>(deps: WriteDeps, cmd: Command<S, P, R>): Promise<CommandResult<S, P, R>> {
  for await (const attempt of contended()) {
    const { state, revision } =
      cmd.fresh || cmd.appendOnly
        ? { state: cmd.aggregate.initialState(), revision: -1 }
        : await loadAggregate(deps.store, cmd.streamId, cmd.aggregate);
    const metadata = typeof cmd.metadata === 'function' ? cmd.metadata(state) : cmd.metadata;
    const prepared = (cmd.prepare ? await cmd.prepare(state, attempt) : undefined) as P;
    const decision = cmd.decide(state, prepared);
    const { events, answer } = decision;
    const next = events.reduce((s, e) => cmd.aggregate.evolve(s, e, metadata), state);
    const appends: DomainAppend[] = [
      {
        streamId: cmd.streamId,
        events,
        expectedRevision: cmd.appendOnly ? 'any' : revision < 0 ? 'no_stream' : revision,
      },
      ...(decision.also ?? []),
    ];
    if (events.length && cmd.beforeAppend)
      appends.push(...((await cmd.beforeAppend({ state, next, events }, prepared)) ?? []));
    if (!appends.some((a) => a.events.length)) return { state, events, position: 0, prepared, answer };
    if (cmd.dryRun) {
      if (events.length && cmd.undo) await cmd.undo(prepared);
      return { state: next, events, position: 0, prepared, answer };
    }
    try {
      const position = await commit(deps, metadata, appends);
      return { state: next, events, position, prepared, answer };
    } catch (e) {
      if (events.length && cmd.undo) await cmd.undo(prepared);
      if (!(e instanceof WrongExpectedRevisionError)) throw e;
      if (e.streamId === cmd.streamId) {
        if (!cmd.fresh) continue;
        if (!cmd.onTaken) throw e;
        return { state, events: [], position: 0, prepared, answer: cmd.onTaken() };
      }
      const on = appends.find((a) => a.streamId === e.streamId);
      if (!on || !cmd.onConflict) throw e;
      const outcome = await cmd.onConflict(on, prepared);
      if (outcome === 'retry') continue;
      return { state, events: [], position: 0, prepared, answer: outcome.answer };
    }
  }
  throw conflict('The entity changed concurrently; retry');
}
