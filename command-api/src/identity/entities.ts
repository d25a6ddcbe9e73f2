import { z } from 'zod';
import { conflict, type CreateEntity, createEntityBody, entityResponse, forbidden, idParam, invalid, patchEntityBody, type Principal, putEntityBody, type RequestMeta, route, type RouteSpec } from '@svc/contracts';
import { canSeeEntity, entityDecider, type EntityState, entityView, type EventStore, type LiveEntity, streams } from '@svc/domain';
import { handleCommand, metadataFor, type CommandDeps } from '../handle-command';
import { claim, readReservation, release } from '../reservations';
import { loadSchema, type LiveSchema } from '../schemas/routes';
import { registeredNamespaces } from './namespaces';

/** One entity per key in a namespace, per tenant and context. */
const keyReservation = (store: EventStore, e: { tenantId: string | null; contextId: string | null }, namespace: string, key: string) =>
  readReservation(store, e.tenantId!, e.contextId!, 'entity-key', namespace, key);
const KEY_HELD = 'An entity with this namespace and key already exists';

/** An `entity` schema of the caller's context; ordinary scoped credentials may use it. */
async function entitySchema(deps: CommandDeps, p: Principal, schemaId: string): Promise<LiveSchema> {
  const schema = await loadSchema(deps.store, p, schemaId).catch(() => {
    throw invalid(`schemaId '${schemaId}' is not a schema of this context`);
  });
  if (!schema.definition.allowedSurfaces.includes('entity')) throw invalid('The schema does not allow the entity surface');
  return schema;
}

const boundDefinition = async (deps: CommandDeps, p: Principal, e: EntityState) => (e.exists && e.schemaId ? (await loadSchema(deps.store, p, e.schemaId).catch(() => undefined))?.definition : undefined);

async function createEntity(deps: CommandDeps, body: CreateEntity, meta: RequestMeta) {
  const p = meta.principal;
  const scope = { tenantId: p.tenantId, contextId: p.contextId };
  // A credential limited to scopes may only create the entities it could then read.
  if (!canSeeEntity(p, { ...scope, namespace: body.namespace, key: body.key })) throw forbidden();
  const schema = body.schemaId ? await entitySchema(deps, p, body.schemaId) : undefined;
  const namespaces = await registeredNamespaces(deps.store, p.tenantId!);
  const entities = entityDecider(deps.sealer);
  const entityId = deps.ids.newId();
  const { state } = await handleCommand(deps, {
    streamId: streams.entity(entityId),
    aggregate: entities,
    metadata: metadataFor(meta),
    fresh: true,
    decide: (s) => ({
      events: entities.decide({ type: 'CreateEntity', entityId, namespace: body.namespace, key: body.key, payload: body.payload, schemaId: body.schemaId, definition: schema?.definition, namespaces }, s),
    }),
    beforeAppend: async () => {
      const r = await keyReservation(deps.store, scope, body.namespace, body.key);
      if (r.holder) throw conflict(KEY_HELD);
      return [claim(r, entityId)];
    },
    onConflict: () => {
      throw conflict(KEY_HELD);
    },
  });
  return entityView(state as LiveEntity, schema?.definition);
}

async function changeEntity(deps: CommandDeps, id: string, kind: 'put' | 'patch', body: Record<string, unknown>, meta: RequestMeta) {
  const p = meta.principal;
  const entities = entityDecider(deps.sealer);
  const { state, prepared: definition } = await handleCommand(deps, {
    streamId: streams.entity(id),
    aggregate: entities,
    metadata: metadataFor(meta),
    prepare: (cur) => boundDefinition(deps, p, cur),
    decide: (s, definition) => ({ events: entities.decide({ type: 'ChangeEntity', actor: p, kind, body, definition }, s) }),
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
    beforeAppend: async ({ state }) => {
      const cur = state as LiveEntity;
      const r = await keyReservation(deps.store, cur, cur.namespace, cur.key);
      return r.holder === id ? [release(r)] : [];
    },
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
      summary: 'Create an identity entity (namespace org, client or registered; key unique per namespace in the context)',
      body: createEntityBody,
      response: entityResponse,
      status: 201,
      write: true,
      handler: ({ body, meta }) => createEntity(deps, body, meta),
    }),
    route({
      method: 'PUT',
      url: '/v1/entities/:id',
      auth: 'data',
      permission: 'entities:u',
      summary: 'Replace an entity payload (namespace, key and schemaId are fixed)',
      params: idParam,
      body: putEntityBody,
      response: entityResponse,
      write: true,
      handler: ({ params, body, meta }) => changeEntity(deps, params.id, 'put', body as Record<string, unknown>, meta),
    }),
    route({
      method: 'PATCH',
      url: '/v1/entities/:id',
      auth: 'data',
      permission: 'entities:u',
      summary: 'Patch an entity payload (RFC 7386)',
      params: idParam,
      body: patchEntityBody,
      response: entityResponse,
      write: true,
      handler: ({ params, body, meta }) => changeEntity(deps, params.id, 'patch', body, meta),
    }),
    route({
      method: 'DELETE',
      url: '/v1/entities/:id',
      auth: 'data',
      permission: 'entities:d',
      summary: 'Delete an entity (its key becomes free)',
      params: idParam,
      query: z.object({ expectedVersion: z.coerce.number().int().optional() }),
      status: 204,
      write: true,
      handler: async ({ params, query, meta }) => {
        await deleteEntity(deps, params.id, query.expectedVersion, meta);
        return null;
      },
    }),
  ];
}
