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
  if (!r.success)
    throw invalid(`Invalid body: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
}

/** What one resource's PATCH body may hold. */
export interface PatchRules {
  /** Keys fixed once the resource is created. */
  immutable: readonly string[];
  /** The refusal of a fixed key (default: `<key> cannot be changed`). */
  fixed?: (key: string) => string;
  /** Keys a PATCH may change. */
  patchable: readonly string[];
  /** How their values validate (a 400 naming every issue). */
  fields?: z.ZodTypeAny;
}

/**
 * Rejections of a PATCH body that do not depend on the resource: a fixed key, a key a PATCH may not change or clear, an
 * invalid value.
 */
export function checkPatchBody(body: Record<string, unknown>, rules: PatchRules): void {
  for (const k of rules.immutable)
    if (k in body) throw invalid(rules.fixed ? rules.fixed(k) : `${k} cannot be changed`);
  requirePatchableKeys(body, rules.patchable);
  if (rules.fields) requireValidFields(body, rules.fields);
}
