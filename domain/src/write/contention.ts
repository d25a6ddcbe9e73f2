/**
 * Attempts of a write that lost the race for its stream to another writer
 * (the command handler's retry loop, handle-command.ts: the only one).
 * Without `expectedVersion` a write is last-write-wins and must land however
 * many writers contend, so attempts are bounded by time (not by count) and
 * spread by a jittered backoff; a write with `expectedVersion` fails in its
 * decider with VERSION_CONFLICT instead of retrying.
 */
export async function* contended(budgetMs = 15_000): AsyncGenerator<number> {
  const deadline = Date.now() + budgetMs;
  for (let attempt = 0; ; attempt++) {
    yield attempt;
    if (Date.now() > deadline) return;
    await new Promise((r) => setTimeout(r, Math.random() * Math.min(100, 4 * 2 ** Math.min(attempt, 5))));
  }
}
