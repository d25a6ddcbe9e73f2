import {
  type DomainEvent,
  type EventMetadata,
  IMMUTABLE_RECORD_KEYS,
  InternalError,
  invalid,
  notFound,
  PATCHABLE_RECORD_KEYS,
  type SchemaDefinition,
  versionConflict,
} from '@svc/contracts';
import { changedPayload, checkStoredPayload } from './payload';
import { ownValue } from './own-value';
import { lookupsOf } from '../schemas/schema';
import { assertNever, type Decider, type EventsOf, nextVersion, unexpected } from '../shared/decider';
import { checkPatchBody, type PatchRules } from '../shared/patch-body';
import type { PayloadSealing } from '../shared/sealing';

export interface LiveRecord {
  exists: true;
  id: string;
  tenantId: string | null;
  contextId: string | null;
  typeName: string;
  schemaId: string;
  schemaVersion: number;
  payload: Record<string, unknown>;
  status: string;
  folderId: string | null;
  userId: string | null;
  scopes: string[];
  externalId: string | null;
  indexMode: string | null;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
  version: number;
}
export type RecordState = { exists: false; deleted?: boolean } | LiveRecord;

/** Effective index mode: the record's, else the schema's, else HYBRID when something is searchable, else store-only. */
export function effectiveIndexMode(requested: string | undefined, def: SchemaDefinition): string {
  if (requested) return requested;
  if (def.indexMode) return def.indexMode;
  return (def.fields ?? []).some((f) => f.searchable && !f.sensitive) ? 'HYBRID' : 'NONE';
}

/** Values held under `unique: true` lookups: each must belong to one record per tenant and context. */
export function uniqueValues(
  def: SchemaDefinition,
  payload: Record<string, unknown>,
): Array<{ field: string; value: string }> {
  const out: Array<{ field: string; value: string }> = [];
  for (const l of lookupsOf(def)) {
    if (l.kind !== 'single' || !l.unique) continue;
    const v = ownValue(payload, l.fieldName);
    if (v === undefined || v === null) continue;
    out.push({ field: l.fieldName, value: JSON.stringify(v) });
  }
  return out;
}

export type RecordEvent = EventsOf<
  'RecordCreated' | 'RecordUpdated' | 'RecordDeleted' | 'RecordIndexed' | 'RecordIndexFailed'
>;

/** The schema a record is written against (the command handler loads it). */
export interface RecordSchema {
  schemaId: string;
  schemaVersion: number;
  definition: SchemaDefinition;
}

export type RecordCommand =
  | {
      type: 'CreateRecord';
      recordId: string;
      /** Where the record lives: scopes the blind index of its sensitive values. */
      tenantId: string;
      contextId: string;
      schema: RecordSchema;
      payload: Record<string, unknown>;
      status?: string;
      folderId?: string;
      userId: string | null;
      scopes: string[];
      externalId?: string;
      indexMode?: string;
    }
  | {
      /** PUT replaces mutable fields (payload in full); PATCH merges per RFC 7386. */
      type: 'ChangeRecord';
      kind: 'put' | 'patch';
      body: Record<string, unknown>;
      schema: RecordSchema;
      /** Ownership after identity auto-assign (undefined: unchanged). */
      userId?: string | null;
      scopes?: string[];
    }
  | { type: 'DeleteRecord'; expectedVersion?: number };

function evolve(state: RecordState, e: RecordEvent, m?: EventMetadata): RecordState {
  const at = m?.occurredAt ?? '';
  switch (e.type) {
    case 'RecordCreated': {
      const { recordId, ...d } = e.data;
      return {
        exists: true,
        id: recordId,
        tenantId: m?.tenantId ?? null,
        contextId: m?.contextId ?? null,
        ...d,
        createdBy: m?.actorKeyId ?? null,
        createdAt: at,
        updatedAt: at,
        version: 1,
      };
    }
    case 'RecordUpdated': {
      const { recordId: _, change: __, ...d } = e.data;
      return nextVersion(state, { ...d, updatedAt: at });
    }
    case 'RecordDeleted':
      return { exists: false, deleted: true };
    // Index outcomes (appended by the search projector): not a change of the record, so no version change.
    case 'RecordIndexed':
    case 'RecordIndexFailed':
      return state;
    default:
      return unexpected(e, state);
  }
}

const initialState = (): RecordState => ({ exists: false });

/** A record's state from its stream, for readers that hold any stored event (host API, trigger runner). */
export const recordAggregate = {
  initialState,
  evolve: evolve as (state: RecordState, e: DomainEvent, m?: EventMetadata) => RecordState,
};

/** The stored form of a payload: sensitive values sealed, their blind index beside it (only when there is one). */
function sealed(
  sealing: PayloadSealing,
  scope: [string, string, string],
  def: SchemaDefinition,
  payload: Record<string, unknown>,
) {
  const blind = sealing.blind(scope, def, payload);
  return { payload: sealing.seal(def, payload), ...(Object.keys(blind).length ? { blindIndex: blind } : {}) };
}

function live(state: RecordState): LiveRecord {
  if (!state.exists) throw notFound();
  return state;
}

function create(
  sealing: PayloadSealing,
  cmd: Extract<RecordCommand, { type: 'CreateRecord' }>,
  state: RecordState,
): RecordEvent[] {
  if (state.exists || state.deleted) throw new InternalError('record id reused');
  const def = cmd.schema.definition;
  // The route refuses these before any read; the decision holds them too.
  if (def.active === false) throw invalid('The schema is inactive: new records are rejected');
  if (!def.allowedSurfaces.includes('record')) throw invalid('The schema does not allow the record surface');
  checkStoredPayload(def, cmd.payload, { enforceRequired: true });
  const { payload, ...blindIndex } = sealed(sealing, [cmd.tenantId, cmd.contextId, def.typeName], def, cmd.payload);
  return [
    {
      type: 'RecordCreated',
      data: {
        recordId: cmd.recordId,
        schemaId: cmd.schema.schemaId,
        schemaVersion: cmd.schema.schemaVersion,
        typeName: def.typeName,
        payload,
        status: cmd.status ?? 'ACTIVE',
        folderId: cmd.folderId ?? null,
        userId: cmd.userId,
        scopes: cmd.scopes,
        externalId: cmd.externalId ?? null,
        indexMode: effectiveIndexMode(cmd.indexMode, def),
        ...blindIndex,
      },
    },
  ];
}

const RECORD_PATCH: PatchRules = {
  immutable: IMMUTABLE_RECORD_KEYS,
  fixed: (k) => `${k} cannot be changed by PATCH`,
  patchable: PATCHABLE_RECORD_KEYS,
};

/** Rejections change nothing; the stored payload is unsealed to merge and validate, and sealed again. */
function change(
  sealing: PayloadSealing,
  cmd: Extract<RecordCommand, { type: 'ChangeRecord' }>,
  state: RecordState,
): RecordEvent[] {
  const cur = live(state);
  const b = cmd.body;
  if (Array.isArray(b.scopes) && b.scopes.length > 2) throw invalid('scopes: at most 2');
  if (cmd.kind === 'patch') {
    checkPatchBody(b, RECORD_PATCH);
    if (b.payload !== undefined && (typeof b.payload !== 'object' || Array.isArray(b.payload)))
      throw invalid('payload must be an object');
  } else {
    if (b.externalId !== undefined && b.externalId !== cur.externalId) throw invalid('externalId is immutable');
    if (b.indexMode !== undefined && b.indexMode !== cur.indexMode) throw invalid('indexMode is immutable');
  }
  if (b.expectedVersion !== undefined && b.expectedVersion !== cur.version) throw versionConflict();
  if ('folderId' in b && (b.folderId === null || b.folderId === '')) throw invalid('folderId cannot be cleared');
  const def = cmd.schema.definition;
  const next = changedPayload(sealing, cmd.kind, b, cur.payload);
  // `required` is enforced on create only: a change may leave (or, with a PATCH null, remove) a required field absent.
  checkStoredPayload(def, next, { enforceRequired: false });
  return [
    {
      type: 'RecordUpdated',
      data: {
        recordId: cur.id,
        schemaVersion: cmd.schema.schemaVersion,
        ...sealed(sealing, [cur.tenantId!, cur.contextId!, cur.typeName], def, next),
        status: (b.status as string | undefined) ?? cur.status,
        folderId: (b.folderId as string | undefined) ?? cur.folderId,
        userId: cmd.userId !== undefined ? cmd.userId : cur.userId,
        scopes: cmd.scopes ?? cur.scopes,
        change: cmd.kind,
      },
    },
  ];
}

/**
 * The record decider. `sealing` seals sensitive values and computes their blind
 * index inside the decision: the events it returns are the events stored.
 */
export function recordDecider(sealing: PayloadSealing): Decider<RecordState, RecordCommand, RecordEvent> {
  return {
    initialState,
    evolve,
    decide(cmd, state) {
      switch (cmd.type) {
        case 'CreateRecord':
          return create(sealing, cmd, state);
        case 'ChangeRecord':
          return change(sealing, cmd, state);
        case 'DeleteRecord': {
          const cur = live(state);
          if (cmd.expectedVersion !== undefined && cmd.expectedVersion !== cur.version) throw versionConflict();
          return [
            { type: 'RecordDeleted', data: { recordId: cur.id, typeName: cur.typeName, externalId: cur.externalId } },
          ];
        }
        default:
          return assertNever(cmd);
      }
    },
  };
}
