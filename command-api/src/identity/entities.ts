import { contended } from '../contention';
import { z } from 'zod';
import { conflict, type CreateEntity, createEntityBody, entityResponse, forbidden, idParam, invalid, notFound, patchEntityBody, type Principal, putEntityBody, type RequestMeta, route, type RouteSpec } from '@svc/contracts';
import { canSeeEntity, checkEntityPatch, decideChangeEntity, decideCreateEntity, decideDeleteEntity, entityAggregate, type EntityState, entityView, type EventStore, type LiveEntity, streams, WrongExpectedRevisionError } from '@svc/domain';
import { commit, loadAggregate, metadataFor, type CommandDeps } from '../handle-command';
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

const boundDefinition = async (deps: CommandDeps, p: Principal, e: LiveEntity) => (e.schemaId ? (await loadSchema(deps.store, p, e.schemaId).catch(() => undefined))?.definition : undefined);

async function createEntity(deps: CommandDeps, body: CreateEntity, meta: RequestMeta) {
  const p = meta.principal;
  const scope = { tenantId: p.tenantId, contextId: p.contextId };
  // A credential limited to scopes may only create the entities it could then read.
  if (!canSeeEntity(p, { ...scope, namespace: body.namespace, key: body.key })) throw forbidden();
  const schema = body.schemaId ? await entitySchema(deps, p, body.schemaId) : undefined;
  const namespaces = await registeredNamespaces(deps.store, p.tenantId!);
  const entityId = deps.ids.newId();
  const events = deps.sealer.sealEvents(schema?.definition, decideCreateEntity({ entityId, namespace: body.namespace, key: body.key, payload: body.payload, schemaId: body.schemaId, definition: schema?.definition, namespaces }, { exists: false }));
  const r = await keyReservation(deps.store, scope, body.namespace, body.key);
  if (r.holder) throw conflict(KEY_HELD);
  const md = metadataFor(meta);
  try {
    await commit(deps, md, [{ streamId: streams.entity(entityId), events, expectedRevision: 'no_stream' }, claim(r, entityId)]);
  } catch (e) {
    if (e instanceof WrongExpectedRevisionError && e.streamId === r.streamId) throw conflict(KEY_HELD);
    throw e;
  }
  return entityView(events.reduce<EntityState>((s, e) => entityAggregate.evolve(s, e, md), { exists: false }) as LiveEntity, schema?.definition);
}

async function changeEntity(deps: CommandDeps, id: string, kind: 'put' | 'patch', body: Record<string, unknown>, meta: RequestMeta) {
  const p = meta.principal;
  for await (const _attempt of contended()) {
    const { state: stored, revision } = await loadAggregate(deps.store, streams.entity(id), entityAggregate);
    if (!stored.exists || !canSeeEntity(p, stored)) throw notFound();
    const cur: LiveEntity = { ...stored, payload: deps.sealer.unseal(stored.payload ?? {}) };
    if (kind === 'patch') checkEntityPatch(body);
    const definition = await boundDefinition(deps, p, cur);
    const events = deps.sealer.sealEvents(definition, decideChangeEntity({ kind, body, definition }, cur));
    const md = metadataFor(meta);
    try {
      await commit(deps, md, [{ streamId: streams.entity(id), events, expectedRevision: revision }]);
      return entityView(events.reduce<EntityState>((s, e) => entityAggregate.evolve(s, e, md), cur) as LiveEntity, definition);
    } catch (e) {
      if (e instanceof WrongExpectedRevisionError) continue;
      throw e;
    }
  }
  throw conflict('The entity changed concurrently; retry');
}

async function deleteEntity(deps: CommandDeps, id: string, expectedVersion: number | undefined, meta: RequestMeta) {
  const p = meta.principal;
  for await (const _attempt of contended()) {
    const { state: cur, revision } = await loadAggregate(deps.store, streams.entity(id), entityAggregate);
    if (!cur.exists || !canSeeEntity(p, cur)) throw notFound();
    const events = decideDeleteEntity(cur, expectedVersion);
    const r = await keyReservation(deps.store, cur, cur.namespace, cur.key);
    try {
      await commit(deps, metadataFor(meta), [{ streamId: streams.entity(id), events, expectedRevision: revision }, ...(r.holder === id ? [release(r)] : [])]);
      return;
    } catch (e) {
      if (e instanceof WrongExpectedRevisionError) continue;
      throw e;
    }
  }
  throw conflict('The entity changed concurrently; retry');
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
