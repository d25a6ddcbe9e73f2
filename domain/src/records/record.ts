import { type DomainEvent, type EventMetadata, IMMUTABLE_RECORD_KEYS, InternalError, invalid, notFound, PATCHABLE_RECORD_KEYS, type SchemaDefinition, versionConflict } from '@svc/contracts';
import { checkInlineLimit, mergePatch, validatePayload } from './payload';
import { ownValue } from './own-value';
import { lookupsOf } from '../schemas/schema';

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

export const recordAggregate = {
  initialState: (): RecordState => ({ exists: false }),
  evolve(state: RecordState, e: DomainEvent, m?: EventMetadata): RecordState {
    const at = m?.occurredAt ?? '';
    switch (e.type) {
      case 'RecordCreated': {
        const { recordId, ...d } = e.data;
        return { exists: true, id: recordId, tenantId: m?.tenantId ?? null, contextId: m?.contextId ?? null, ...d, createdBy: m?.actorKeyId ?? null, createdAt: at, updatedAt: at, version: 1 };
      }
      case 'RecordUpdated': {
        if (!state.exists) return state;
        const { recordId: _, change: __, ...d } = e.data;
        return { ...state, ...d, updatedAt: at, version: state.version + 1 };
      }
      case 'RecordDeleted':
        return { exists: false, deleted: true };
      // Index outcomes (appended by the search projector): not a change of the record, so no version change.
      case 'RecordIndexed':
      case 'RecordIndexFailed':
        return state;
      default:
        return state;
    }
  },
};

/** Effective index mode: the record's, else the schema's, else HYBRID when something is searchable, else store-only. */
export function effectiveIndexMode(requested: string | undefined, def: SchemaDefinition): string {
  if (requested) return requested;
  if (def.indexMode) return def.indexMode;
  return (def.fields ?? []).some((f) => f.searchable && !f.sensitive) ? 'HYBRID' : 'NONE';
}

/** Values held under `unique: true` lookups: each must belong to one record per tenant and context. */
export function uniqueValues(def: SchemaDefinition, payload: Record<string, unknown>): Array<{ field: string; value: string }> {
  const out: Array<{ field: string; value: string }> = [];
  for (const l of lookupsOf(def)) {
    if (l.kind !== 'single' || !l.unique) continue;
    const v = ownValue(payload, l.fieldName);
    if (v === undefined || v === null) continue;
    out.push({ field: l.fieldName, value: JSON.stringify(v) });
  }
  return out;
}

export interface CreateRecordCommand {
  recordId: string;
  schemaId: string;
  schemaVersion: number;
  definition: SchemaDefinition;
  payload: Record<string, unknown>;
  status?: string;
  folderId?: string;
  userId: string | null;
  scopes: string[];
  externalId?: string;
  indexMode?: string;
}

export function decideCreate(cmd: CreateRecordCommand, state: RecordState): DomainEvent[] {
  if (state.exists || state.deleted) throw new InternalError('record id reused');
  validatePayload(cmd.definition, cmd.payload, { enforceRequired: true });
  checkInlineLimit(cmd.definition, cmd.payload);
  return [
    {
      type: 'RecordCreated',
      data: {
        recordId: cmd.recordId,
        schemaId: cmd.schemaId,
        schemaVersion: cmd.schemaVersion,
        typeName: cmd.definition.typeName,
        payload: cmd.payload,
        status: cmd.status ?? 'ACTIVE',
        folderId: cmd.folderId ?? null,
        userId: cmd.userId,
        scopes: cmd.scopes,
        externalId: cmd.externalId ?? null,
        indexMode: effectiveIndexMode(cmd.indexMode, cmd.definition),
      },
    },
  ];
}

export interface ChangeRecordCommand {
  kind: 'put' | 'patch';
  body: Record<string, unknown>;
  definition: SchemaDefinition;
  schemaVersion: number;
  /** Ownership after identity auto-assign (undefined: unchanged). */
  userId?: string | null;
  scopes?: string[];
}

/** PUT replaces mutable fields (payload in full); PATCH merges per RFC 7386. Rejections change nothing. */
export function decideChange(cmd: ChangeRecordCommand, state: RecordState): DomainEvent[] {
  if (!state.exists) throw notFound();
  const b = cmd.body;
  if (cmd.kind === 'patch') {
    for (const k of IMMUTABLE_RECORD_KEYS) if (k in b) throw invalid(`${k} cannot be changed by PATCH`);
    for (const k of Object.keys(b)) {
      if (!(PATCHABLE_RECORD_KEYS as readonly string[]).includes(k)) throw invalid(`${k} is not a patchable field`);
      if (b[k] === null) throw invalid(`${k} cannot be null in a PATCH`);
    }
    if (b.payload !== undefined && (typeof b.payload !== 'object' || Array.isArray(b.payload))) throw invalid('payload must be an object');
  } else {
    if (b.externalId !== undefined && b.externalId !== state.externalId) throw invalid('externalId is immutable');
    if (b.indexMode !== undefined && b.indexMode !== state.indexMode) throw invalid('indexMode is immutable');
  }
  if (b.expectedVersion !== undefined && b.expectedVersion !== state.version) throw versionConflict();
  if ('folderId' in b && (b.folderId === null || b.folderId === '')) throw invalid('folderId cannot be cleared');
  const payload =
    cmd.kind === 'put'
      ? ((b.payload as Record<string, unknown> | undefined) ?? {})
      : b.payload !== undefined
        ? (mergePatch(state.payload, b.payload) as Record<string, unknown>)
        : state.payload;
  validatePayload(cmd.definition, payload, { enforceRequired: true });
  checkInlineLimit(cmd.definition, payload);
  return [
    {
      type: 'RecordUpdated',
      data: {
        recordId: state.id,
        schemaVersion: cmd.schemaVersion,
        payload,
        status: (b.status as string | undefined) ?? state.status,
        folderId: (b.folderId as string | undefined) ?? state.folderId,
        userId: cmd.userId !== undefined ? cmd.userId : state.userId,
        scopes: cmd.scopes ?? state.scopes,
        change: cmd.kind,
      },
    },
  ];
}

export function decideDelete(state: RecordState, expectedVersion?: number): DomainEvent[] {
  if (!state.exists) throw notFound();
  if (expectedVersion !== undefined && expectedVersion !== state.version) throw versionConflict();
  return [{ type: 'RecordDeleted', data: { recordId: state.id, typeName: state.typeName, externalId: state.externalId } }];
}
