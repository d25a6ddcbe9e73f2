import type { SchemaDefinition } from '@svc/contracts';
import {
  documentAggregate,
  type EventStore,
  loadAggregate,
  lookupsOf,
  type NewEvent,
  recordAggregate,
  schemaAggregate,
  streams,
} from '@svc/domain';

/**
 * The spec's row arithmetic for a script transaction (docs/limits.md "Script
 * transaction"), after merging: each written entity counts once, at the cost
 * of its last staged write. A record or document write is 1 row plus one per
 * range-indexed lookup field plus one per reference field of its schema (an
 * update by full save costs what its create does; an update's events need not
 * name the schema, which is then the entity's as loaded); a folder create or
 * delete is 3; a delete of a record or document is 1. Reservations and
 * metering are part of the write they belong to and count nothing of their
 * own, and so is the context root a folder or document write records on the
 * way (a context created before roots came with their contexts): the script
 * did not ask for it.
 */
export const MAX_SCRIPT_ROWS = 100;

const schemaRows = (def: SchemaDefinition | undefined): number => {
  if (!def) return 0;
  const range = lookupsOf(def).filter((l) => l.kind === 'single' && l.rangeEnabled).length;
  const refs = (def.fields ?? []).filter((f) => f.fieldType === 'reference').length;
  return range + refs;
};

export async function storageRows(
  store: EventStore,
  staged: Array<{ streamId: string; events: NewEvent[] }>,
): Promise<number> {
  const schemas = new Map<string, SchemaDefinition | undefined>();
  const schemaOf = async (id: unknown): Promise<SchemaDefinition | undefined> => {
    if (typeof id !== 'string') return undefined;
    if (!schemas.has(id)) {
      const { state } = await loadAggregate(store, streams.schema(id), schemaAggregate);
      schemas.set(id, state.exists ? state.definition : undefined);
    }
    return schemas.get(id);
  };
  /**
   * The schema of a written record or document: named by its last staged event that names one, else the entity's as
   * loaded (RecordUpdated names none).
   */
  const schemaIdOf = async (streamId: string, events: NewEvent[]): Promise<unknown> => {
    const naming = events.findLast((e) => 'schemaId' in e.data);
    if (naming) return naming.data.schemaId;
    const { state } = streamId.startsWith('record-')
      ? await loadAggregate(store, streamId, recordAggregate)
      : await loadAggregate(store, streamId, documentAggregate);
    return state.exists ? state.schemaId : undefined;
  };
  let total = 0;
  for (const { streamId, events } of staged) {
    const last = events[events.length - 1];
    if (!last) continue;
    if (streamId.startsWith('folder-')) total += events.every(isContextRoot) ? 0 : 3;
    else if (streamId.startsWith('record-') || streamId.startsWith('document-')) {
      total += /Deleted$/.test(last.type) ? 1 : 1 + schemaRows(await schemaOf(await schemaIdOf(streamId, events)));
    }
  }
  return total;
}

/** The context root's creation (the only folder without a parent). */
const isContextRoot = (e: NewEvent) => e.type === 'FolderCreated' && e.data.parentFolderId === null;
