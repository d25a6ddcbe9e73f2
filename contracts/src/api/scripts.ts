import { z } from 'zod';
import { identifier, listEnvelope } from '../common';

/** Scripts (docs/scripts.md; decisions §4, §7). */
export const pushScriptBody = z
  .object({
    name: identifier,
    source: z.string().min(1),
    declaredInputContract: z.record(z.string(), z.unknown()).nullable().optional(),
    description: z.string().max(1024).nullable().optional(),
  })
  .strict();
export type PushScript = z.infer<typeof pushScriptBody>;

export const scriptResponse = z.object({
  id: z.string(),
  name: z.string(),
  version: z.number().int(),
  createdAt: z.string(),
  sourceBytes: z.number().int(),
  declaredInputContract: z.record(z.string(), z.unknown()).nullable(),
  description: z.string().nullable().optional(),
  /** Only for a caller holding `scripts:r`. */
  source: z.string().optional(),
});

/**
 * With `name`: that name's versions, newest first. Without: the newest live version of every name in the context, by
 * name.
 */
export const listScriptsQuery = z.object({ name: identifier.optional(), startFrom: z.string().optional() });
export const scriptListResponse = listEnvelope(scriptResponse);

/**
 * A script version as a request names it (execute, trigger rules): a version number (as a number or its decimal string)
 * or `latest`.
 */
export const scriptVersionRef = z.union([
  z.literal('latest'),
  z.string().regex(/^[1-9][0-9]{0,8}$/, 'must be a version number or "latest"'),
  z.number().int().positive(),
]);
/** A script version as stored and shown: the number, or `latest` (the newest live version, resolved when it runs). */
export type ScriptVersionRef = number | 'latest';
export const scriptVersionOf = (v: z.infer<typeof scriptVersionRef>): ScriptVersionRef =>
  v === 'latest' ? 'latest' : Number(v);

/** `version`: a version number (as a string or a number) or `latest`, resolved at request time. */
export const executeScriptBody = z
  .object({
    scriptRef: z
      .object({
        name: identifier,
        version: scriptVersionRef.default('latest'),
      })
      .strict(),
    input: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type ExecuteScript = z.infer<typeof executeScriptBody>;

export const IDEMPOTENCY_KEY_RE = /^[A-Za-z0-9._:-]{1,128}$/;

export const executeScriptResponse = z.object({
  result: z.unknown(),
  execution: z.object({ id: z.string(), durationMs: z.number() }),
});
