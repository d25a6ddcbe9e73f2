import {
  BUILTIN_NAMESPACES,
  entityResponse,
  idParam,
  listEntitiesQuery,
  listEnvelope,
  listUsersQuery,
  namespaceParam,
  namespaceResponse,
  notFound,
  pageQuery,
  type Paginator,
  type Principal,
  route,
  type RouteSpec,
  userResponse,
} from '@svc/contracts';
import {
  canReach,
  canSeeEntity,
  entityView,
  isBuiltinNamespace,
  type NamespaceEntry,
  namespaceView,
  readModelVersionOf,
  userOwner,
  userView,
} from '@svc/domain';
import { contextListRoute, dataScopeFilter, visibleOr404 } from '../lists';
import type { SchemaReads } from '../schemas/reads';
import type { EntityRow, IdentityReads, UserRow } from './reads';

const BUILTIN_DESCRIPTIONS: Record<string, string> = {
  org: 'Built-in namespace: organisations',
  client: 'Built-in namespace: clients',
};

/**
 * Cursor key of the namespace list: the built-ins come first (`b`), then registered names (`r`) by (createdAt, name).
 */
type NamespaceKey = ['b' | 'r', string, string];

export function identityQueryRoutes(reads: IdentityReads, schemas: SchemaReads, pages: Paginator): RouteSpec[] {
  const definition = async (schemaId: string | null, p: Principal) =>
    schemaId ? await schemas.definition(schemaId, readModelVersionOf(p)) : undefined;
  const showUser = async (u: UserRow, p: Principal) => userView(u, await definition(u.schemaId, p));
  const showEntity = async (e: EntityRow, p: Principal) => entityView(e, await definition(e.schemaId, p));
  const builtins = async (tenantId: string): Promise<NamespaceEntry[]> => {
    const createdAt = await reads.tenantCreatedAt(tenantId);
    return BUILTIN_NAMESPACES.map((name) => ({ name, description: BUILTIN_DESCRIPTIONS[name], createdAt }));
  };
  return [
    route({
      method: 'GET',
      url: '/v1/namespaces',
      auth: 'data',
      permission: 'namespaces:r',
      summary: 'List the tenant namespaces: org and client first, then registered ones oldest first',
      query: pageQuery,
      response: listEnvelope(namespaceResponse),
      handler: async ({ query, principal: p }) => {
        const scope = `namespaces:${p.tenantId}`;
        const params = { limit: query.limit };
        const after = pages.start<NamespaceKey>(scope, params, query.startFrom);
        const items: Array<{ key: NamespaceKey; entry: NamespaceEntry }> = [];
        if (!after || after[0] === 'b') {
          const all = await builtins(p.tenantId!);
          const from = after ? all.findIndex((b) => b.name === after[2]) + 1 : 0;
          items.push(...all.slice(from).map((entry) => ({ key: ['b', '', entry.name] as NamespaceKey, entry })));
        }
        const want = query.limit + 1 - items.length;
        if (want > 0) {
          const rows = await reads.namespaces(p.tenantId!, after?.[0] === 'r' ? [after[1], after[2]] : undefined, want);
          items.push(...rows.map((entry) => ({ key: ['r', entry.createdAt, entry.name] as NamespaceKey, entry })));
        }
        return pages.page(
          scope,
          params,
          items,
          query.limit,
          (i) => i.key,
          (i) => namespaceView(i.entry),
        );
      },
    }),
    route({
      method: 'GET',
      url: '/v1/namespaces/:name',
      auth: 'data',
      permission: 'namespaces:r',
      summary: 'Get a namespace (org and client are built in)',
      params: namespaceParam,
      response: namespaceResponse,
      handler: async ({ params, principal: p }) => {
        if (isBuiltinNamespace(params.name))
          return namespaceView((await builtins(p.tenantId!)).find((b) => b.name === params.name)!);
        const entry = await reads.namespace(p.tenantId!, params.name);
        if (!entry) throw notFound();
        return namespaceView(entry);
      },
    }),
    route({
      method: 'GET',
      url: '/v1/users/:id',
      auth: 'data',
      permission: 'users:r',
      summary: 'Get a user',
      params: idParam,
      response: userResponse,
      handler: async ({ params, principal: p }) =>
        showUser(
          visibleOr404(await reads.user(params.id), (u) => canReach(p, userOwner(u))),
          p,
        ),
    }),
    contextListRoute(pages, {
      name: 'users',
      summary: 'List users of the context, oldest first (filters: email, scope)',
      query: listUsersQuery,
      item: userResponse,
      load: (p, filters, after, limit) =>
        reads.users(p.tenantId!, p.contextId!, { ...filters, ...dataScopeFilter(p) }, after, limit),
      view: (u, _filters, p) => showUser(u, p),
    }),
    route({
      method: 'GET',
      url: '/v1/entities/:id',
      auth: 'data',
      permission: 'entities:r',
      summary: 'Get an identity entity',
      params: idParam,
      response: entityResponse,
      handler: async ({ params, principal: p }) =>
        showEntity(
          visibleOr404(await reads.entity(params.id), (e) => canSeeEntity(p, e)),
          p,
        ),
    }),
    contextListRoute(pages, {
      name: 'entities',
      summary: 'List identity entities of the context, oldest first (filters: namespace, key)',
      query: listEntitiesQuery,
      item: entityResponse,
      // A credential limited to scopes sees the entities those scopes name; entities have no owning user.
      load: (p, filters, after, limit) =>
        reads.entities(p.tenantId!, p.contextId!, { ...filters, scopeAnyOf: p.dataScope?.scopes }, after, limit),
      view: (e, _filters, p) => showEntity(e, p),
    }),
  ];
}
