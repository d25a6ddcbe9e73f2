import type { CatchUpOptions, EventStore, StoredEvent } from '@svc/domain';
import type { LogRead } from './log-tail';

const sleep = (ms: number, signal: AbortSignal, wake?: (w: () => void) => () => void) =>
  new Promise<void>((resolve) => {
    let off = () => {};
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      off();
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    if (wake) off = wake(done);
  });

/**
 * A catch-up subscription on the global log: reads from a position, hands each
 * batch to `handle`, then waits for the next append. Never skips a batch that
 * failed: it retries it with a bounded exponential backoff (capped at 5 s).
 * `read` is how the log is read: the store's `readAll` itself unless given (the
 * catch-up feed passes the process's shared reader, log-tail.ts).
 */
export async function catchUp(
  store: EventStore,
  o: CatchUpOptions,
  read: LogRead = (after, n) => store.readAll(after, n),
): Promise<void> {
  let position = o.from;
  let attempt = 0;
  let dirty = false;
  const off = store.onAppended(() => {
    dirty = true;
  });
  try {
    while (!o.signal.aborted) {
      let events: StoredEvent[];
      dirty = false;
      try {
        events = await read(position, o.batchSize ?? 500);
        if (events.length > 0) {
          position = await o.handle(events);
          attempt = 0;
          continue;
        }
      } catch (e) {
        attempt += 1;
        o.onError?.(e, attempt);
        await sleep(Math.min(5000, 50 * 2 ** Math.min(attempt, 7)), o.signal);
        continue;
      }
      if (dirty) continue;
      await sleep(o.pollMs ?? 1000, o.signal, (w) => store.onAppended(w));
    }
  } finally {
    off();
  }
}
