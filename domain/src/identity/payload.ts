import type { SchemaDefinition } from '@svc/contracts';
import { checkStoredPayload } from '../records/payload';
import type { PayloadSealing } from '../shared/sealing';

/** Payload rules without a schema: reserved keys, number rules and the inline size limit. */
export const BARE_DEFINITION = {
  typeName: 'bare',
  displayName: 'bare',
  allowedSurfaces: ['user', 'entity'],
} as SchemaDefinition;

/**
 * What a user or entity event stores as its payload: the plaintext checked against the bound schema (without one,
 * the bare rules), then sealed (the schema's sensitive values).
 */
export function storedIdentityPayload(
  sealing: Pick<PayloadSealing, 'seal'>,
  def: SchemaDefinition | undefined,
  payload: Record<string, unknown>,
): Record<string, unknown> {
  // users and entities: on every write (docs/identity.md)
  checkStoredPayload(def ?? BARE_DEFINITION, payload, { enforceRequired: true });
  return def ? sealing.seal(def, payload) : payload;
}
