import { type SchemaDefinition, ServiceError } from '@svc/contracts';
import { assertNever, type EventsOf, unexpected } from '../shared/decider';
import { projectableFields, type TriggerRuleEvent, triggersEnabled } from './rule';

/**
 * The live rules of one schema (stream `trigger-bindings-<schemaId>`), folded
 * from TriggerRuleBound / TriggerRuleUnbound. Schema updates and deletes read
 * it to refuse the changes the spec answers with 409.
 */
export type TriggerBindings = Map<string, { fields: string[]; enabled: boolean }>;

export type TriggerBindingEvent = EventsOf<'TriggerRuleBound' | 'TriggerRuleUnbound'>;

/**
 * A fold only: the bindings follow the rules (`bindingOf`), appended with expected revision 'any'; nothing is decided
 * on this stream.
 */
export const triggerBindingsAggregate = {
  initialState: (): TriggerBindings => new Map(),
  evolve(state: TriggerBindings, e: TriggerBindingEvent): TriggerBindings {
    switch (e.type) {
      case 'TriggerRuleBound':
        return new Map(state).set(e.data.ruleId, { fields: e.data.fields, enabled: e.data.enabled });
      case 'TriggerRuleUnbound': {
        const next = new Map(state);
        next.delete(e.data.ruleId);
        return next;
      }
      default:
        return unexpected(e, state);
    }
  },
};

/** The binding a rule's creation or deletion puts on its schema's bindings stream (in the same append). */
export function bindingOf(e: TriggerRuleEvent): TriggerBindingEvent {
  switch (e.type) {
    case 'TriggerRuleCreated':
      return {
        type: 'TriggerRuleBound',
        data: { ruleId: e.data.ruleId, schemaId: e.data.schemaId, fields: e.data.fields, enabled: e.data.enabled },
      };
    case 'TriggerRuleDeleted':
      return { type: 'TriggerRuleUnbound', data: { ruleId: e.data.ruleId, schemaId: e.data.schemaId } };
    default:
      return assertNever(e);
  }
}

const refused = (message: string, ruleIds: string[]) => new ServiceError('CONFLICT', message, { details: { ruleIds } });

/**
 * A schema update while rules fire off the schema (spec "Rule declaration"):
 * 409 when it turns `triggersEnabled` off while an enabled rule remains, or
 * when a field some rule projects stops being projectable (no longer inline,
 * filterable or a lookup field, made sensitive, or removed).
 */
export function checkSchemaUpdateAgainstRules(bindings: TriggerBindings, next: SchemaDefinition): void {
  if (!bindings.size) return;
  const enabled = [...bindings].filter(([, b]) => b.enabled).map(([id]) => id);
  if (enabled.length && !triggersEnabled(next))
    throw refused(
      `Trigger rules still fire off this schema (${enabled.join(', ')}); delete them before turning ` +
        `triggersEnabled off`,
      enabled,
    );
  const projectable = new Set(projectableFields(next));
  const hit = [...bindings].filter(([, b]) => b.fields.some((f) => !projectable.has(f)));
  if (hit.length) {
    const fields = [...new Set(hit.flatMap(([, b]) => b.fields.filter((f) => !projectable.has(f))))];
    throw refused(
      `Trigger rules project ${fields.join(', ')}, which this update would stop keeping inline ` +
        `(projectable); delete the rules first`,
      hit.map(([id]) => id),
    );
  }
}

/** Deleting a schema while enabled rules fire off it is a 409. */
export function checkSchemaDeleteAgainstRules(bindings: TriggerBindings): void {
  const enabled = [...bindings].filter(([, b]) => b.enabled).map(([id]) => id);
  if (enabled.length)
    throw refused(`Trigger rules still fire off this schema (${enabled.join(', ')}); delete them first`, enabled);
}
