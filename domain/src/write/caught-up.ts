import type { CommandDeps } from './handle-command';

/**
 * Waits until the read models have applied everything acknowledged so far: what reads them next sees every earlier
 * write.
 */
export async function readModelsCaughtUp(deps: Pick<CommandDeps, 'store' | 'barrier'>): Promise<void> {
  await deps.barrier.waitFor(await deps.store.headPosition());
}

/**
 * What a decision counts in the read models (a delete refused while something is in it): the refusals that need
 * no count come first (`uncounted`: the command with nothing counted, so what the caller cannot see is not
 * counted), then `count` reads the read models once they hold every earlier write.
 */
export async function countForDecision<S, C, T>(
  deps: Pick<CommandDeps, 'store' | 'barrier'>,
  decider: { decide(command: C, state: S): unknown },
  uncounted: C,
  state: S,
  count: () => Promise<T>,
): Promise<T> {
  decider.decide(uncounted, state);
  await readModelsCaughtUp(deps);
  return count();
}
