import { contended } from '../contention';
import { z } from 'zod';
import { conflict, type CreateFolder, createFolderBody, folderResponse, idParam, invalid, notFound, patchFolderBody, type Principal, putFolderBody, type RequestMeta, route, type RouteSpec, versionConflict } from '@svc/contracts';
import { canSeeFolder, checkFolderPatch, decideChangeFolder, decideCreateFolder, decideDeleteFolder, deriveSlug, type EventStore, folderAggregate, type FolderContents, type FolderState, folderView, type LiveFolder, slugCandidate, stampOwnership, streams, WrongExpectedRevisionError } from '@svc/domain';
import { commit, handleCommand, loadAggregate, metadataFor, type CommandDeps } from '../handle-command';
import { claim, readReservation, release } from '../reservations';
import { ensureRootFolder, requireFolder, withRootFolder } from './load';

export { requireFolder } from './load';

/** Slugs are unique among the children of one parent (the root's children included). */
const slugReservation = (store: EventStore, p: { tenantId: string | null; contextId: string | null }, parentId: string, slug: string) =>
  readReservation(store, p.tenantId!, p.contextId!, 'folder-slug', parentId, slug);

/** How many derived candidates (`name`, `name-2`, ...) a create tries before giving up. */
const MAX_SLUG_CANDIDATES = 1000;

/**
 * Creates a folder under `parentFolderId`, else under the context root. The
 * slug is claimed atomically with the folder: an explicit slug a sibling holds
 * is a 409; a derived one moves on to the next free `-<n>` suffix.
 */
export async function createFolder(deps: CommandDeps, body: CreateFolder, meta: RequestMeta): Promise<LiveFolder> {
  const p = meta.principal;
  const own = stampOwnership(p, { userId: body.userId, scopes: body.scopes });
  const root = await ensureRootFolder(deps, meta);
  const parent = body.parentFolderId ? await requireFolder(deps.store, p, body.parentFolderId) : root;
  const base = body.slug ?? deriveSlug(body.name);
  const md = metadataFor(meta);
  let n = 1;
  for (let attempt = 0; attempt < MAX_SLUG_CANDIDATES + 5; attempt++) {
    const slug = body.slug ?? slugCandidate(base, n);
    const r = await slugReservation(deps.store, p, parent.id, slug);
    if (r.holder) {
      if (body.slug) throw conflict(`slug '${slug}' is already used by a sibling folder`);
      if (++n > MAX_SLUG_CANDIDATES) break;
      continue;
    }
    const folderId = deps.ids.newId();
    const events = decideCreateFolder({ folderId, name: body.name, description: body.description, parent, slug, userId: own.userId, scopes: own.scopes ?? [] }, { exists: false });
    try {
      await commit(deps, md, [{ streamId: streams.folder(folderId), events, expectedRevision: 'no_stream' }, claim(r, folderId)]);
      return events.reduce<FolderState>((s, e) => folderAggregate.evolve(s, e, md), { exists: false }) as LiveFolder;
    } catch (e) {
      if (!(e instanceof WrongExpectedRevisionError) || e.streamId !== r.streamId) throw e;
      if (body.slug) throw conflict(`slug '${slug}' is already used by a sibling folder`);
      // a concurrent create took this candidate: read it again (and move on)
    }
  }
  throw conflict('No free slug could be derived from this name; send an explicit slug');
}

export async function changeFolder(deps: CommandDeps, id: string, kind: 'put' | 'patch', body: Record<string, unknown>, meta: RequestMeta) {
  const p = meta.principal;
  const { state } = await handleCommand(
    deps,
    streams.folder(id),
    folderAggregate,
    (cur) => {
      if (!cur.exists || !canSeeFolder(p, cur)) throw notFound();
      if (kind === 'patch' && !cur.isProtected) checkFolderPatch(body);
      const own = 'userId' in body || 'scopes' in body ? stampOwnership(p, { userId: body.userId as string | undefined, scopes: body.scopes as string[] | undefined }) : { userId: undefined, scopes: undefined };
      const events = decideChangeFolder({ kind, body, userId: 'userId' in body ? own.userId : undefined, scopes: 'scopes' in body ? (body.scopes as string[]) : undefined }, cur);
      return { events };
    },
    metadataFor(meta),
  );
  return folderView(state as LiveFolder);
}

/** Deletes an empty folder; the count covers every item in it, readable by the caller or not. */
export async function deleteFolder(deps: CommandDeps, contents: FolderContents, id: string, expectedVersion: number | undefined, meta: RequestMeta) {
  const p: Principal = meta.principal;
  for await (const _attempt of contended()) {
    const { state: cur, revision } = await loadAggregate(deps.store, streams.folder(id), folderAggregate);
    if (!cur.exists || !canSeeFolder(p, cur)) throw notFound();
    if (cur.isProtected) throw invalid('The context root folder cannot be deleted');
    if (expectedVersion !== undefined && expectedVersion !== cur.version) throw versionConflict();
    // Everything acknowledged so far is in the read models before they are counted.
    await deps.barrier.waitFor(await deps.store.headPosition());
    const items = await contents.count(cur.tenantId!, cur.contextId!, id);
    const events = decideDeleteFolder(cur, expectedVersion, items);
    const r = await slugReservation(deps.store, cur, cur.parentFolderId!, cur.slug);
    try {
      await commit(deps, metadataFor(meta), [{ streamId: streams.folder(id), events, expectedRevision: revision }, ...(r.holder === id ? [release(r)] : [])]);
      return;
    } catch (e) {
      if (e instanceof WrongExpectedRevisionError) continue;
      throw e;
    }
  }
  throw conflict('The folder changed concurrently; retry');
}

export function folderCommandRoutes(deps: CommandDeps, contents: FolderContents): RouteSpec[] {
  return withRootFolder(deps, [
    route({
      method: 'POST',
      url: '/v1/folders',
      operationId: 'createFolder',
      auth: 'data',
      permission: 'folders:c',
      summary: 'Create a folder (under the context root unless parentFolderId is given)',
      body: createFolderBody,
      response: folderResponse,
      status: 201,
      write: true,
      handler: async ({ body, meta }) => folderView(await createFolder(deps, body, meta)),
    }),
    route({
      method: 'PUT',
      url: '/v1/folders/:id',
      operationId: 'updateFolder',
      auth: 'data',
      permission: 'folders:u',
      summary: 'Replace a folder name, description and ownership (slug and parent are fixed)',
      params: idParam,
      body: putFolderBody,
      response: folderResponse,
      write: true,
      handler: ({ params, body, meta }) => changeFolder(deps, params.id, 'put', body as Record<string, unknown>, meta),
    }),
    route({
      method: 'PATCH',
      url: '/v1/folders/:id',
      operationId: 'patchFolder',
      auth: 'data',
      permission: 'folders:u',
      summary: 'Patch a folder (RFC 7386): name, description, userId, scopes, expectedVersion',
      params: idParam,
      body: patchFolderBody,
      response: folderResponse,
      write: true,
      handler: ({ params, body, meta }) => changeFolder(deps, params.id, 'patch', body, meta),
    }),
    route({
      method: 'DELETE',
      url: '/v1/folders/:id',
      operationId: 'deleteFolder',
      auth: 'data',
      permission: 'folders:d',
      summary: 'Delete an empty folder (400 while it holds sub-folders, records or documents; the root cannot be deleted)',
      params: idParam,
      query: z.object({ expectedVersion: z.coerce.number().int().optional() }),
      status: 204,
      write: true,
      handler: async ({ params, query, meta }) => {
        await deleteFolder(deps, contents, params.id, query.expectedVersion, meta);
        return null;
      },
    }),
  ]);
}
