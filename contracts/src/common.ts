import { z } from 'zod';

/** `typeName`, field ids and lookup field names. */
export const IDENTIFIER_RE = /^[A-Za-z0-9_-]{1,64}$/;
export const identifier = z.string().regex(IDENTIFIER_RE, 'must match ^[A-Za-z0-9_-]{1,64}$');

export const RESERVED_NAMES = new Set(['userId', 'scopes']);

export const uuid = z.string().uuid();

/** `<namespace>:<value>`, at most two entries. */
export const scopeEntry = z.string().regex(/^[A-Za-z0-9_-]{1,64}:[^\s]{1,256}$/, 'must be <namespace>:<value>');
export const scopes = z.array(scopeEntry).max(2, 'at most 2 scopes');

export const LIST_LIMIT = { min: 1, max: 100, default: 20 } as const;

/** The only published wire version; the platform floor when nothing else pins one. */
export const WIRE_VERSIONS = ['2026-08-01'] as const;
export const CURRENT_WIRE_VERSION = '2026-08-01';

export type ListEnvelope<T> = { data: T[]; nextCursor: string | null };

export const listEnvelope = <T extends z.ZodTypeAny>(item: T) =>
  z.object({ data: z.array(item), nextCursor: z.string().nullable() });

export const errorBody = z.object({
  message: z.string(),
  errorCode: z.string().optional(),
  requestId: z.string().optional(),
});
