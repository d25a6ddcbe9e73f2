import type { SchemaDefinition } from '@svc/contracts';

/**
 * The sealing port: sensitive payload values are sealed before they enter an
 * event and equality lookups use their blind index (a keyed HMAC). Deciders
 * that store payloads take it as an input, so what they decide is what is stored;
 * command-api's PayloadSealer implements it (the keys stay there).
 */
export interface PayloadSealing {
  seal(def: Pick<SchemaDefinition, 'fields'>, payload: Record<string, unknown>): Record<string, unknown>;
  unseal(payload: Record<string, unknown>): Record<string, unknown>;
  /** Blind index of each sensitive value present in a plaintext payload; `scope`: tenant, context, typeName. */
  blind(
    scope: [string, string, string],
    def: Pick<SchemaDefinition, 'fields'>,
    payload: Record<string, unknown>,
  ): Record<string, string>;
}
