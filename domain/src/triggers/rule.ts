import {
  type CreateTrigger,
  type EventMetadata,
  forbidden,
  InternalError,
  invalid,
  notFound,
  type Principal,
  type SchemaDefinition,
  scriptVersionOf,
  type ScriptVersionRef,
  ServiceError,
  type TriggerEventKind,
} from '@svc/contracts';
import { assertNever, type Decider, type EventsOf, unexpected } from '../shared/decider';
import { lookupsOf } from '../schemas/schema';
import { grants, isSubset, PERMISSION_RE } from '../tenancy/permissions';

/** A declared trigger rule (decisions §4 body), as its stream folds. */
export interface TriggerRule {
  id: string;
  name: string;
  schemaId: string;
  typeName: string;
  events: TriggerEventKind[];
  /** `latest`: the newest live version, resolved at each firing (a decimal string was declared as its number). */
  scriptRef: { name: string; version: ScriptVersionRef };
  fields: string[];
  grant: { allowedActions: string[]; dataScope: { userId?: string; scopes?: string[] } | null };
  enabled: boolean;
  tenantId: string | null;
  contextId: string | null;
  createdAt: string;
}

export type TriggerRuleState = { exists: false; deleted?: boolean } | ({ exists: true } & TriggerRule);

/** A rule's script version in the read model's `script_version` column: NULL for `latest`. */
export const scriptVersionColumn = (v: ScriptVersionRef): number | null => (v === 'latest' ? null : v);
export const scriptVersionOfColumn = (v: number | string | null): ScriptVersionRef =>
  v === null ? 'latest' : Number(v);

/** The response shape of a rule. */
export const triggerRuleView = (r: TriggerRule) => ({
  id: r.id,
  name: r.name,
  schemaId: r.schemaId,
  typeName: r.typeName,
  events: r.events,
  scriptRef: r.scriptRef,
  fields: r.fields,
  grant: { allowedActions: r.grant.allowedActions, dataScope: r.grant.dataScope },
  enabled: r.enabled,
  createdAt: r.createdAt,
});

/** `${{ input.userId }}` or `${{ input.scope.<ns> }}`: resolved from the firing's input. */
export const PLACEHOLDER_RE = /^\$\{\{\s*input\.(userId|scope\.[A-Za-z0-9_-]{1,64})\s*\}\}$/;
export const isPlaceholder = (v: string) => PLACEHOLDER_RE.test(v);

/**
 * Fields a rule may project (spec "Rule declaration"): inline, filterable or a
 * lookup field, and never sensitive. In schema order, then lookup-only names.
 */
export function projectableFields(def: Pick<SchemaDefinition, 'fields' | 'lookupFields'>): string[] {
  const fields = def.fields ?? [];
  const sensitive = new Set(fields.filter((f) => f.sensitive).map((f) => f.fieldId));
  const lookup = new Set(lookupsOf(def).flatMap((l) => (l.kind === 'single' ? [l.fieldName] : l.fieldNames)));
  const out = fields
    .filter((f) => !f.sensitive && (f.inline || f.filterable || lookup.has(f.fieldId)))
    .map((f) => f.fieldId);
  for (const name of lookup) if (!sensitive.has(name) && !out.includes(name)) out.push(name);
  return out;
}

export const triggersEnabled = (def: SchemaDefinition) => def.capabilities?.triggersEnabled === true;

export interface RuleDeclarationContext {
  /** The declaring credential: the grant may not exceed what it holds. */
  principal: Principal;
  /** The schema the rule fires off, as the caller may see it (null: missing or out of reach). */
  schema: { id: string; definition: SchemaDefinition } | null;
  /** Whether the named script version exists (live) in the caller's context (`latest`: whether any version does). */
  scriptExists: boolean;
}

/**
 * Every rule-declaration rule of the spec, in the order a caller fixes them:
 * 404 for a schema or script version that is not there; 403 for a grant wider
 * than the declaring credential; 400 (VALIDATION_ERROR) for a schema without
 * `triggersEnabled`, an unprojectable field (the body lists `projectableFields`),
 * a malformed permission, a literal data scope or no `records:r` clause on the
 * schema's type when fields are declared.
 */
export function validateRuleDeclaration(body: CreateTrigger, ctx: RuleDeclarationContext): void {
  const { schema } = ctx;
  if (!schema) throw notFound();
  const def = schema.definition;
  if (!triggersEnabled(def))
    throw invalid(
      `Schema ${schema.id} does not have capabilities.triggersEnabled: true; enable it before declaring a trigger rule`,
    );
  if (new Set(body.events).size !== body.events.length)
    throw invalid('events: each of CREATE, UPDATE, DELETE at most once');
  if (new Set(body.fields).size !== body.fields.length) throw invalid('fields: a field is named twice');
  const projectable = projectableFields(def);
  const bad = body.fields.filter((f) => !projectable.includes(f));
  if (bad.length)
    throw invalid(
      `fields: ${bad.join(', ')} cannot be projected; a rule may project inline, filterable or lookup ` +
        `fields that are not sensitive: ${projectable.join(', ') || '(none)'}`,
      {
        projectableFields: projectable,
      },
    );
  const actions = body.grant.allowedActions;
  const malformed = actions.filter((a) => !PERMISSION_RE.test(a));
  if (malformed.length) throw invalid(`grant.allowedActions: ${malformed.join(', ')} is not a permission string`);
  const ds = body.grant.dataScope;
  if (body.fields.length) {
    if (!grants(actions, `records:r:${def.typeName}`))
      throw invalid(`grant: a rule that declares fields needs a records:r clause covering type ${def.typeName}`);
    const literal = [...(ds?.userId !== undefined ? [ds.userId] : []), ...(ds?.scopes ?? [])].filter(
      (v) => !isPlaceholder(v),
    );
    if (literal.length)
      throw invalid(
        'grant.dataScope: a rule that declares fields may constrain its data scope only with ${{ ' +
          'input.<dim> }} placeholders',
      );
  }
  for (const v of [...(ds?.userId !== undefined ? [ds.userId] : []), ...(ds?.scopes ?? [])])
    if (v.includes('${{') && !isPlaceholder(v))
      throw invalid(
        `grant.dataScope: '${v}' is not a placeholder of the form \${{ input.userId }} or \${{ input.scope.<ns> }}`,
      );
  if (!isSubset(actions, ctx.principal.allowedActions)) throw forbidden();
  if (!ctx.scriptExists) {
    const { name, version } = body.scriptRef;
    throw new ServiceError(
      'NOT_FOUND',
      version === 'latest' ? `Script ${name} has no version` : `Script ${name} version ${version} does not exist`,
    );
  }
}

export type TriggerRuleEvent = EventsOf<'TriggerRuleCreated' | 'TriggerRuleDeleted'>;

export type TriggerRuleCommand =
  /**
   * POST /v1/triggers: the schema and the script version's existence, as the declaring caller may see them, arrive with
   * the command.
   */
  | ({ type: 'CreateTriggerRule'; ruleId: string; body: CreateTrigger } & RuleDeclarationContext)
  /** DELETE /v1/triggers/{id}: a rule of another tenant or context reads as missing. */
  | { type: 'DeleteTriggerRule'; actor: Principal };

export const triggerRuleDecider: Decider<TriggerRuleState, TriggerRuleCommand, TriggerRuleEvent> = {
  initialState: () => ({ exists: false }),

  decide(cmd, state) {
    switch (cmd.type) {
      case 'CreateTriggerRule': {
        if (state.exists || state.deleted) throw new InternalError('trigger rule id reused');
        const { body } = cmd;
        validateRuleDeclaration(body, cmd);
        return [
          {
            type: 'TriggerRuleCreated',
            data: {
              ruleId: cmd.ruleId,
              name: body.name,
              schemaId: body.schemaId,
              typeName: cmd.schema!.definition.typeName,
              events: body.events,
              scriptRef: { name: body.scriptRef.name, version: scriptVersionOf(body.scriptRef.version) },
              fields: body.fields,
              grant: { allowedActions: body.grant.allowedActions, dataScope: body.grant.dataScope ?? null },
              enabled: body.enabled ?? true,
            },
          },
        ];
      }
      case 'DeleteTriggerRule':
        if (!state.exists || state.tenantId !== cmd.actor.tenantId || state.contextId !== cmd.actor.contextId)
          throw notFound();
        return [{ type: 'TriggerRuleDeleted', data: { ruleId: state.id, schemaId: state.schemaId } }];
      default:
        return assertNever(cmd);
    }
  },

  /** `metadata` gives a rule its tenant, context and creation time. */
  evolve(state, e, m?: EventMetadata) {
    switch (e.type) {
      case 'TriggerRuleCreated': {
        const { ruleId, ...d } = e.data;
        return {
          exists: true,
          id: ruleId,
          ...d,
          tenantId: m?.tenantId ?? null,
          contextId: m?.contextId ?? null,
          createdAt: m?.occurredAt ?? '',
        };
      }
      case 'TriggerRuleDeleted':
        return { exists: false, deleted: true };
      default:
        return unexpected(e, state);
    }
  },
};
