import { z } from 'zod';

/**
 * The activity log (spec "Activity log entry", "Activity log"; decisions §10;
 * docs/api.md "Activity log"): one entry per `/v1` request of a tenant.
 */

/** The spec's allow-listed `resource` names. */
export const ACTIVITY_RESOURCES = [
  'documents',
  'records',
  'search',
  'schemas',
  'folders',
  'usage',
  'models',
  'rag',
  'chat',
  'ask',
  'export',
  'erasure-requests',
  'auth',
  'ping',
  'entities',
  'namespaces',
  'users',
] as const;
/** Legacy names the filter accepts; no entry ever carries them, so they match nothing. */
export const LEGACY_ACTIVITY_RESOURCES = ['clients', 'orgs'] as const;
/**
 * `/v1` route families outside the spec's list: their entries carry the family's
 * own name (the `resource` filter does not take these names; they are found without it).
 */
export const OTHER_ACTIVITY_RESOURCES = ['admin', 'contexts', 'scripts', 'triggers', 'trigger-failures'] as const;
/** Resource of a `/v1` path that names no route family. */
export const UNKNOWN_ACTIVITY_RESOURCE = 'other';

export const ACTIVITY_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
/** `/v1/admin/*` audit-log family page size (spec "Size and count limits"; decisions §10). */
export const ACTIVITY_LOG_LIMIT = { min: 1, max: 500, default: 200 } as const;
/** Without `startTime` the window starts this long before `endTime` (before the request without one). */
export const ACTIVITY_DEFAULT_WINDOW_MS = 24 * 60 * 60 * 1000;
export const KEY_ID_RE = /^[A-Za-z0-9_-]{1,128}$/;
/** Longest path recorded (longer ones are cut, marked with a trailing `…`). */
export const ACTIVITY_PATH_MAX = 1024;

const MAPPED: Record<string, string> = Object.fromEntries([
  ...ACTIVITY_RESOURCES.map((r) => [r, r]),
  ...OTHER_ACTIVITY_RESOURCES.map((r) => [r, r]),
  ['tokens', 'auth'],
]);

/**
 * The resource of a `/v1` request: the first path segment after `/v1` mapped to
 * the spec's names (`tokens` is `auth`; POST `/v1/documents/{id}/ask` is `ask`);
 * a segment that names no route family is `other`. `path` has no query string.
 */
export function activityResource(method: string, path: string): string {
  const segs = path.split('/');
  // ['', 'v1', first, ...]
  const first = segs[2] ?? '';
  if (first === 'documents' && method === 'POST' && segs.length === 5 && segs[4] === 'ask' && segs[3] !== '')
    return 'ask';
  return Object.hasOwn(MAPPED, first) ? MAPPED[first] : UNKNOWN_ACTIVITY_RESOURCE;
}

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2}))?$/i;

/**
 * Epoch milliseconds of an ISO-8601 instant: a date (`2026-05-01`, UTC midnight)
 * or a date-time with seconds optional, a fraction of up to 9 digits (cut to
 * milliseconds) and a zone (`Z` or `±hh:mm`). Null for anything else, including
 * impossible dates such as `2026-02-31`.
 */
export function parseIsoInstant(text: string): number | null {
  const m = ISO_RE.exec(text);
  if (!m) return null;
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  const [Y, M, D, H, MI, S] = [y, mo, d, h, mi, s].map(Number);
  if (M < 1 || M > 12 || D < 1 || H > 23 || MI > 59 || S > 59) return null;
  const base = Date.UTC(Y, M - 1, D, H, MI, S, Number(frac.padEnd(3, '0').slice(0, 3)));
  const check = new Date(Date.UTC(Y, M - 1, D));
  if (check.getUTCFullYear() !== Y || check.getUTCMonth() !== M - 1 || check.getUTCDate() !== D) return null;
  if (zone.toUpperCase() === 'Z') return base;
  const zm = /^([+-])(\d{2}):?(\d{2})$/.exec(zone)!;
  const offH = Number(zm[2]);
  const offM = Number(zm[3]);
  if (offH > 23 || offM > 59) return null;
  return base - (zm[1] === '+' ? 1 : -1) * (offH * 60 + offM) * 60_000;
}

/** One query value: a repeated parameter (an array) is a 400, never silently the first or last. */
const one = (name: string) => z.string({ error: `${name} must be given once, as text` });

const instant = (name: string) =>
  one(name).transform((v, ctx) => {
    const ms = parseIsoInstant(v);
    if (ms === null) {
      ctx.addIssue({
        code: 'custom',
        message: `${name} must be an ISO-8601 date-time with a zone, e.g. 2026-05-01T12:00:00Z`,
      });
      return z.NEVER;
    }
    return ms;
  });

/**
 * Query of GET `/v1/admin/logs`. Unknown parameters are a 400 (a misspelt filter
 * would otherwise widen an audit query without telling).
 */
export const activityLogQuery = z.strictObject({
  startTime: instant('startTime')
    .optional()
    .describe('Window start (ISO-8601, inclusive); default 24 hours before endTime, or before the request'),
  endTime: instant('endTime')
    .optional()
    .describe(
      'Window end (ISO-8601, inclusive to the millisecond); default open-ended. Earlier than startTime is a 400',
    ),
  limit: one('limit')
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return ACTIVITY_LOG_LIMIT.default;
      const n = /^\d+$/.test(v) ? Number(v) : NaN;
      if (!Number.isInteger(n) || n < ACTIVITY_LOG_LIMIT.min || n > ACTIVITY_LOG_LIMIT.max) {
        ctx.addIssue({
          code: 'custom',
          message: `limit must be an integer from ${ACTIVITY_LOG_LIMIT.min} to ${ACTIVITY_LOG_LIMIT.max}`,
        });
        return z.NEVER;
      }
      return n;
    })
    .describe(
      `Entries returned, ${ACTIVITY_LOG_LIMIT.min}-${ACTIVITY_LOG_LIMIT.max}, default ${ACTIVITY_LOG_LIMIT.default}`,
    ),
  errorsOnly: one('errorsOnly')
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === 'false') return false;
      if (v === 'true') return true;
      ctx.addIssue({ code: 'custom', message: 'errorsOnly must be true or false' });
      return z.NEVER;
    })
    .describe('true: only entries with status >= 400 (default false)'),
  resource: z
    .enum([...ACTIVITY_RESOURCES, ...LEGACY_ACTIVITY_RESOURCES], {
      error: `resource must be one of ${[...ACTIVITY_RESOURCES, ...LEGACY_ACTIVITY_RESOURCES].join(', ')}`,
    })
    .optional()
    .describe('One allow-listed resource name (legacy clients and orgs match nothing)'),
  method: one('method')
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return undefined;
      const up = v.toUpperCase();
      if (!(ACTIVITY_METHODS as readonly string[]).includes(up)) {
        ctx.addIssue({ code: 'custom', message: `method must be one of ${ACTIVITY_METHODS.join(', ')}` });
        return z.NEVER;
      }
      return up;
    })
    .describe(`HTTP method, case-insensitive: ${ACTIVITY_METHODS.join(', ')}`),
  keyId: one('keyId')
    .optional()
    .refine((v) => v === undefined || KEY_ID_RE.test(v), {
      message: 'keyId must be 1-128 letters, digits, hyphens or underscores',
    })
    .describe('Credential id (never the secret): 1-128 letters, digits, - or _'),
});
export type ActivityLogQuery = z.infer<typeof activityLogQuery>;

export const activityEntry = z.object({
  timestamp: z.string().describe('When the request arrived (ISO-8601 UTC, milliseconds)'),
  method: z.string(),
  resource: z.string(),
  status: z.number().int(),
  keyId: z.string().optional(),
  durationMs: z.number().optional(),
  path: z.string().optional(),
  requestId: z.string().optional(),
  errorCode: z.string().nullable().optional(),
});
export type ActivityEntry = z.infer<typeof activityEntry>;

export const activityLogResponse = z.object({
  entries: z.array(activityEntry),
  truncated: z.boolean(),
  queryDurationMs: z.number(),
  tenantId: z.string(),
});
