import {
  createSchemaBody,
  idParam,
  notFound,
  type Principal,
  type RequestMeta,
  route,
  type RouteSpec,
  type SchemaDefinition,
  schemaResponse,
  updateSchemaBody,
} from '@svc/contracts';
import {
  canSeeSchema,
  claim,
  type CommandDeps,
  type DomainAppend,
  type EventStore,
  handleCommand,
  loadAggregate,
  metadataFor,
  ownerKeyOf,
  readReservation,
  readReservationChecked,
  readStreamChecked,
  release,
  schemaAggregate,
  schemaDecider,
  type SchemaState,
  schemaView,
  stampOwnership,
  streams,
} from '@svc/domain';
import { assertScopeNamespaces, registeredNamespaces } from '../identity/namespaces';
import { schemaTriggerGuard } from '../triggers/schema-guard';

export type LiveSchema = Extract<SchemaState, { exists: true }>;

/** A schema the principal may use: the shared base of its context, or a variant inside its data scope. */
export async function loadSchema(store: EventStore, p: Principal, schemaId: string): Promise<LiveSchema> {
  const { state } = await loadAggregate(store, streams.schema(schemaId), schemaAggregate);
  return liveSchema(p, state);
}

function liveSchema(p: Principal, state: SchemaState): LiveSchema {
  if (!state.exists || !canSeeSchema(p, { tenantId: state.tenantId, contextId: state.contextId, ...state.definition }))
    throw notFound();
  return state;
}

const typeNameReservation = (store: EventStore, p: Principal, typeName: string, ownerKey: string) =>
  readReservation(store, p.tenantId!, p.contextId!, 'schema', typeName, ownerKey);

/**
 * With only `typeName`: the caller's own `basedOn` variant if it exists, else the shared base. With `checks`, the
 * streams are read through the store's cache (readStreamChecked) and the checks of what was read are added to it:
 * the caller appends them with the write the schema decides.
 */
export async function resolveSchemaByType(
  store: EventStore,
  p: Principal,
  typeName: string,
  owner: { userId: string | null; scopes?: string[] },
  checks?: DomainAppend[],
): Promise<LiveSchema> {
  const own = ownerKeyOf({ userId: owner.userId ?? undefined, scopes: owner.scopes });
  for (const key of own ? [own, ''] : ['']) {
    const r = checks
      ? await readReservationChecked(store, checks, p.tenantId!, p.contextId!, 'schema', typeName, key)
      : await typeNameReservation(store, p, typeName, key);
    if (!r.holder) continue;
    if (!checks) return loadSchema(store, p, r.holder);
    const events = await readStreamChecked(store, streams.schema(r.holder), checks);
    return liveSchema(
      p,
      events.reduce((s, e) => schemaAggregate.evolve(s, e, e.metadata), schemaAggregate.initialState()),
    );
  }
  throw notFound();
}

/**
 * Creates a schema, idempotent by typeName within the caller's ownership scope:
 * the typeName is claimed atomically with the schema; a repeat (or the loser of
 * a race) gets the schema that holds it.
 */
async function createSchema(
  deps: CommandDeps,
  body: SchemaDefinition,
  meta: RequestMeta,
): Promise<{ created: boolean; schema: LiveSchema }> {
  const p = meta.principal;
  const own = stampOwnership(p, { userId: body.userId, scopes: body.scopes });
  await assertScopeNamespaces(deps.store, p.tenantId!, body.scopes);
  const definition: SchemaDefinition = {
    ...body,
    ...(own.userId ? { userId: own.userId } : {}),
    ...(own.scopes ? { scopes: own.scopes } : {}),
  };
  const namespaces = await registeredNamespaces(deps.store, p.tenantId!);
  const ownerKey = ownerKeyOf(definition);
  const schemaId = deps.ids.newId();
  const out = await handleCommand(deps, {
    streamId: streams.schema(schemaId),
    aggregate: schemaDecider,
    metadata: metadataFor(meta),
    fresh: true,
    prepare: async () => {
      const mine = await typeNameReservation(deps.store, p, definition.typeName, ownerKey);
      const base =
        !mine.holder && ownerKey ? await typeNameReservation(deps.store, p, definition.typeName, '') : undefined;
      return { mine, base, holder: mine.holder ? await loadSchema(deps.store, p, mine.holder) : undefined };
    },
    decide: (state, { mine, base, holder }) => {
      const events = schemaDecider.decide(
        {
          type: 'CreateSchema',
          schemaId,
          definition,
          byRoot: p.kind === 'root',
          namespaces,
          heldBy: mine.holder,
          sharedBase: base?.holder ?? null,
        },
        state,
      );
      return holder ? { events, answer: holder } : { events, also: [claim(mine, schemaId)] };
    },
    onConflict: () => 'retry', // a concurrent create took the typeName: the next attempt answers with it
  });
  return out.answer ? { created: false, schema: out.answer } : { created: true, schema: out.state as LiveSchema };
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
      statuses: [200],
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
        const { state } = await handleCommand(deps, {
          streamId: streams.schema(params.id),
          aggregate: schemaDecider,
          metadata: metadataFor(meta),
          decide: (s) => {
            if (!s.exists || !canSeeSchema(p, { tenantId: s.tenantId, contextId: s.contextId, ...s.definition }))
              throw notFound();
            const events = schemaDecider.decide(
              { type: 'UpdateSchema', body, byRoot: p.kind === 'root', namespaces },
              s,
            );
            for (const e of events) if (e.type === 'SchemaUpdated') triggerGuard.checkUpdate(e.data.definition);
            return { events };
          },
        });
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
        // 409 while trigger rules fire off the schema (docs/triggers.md)
        (await schemaTriggerGuard(deps.store, params.id)).checkDelete();
        await handleCommand(deps, {
          streamId: streams.schema(params.id),
          aggregate: schemaDecider,
          metadata: metadataFor(meta),
          decide: (st) => ({ events: schemaDecider.decide({ type: 'DeleteSchema' }, st) }),
          // The typeName is free again: released with the delete (when this schema still holds it).
          beforeAppend: async () => {
            const r = await typeNameReservation(deps.store, p, s.definition.typeName, ownerKeyOf(s.definition));
            return r.holder === params.id ? [release(r)] : [];
          },
          onConflict: () => 'retry',
        });
        return null;
      },
    }),
  ];
}
