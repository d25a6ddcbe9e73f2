import type { SchemaDefinition } from '@svc/contracts';
import {
  checkSchemaDeleteAgainstRules,
  checkSchemaUpdateAgainstRules,
  type EventStore,
  loadAggregate,
  triggerBindingsAggregate,
  triggerStreams,
} from '@svc/domain';

/**
 * The hook schema updates and deletes call (command-api/src/schemas/routes.ts):
 * reads the schema's live trigger rules and refuses, with 409, what the spec
 * forbids while they fire (docs/triggers.md "Schema changes").
 */
export async function schemaTriggerGuard(store: EventStore, schemaId: string) {
  const { state } = await loadAggregate(store, triggerStreams.bindings(schemaId), triggerBindingsAggregate);
  return {
    checkUpdate: (next: SchemaDefinition) => checkSchemaUpdateAgainstRules(state, next),
    checkDelete: () => checkSchemaDeleteAgainstRules(state),
  };
}
