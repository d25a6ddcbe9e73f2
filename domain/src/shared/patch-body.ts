import { invalid } from '@svc/contracts';
import type { z } from 'zod';

/** Each key of a PATCH body is one a PATCH may change, and not null (a PATCH cannot clear it). */
export function requirePatchableKeys(body: Record<string, unknown>, patchable: readonly string[]): void {
  for (const k of Object.keys(body)) {
    if (!patchable.includes(k)) throw invalid(`${k} is not a patchable field`);
    if (body[k] === null) throw invalid(`${k} cannot be null in a PATCH`);
  }
}

/** The body's fields validate against `fields`; else a 400 naming every issue. */
export function requireValidFields(body: Record<string, unknown>, fields: z.ZodTypeAny): void {
  const r = fields.safeParse(body);
  if (!r.success) throw invalid(`Invalid body: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
}
