import { notFound } from '@svc/contracts/errors';
import type { Principal, RequestMeta } from '@svc/contracts/http/principal';
import type { RouteSpec } from '@svc/contracts/http/route';
import type { EventStore } from '@svc/domain/ports/event-store';
import { WrongExpectedRevisionError } from '@svc/domain/ports/event-store';
import { canSeeFolder, decideCreateRoot, folderAggregate, rootFolderId, type FolderState, type LiveFolder } from '@svc/domain/folders/folder';
import { streams } from '@svc/domain/shared/streams';
import { commit, loadAggregate, metadataFor, type CommandDeps } from '../handle-command';

/**
 * A live folder the caller can see (its tenant and context, inside its data
 * scope; the context root is open to all), read from its own stream (never
 * from a projection), else 404. A write into a folder the caller cannot read
 * is a 404 like the read: anything else would reveal that the folder exists.
 * Used by records, documents and folders to check a `folderId` before a write.
 */
export async function requireFolder(store: EventStore, principal: Principal, folderId: string): Promise<LiveFolder> {
  const { state } = await loadAggregate(store, streams.folder(folderId), folderAggregate);
  if (!state.exists || !canSeeFolder(principal, state)) throw notFound();
  return state;
}

/**
 * The context root: created by the first folder call of a context (read or
 * write), with an id derived from tenant and context so concurrent first calls
 * agree; the loser of the race reads the winner's. Waits until the read models
 * show it, so a list that follows includes it.
 */
export async function ensureRootFolder(deps: CommandDeps, meta: RequestMeta): Promise<LiveFolder> {
  const p = meta.principal;
  const id = rootFolderId(p.tenantId!, p.contextId!);
  const stream = streams.folder(id);
  for (let attempt = 0; attempt < 3; attempt++) {
    const { state } = await loadAggregate(deps.store, stream, folderAggregate);
    if (state.exists) return state;
    // Stamped a millisecond before the call that caused it, so the root always lists before the folders made in that call.
    const md = { ...metadataFor(meta), occurredAt: new Date(meta.now.getTime() - 1).toISOString() };
    const events = decideCreateRoot(id, state);
    try {
      await commit(deps, md, [{ streamId: stream, events, expectedRevision: 'no_stream' }]);
      return events.reduce<FolderState>((s, e) => folderAggregate.evolve(s, e, md), state) as LiveFolder;
    } catch (e) {
      if (!(e instanceof WrongExpectedRevisionError)) throw e;
      await deps.barrier.waitFor(await deps.store.headPosition()); // another first call won: wait for its read model
    }
  }
  throw new Error('root folder did not settle');
}

/**
 * `ensureRootFolder` for the folder routes, remembering the contexts whose root
 * this process has seen so later calls skip the stream read (a root is never
 * deleted while its context lives).
 */
export function rootFolderGuard(deps: CommandDeps): (meta: RequestMeta) => Promise<void> {
  const known = new Set<string>();
  return async (meta) => {
    const key = `${meta.principal.tenantId}/${meta.principal.contextId}`;
    if (known.has(key)) return;
    await ensureRootFolder(deps, meta);
    if (known.size >= 100_000) known.clear();
    known.add(key);
  };
}

/** Every folder call first makes sure the context root exists (after authentication and request validation). */
export function withRootFolder(deps: CommandDeps, routes: RouteSpec[]): RouteSpec[] {
  const ensure = rootFolderGuard(deps);
  return routes.map((r) => ({
    ...r,
    handler: async (ctx) => {
      await ensure(ctx.meta);
      return r.handler(ctx);
    },
  }));
}
