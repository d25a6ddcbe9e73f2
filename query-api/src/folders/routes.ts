import { folderResponse, idParam, limitParam, listEnvelope, listFoldersQuery, notFound, type Paginator, type Principal, route, type RouteSpec } from '@svc/contracts';
import { canSeeFolder, folderView, rootFolderId } from '@svc/domain';
import type { HistoryReads } from '../history/reads';
import { historyRoutes } from '../history/routes';
import type { FolderReads } from './reads';

/**
 * The caller's context root when the id names it and it is not recorded yet (a
 * context created before roots came with their contexts): folder reads show it
 * as it will be recorded, and never write it (its first folder write does).
 */
const implicitRootOf = (folders: FolderReads, p: Principal, id: string) =>
  p.tenantId && p.contextId && id === rootFolderId(p.tenantId, p.contextId) ? folders.implicitRoot(p.tenantId, p.contextId) : Promise.resolve(null);

/** Version history and tombstones of folders; an unrecorded root has no history yet (an empty list). */
export const folderHistoryRoutes = (history: HistoryReads, folders: FolderReads): RouteSpec[] =>
  historyRoutes(history, 'folder', 'folders:r', { tombstone: true, liveOwner: (id, p) => implicitRootOf(folders, p, id) });

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
      handler: async ({ params, principal: p }) => {
        const f = (await folders.byId(params.id)) ?? (await implicitRootOf(folders, p, params.id));
        if (!f || !canSeeFolder(p, f)) throw notFound();
        return folderView(f);
      },
    }),
    route({
      method: 'GET',
      url: '/v1/folders',
      operationId: 'listFolders',
      auth: 'data',
      permission: 'folders:r',
      summary: 'List folders, oldest first (filters: userId, scope, parentFolderId); the context root is always visible',
      query: listFoldersQuery.extend({ limit: limitParam }),
      response: listEnvelope(folderResponse),
      handler: async ({ query, principal: p }) => {
        const { startFrom, limit, ...filters } = query;
        const scope = `folders:${p.tenantId}:${p.contextId}`;
        const params = { ...filters, limit };
        const after = pages.start<[string, string]>(scope, params, startFrom);
        const ds = p.dataScope;
        const rows = await folders.list(p.tenantId!, p.contextId!, { ...filters, scopeUserId: ds?.userId ?? p.userId ?? undefined, scopeAnyOf: ds?.scopes }, after, limit + 1);
        // The root lists first; an unrecorded one (see implicitRootOf) where a recorded one would be.
        if (!after && !filters.userId && !filters.scope && !filters.parentFolderId && !rows[0]?.isProtected) {
          const implicit = await folders.implicitRoot(p.tenantId!, p.contextId!);
          if (implicit) rows.unshift(implicit);
        }
        return pages.page(scope, params, rows, limit, (r) => [r.createdAt, r.id] as [string, string], folderView);
      },
    }),
  ];
}
