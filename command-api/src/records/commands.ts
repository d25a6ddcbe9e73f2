import {
  type CreateRecord,
  type DomainEvent,
  InternalError,
  invalid,
  notFound,
  type RequestMeta,
  ServiceError,
} from '@svc/contracts';
import {
  canReach,
  claim,
  type CommandDeps,
  type DomainAppend,
  handleCommand,
  type LiveRecord,
  payloadBytes,
  loadAggregate,
  metadataFor,
  readReservation,
  recordAggregate,
  recordDecider,
  type RecordSchema,
  type RecordState,
  recordView,
  refreshReservation,
  release,
  reservationOf,
  stampOwnership,
  streams,
  uniqueValues,
} from '@svc/domain';
import { loadSchema, resolveSchemaByType, type LiveSchema } from '../schemas/routes';
import { requireFolder } from '../folders/load';
import { assertScopeNamespaces } from '../identity/namespaces';
import { recordWriteAppend } from '../usage/meter';

type Scope = { tenantId: string | null; contextId: string | null; typeName: string };

const extReservation = (deps: CommandDeps, r: Scope, externalId: string) =>
  readReservation(deps.store, r.tenantId!, r.contextId!, 'record-external-id', r.typeName, externalId);
const uniqueReservation = (deps: CommandDeps, r: Scope, field: string, value: string) =>
  readReservation(deps.store, r.tenantId!, r.contextId!, 'record-unique', r.typeName, field, value);

/** A value (externalId or unique lookup value) held by another record; `reachable`: the caller can read that record. */
export class ValueHeldError extends ServiceError {
  constructor(
    message: string,
    readonly reachable: boolean,
  ) {
    super('CONFLICT', message);
  }
}

async function heldBy(
  deps: CommandDeps,
  p: RequestMeta['principal'],
  holderId: string | null,
  message: string,
): Promise<ValueHeldError> {
  const holder = holderId ? await loadRecord(deps, holderId) : { exists: false as const };
  return new ValueHeldError(message, holder.exists && canReach(p, holder));
}

const UNIQUE_HELD = 'A unique lookup value is already held by another record';

export type CreateOutcome =
  | { status: 'created'; record: LiveRecord; schema: LiveSchema }
  | { status: 'existing'; record: LiveRecord; schema: LiveSchema };

async function loadRecord(deps: CommandDeps, id: string): Promise<RecordState> {
  return (await loadAggregate(deps.store, streams.record(id), recordAggregate)).state;
}

const boundTo = (schema: LiveSchema): RecordSchema => ({
  schemaId: schema.id,
  schemaVersion: schema.schemaVersion,
  definition: schema.definition,
});

/**
 * Unique values as reservation parts: sensitive values by their blind index, never in clear (works on the sealed
 * payload too).
 */
function uniqueKeys(def: LiveSchema['definition'], payload: Record<string, unknown>, blind: Record<string, string>) {
  return uniqueValues(def, payload).map((u) => ({
    field: u.field,
    value: blind[u.field] ? `blind:${blind[u.field]}` : u.value,
  }));
}

/** The stored (sealed) payload and the blind index a decision wrote. */
function written(events: DomainEvent[]): { payload: Record<string, unknown>; blind: Record<string, string> } {
  for (const e of events)
    if (e.type === 'RecordCreated' || e.type === 'RecordUpdated')
      return { payload: e.data.payload, blind: e.data.blindIndex ?? {} };
  throw new InternalError('the decision wrote no record content');
}

/** Resolves the schema of a create: by id, by typeName (own variant, else the shared base), or both agreeing. */
async function schemaForCreate(
  deps: CommandDeps,
  body: CreateRecord,
  meta: RequestMeta,
  owner: { userId: string | null; scopes?: string[] },
  checks?: DomainAppend[],
): Promise<LiveSchema> {
  const p = meta.principal;
  if (!body.schemaId && !body.typeName) throw invalid('typeName or schemaId is required');
  const schema = body.schemaId
    ? await loadSchema(deps.store, p, body.schemaId)
    : await resolveSchemaByType(deps.store, p, body.typeName!, owner, checks);
  if (body.typeName && schema.definition.typeName !== body.typeName)
    throw invalid('typeName and schemaId do not agree');
  if (schema.definition.active === false) throw invalid('The schema is inactive: new records are rejected');
  if (!schema.definition.allowedSurfaces.includes('record'))
    throw invalid('The schema does not allow the record surface');
  return schema;
}

/** `dryRun`: every check of the write (a held value throws ValueHeldError), nothing written. */
export interface WriteOptions {
  dryRun?: boolean;
}

/**
 * Creates a record. `externalId` makes the create idempotent: the same id sent
 * again (by a caller that can read the holder) returns the existing record.
 * Unique lookup values and the externalId are claimed atomically with the record.
 */
export async function createRecord(
  deps: CommandDeps,
  body: CreateRecord,
  meta: RequestMeta,
  opts: WriteOptions = {},
): Promise<CreateOutcome> {
  try {
    return await createRecordOnce(deps, body, meta, opts, true);
  } catch (e) {
    // The schema was read from a cache behind the log: once more, read from the log.
    if (!(e instanceof StaleSchemaRead)) throw e;
    return createRecordOnce(deps, body, meta, opts, false);
  }
}

/** A check of a cached schema read failed at append (the typeName's reservation or the schema moved). */
class StaleSchemaRead extends Error {}

async function createRecordOnce(
  deps: CommandDeps,
  body: CreateRecord,
  meta: RequestMeta,
  opts: WriteOptions,
  cached: boolean,
): Promise<CreateOutcome> {
  const p = meta.principal;
  const own = stampOwnership(p, { userId: body.userId, scopes: body.scopes });
  await assertScopeNamespaces(deps.store, p.tenantId!, body.scopes);
  // A typeName resolved through the store's cache: the streams read are checked by the append (readStreamChecked).
  const checks: DomainAppend[] = [];
  const schema = await schemaForCreate(deps, body, meta, own, cached ? checks : undefined);
  // folders: a folderId must name a live folder of this tenant and context (else 404).
  if (body.folderId) await requireFolder(deps.store, p, body.folderId);
  const def = schema.definition;
  const scope: Scope = { tenantId: p.tenantId, contextId: p.contextId, typeName: def.typeName };
  const decider = recordDecider(deps.sealer);
  const recordId = deps.ids.newId();
  const md = metadataFor(meta);
  const out = await handleCommand(deps, {
    streamId: streams.record(recordId),
    aggregate: decider,
    metadata: md,
    fresh: true,
    dryRun: opts.dryRun,
    prepare: async () => {
      const ext = body.externalId ? await extReservation(deps, scope, body.externalId) : undefined;
      return { ext, holder: ext?.holder ? await loadRecord(deps, ext.holder) : undefined };
    },
    decide: (state, { holder }) => {
      if (holder) {
        if (holder.exists && canReach(p, holder)) return { events: [], answer: holder };
        throw new ValueHeldError('externalId is already used by another record', false);
      }
      const command = {
        type: 'CreateRecord' as const,
        recordId,
        tenantId: p.tenantId!,
        contextId: p.contextId!,
        schema: boundTo(schema),
        payload: body.payload ?? {},
        status: body.status,
        folderId: body.folderId,
        userId: own.userId,
        scopes: own.scopes ?? [],
        externalId: body.externalId,
        indexMode: body.indexMode,
      };
      return { events: decider.decide(command, state) };
    },
    beforeAppend: async ({ events }, { ext }) => {
      const { payload, blind } = written(events);
      const uniques = await Promise.all(
        uniqueKeys(def, payload, blind).map((u) => uniqueReservation(deps, scope, u.field, u.value)),
      );
      const taken = uniques.find((u) => u.holder);
      if (taken) throw await heldBy(deps, p, taken.holder, UNIQUE_HELD);
      return [
        ...uniques.map((u) => claim(u, recordId)),
        ...(ext ? [claim(ext, recordId)] : []),
        // Metering: the write's charge is appended with it (atomic: a refused write charges nothing).
        ...recordWriteAppend(deps.meter, md, {
          definition: def,
          payload,
          blind,
          externalId: body.externalId,
          userId: own.userId,
          scopes: own.scopes,
        }),
        ...checks,
      ];
    },
    onConflict: async (on, { ext }) => {
      if (checks.some((c) => c.streamId === on.streamId)) throw new StaleSchemaRead();
      // a concurrent create with this externalId won: answer with it
      if (ext && on.streamId === ext.streamId) return 'retry' as const;
      throw await heldBy(deps, p, (await refreshReservation(deps.store, reservationOf(on))).holder, UNIQUE_HELD);
    },
  });
  return out.answer
    ? { status: 'existing', record: out.answer, schema }
    : { status: 'created', record: out.state as LiveRecord, schema };
}

/** PUT / PATCH. The unique values the change gives up are released, those it takes are claimed, in the same append. */
export async function changeRecord(
  deps: CommandDeps,
  id: string,
  kind: 'put' | 'patch',
  body: Record<string, unknown>,
  meta: RequestMeta,
  opts: WriteOptions = {},
) {
  const p = meta.principal;
  const decider = recordDecider(deps.sealer);
  const md = metadataFor(meta);
  const out = await handleCommand(deps, {
    streamId: streams.record(id),
    aggregate: decider,
    metadata: md,
    dryRun: opts.dryRun,
    // The decision needs the schema of the record as it is now: re-read on every attempt.
    prepare: async (stored) => {
      if (!stored.exists || !canReach(p, stored)) throw notFound();
      const schema = await loadSchema(deps.store, p, stored.schemaId).catch(() => undefined);
      if (!schema) throw invalid('The record schema no longer exists');
      const own =
        'userId' in body || 'scopes' in body
          ? stampOwnership(p, {
              userId: body.userId as string | undefined,
              scopes: body.scopes as string[] | undefined,
            })
          : undefined;
      await assertScopeNamespaces(deps.store, p.tenantId!, body.scopes);
      return { schema, own };
    },
    decide: (state, { schema, own }) => ({
      events: decider.decide(
        {
          type: 'ChangeRecord',
          kind,
          body,
          schema: boundTo(schema),
          userId: 'userId' in body ? own?.userId : undefined,
          scopes: 'scopes' in body ? ((body.scopes as string[]) ?? []) : undefined,
        },
        state,
      ),
    }),
    beforeAppend: async ({ state, next, events }, { schema }) => {
      const cur = state as LiveRecord;
      const after = next as LiveRecord;
      const { blind: blindAfter } = written(events);
      // folders: moving the record to another folder needs that folder to exist in this tenant and context (else 404).
      if (typeof body.folderId === 'string' && body.folderId !== cur.folderId)
        await requireFolder(deps.store, p, body.folderId);
      const def = schema.definition;
      const scope: Scope = { tenantId: cur.tenantId, contextId: cur.contextId, typeName: cur.typeName };
      const plainBefore = deps.sealer.unseal(cur.payload);
      const blindBefore = deps.sealer.blind([cur.tenantId!, cur.contextId!, cur.typeName], def, plainBefore);
      const before = new Map(uniqueKeys(def, plainBefore, blindBefore).map((u) => [`${u.field}\u0000${u.value}`, u]));
      const kept = new Map(uniqueKeys(def, after.payload, blindAfter).map((u) => [`${u.field}\u0000${u.value}`, u]));
      const toRelease = await Promise.all(
        [...before].filter(([k]) => !kept.has(k)).map(([, u]) => uniqueReservation(deps, scope, u.field, u.value)),
      );
      const toClaim = await Promise.all(
        [...kept].filter(([k]) => !before.has(k)).map(([, u]) => uniqueReservation(deps, scope, u.field, u.value)),
      );
      const taken = toClaim.find((r) => r.holder && r.holder !== id);
      if (taken) throw await heldBy(deps, p, taken.holder, UNIQUE_HELD);
      return [
        ...toRelease.filter((r) => r.holder === id).map(release),
        ...toClaim.filter((r) => !r.holder).map((r) => claim(r, id)),
        ...recordWriteAppend(deps.meter, md, {
          definition: def,
          payload: after.payload,
          blind: blindAfter,
          externalId: after.externalId,
          userId: after.userId,
          scopes: after.scopes,
        }),
      ];
    },
    onConflict: () => {
      throw new ValueHeldError(UNIQUE_HELD, false);
    },
  });
  const updated = out.state as LiveRecord;
  // payloadBytes counts the stored form (sealed values), as the create's answer and every read do.
  return recordView({ ...updated, payload: deps.sealer.unseal(updated.payload) }, out.prepared.schema.definition, {
    full: true,
    bytes: payloadBytes(updated.payload),
  });
}

/** Deletes a record (hard delete plus tombstone) and releases the values it held. */
export async function deleteRecord(
  deps: CommandDeps,
  id: string,
  expectedVersion: number | undefined,
  meta: RequestMeta,
): Promise<void> {
  const p = meta.principal;
  const decider = recordDecider(deps.sealer);
  await handleCommand(deps, {
    streamId: streams.record(id),
    aggregate: decider,
    metadata: metadataFor(meta),
    prepare: async (cur) => {
      if (!cur.exists || !canReach(p, cur)) throw notFound();
    },
    decide: (state) => ({ events: decider.decide({ type: 'DeleteRecord', expectedVersion }, state) }),
    beforeAppend: async ({ state }) => {
      const cur = state as LiveRecord;
      const scope: Scope = { tenantId: cur.tenantId, contextId: cur.contextId, typeName: cur.typeName };
      const schema = await loadSchema(deps.store, p, cur.schemaId).catch(() => undefined);
      const plain = deps.sealer.unseal(cur.payload);
      const held = await Promise.all([
        ...(cur.externalId ? [extReservation(deps, scope, cur.externalId)] : []),
        ...(schema
          ? uniqueKeys(
              schema.definition,
              plain,
              deps.sealer.blind([cur.tenantId!, cur.contextId!, cur.typeName], schema.definition, plain),
            ).map((u) => uniqueReservation(deps, scope, u.field, u.value))
          : []),
      ]);
      return held.filter((r) => r.holder === id).map(release);
    },
    onConflict: () => 'retry',
  });
}
