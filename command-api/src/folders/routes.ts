import {
  conflict,
  type CreateFolder,
  createFolderBody,
  folderResponse,
  patchFolderBody,
  type Principal,
  putFolderBody,
  type RequestMeta,
  route,
  type RouteSpec,
} from '@svc/contracts';
import {
  claim,
  type CommandDeps,
  countForDecision,
  deriveSlug,
  type EventStore,
  type FolderContents,
  folderDecider,
  folderView,
  handleCommand,
  type LiveFolder,
  metadataFor,
  readReservation,
  release,
  type Reservation,
  slugCandidate,
  stampOwnership,
  streams,
} from '@svc/domain';
import { writeByIdRoutes } from '../by-id-routes';
import { ensureRootFolder, requireFolder, withRootFolder } from './load';
import { assertScopeNamespaces } from '../identity/namespaces';

export { requireFolder } from './load';

/** Slugs are unique among the children of one parent (the root's children included). */
const slugReservation = (
  store: EventStore,
  p: { tenantId: string | null; contextId: string | null },
  parentId: string,
  slug: string,
) => readReservation(store, p.tenantId!, p.contextId!, 'folder-slug', parentId, slug);

/** How many derived candidates (`name`, `name-2`, ...) a create tries before giving up. */
const MAX_SLUG_CANDIDATES = 1000;

const slugHeld = (slug: string) => conflict(`slug '${slug}' is already used by a sibling folder`);

/**
 * The slug a create claims: an explicit one (409 when a sibling holds it), else
 * the first derived candidate from `from` on that no sibling holds.
 */
async function freeSlug(
  store: EventStore,
  p: Principal,
  parentId: string,
  explicit: string | undefined,
  base: string,
  from: number,
): Promise<{ slug: string; n: number; reservation: Reservation }> {
  if (explicit) {
    const reservation = await slugReservation(store, p, parentId, explicit);
    if (reservation.holder) throw slugHeld(explicit);
    return { slug: explicit, n: 1, reservation };
  }
  for (let n = from; n <= MAX_SLUG_CANDIDATES; n++) {
    const slug = slugCandidate(base, n);
    const reservation = await slugReservation(store, p, parentId, slug);
    if (!reservation.holder) return { slug, n, reservation };
  }
  throw conflict('No free slug could be derived from this name; send an explicit slug');
}

/**
 * Creates a folder under `parentFolderId`, else under the context root. The
 * slug is claimed atomically with the folder: an explicit slug a sibling holds
 * is a 409; a derived one moves on to the next free `-<n>` suffix.
 */
export async function createFolder(deps: CommandDeps, body: CreateFolder, meta: RequestMeta): Promise<LiveFolder> {
  const p = meta.principal;
  const own = stampOwnership(p, { userId: body.userId, scopes: body.scopes });
  await assertScopeNamespaces(deps.store, p.tenantId!, body.scopes);
  const root = await ensureRootFolder(deps, meta);
  const parent = body.parentFolderId ? await requireFolder(deps.store, p, body.parentFolderId) : root;
  const base = body.slug ?? deriveSlug(body.name);
  const folderId = deps.ids.newId();
  // A candidate a concurrent create took is read again on the next attempt (and passed over): the scan resumes there.
  let from = 1;
  const { state } = await handleCommand(deps, {
    streamId: streams.folder(folderId),
    aggregate: folderDecider,
    metadata: metadataFor(meta),
    fresh: true,
    prepare: async () => {
      const found = await freeSlug(deps.store, p, parent.id, body.slug, base, from);
      from = found.n;
      return found;
    },
    decide: (s, { slug, reservation }) => ({
      events: folderDecider.decide(
        {
          type: 'CreateFolder',
          folderId,
          name: body.name,
          description: body.description,
          parent,
          slug,
          userId: own.userId,
          scopes: own.scopes ?? [],
        },
        s,
      ),
      also: [claim(reservation, folderId)],
    }),
    // Lost the race for the slug: an explicit one is taken (409); a derived one is read again.
    onConflict: (_on, { slug }) => {
      if (body.slug) throw slugHeld(slug);
      return 'retry';
    },
  });
  return state as LiveFolder;
}

export async function changeFolder(
  deps: CommandDeps,
  id: string,
  kind: 'put' | 'patch',
  body: Record<string, unknown>,
  meta: RequestMeta,
) {
  await assertScopeNamespaces(deps.store, meta.principal.tenantId!, body.scopes);
  const { state } = await handleCommand(deps, {
    streamId: streams.folder(id),
    aggregate: folderDecider,
    metadata: metadataFor(meta),
    decide: (s) => ({ events: folderDecider.decide({ type: 'ChangeFolder', actor: meta.principal, kind, body }, s) }),
  });
  return folderView(state as LiveFolder);
}

/** Deletes an empty folder; the count covers every item in it, readable by the caller or not. */
export async function deleteFolder(
  deps: CommandDeps,
  contents: FolderContents,
  id: string,
  expectedVersion: number | undefined,
  meta: RequestMeta,
) {
  const command = { type: 'DeleteFolder', actor: meta.principal, expectedVersion } as const;
  await handleCommand(deps, {
    streamId: streams.folder(id),
    aggregate: folderDecider,
    metadata: metadataFor(meta),
    // A folder the caller cannot see is refused before anything is counted.
    prepare: (cur) =>
      countForDecision(deps, folderDecider, { ...command, items: 0 }, cur, async () => {
        const f = cur as LiveFolder;
        return {
          items: await contents.count(f.tenantId!, f.contextId!, id),
          slug: await slugReservation(deps.store, f, f.parentFolderId!, f.slug),
        };
      }),
    decide: (s, { items, slug }) => ({
      events: folderDecider.decide({ ...command, items }, s),
      also: slug.holder === id ? [release(slug)] : [],
    }),
    // The slug's reservation moved meanwhile: decide again.
    onConflict: () => 'retry',
  });
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
    ...writeByIdRoutes({
      resource: 'folders',
      response: folderResponse,
      put: {
        operationId: 'updateFolder',
        summary: 'Replace a folder name, description and ownership (slug and parent are fixed)',
        body: putFolderBody,
      },
      patch: {
        operationId: 'patchFolder',
        summary: 'Patch a folder (RFC 7386): name, description, userId, scopes, expectedVersion',
        body: patchFolderBody,
      },
      change: (id, kind, body, meta) => changeFolder(deps, id, kind, body, meta),
      delete: {
        operationId: 'deleteFolder',
        summary:
          'Delete an empty folder (400 while it holds sub-folders, records or documents; the root cannot be deleted)',
        remove: (id, expectedVersion, meta) => deleteFolder(deps, contents, id, expectedVersion, meta),
      },
    }),
  ]);
}
