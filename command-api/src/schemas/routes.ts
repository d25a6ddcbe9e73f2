import { createSchemaBody, idParam, InternalError, invalid, notFound, type Principal, type RequestMeta, route, type RouteSpec, type SchemaDefinition, schemaResponse, updateSchemaBody } from '@svc/contracts';
import { canSeeSchema, decideSchemaDelete, decideSchemaUpdate, type EventStore, ownerKeyOf, schemaAggregate, type SchemaState, schemaView, stampOwnership, streams, validateDefinition, WrongExpectedRevisionError } from '@svc/domain';
import { commit, handleCommand, loadAggregate, metadataFor, type CommandDeps } from '../handle-command';
import { claim, readReservation, release } from '../reservations';
import { registeredNamespaces } from '../identity/namespaces';
import { schemaTriggerGuard } from '../triggers/schema-guard';

export type LiveSchema = Extract<SchemaState, { exists: true }>;

/** A schema the principal may use: the shared base of its context, or a variant inside its data scope. */
export async function loadSchema(store: EventStore, p: Principal, schemaId: string): Promise<LiveSchema> {
  const { state } = await loadAggregate(store, streams.schema(schemaId), schemaAggregate);
  if (!state.exists || !canSeeSchema(p, { tenantId: state.tenantId, contextId: state.contextId, ...state.definition })) throw notFound();
  return state;
}

const typeNameReservation = (store: EventStore, p: Principal, typeName: string, ownerKey: string) =>
  readReservation(store, p.tenantId!, p.contextId!, 'schema', typeName, ownerKey);

/** With only `typeName`: the caller's own `basedOn` variant if it exists, else the shared base. */
export async function resolveSchemaByType(store: EventStore, p: Principal, typeName: string, owner: { userId: string | null; scopes?: string[] }): Promise<LiveSchema> {
  const own = ownerKeyOf({ userId: owner.userId ?? undefined, scopes: owner.scopes });
  for (const key of own ? [own, ''] : ['']) {
    const r = await typeNameReservation(store, p, typeName, key);
    if (r.holder) return loadSchema(store, p, r.holder);
  }
  throw notFound();
}

async function createSchema(deps: CommandDeps, body: SchemaDefinition, meta: RequestMeta): Promise<{ created: boolean; schema: LiveSchema }> {
  const p = meta.principal;
  const own = stampOwnership(p, { userId: body.userId, scopes: body.scopes });
  const def: SchemaDefinition = { ...body, ...(own.userId ? { userId: own.userId } : {}), ...(own.scopes ? { scopes: own.scopes } : {}) };
  if (def.allowedSurfaces.includes('user') && p.kind !== 'root') throw invalid('A user schema needs the root key');
  validateDefinition(def, await registeredNamespaces(deps.store, p.tenantId!));
  const ownerKey = ownerKeyOf(def);
  for (let attempt = 0; attempt < 3; attempt++) {
    const mine = await typeNameReservation(deps.store, p, def.typeName, ownerKey);
    if (mine.holder) return { created: false, schema: await loadSchema(deps.store, p, mine.holder) };
    if (ownerKey) {
      const base = await typeNameReservation(deps.store, p, def.typeName, '');
      if (!base.holder) throw invalid(`No shared base schema exists for typeName '${def.typeName}'; it must be created by an unscoped credential first`);
      if (def.basedOn !== base.holder) throw invalid(`typeName '${def.typeName}' is already used; set basedOn to the shared base schema ${base.holder}`);
    } else if (def.basedOn) {
      throw invalid('The shared base schema of a typeName cannot set basedOn');
    }
    const schemaId = deps.ids.newId();
    const md = metadataFor(meta);
    try {
      await commit(deps, md, [
        { streamId: streams.schema(schemaId), events: [{ type: 'SchemaCreated', data: { schemaId, typeName: def.typeName, definition: def } }], expectedRevision: 'no_stream' },
        claim(mine, schemaId),
      ]);
      return { created: true, schema: await loadSchema(deps.store, p, schemaId) };
    } catch (e) {
      if (e instanceof WrongExpectedRevisionError && e.streamId === mine.streamId) continue; // a concurrent create won: return it
      throw e;
    }
  }
  throw new InternalError('schema create did not settle');
}

export function schemaCommandRoutes(deps: CommandDeps): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: '/v1/schemas',
      operationId: 'createSchema',
      auth: 'data',
      permission: 'schemas:c',
      summary: 'Create a schema (idempotent by typeName within the caller ownership scope)',
      body: createSchemaBody,
      response: schemaResponse,
      status: 201,
      write: true,
      handler: async ({ body, meta, reply }) => {
        const { created, schema } = await createSchema(deps, body, meta);
        if (!created) reply.status(200);
        return schemaView(schema);
      },
    }),
    route({
      method: 'PUT',
      url: '/v1/schemas/:id',
      operationId: 'updateSchema',
      auth: 'data',
      permission: 'schemas:u',
      summary: 'Replace a schema (schemaVersion +1; typeName immutable)',
      params: idParam,
      body: updateSchemaBody,
      response: schemaResponse,
      write: true,
      handler: async ({ params, body, meta }) => {
        const p = meta.principal;
        const namespaces = await registeredNamespaces(deps.store, p.tenantId!);
        // Trigger rules (docs/triggers.md): 409 for an update that would break a rule firing off this schema.
        const triggerGuard = await schemaTriggerGuard(deps.store, params.id);
        const { state } = await handleCommand(
          deps,
          streams.schema(params.id),
          schemaAggregate,
          (s) => {
            if (!s.exists || !canSeeSchema(p, { tenantId: s.tenantId, contextId: s.contextId, ...s.definition })) throw notFound();
            const events = decideSchemaUpdate(s, body, namespaces);
            for (const e of events) if (e.type === 'SchemaUpdated') triggerGuard.checkUpdate(e.data.definition);
            return { events };
          },
          metadataFor(meta),
        );
        return schemaView(state as LiveSchema);
      },
    }),
    route({
      method: 'DELETE',
      url: '/v1/schemas/:id',
      operationId: 'deleteSchema',
      auth: 'data',
      permission: 'schemas:d',
      summary: 'Delete a schema; its typeName may then be created again',
      params: idParam,
      status: 204,
      errors: [409], // while trigger rules fire off it (docs/triggers.md)
      write: true,
      handler: async ({ params, meta }) => {
        const p = meta.principal;
        const s = await loadSchema(deps.store, p, params.id);
        (await schemaTriggerGuard(deps.store, params.id)).checkDelete(); // 409 while trigger rules fire off the schema (docs/triggers.md)
        const r = await typeNameReservation(deps.store, p, s.definition.typeName, ownerKeyOf(s.definition));
        await handleCommand(deps, streams.schema(params.id), schemaAggregate, (st) => ({ events: decideSchemaDelete(st), also: r.holder === params.id ? [release(r)] : [] }), metadataFor(meta));
        return null;
      },
    }),
  ];
}
