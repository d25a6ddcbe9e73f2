import type { EventFeed, EventStore } from '@svc/domain';
import { catchUp } from './catch-up';
import { logTailOf } from './log-tail';

/**
 * The default feed (domain/src/ports/event-feed.ts): the event store's global log, read through the process's one
 * shared reader (log-tail.ts). `shared: false` reads the store on its own (one read per subscriber and batch, as
 * before the shared reader).
 */
export const catchUpFeed = (store: EventStore, o: { shared?: boolean } = {}): EventFeed => ({
  kind: 'catch-up',
  follow: (_name, co) => (o.shared === false ? catchUp(store, co) : catchUp(store, co, logTailOf(store).read)),
});
