import { createNamespaceBody, invalid, namespaceParam, namespaceResponse, route, type RouteSpec } from '@svc/contracts';
import {
  type CommandDeps,
  countForDecision,
  type EventStore,
  handleCommand,
  isBuiltinNamespace,
  loadAggregate,
  metadataFor,
  namespaceDecider,
  namespaceNames,
  type NamespaceUsage,
  namespaceView,
  streams,
} from '@svc/domain';

/**
 * Every namespace a tenant's data may use: `org`, `client` and the ones it
 * registered, read from the tenant's registry stream (never a projection), so
 * a write path can decide with it. For the schema feature: a reference field's
 * `targetSurface` must be `record`, `document`, `user` or one of these.
 */
export async function registeredNamespaces(store: EventStore, tenantId: string): Promise<string[]> {
  const { state } = await loadAggregate(store, streams.namespaces(tenantId), namespaceDecider);
  return namespaceNames(state);
}

/**
 * Ownership scopes a write asks for name `org`, `client` or a namespace the
 * tenant registered (spec "Shared conventions": `scopes`), else 400 before
 * anything is stored. The registry is read only when a scope names another
 * namespace, so the built-in ones cost nothing.
 */
export async function assertScopeNamespaces(store: EventStore, tenantId: string, scopes: unknown): Promise<void> {
  if (!Array.isArray(scopes) || !scopes.length) return;
  const names = scopes.map((s) => String(s).slice(0, Math.max(0, String(s).indexOf(':'))));
  if (names.every(isBuiltinNamespace)) return;
  const known = new Set(await registeredNamespaces(store, tenantId));
  const unknown = names.find((n) => !known.has(n));
  if (unknown !== undefined)
    throw invalid(
      `scopes: namespace '${unknown}' is not registered (org, client, or one created with POST /v1/namespaces)`,
    );
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
        const { state } = await handleCommand(deps, {
          streamId: streams.namespaces(meta.principal.tenantId!),
          aggregate: namespaceDecider,
          metadata: metadataFor(meta),
          decide: (s) => ({ events: namespaceDecider.decide({ type: 'CreateNamespace', ...body }, s) }),
        });
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
        const command = { type: 'DeleteNamespace', name: params.name } as const;
        await handleCommand(deps, {
          streamId: streams.namespaces(tenantId),
          aggregate: namespaceDecider,
          metadata: metadataFor(meta),
          // A built-in or unknown name is refused before anything is counted.
          prepare: (s) =>
            countForDecision(deps, namespaceDecider, { ...command, entities: 0 }, s, () =>
              usage.entities(tenantId, params.name),
            ),
          decide: (s, entities) => ({ events: namespaceDecider.decide({ ...command, entities }, s) }),
        });
        return null;
      },
    }),
  ];
}
