import { notFound } from '@svc/contracts/errors';
import { idParam } from '@svc/contracts/api/tenancy';
import { listEnvelope } from '@svc/contracts/common';
import { folderResponse, listFoldersQuery } from '@svc/contracts/api/folders';
import type { RequestMeta } from '@svc/contracts/http/principal';
import { limitParam, type Paginator } from '@svc/contracts/http/pagination';
import { route, type RouteSpec } from '@svc/contracts/http/route';
import { canSeeFolder, folderView } from '@svc/domain/folders/folder';
import type { FolderReads } from './reads';

/**
 * Makes sure the context root exists before a folder read (the first folder
 * call of a context creates it, reads included). Injected by the deployment so
 * this package never writes by itself.
 */
export type EnsureRootFolder = (meta: RequestMeta) => Promise<unknown>;

/** Wraps folder routes (these and the folder history routes) so each call first ensures the root. */
export const withRootFolder = (ensureRoot: EnsureRootFolder, routes: RouteSpec[]): RouteSpec[] =>
  routes.map((r) => ({
    ...r,
    handler: async (ctx) => {
      await ensureRoot(ctx.meta);
      return r.handler(ctx);
    },
  }));

export function folderQueryRoutes(folders: FolderReads, pages: Paginator, ensureRoot: EnsureRootFolder): RouteSpec[] {
  return withRootFolder(ensureRoot, [
    route({
      method: 'GET',
      url: '/v1/folders/:id',
      auth: 'data',
      permission: 'folders:r',
      summary: 'Get a folder',
      params: idParam,
      response: folderResponse,
      handler: async ({ params, principal: p }) => {
        const f = await folders.byId(params.id);
        if (!f || !canSeeFolder(p, f)) throw notFound();
        return folderView(f);
      },
    }),
    route({
      method: 'GET',
      url: '/v1/folders',
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
        return pages.page(scope, params, rows, limit, (r) => [r.createdAt, r.id] as [string, string], folderView);
      },
    }),
  ]);
}
