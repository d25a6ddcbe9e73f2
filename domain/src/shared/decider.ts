import type { DomainEvent, EventMetadata } from '@svc/contracts';
import { InternalError } from '@svc/contracts';

/**
 * An aggregate's decisions: `decide(command, state) -> events` and
 * `evolve(state, event) -> state`. Time and ids arrive inside the command;
 * `metadata` gives evolve the time and actor of a stored event (createdAt, createdBy).
 * What `decide` returns is what is stored (sealing included): nothing rewrites it.
 */
export interface Decider<State, Command, Event extends DomainEvent = DomainEvent> {
  initialState(): State;
  decide(command: Command, state: State): Event[];
  evolve(state: State, event: Event, metadata?: EventMetadata): State;
}

/** The events an aggregate's stream holds: the catalogue members named `T`. */
export type EventsOf<T extends DomainEvent['type']> = Extract<DomainEvent, { type: T }>;

export const fold = <S, C, E extends DomainEvent>(
  d: Decider<S, C, E>,
  events: readonly E[],
  metadata?: EventMetadata,
): S => events.reduce((s, e) => d.evolve(s, e, metadata), d.initialState());

/** Closes an exhaustive switch (decide): the compiler reports the case someone forgot. */
export function assertNever(x: never): never {
  throw new InternalError(`unexpected ${JSON.stringify(x)}`);
}

/**
 * Closes evolve's switch: exhaustive for the compiler like assertNever, but an event of
 * another kind found in a stream at run time leaves the state as it is (a reader never fails on it).
 */
export const unexpected = <S>(_event: never, state: S): S => state;

/**
 * The state an update event leaves: `changes` (its fields, its time stamp) over a live state, one version on
 * (the version counts the created and updated events); a state that is not live stays as it is.
 */
export function nextVersion<State extends { exists: false } | { exists: true; version: number }>(
  state: State,
  changes: Partial<Extract<State, { exists: true }>>,
): State {
  return state.exists ? { ...state, ...changes, version: state.version + 1 } : state;
}
