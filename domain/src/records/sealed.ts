/**
 * The stored form of a sealed (sensitive) value: `{ "$sealed": "<base64 iv|tag|ciphertext>" }`
 * (command-api/src/records/sealing.ts seals and unseals). Readers that show stored
 * payloads without unsealing (history, the audit export) recognise it here.
 */
export const SEALED_KEY = '$sealed';
export type Sealed = { [SEALED_KEY]: string };
export const isSealed = (v: unknown): v is Sealed =>
  typeof v === 'object' && v !== null && typeof (v as Sealed)[SEALED_KEY] === 'string';
