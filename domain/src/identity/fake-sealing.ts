import type { SchemaDefinition } from '@svc/contracts';
import { isSealed, SEALED_KEY } from '../records/sealed';
import type { PayloadSealing } from '../shared/sealing';

/**
 * A readable stand-in for the sealer in unit specs: a sensitive value `v` is
 * stored as `{ $sealed: JSON(v) }` (the real one encrypts), so a spec can name
 * the stored event exactly. Not exported from the package.
 */
export const fakeSealing = {
  sealed: (v: unknown) => ({ [SEALED_KEY]: JSON.stringify(v) }),
  seal(def: Pick<SchemaDefinition, 'fields'>, payload: Record<string, unknown>) {
    const out = { ...payload };
    for (const f of def.fields ?? [])
      if (f.sensitive && out[f.fieldId] !== undefined && out[f.fieldId] !== null && !isSealed(out[f.fieldId]))
        out[f.fieldId] = fakeSealing.sealed(out[f.fieldId]);
    return out;
  },
  unseal(payload: Record<string, unknown>) {
    return Object.fromEntries(
      Object.entries(payload).map(([k, v]) => [k, isSealed(v) ? (JSON.parse(v[SEALED_KEY]) as unknown) : v]),
    );
  },
} satisfies Pick<PayloadSealing, 'seal' | 'unseal'> & { sealed(v: unknown): unknown };
