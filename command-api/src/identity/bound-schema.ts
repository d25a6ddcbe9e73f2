import { invalid, type Principal } from '@svc/contracts';
import type { EventStore } from '@svc/domain';
import { loadSchema, type LiveSchema } from '../schemas/routes';

/**
 * A schema of the caller's context an identity (entity or user) may bind to: 400 when it is not one or does not allow
 * that surface.
 */
export async function identitySchema(
  store: EventStore,
  p: Principal,
  schemaId: string,
  surface: 'entity' | 'user',
): Promise<LiveSchema> {
  const schema = await loadSchema(store, p, schemaId).catch(() => {
    throw invalid(`schemaId '${schemaId}' is not a schema of this context`);
  });
  if (!schema.definition.allowedSurfaces.includes(surface))
    throw invalid(`The schema does not allow the ${surface} surface`);
  return schema;
}

/** The schema an identity was bound to (it may have been deleted since: then only the bare payload rules apply). */
export const boundDefinition = async (
  store: EventStore,
  p: Principal,
  identity: { exists: false } | { exists: true; schemaId?: string | null },
) =>
  identity.exists && identity.schemaId
    ? (await loadSchema(store, p, identity.schemaId).catch(() => undefined))?.definition
    : undefined;
