import {
  conflict,
  type CreateEntity,
  createEntityBody,
  entityResponse,
  forbidden,
  patchEntityBody,
  putEntityBody,
  type RequestMeta,
  route,
  type RouteSpec,
} from '@svc/contracts';
import {
  canSeeEntity,
  type CommandDeps,
  entityDecider,
  entityView,
  type EventStore,
  handleCommand,
  type LiveEntity,
  metadataFor,
  moveReservation,
  readReservation,
  streams,
} from '@svc/domain';
import { writeByIdRoutes } from '../by-id-routes';
import { boundDefinition, identitySchema } from './bound-schema';
import { registeredNamespaces } from './namespaces';

/** One entity per key in a namespace, per tenant and context (the key is fixed once created). */
const KEY_HELD = 'An entity with this namespace and key already exists';
const moveKey = (
  store: EventStore,
  e: { tenantId: string | null; contextId: string | null },
  namespace: string,
  entityId: string,
  before: string | null,
  after: string | null,
) =>
  moveReservation({
    read: (key) => readReservation(store, e.tenantId!, e.contextId!, 'entity-key', namespace, key),
    holderId: entityId,
    before,
    after,
    held: KEY_HELD,
  });

async function createEntity(deps: CommandDeps, body: CreateEntity, meta: RequestMeta) {
  const p = meta.principal;
  const scope = { tenantId: p.tenantId, contextId: p.contextId };
  // A credential limited to scopes may only create the entities it could then read.
  if (!canSeeEntity(p, { ...scope, namespace: body.namespace, key: body.key })) throw forbidden();
  // Unlike a user schema, ordinary scoped credentials may bind an entity schema.
  const schema = body.schemaId ? await identitySchema(deps.store, p, body.schemaId, 'entity') : undefined;
  const namespaces = await registeredNamespaces(deps.store, p.tenantId!);
  const entities = entityDecider(deps.sealer);
  const entityId = deps.ids.newId();
  const { state } = await handleCommand(deps, {
    streamId: streams.entity(entityId),
    aggregate: entities,
    metadata: metadataFor(meta),
    fresh: true,
    decide: (s) => ({
      events: entities.decide(
        {
          type: 'CreateEntity',
          entityId,
          namespace: body.namespace,
          key: body.key,
          payload: body.payload,
          schemaId: body.schemaId,
          definition: schema?.definition,
          namespaces,
        },
        s,
      ),
    }),
    beforeAppend: () => moveKey(deps.store, scope, body.namespace, entityId, null, body.key),
    onConflict: () => {
      throw conflict(KEY_HELD);
    },
  });
  return entityView(state as LiveEntity, schema?.definition);
}

async function changeEntity(
  deps: CommandDeps,
  id: string,
  kind: 'put' | 'patch',
  body: Record<string, unknown>,
  meta: RequestMeta,
) {
  const p = meta.principal;
  const entities = entityDecider(deps.sealer);
  const { state, prepared: definition } = await handleCommand(deps, {
    streamId: streams.entity(id),
    aggregate: entities,
    metadata: metadataFor(meta),
    prepare: (cur) => boundDefinition(deps.store, p, cur),
    decide: (s, definition) => ({
      events: entities.decide({ type: 'ChangeEntity', actor: p, kind, body, definition }, s),
    }),
  });
  return entityView(state as LiveEntity, definition);
}

async function deleteEntity(deps: CommandDeps, id: string, expectedVersion: number | undefined, meta: RequestMeta) {
  const entities = entityDecider(deps.sealer);
  await handleCommand(deps, {
    streamId: streams.entity(id),
    aggregate: entities,
    metadata: metadataFor(meta),
    decide: (s) => ({ events: entities.decide({ type: 'DeleteEntity', actor: meta.principal, expectedVersion }, s) }),
    // Its key becomes free.
    beforeAppend: ({ state }) =>
      moveKey(deps.store, state as LiveEntity, (state as LiveEntity).namespace, id, (state as LiveEntity).key, null),
    onConflict: () => 'retry',
  });
}

export function entityCommandRoutes(deps: CommandDeps): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: '/v1/entities',
      auth: 'data',
      permission: 'entities:c',
      summary:
        'Create an identity entity (namespace org, client or registered; key unique per namespace in the context)',
      body: createEntityBody,
      response: entityResponse,
      status: 201,
      write: true,
      handler: ({ body, meta }) => createEntity(deps, body, meta),
    }),
    ...writeByIdRoutes({
      resource: 'entities',
      response: entityResponse,
      put: { summary: 'Replace an entity payload (namespace, key and schemaId are fixed)', body: putEntityBody },
      patch: { summary: 'Patch an entity payload (RFC 7386)', body: patchEntityBody },
      change: (id, kind, body, meta) => changeEntity(deps, id, kind, body, meta),
      delete: {
        summary: 'Delete an entity (its key becomes free)',
        remove: (id, expectedVersion, meta) => deleteEntity(deps, id, expectedVersion, meta),
      },
    }),
  ];
}
