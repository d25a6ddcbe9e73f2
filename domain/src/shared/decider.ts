import type { DomainEvent } from '@svc/contracts';
import { InternalError } from '@svc/contracts';

/**
 * An aggregate's decisions: `decide(command, state) -> events` and
 * `evolve(state, event) -> state`. Time and ids arrive inside the command.
 */
export interface Decider<State, Command, Event extends DomainEvent = DomainEvent> {
  initialState(): State;
  decide(command: Command, state: State): Event[];
  evolve(state: State, event: Event): State;
}

export const fold = <S, C, E extends DomainEvent>(d: Decider<S, C, E>, events: E[]): S => events.reduce(d.evolve, d.initialState());

/** Closes an exhaustive switch: the compiler reports the case someone forgot. */
export function assertNever(x: never): never {
  throw new InternalError(`unexpected ${JSON.stringify(x)}`);
}
