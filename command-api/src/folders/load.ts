import { type EventMetadata, notFound, type Principal, type RequestMeta, type RouteSpec } from '@svc/contracts';
import {
  canSeeFolder,
  type CommandDeps,
  type DomainAppend,
  type EventStore,
  folderDecider,
  handleCommand,
  implicitRootFolder,
  type LiveFolder,
  loadAggregate,
  metadataFor,
  readModelsCaughtUp,
  rootCreatedAt,
  rootFolderId,
  streams,
} from '@svc/domain';

/**
 * A live folder the caller can see (its tenant and context, inside its data
 * scope; the context root is open to all), read from its own stream (never
 * from a projection), else 404. A write into a folder the caller cannot read
 * is a 404 like the read: anything else would reveal that the folder exists.
 * Used by records, documents and folders to check a `folderId` before a write.
 * The root of a context created before roots came with their contexts is
 * there too, as it reads (`implicitRootFolder`), though not yet recorded.
 */
export async function requireFolder(store: EventStore, principal: Principal, folderId: string): Promise<LiveFolder> {
  const { state } = await loadAggregate(store, streams.folder(folderId), folderDecider);
  if (state.exists) {
    if (!canSeeFolder(principal, state)) throw notFound();
    return state;
  }
  const p = principal;
  if (!state.deleted && p.tenantId && p.contextId && folderId === rootFolderId(p.tenantId, p.contextId)) {
    const createdAt = await contextCreatedAt(store, p.contextId);
    if (createdAt) return implicitRootFolder(p.tenantId, p.contextId, createdAt);
  }
  throw notFound();
}

/** When a context was created (its ContextCreated), read from its own stream; null when there is none. */
async function contextCreatedAt(store: EventStore, contextId: string): Promise<string | null> {
  const [first] = await store.readStream(streams.context(contextId), { maxCount: 1 });
  return first?.type === 'ContextCreated' ? first.metadata.occurredAt : null;
}

/** The metadata of a context root's creation: the context's own, in that context, a millisecond before it. */
const rootMetadata = (
  contextMetadata: EventMetadata,
  tenantId: string,
  contextId: string,
  contextCreatedAt = contextMetadata.occurredAt,
): EventMetadata => ({
  ...contextMetadata,
  tenantId,
  contextId,
  occurredAt: rootCreatedAt(contextCreatedAt),
});

/**
 * The context root comes into being with its context: this append goes into the
 * same atomic commit as the context's ContextCreated (account opening, POST
 * /v1/contexts). Its id is derived from tenant and context.
 */
export function contextRootAppend(contextMetadata: EventMetadata, tenantId: string, contextId: string): DomainAppend {
  const id = rootFolderId(tenantId, contextId);
  const events = folderDecider.decide({ type: 'CreateRootFolder', folderId: id }, folderDecider.initialState());
  return {
    streamId: streams.folder(id),
    events,
    expectedRevision: 'no_stream',
    metadata: rootMetadata(contextMetadata, tenantId, contextId),
  };
}

/**
 * The caller's context root, for a folder write that needs it recorded. Every
 * context created since roots came with their contexts has it already (a read
 * of its stream). A context created before gets it now, on its first folder
 * write (never on a read), as it was shown until then (`implicitRootFolder`:
 * as of the context's creation). Concurrent first writes agree: the id is
 * derived, the append expects no stream, and the loser reads the winner's.
 */
export async function ensureRootFolder(deps: CommandDeps, meta: RequestMeta): Promise<LiveFolder> {
  const p = meta.principal;
  const id = rootFolderId(p.tenantId!, p.contextId!);
  const stream = streams.folder(id);
  const { state } = await loadAggregate(deps.store, stream, folderDecider);
  if (state.exists) return state;
  const created = (await contextCreatedAt(deps.store, p.contextId!)) ?? meta.now.toISOString();
  const out = await handleCommand(deps, {
    streamId: stream,
    aggregate: folderDecider,
    metadata: rootMetadata(metadataFor(meta), p.tenantId!, p.contextId!, created),
    decide: (s) => ({ events: folderDecider.decide({ type: 'CreateRootFolder', folderId: id }, s) }),
  });
  // Another first write recorded it in between (this one wrote nothing): its response waits for the read models; so
  // does this one.
  if (!out.events.length) await readModelsCaughtUp(deps);
  if (!out.state.exists) throw notFound();
  return out.state;
}

/**
 * `ensureRootFolder` for folder writes, remembering the contexts whose root
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

/** Every folder write first makes sure the context root is recorded (after authentication and request validation). */
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
