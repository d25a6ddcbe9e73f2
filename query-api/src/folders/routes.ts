import {
  folderResponse,
  idParam,
  listFoldersQuery,
  type Paginator,
  type Principal,
  route,
  type RouteSpec,
} from '@svc/contracts';
import { canReach, canSeeFolder, folderView, rootFolderId } from '@svc/domain';
import type { HistoryReads } from '../history/reads';
import { historyRoutes } from '../history/routes';
import { contextListRoute, dataScopeFilter, visibleOr404 } from '../lists';
import type { FolderReads } from './reads';

/**
 * The caller's context root when the id names it and it is not recorded yet (a
 * context created before roots came with their contexts): folder reads show it
 * as it will be recorded, and never write it (its first folder write does).
 */
const implicitRootOf = (folders: FolderReads, p: Principal, id: string) =>
  p.tenantId && p.contextId && id === rootFolderId(p.tenantId, p.contextId)
    ? folders.implicitRoot(p.tenantId, p.contextId)
    : Promise.resolve(null);

/**
 * Version history and tombstones of folders; an unrecorded root has no history yet (an empty list). The context's
 * root is visible to every credential of its context, as GET /v1/folders/{id} shows it (canSeeFolder).
 */
export const folderHistoryRoutes = (history: HistoryReads, folders: FolderReads): RouteSpec[] =>
  historyRoutes(history, 'folder', 'folders:r', {
    tombstone: true,
    liveOwner: (id, p) => implicitRootOf(folders, p, id),
    visible: (p, o, id) =>
      canReach(p, o) ||
      (!!o.tenantId &&
        !!o.contextId &&
        id === rootFolderId(o.tenantId, o.contextId) &&
        canSeeFolder(p, { ...o, isProtected: true })),
  });

export function folderQueryRoutes(folders: FolderReads, pages: Paginator): RouteSpec[] {
  return [
    route({
      method: 'GET',
      url: '/v1/folders/:id',
      operationId: 'getFolder',
      auth: 'data',
      permission: 'folders:r',
      summary: 'Get a folder',
      params: idParam,
      response: folderResponse,
      handler: async ({ params, principal: p }) =>
        folderView(
          visibleOr404((await folders.byId(params.id)) ?? (await implicitRootOf(folders, p, params.id)), (f) =>
            canSeeFolder(p, f),
          ),
        ),
    }),
    contextListRoute(pages, {
      name: 'folders',
      operationId: 'listFolders',
      summary:
        'List folders, oldest first (filters: userId, scope, parentFolderId); the context root is always visible',
      query: listFoldersQuery,
      item: folderResponse,
      load: async (p, filters, after, limit) => {
        const rows = await folders.list(p.tenantId!, p.contextId!, { ...filters, ...dataScopeFilter(p) }, after, limit);
        // The root lists first; an unrecorded one (see implicitRootOf) where a recorded one would be.
        if (!after && !filters.userId && !filters.scope && !filters.parentFolderId && !rows[0]?.isProtected) {
          const implicit = await folders.implicitRoot(p.tenantId!, p.contextId!);
          if (implicit) rows.unshift(implicit);
        }
        return rows;
      },
      view: folderView,
    }),
  ];
}
