import { z } from 'zod';

/**
 * The audit export (decisions §1, §4, §10; docs/api.md "Export"): GET
 * `/v1/export?from=&to=&streams=&startFrom=`, one stored event a line.
 */

// ISO-8601: a calendar date, or a date and time with a zone (Z or ±hh:mm); a time without a zone is ambiguous and
// refused.
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2})))?$/;

/** Epoch milliseconds of an ISO-8601 time, or null when it is not one (or names no real day and time). */
export function parseIsoTime(s: string): number | null {
  const m = ISO_TIME.exec(s);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (mo < 1 || mo > 12 || d < 1 || d > new Date(Date.UTC(y, mo, 0)).getUTCDate()) return null;
  if (m[4] !== undefined && (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6] ?? 0) > 59)) return null;
  if (m[7] !== undefined && (Number(m[7]) > 23 || Number(m[8]) > 59)) return null;
  // (A time without a zone never matches the pattern; a bare date is UTC midnight.)
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : t;
}

const isoTime = z
  .string()
  .max(64)
  .refine((s) => parseIsoTime(s) !== null, 'must be an ISO-8601 time (a date, or a date and time with Z or an offset)');

export const exportQuery = z
  .object({
    /** Events recorded at or after this time. */
    from: isoTime.optional(),
    /** Events recorded before this time. */
    to: isoTime.optional(),
    /**
     * Comma-separated entity kinds (record, document, folder, schema, ...: the kinds of stream the log holds); all when
     * absent.
     */
    streams: z.string().max(1000).optional(),
    /** The `position` of the last line received: the export resumes after it. */
    startFrom: z
      .string()
      .regex(/^\d{1,15}$/, 'must be the position of an exported line')
      .optional(),
  })
  // A parameter the export does not take is refused, not ignored: a typo must not widen what is exported.
  .strict()
  .superRefine((q, ctx) => {
    if (q.from !== undefined && q.to !== undefined && (parseIsoTime(q.from) ?? 0) > (parseIsoTime(q.to) ?? 0))
      ctx.addIssue({ code: 'custom', path: ['to'], message: 'must not be earlier than from' });
  });
export type ExportQuery = z.infer<typeof exportQuery>;

/** One line of the export (application/x-ndjson). */
export const exportLine = z.object({
  /** Global log position: strictly increasing in commit order; `startFrom` takes it. */
  position: z.number().int(),
  streamId: z.string(),
  type: z.string(),
  /** The entity stream's version after this event: its revision + 1 (1 for the event that created the stream). */
  version: z.number().int(),
  /** When the change was made (ISO-8601 UTC). */
  recordedAt: z.string(),
  tenantId: z.string(),
  contextId: z.string().nullable(),
  /** The credential (key id) and the identity (userId) that caused the event; null for the service's own work. */
  actor: z.object({ keyId: z.string().nullable(), userId: z.string().nullable() }),
  /** The event's data with sensitive values masked. */
  data: z.record(z.string(), z.unknown()),
});
export type ExportLine = z.infer<typeof exportLine>;
