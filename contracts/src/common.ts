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

/**
 * A published `Service-Version`. When a successor is published the entry gets
 * `deprecatedAt` (the successor's date; responses then carry `Deprecation`,
 * RFC 9745) and `sunsetAt` 12 months later (`Sunset`, RFC 8594); from
 * `sunsetAt` on the version is expired (400 UNSUPPORTED_WIRE_VERSION).
 */
export interface WireVersionEntry {
  version: string;
  /** ISO-8601 instant the version was (or will be) deprecated; null while current. */
  deprecatedAt: string | null;
  /** ISO-8601 instant after which the version is no longer served; null while current. */
  sunsetAt: string | null;
}

/** The versions a deployment serves and the floor used when neither the header nor the credential pins one. */
export interface WireVersionTable {
  versions: readonly WireVersionEntry[];
  floor: string;
}

/** The one table of published wire versions (oldest first). */
export const WIRE_VERSION_TABLE: WireVersionTable = {
  versions: [{ version: '2026-08-01', deprecatedAt: null, sunsetAt: null }],
  floor: '2026-08-01',
};

/** The published wire versions; `CURRENT_WIRE_VERSION` is the newest, the platform floor when nothing else pins one. */
export const WIRE_VERSIONS: readonly string[] = WIRE_VERSION_TABLE.versions.map((v) => v.version);
export const CURRENT_WIRE_VERSION = '2026-08-01';

export type ListEnvelope<T> = { data: T[]; nextCursor: string | null };

export const listEnvelope = <T extends z.ZodTypeAny>(item: T) =>
  z.object({ data: z.array(item), nextCursor: z.string().nullable() });

// Loose: some refusals carry more fields (balanceCents on a 402, estimatedTokens on a 413, correlationId on a 500).
export const errorBody = z.looseObject({
  message: z.string(),
  errorCode: z.string().optional(),
  requestId: z.string().optional(),
});
