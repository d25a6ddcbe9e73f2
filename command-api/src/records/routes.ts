import { contended } from '../contention';
import { conflict, type CreateRecord, createRecordBody, type DomainEvent, idParam, invalid, notFound, patchRecordBody, putRecordBody, recordResponse, type RequestMeta, route, type RouteSpec, ServiceError } from '@svc/contracts';
import { canReach, decideChange, decideCreate, decideDelete, type LiveRecord, recordAggregate, type RecordState, recordView, stampOwnership, streams, uniqueValues, WrongExpectedRevisionError } from '@svc/domain';
import { z } from 'zod';
import { commit, loadAggregate, metadataFor, type CommandDeps, type DomainAppend } from '../handle-command';
import { claim, readReservation, refreshReservation, release, type Reservation } from '../reservations';
import type { PayloadSealer } from './sealing';
import { loadSchema, resolveSchemaByType, type LiveSchema } from '../schemas/routes';
import { requireFolder } from '../folders/load';
import { recordWriteAppend } from '../usage/meter';

const extReservation = (deps: CommandDeps, r: { tenantId: string | null; contextId: string | null; typeName: string }, externalId: string) =>
  readReservation(deps.store, r.tenantId!, r.contextId!, 'record-external-id', r.typeName, externalId);
const uniqueReservation = (deps: CommandDeps, r: { tenantId: string | null; contextId: string | null; typeName: string }, field: string, value: string) =>
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

async function heldBy(deps: CommandDeps, p: RequestMeta['principal'], holderId: string | null, message: string): Promise<ValueHeldError> {
  const holder = holderId ? await loadRecord(deps, holderId) : { exists: false as const };
  return new ValueHeldError(message, holder.exists && canReach(p, holder));
}

const UNIQUE_HELD = 'A unique lookup value is already held by another record';

export type CreateOutcome = { status: 'created'; record: LiveRecord; schema: LiveSchema } | { status: 'existing'; record: LiveRecord; schema: LiveSchema };

async function loadRecord(deps: CommandDeps, id: string): Promise<RecordState> {
  return (await loadAggregate(deps.store, streams.record(id), recordAggregate)).state;
}

/** Resolves the schema of a create: by id, by typeName (own variant, else the shared base), or both agreeing. */
async function schemaForCreate(deps: CommandDeps, body: CreateRecord, meta: RequestMeta, owner: { userId: string | null; scopes?: string[] }): Promise<LiveSchema> {
  const p = meta.principal;
  if (!body.schemaId && !body.typeName) throw invalid('typeName or schemaId is required');
  const schema = body.schemaId ? await loadSchema(deps.store, p, body.schemaId) : await resolveSchemaByType(deps.store, p, body.typeName!, owner);
  if (body.typeName && schema.definition.typeName !== body.typeName) throw invalid('typeName and schemaId do not agree');
  if (schema.definition.active === false) throw invalid('The schema is inactive: new records are rejected');
  if (!schema.definition.allowedSurfaces.includes('record')) throw invalid('The schema does not allow the record surface');
  return schema;
}

/**
 * Creates a record. `externalId` makes the create idempotent: the same id sent
 * again (by a caller that can read the holder) returns the existing record.
 * Unique lookup values and the externalId are claimed atomically with the record.
 */
/** Unique values as reservation parts: sensitive values by their blind index, never in clear. */
function uniqueKeys(def: LiveSchema['definition'], payload: Record<string, unknown>, blind: Record<string, string>) {
  return uniqueValues(def, payload).map((u) => ({ field: u.field, value: blind[u.field] ? `blind:${blind[u.field]}` : u.value }));
}

/** Seals sensitive values and adds their blind index to RecordCreated / RecordUpdated. */
function sealEvents(sealer: PayloadSealer, def: LiveSchema['definition'], scope: [string, string, string], events: DomainEvent[], blind: Record<string, string>): DomainEvent[] {
  return events.map((e) =>
    e.type === 'RecordCreated' || e.type === 'RecordUpdated'
      ? ({ ...e, data: { ...e.data, payload: sealer.seal(def, e.data.payload), ...(Object.keys(blind).length ? { blindIndex: blind } : {}) } } as DomainEvent)
      : e,
  );
}

export async function createRecord(deps: CommandDeps, body: CreateRecord, meta: RequestMeta): Promise<CreateOutcome> {
  const p = meta.principal;
  const own = stampOwnership(p, { userId: body.userId, scopes: body.scopes });
  const schema = await schemaForCreate(deps, body, meta, own);
  // folders: a folderId must name a live folder of this tenant and context (else 404).
  if (body.folderId) await requireFolder(deps.store, p, body.folderId);
  const def = schema.definition;
  const payload = body.payload ?? {};
  const scope = { tenantId: p.tenantId, contextId: p.contextId, typeName: def.typeName };
  for (let attempt = 0; attempt < 5; attempt++) {
    let ext: Reservation | undefined;
    if (body.externalId) {
      ext = await extReservation(deps, scope, body.externalId);
      if (ext.holder) {
        const existing = await loadRecord(deps, ext.holder);
        if (existing.exists && canReach(p, existing)) return { status: 'existing', record: existing, schema };
        throw new ValueHeldError('externalId is already used by another record', false);
      }
    }
    const recordId = deps.ids.newId();
    const events = decideCreate(
      { recordId, schemaId: schema.id, schemaVersion: schema.schemaVersion, definition: def, payload, status: body.status, folderId: body.folderId, userId: own.userId, scopes: own.scopes ?? [], externalId: body.externalId, indexMode: body.indexMode },
      { exists: false },
    );
    const blind = deps.sealer.blind([p.tenantId!, p.contextId!, def.typeName], def, payload);
    const uniques = await Promise.all(uniqueKeys(def, payload, blind).map((u) => uniqueReservation(deps, scope, u.field, u.value)));
    const taken = uniques.find((u) => u.holder);
    if (taken) throw await heldBy(deps, p, taken.holder, UNIQUE_HELD);
    const md = metadataFor(meta);
    const sealed = sealEvents(deps.sealer, def, [p.tenantId!, p.contextId!, def.typeName], events, blind);
    const appends: DomainAppend[] = [{ streamId: streams.record(recordId), events: sealed, expectedRevision: 'no_stream' }, ...uniques.map((u) => claim(u, recordId))];
    if (ext) appends.push(claim(ext, recordId));
    // Metering: the write's charge is appended with it (atomic: a refused write charges nothing).
    appends.push(...recordWriteAppend(deps.meter, md, { definition: def, payload, blind, externalId: body.externalId, userId: own.userId, scopes: own.scopes }));
    try {
      await commit(deps, md, appends);
      const record = sealed.reduce((s, e) => recordAggregate.evolve(s, e, md), { exists: false } as RecordState) as LiveRecord;
      return { status: 'created', record, schema };
    } catch (e) {
      if (!(e instanceof WrongExpectedRevisionError)) throw e;
      if (ext && e.streamId === ext.streamId) continue; // a concurrent create with this externalId won: answer with it
      const raced = uniques.find((u) => u.streamId === e.streamId);
      if (raced) throw await heldBy(deps, p, (await refreshReservation(deps.store, raced)).holder, UNIQUE_HELD);
      throw e;
    }
  }
  throw conflict('The record could not be created because of concurrent writes; retry');
}

export async function changeRecord(deps: CommandDeps, id: string, kind: 'put' | 'patch', body: Record<string, unknown>, meta: RequestMeta) {
  const p = meta.principal;
  let schema: LiveSchema | undefined;
  // The decision needs the schema (async); load state and schema, decide, then append with the revision seen.
  for await (const _attempt of contended()) {
    const { state: stored, revision } = await loadAggregate(deps.store, streams.record(id), recordAggregate);
    if (!stored.exists || !canReach(p, stored)) throw notFound();
    const cur: LiveRecord = { ...stored, payload: deps.sealer.unseal(stored.payload) };
    schema = await loadSchema(deps.store, p, cur.schemaId).catch(() => undefined);
    if (!schema) throw invalid('The record schema no longer exists');
    const own =
      'userId' in body || 'scopes' in body
        ? stampOwnership(p, { userId: body.userId as string | undefined, scopes: body.scopes as string[] | undefined })
        : { userId: undefined, scopes: undefined };
    if (Array.isArray(body.scopes) && body.scopes.length > 2) throw invalid('scopes: at most 2');
    const events = decideChange(
      { kind, body, definition: schema.definition, schemaVersion: schema.schemaVersion, userId: 'userId' in body ? own.userId : undefined, scopes: 'scopes' in body ? ((body.scopes as string[]) ?? []) : undefined },
      cur,
    );
    // folders: moving the record to another folder needs that folder to exist in this tenant and context (else 404).
    if (typeof body.folderId === 'string' && body.folderId !== cur.folderId) await requireFolder(deps.store, p, body.folderId);
    const next = events.reduce<RecordState>((s, e) => recordAggregate.evolve(s, e), cur) as LiveRecord;
    const scope = { tenantId: cur.tenantId, contextId: cur.contextId, typeName: cur.typeName };
    const tcs: [string, string, string] = [cur.tenantId!, cur.contextId!, cur.typeName];
    const blindBefore = deps.sealer.blind(tcs, schema.definition, cur.payload);
    const blindAfter = deps.sealer.blind(tcs, schema.definition, next.payload);
    const before = new Map(uniqueKeys(schema.definition, cur.payload, blindBefore).map((u) => [`${u.field}\u0000${u.value}`, u]));
    const after = new Map(uniqueKeys(schema.definition, next.payload, blindAfter).map((u) => [`${u.field}\u0000${u.value}`, u]));
    const toRelease = await Promise.all([...before].filter(([k]) => !after.has(k)).map(([, u]) => uniqueReservation(deps, scope, u.field, u.value)));
    const toClaim = await Promise.all([...after].filter(([k]) => !before.has(k)).map(([, u]) => uniqueReservation(deps, scope, u.field, u.value)));
    const taken = toClaim.find((r) => r.holder && r.holder !== id);
    if (taken) throw await heldBy(deps, p, taken.holder, UNIQUE_HELD);
    const md = metadataFor(meta);
    try {
      await commit(deps, md, [
        { streamId: streams.record(id), events: sealEvents(deps.sealer, schema.definition, tcs, events, blindAfter), expectedRevision: revision },
        ...toRelease.filter((r) => r.holder === id).map(release),
        ...toClaim.filter((r) => !r.holder).map((r) => claim(r, id)),
        ...(events.length ? recordWriteAppend(deps.meter, md, { definition: schema.definition, payload: next.payload, blind: blindAfter, externalId: next.externalId, userId: next.userId, scopes: next.scopes }) : []),
      ]);
      const updated = events.reduce<RecordState>((s, e) => recordAggregate.evolve(s, e, md), cur) as LiveRecord;
      return recordView(updated, schema.definition, { full: true });
    } catch (e) {
      if (e instanceof WrongExpectedRevisionError && e.streamId === streams.record(id)) continue;
      if (e instanceof WrongExpectedRevisionError) throw new ValueHeldError(UNIQUE_HELD, false);
      throw e;
    }
  }
  throw conflict('The record changed concurrently; retry');
}

export function recordCommandRoutes(deps: CommandDeps): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: '/v1/records',
      operationId: 'createRecord',
      auth: 'data',
      permission: 'records:c',
      summary: 'Create a record (idempotent by externalId)',
      body: createRecordBody,
      response: recordResponse,
      status: 201,
      write: true,
      handler: async ({ body, meta, reply }) => {
        const out = await createRecord(deps, body, meta);
        if (out.status === 'existing') reply.status(200);
        return recordView(out.record, out.schema.definition, { full: true });
      },
    }),
    route({
      method: 'PUT',
      url: '/v1/records/:id',
      operationId: 'updateRecord',
      auth: 'data',
      permission: 'records:u',
      summary: 'Replace a record payload and mutable fields',
      params: idParam,
      body: putRecordBody,
      response: recordResponse,
      write: true,
      handler: ({ params, body, meta }) => changeRecord(deps, params.id, 'put', body as Record<string, unknown>, meta),
    }),
    route({
      method: 'PATCH',
      url: '/v1/records/:id',
      operationId: 'patchRecord',
      auth: 'data',
      permission: 'records:u',
      summary: 'Patch a record (RFC 7386 merge patch)',
      params: idParam,
      body: patchRecordBody,
      response: recordResponse,
      write: true,
      handler: ({ params, body, meta }) => changeRecord(deps, params.id, 'patch', body, meta),
    }),
    route({
      method: 'DELETE',
      url: '/v1/records/:id',
      operationId: 'deleteRecord',
      auth: 'data',
      permission: 'records:d',
      summary: 'Delete a record (hard delete plus tombstone)',
      params: idParam,
      query: z.object({ expectedVersion: z.coerce.number().int().optional() }),
      status: 204,
      write: true,
      handler: async ({ params, query, meta }) => {
        await deleteRecord(deps, params.id, query.expectedVersion, meta);
        return null;
      },
    }),
  ];
}

/** Deletes a record (hard delete plus tombstone) and releases the values it held. */
export async function deleteRecord(deps: CommandDeps, id: string, expectedVersion: number | undefined, meta: RequestMeta): Promise<void> {
  const p = meta.principal;
  for await (const _attempt of contended()) {
    const { state: cur, revision } = await loadAggregate(deps.store, streams.record(id), recordAggregate);
    if (!cur.exists || !canReach(p, cur)) throw notFound();
    const events = decideDelete(cur, expectedVersion);
    const scope = { tenantId: cur.tenantId, contextId: cur.contextId, typeName: cur.typeName };
    const schema = await loadSchema(deps.store, p, cur.schemaId).catch(() => undefined);
    const held = await Promise.all([
      ...(cur.externalId ? [extReservation(deps, scope, cur.externalId)] : []),
      ...(schema
        ? uniqueKeys(schema.definition, deps.sealer.unseal(cur.payload), deps.sealer.blind([cur.tenantId!, cur.contextId!, cur.typeName], schema.definition, deps.sealer.unseal(cur.payload))).map((u) => uniqueReservation(deps, scope, u.field, u.value))
        : []),
    ]);
    try {
      await commit(deps, metadataFor(meta), [{ streamId: streams.record(id), events, expectedRevision: revision }, ...held.filter((r) => r.holder === id).map(release)]);
      return;
    } catch (e) {
      if (e instanceof WrongExpectedRevisionError) continue;
      throw e;
    }
  }
  throw conflict('The record changed concurrently; retry');
}
