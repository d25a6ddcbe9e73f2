import {
  conflict,
  type DomainEvent,
  forbidden,
  InternalError,
  invalid,
  notFound,
  RESERVED_NAMES,
  type SchemaDefinition,
  type SchemaUpdate,
  versionConflict,
} from '@svc/contracts';
import { patternProblem } from '../records/pattern';
import { assertNever, type Decider, type EventsOf, unexpected } from '../shared/decider';

export const MAX_LOOKUP_FIELDS = 10;
export const BUILTIN_NAMESPACES = ['org', 'client'];
const BUILTIN_TARGET_SURFACES = ['record', 'document', 'user'];

export type SchemaState =
  | { exists: false; deleted?: boolean }
  | {
      exists: true;
      id: string;
      tenantId: string | null;
      contextId: string | null;
      definition: SchemaDefinition;
      schemaVersion: number;
      createdAt: string;
      updatedAt: string;
    };

/** Normalised lookup declaration. */
export type Lookup =
  | { kind: 'single'; fieldName: string; unique: boolean; rangeEnabled: boolean }
  | { kind: 'composite'; fieldNames: string[] };

export function lookupsOf(def: Pick<SchemaDefinition, 'lookupFields'>): Lookup[] {
  return (def.lookupFields ?? []).map((l) =>
    typeof l === 'string'
      ? { kind: 'single', fieldName: l, unique: false, rangeEnabled: false }
      : 'fieldNames' in l
        ? { kind: 'composite', fieldNames: l.fieldNames }
        : { kind: 'single', fieldName: l.fieldName, unique: l.unique ?? false, rangeEnabled: l.rangeEnabled ?? false },
  );
}

/** The owner key of a schema: '' for the shared base (no userId, no scopes). */
export const ownerKeyOf = (def: { userId?: string; scopes?: string[] }) =>
  def.userId || def.scopes?.length ? `${def.userId ?? ''}|${[...(def.scopes ?? [])].sort().join(',')}` : '';

/** Every rule of a schema definition that the request shape alone cannot express. */
export function validateDefinition(def: SchemaDefinition, namespaces: readonly string[] = BUILTIN_NAMESPACES): void {
  const fields = def.fields ?? [];
  const ids = new Set<string>();
  for (const f of fields) {
    if (RESERVED_NAMES.has(f.fieldId)) throw invalid(`fields: '${f.fieldId}' is reserved`);
    // No JSON body may carry a `__proto__` key (docs/api.md), so such a field could never be written.
    if (f.fieldId === '__proto__') throw invalid(`fields: '__proto__' is not allowed as a field id`);
    if (ids.has(f.fieldId)) throw invalid(`fields: '${f.fieldId}' is declared twice`);
    ids.add(f.fieldId);
    if (f.sensitive && f.inline) throw invalid(`fields.${f.fieldId}: sensitive and inline cannot be combined`);
    if (f.fieldType === 'enum' && !f.enumValues?.length)
      throw invalid(`fields.${f.fieldId}: an enum field needs enumValues`);
    if (f.fieldType !== 'enum' && f.enumValues)
      throw invalid(`fields.${f.fieldId}: enumValues is only for enum fields`);
    if (f.fieldType === 'reference') {
      if (!f.targetTypeName) throw invalid(`fields.${f.fieldId}: a reference needs targetTypeName`);
      if (!f.targetSurface) throw invalid(`fields.${f.fieldId}: a reference needs targetSurface`);
      if (!BUILTIN_TARGET_SURFACES.includes(f.targetSurface) && !namespaces.includes(f.targetSurface))
        throw invalid(
          `fields.${f.fieldId}: targetSurface '${f.targetSurface}' is not record, document, user or a ` +
            `registered namespace`,
        );
    } else if (f.targetTypeName || f.targetField || f.cardinality || f.targetSurface) {
      throw invalid(`fields.${f.fieldId}: target settings are only for reference fields`);
    }
    const v = f.validation ?? {};
    if (v.min !== undefined && v.max !== undefined && v.min > v.max)
      throw invalid(`fields.${f.fieldId}: validation.min exceeds max`);
    if (v.minLength !== undefined && v.maxLength !== undefined && v.minLength > v.maxLength)
      throw invalid(`fields.${f.fieldId}: validation.minLength exceeds maxLength`);
    if (v.pattern !== undefined) {
      const why = patternProblem(v.pattern);
      if (why) throw invalid(`fields.${f.fieldId}: validation.pattern ${why}`);
    }
  }
  const byId = new Map(fields.map((f) => [f.fieldId, f]));
  const lookups = lookupsOf(def);
  if (lookups.length > MAX_LOOKUP_FIELDS) throw invalid(`lookupFields: at most ${MAX_LOOKUP_FIELDS} may be declared`);
  const seen = new Set<string>();
  for (const l of lookups) {
    const names = l.kind === 'single' ? [l.fieldName] : l.fieldNames;
    const key = names.join(',');
    if (seen.has(key)) throw invalid(`lookupFields: '${key}' is declared twice`);
    seen.add(key);
    for (const n of names) {
      if (RESERVED_NAMES.has(n))
        throw invalid(`lookupFields: '${n}' is reserved (userId and scopes are looked up automatically)`);
      if (n === '__proto__') throw invalid(`lookupFields: '__proto__' is not allowed as a field name`);
      if (fields.length && !byId.has(n)) throw invalid(`lookupFields: '${n}' is not a declared field`);
    }
    if (l.kind === 'composite') {
      if (new Set(names).size !== names.length) throw invalid('lookupFields: a composite lookup names each field once');
      if (def.allowedSurfaces.some((s) => s !== 'record'))
        throw invalid('lookupFields: composite lookups are for the record surface only');
      if (names.some((n) => byId.get(n)?.sensitive))
        throw invalid('lookupFields: a composite lookup cannot include a sensitive field');
    } else if (l.rangeEnabled && byId.get(l.fieldName)?.sensitive) {
      throw invalid(`lookupFields: range on sensitive field '${l.fieldName}' is not allowed`);
    }
  }
  if (def.sortBy && !['createdAt', 'lastUpdated'].includes(def.sortBy)) {
    const f = byId.get(def.sortBy);
    if (!f) throw invalid(`sortBy: '${def.sortBy}' is not createdAt, lastUpdated or a declared field`);
    if (f.sensitive) throw invalid('sortBy: a sensitive field cannot order results');
  }
  const hints = Object.entries(def.renderHints ?? {});
  for (const [k] of hints)
    if (fields.length && !byId.has(k)) throw invalid(`renderHints: '${k}' is not a declared field`);
  if (hints.filter(([, h]) => h.displayField).length > 1)
    throw invalid('renderHints: at most one displayField per schema');
  for (const k of Object.keys(def.capabilities ?? {}))
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(k)) throw invalid(`capabilities: '${k}' is not a valid name`);
}

export const capabilitiesOf = (def: SchemaDefinition) => ({
  auditHistory: true,
  triggersEnabled: false,
  ...(def.capabilities ?? {}),
});

export type SchemaEvent = EventsOf<'SchemaCreated' | 'SchemaUpdated' | 'SchemaDeleted'>;

export type SchemaCommand =
  | {
      type: 'CreateSchema';
      schemaId: string;
      /** The definition with the caller's ownership stamped in. */
      definition: SchemaDefinition;
      /** A user schema needs the root key (403 otherwise). */
      byRoot: boolean;
      /** The tenant's registered namespaces (reference targets). */
      namespaces: readonly string[];
      /** The schema holding this typeName for the same owner key, if any: the create is then idempotent (no events). */
      heldBy: string | null;
      /** The schema holding this typeName as the shared base (read for a variant only). */
      sharedBase: string | null;
    }
  | {
      type: 'UpdateSchema';
      body: SchemaUpdate;
      /** A user schema (before or after the update) is written with the root key only (403 otherwise). */
      byRoot: boolean;
      namespaces?: readonly string[];
    }
  | { type: 'DeleteSchema' };

function evolve(
  state: SchemaState,
  e: SchemaEvent,
  m?: { occurredAt: string; tenantId: string | null; contextId: string | null },
): SchemaState {
  const at = m?.occurredAt ?? '';
  switch (e.type) {
    case 'SchemaCreated':
      return {
        exists: true,
        id: e.data.schemaId,
        tenantId: m?.tenantId ?? null,
        contextId: m?.contextId ?? null,
        definition: e.data.definition,
        schemaVersion: 1,
        createdAt: at,
        updatedAt: at,
      };
    case 'SchemaUpdated':
      return state.exists
        ? { ...state, definition: e.data.definition, schemaVersion: e.data.schemaVersion, updatedAt: at }
        : state;
    case 'SchemaDeleted':
      return { exists: false, deleted: true };
    default:
      return unexpected(e, state);
  }
}

const initialState = (): SchemaState => ({ exists: false });

/** A schema's state from its stream, for readers that hold any stored event. */
export const schemaAggregate = {
  initialState,
  evolve: evolve as (
    state: SchemaState,
    e: DomainEvent,
    m?: { occurredAt: string; tenantId: string | null; contextId: string | null },
  ) => SchemaState,
};

/**
 * Create: a shared base (no owner) or a variant `basedOn` the base of its typeName; a repeat for the same owner decides
 * nothing.
 */
function create(cmd: Extract<SchemaCommand, { type: 'CreateSchema' }>, state: SchemaState): SchemaEvent[] {
  if (state.exists || state.deleted) throw new InternalError('schema id reused');
  const def = cmd.definition;
  if (def.allowedSurfaces.includes('user') && !cmd.byRoot) throw forbidden();
  validateDefinition(def, cmd.namespaces);
  if (cmd.heldBy) return [];
  if (ownerKeyOf(def)) {
    if (!cmd.sharedBase)
      throw invalid(
        `No shared base schema exists for typeName '${def.typeName}'; it must be created by an unscoped ` +
          `credential first`,
      );
    if (def.basedOn !== cmd.sharedBase)
      throw invalid(
        `typeName '${def.typeName}' is already used; set basedOn to the shared base schema ${cmd.sharedBase}`,
      );
  } else if (def.basedOn) {
    throw invalid('The shared base schema of a typeName cannot set basedOn');
  }
  return [{ type: 'SchemaCreated', data: { schemaId: cmd.schemaId, typeName: def.typeName, definition: def } }];
}

/**
 * PUT semantics: collections replaced in full when given, omitted scalars preserved, capabilities replaced in full when
 * given.
 */
function update(cmd: Extract<SchemaCommand, { type: 'UpdateSchema' }>, state: SchemaState): SchemaEvent[] {
  const { body, namespaces } = cmd;
  if (!state.exists) throw notFound();
  // A user schema needs the root key: to make a schema one, and to change one.
  if (!cmd.byRoot && (state.definition.allowedSurfaces.includes('user') || body.allowedSurfaces?.includes('user')))
    throw forbidden();
  if (body.expectedVersion !== undefined && body.expectedVersion !== state.schemaVersion) throw versionConflict();
  const cur = state.definition;
  if (body.typeName !== undefined && body.typeName !== cur.typeName) throw invalid('typeName is immutable');
  if (body.basedOn !== undefined && body.basedOn !== cur.basedOn) throw invalid('basedOn is immutable');
  // Sort keys are written with each record; a later sortBy could not order the records already stored.
  if (body.sortBy !== undefined && body.sortBy !== cur.sortBy)
    throw invalid('sortBy is set once, when the schema is created');
  const { expectedVersion: _, ...rest } = body;
  const next: SchemaDefinition = { ...cur };
  for (const [k, v] of Object.entries(rest)) if (v !== undefined) (next as Record<string, unknown>)[k] = v;
  // Composite lookups keep their order once live.
  const oldComposite = new Map(
    lookupsOf(cur)
      .filter((l) => l.kind === 'composite')
      .map((l) => [
        [...(l as { fieldNames: string[] }).fieldNames].sort().join(','),
        (l as { fieldNames: string[] }).fieldNames.join(','),
      ]),
  );
  for (const l of lookupsOf(next)) {
    if (l.kind !== 'composite') continue;
    const was = oldComposite.get([...l.fieldNames].sort().join(','));
    if (was !== undefined && was !== l.fieldNames.join(','))
      throw invalid('lookupFields: the order of a composite lookup is fixed once live');
  }
  validateDefinition(next, namespaces);
  return [
    { type: 'SchemaUpdated', data: { schemaId: state.id, schemaVersion: state.schemaVersion + 1, definition: next } },
  ];
}

export const schemaDecider: Decider<SchemaState, SchemaCommand, SchemaEvent> = {
  initialState,
  evolve,
  decide(cmd, state) {
    switch (cmd.type) {
      case 'CreateSchema':
        return create(cmd, state);
      case 'UpdateSchema':
        return update(cmd, state);
      case 'DeleteSchema':
        if (!state.exists) throw notFound();
        return [{ type: 'SchemaDeleted', data: { schemaId: state.id, typeName: state.definition.typeName } }];
      default:
        return assertNever(cmd);
    }
  },
};

export const schemaInactive = () => conflict('The schema is inactive');

type FieldDef = NonNullable<SchemaDefinition['fields']>[number];

/**
 * A reference field as answered: the spec's defaults (`targetField` externalId, `cardinality` one) filled in when
 * omitted; other fields as stored.
 */
const fieldView = (f: FieldDef): FieldDef =>
  f.fieldType === 'reference'
    ? { ...f, targetField: f.targetField ?? 'externalId', cardinality: f.cardinality ?? 'one' }
    : f;

/**
 * The response shape of a schema (also stored as the read model's document and, per revision, as its
 * version row's state): the definition with the spec's defaults filled in (`active`, `capabilities`,
 * `storageProfile`, reference targets). The events keep the definition as written.
 */
export function schemaView(s: Extract<SchemaState, { exists: true }>) {
  return {
    id: s.id,
    ...s.definition,
    ...(s.definition.fields ? { fields: s.definition.fields.map(fieldView) } : {}),
    active: s.definition.active ?? true,
    capabilities: capabilitiesOf(s.definition),
    storageProfile: s.definition.storageProfile ?? 'STANDARD',
    schemaVersion: s.schemaVersion,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
  };
}
