import { createNamespaceBody, invalid, namespaceParam, namespaceResponse, notFound, route, type RouteSpec } from '@svc/contracts';
import { decideCreateNamespace, decideDeleteNamespace, type EventStore, isBuiltinNamespace, namespaceNames, namespaceRegistry, type NamespaceRegistry, type NamespaceUsage, namespaceView, streams } from '@svc/domain';
import { handleCommand, loadAggregate, metadataFor, type CommandDeps } from '../handle-command';

/**
 * Every namespace a tenant's data may use: `org`, `client` and the ones it
 * registered, read from the tenant's registry stream (never a projection), so
 * a write path can decide with it. For the schema feature: a reference field's
 * `targetSurface` must be `record`, `document`, `user` or one of these.
 */
export async function registeredNamespaces(store: EventStore, tenantId: string): Promise<string[]> {
  const { state } = await loadAggregate(store, streams.namespaces(tenantId), namespaceRegistry);
  return namespaceNames(state);
}

export function namespaceCommandRoutes(deps: CommandDeps, usage: NamespaceUsage): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: '/v1/namespaces',
      auth: 'data',
      permission: 'namespaces:c',
      summary: 'Register a namespace for the tenant (not org or client; 409 when it exists)',
      body: createNamespaceBody,
      response: namespaceResponse,
      status: 201,
      write: true,
      handler: async ({ body, meta }) => {
        const { state } = await handleCommand(deps, streams.namespaces(meta.principal.tenantId!), namespaceRegistry, (s) => ({ events: decideCreateNamespace(body, s) }), metadataFor(meta));
        return namespaceView(state.entries[body.name]);
      },
    }),
    route({
      method: 'DELETE',
      url: '/v1/namespaces/:name',
      auth: 'data',
      permission: 'namespaces:d',
      summary: 'Delete a registered namespace (400 for org and client, and while entities of it exist in any context)',
      params: namespaceParam,
      status: 204,
      write: true,
      handler: async ({ params, meta }) => {
        const tenantId = meta.principal.tenantId!;
        if (isBuiltinNamespace(params.name)) throw invalid(`'${params.name}' is a built-in namespace and cannot be deleted`);
        const { state } = await loadAggregate<NamespaceRegistry>(deps.store, streams.namespaces(tenantId), namespaceRegistry);
        if (!state.entries[params.name]) throw notFound();
        // Everything acknowledged so far is in the read models before they are counted.
        await deps.barrier.waitFor(await deps.store.headPosition());
        const entities = await usage.entities(tenantId, params.name);
        await handleCommand(deps, streams.namespaces(tenantId), namespaceRegistry, (s) => ({ events: decideDeleteNamespace(params.name, s, entities) }), metadataFor(meta));
        return null;
      },
    }),
  ];
}
