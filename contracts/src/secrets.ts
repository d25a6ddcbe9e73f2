import { createHash, createHmac, randomBytes } from 'node:crypto';

/** Credential prefixes (decisions §2). Only the hash of a secret is ever stored. */
export const PREFIX = {
  rootLive: 'sk_live_',
  rootTest: 'sk_test_',
  scoped: 'ssk_',
  token: 'st_',
  developer: 'dt_',
} as const;

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function newSecret(prefix: string, length = 40): string {
  const bytes = randomBytes(length);
  let s = '';
  for (const b of bytes) s += ALPHABET[b % 62];
  return prefix + s;
}

export const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');

/** A sub-key for one purpose, derived from the service secret. */
export const deriveKey = (secret: Buffer, purpose: string) =>
  createHmac('sha256', secret).update(`svc:${purpose}`).digest();

/**
 * Blind index of a sensitive value: a keyed HMAC over its tenant, context,
 * type, field and canonical JSON, so equal values match and nothing reveals them.
 */
export const blindIndex = (key: Buffer, scope: string[], value: unknown) =>
  createHmac('sha256', key)
    .update(JSON.stringify([...scope, value]))
    .digest('hex');
