import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { blindIndex, type SchemaDefinition } from '@svc/contracts';
import { isSealed, ownValue, type PayloadSealing, SEALED_KEY } from '@svc/domain';

/**
 * Sensitive values are sealed (AES-256-GCM) before they enter an event, so the
 * log, the read models and history hold ciphertext only; equality lookups use a
 * keyed HMAC (blind index) computed here, on the write path. The deciders that
 * store payloads get it as their PayloadSealing port (domain/src/shared/sealing.ts).
 */
const SEALED = SEALED_KEY;

const sensitiveFields = (def: Pick<SchemaDefinition, 'fields'>) =>
  (def.fields ?? []).filter((f) => f.sensitive).map((f) => f.fieldId);

export class PayloadSealer implements PayloadSealing {
  constructor(
    private readonly key: Buffer,
    private readonly blindKey: Buffer,
  ) {}

  seal(def: Pick<SchemaDefinition, 'fields'>, payload: Record<string, unknown>): Record<string, unknown> {
    const fields = sensitiveFields(def);
    if (!fields.length) return payload;
    const out = { ...payload };
    for (const f of fields) {
      const v = ownValue(out, f);
      if (v === undefined || v === null || isSealed(v)) continue;
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', this.key, iv);
      const body = Buffer.concat([c.update(JSON.stringify(v), 'utf8'), c.final()]);
      out[f] = { [SEALED]: Buffer.concat([iv, c.getAuthTag(), body]).toString('base64') };
    }
    return out;
  }

  unseal(payload: Record<string, unknown>): Record<string, unknown> {
    let out: Record<string, unknown> | undefined;
    for (const [k, v] of Object.entries(payload)) {
      if (!isSealed(v)) continue;
      const raw = Buffer.from(v[SEALED], 'base64');
      const d = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
      d.setAuthTag(raw.subarray(12, 28));
      out ??= { ...payload };
      out[k] = JSON.parse(Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8'));
    }
    return out ?? payload;
  }

  /** Blind index of each sensitive value present (plaintext payload). */
  blind(
    scope: [string, string, string],
    def: Pick<SchemaDefinition, 'fields'>,
    payload: Record<string, unknown>,
  ): Record<string, string> {
    const out: Record<string, string> = {};
    for (const f of sensitiveFields(def)) {
      const v = ownValue(payload, f);
      if (v !== undefined && v !== null) out[f] = blindIndex(this.blindKey, [...scope, f], v);
    }
    return out;
  }
}
