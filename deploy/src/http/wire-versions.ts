import type { WireVersionEntry, WireVersionTable } from '@svc/contracts';

/**
 * `Service-Version` resolution (spec "Versioning"): the request header when
 * present (an unpublished or expired value is refused), else the credential's
 * `wireVersionPin` stamped at mint (when still served), else the platform floor.
 */

const expired = (e: WireVersionEntry, now: Date) => e.sunsetAt !== null && now.getTime() >= Date.parse(e.sunsetAt);

/** The entry of a version the table serves at `now`; undefined when unpublished or expired. */
export function servedVersion(table: WireVersionTable, version: string, now: Date): WireVersionEntry | undefined {
  const e = table.versions.find((v) => v.version === version);
  return e && !expired(e, now) ? e : undefined;
}

/** The versions served at `now`, for the 400's message. */
export const supportedVersions = (table: WireVersionTable, now: Date) =>
  table.versions.filter((v) => !expired(v, now)).map((v) => v.version);

/** The version a response is served in when the request sent no (valid) header. */
export function fallbackVersion(table: WireVersionTable, pin: string | null | undefined, now: Date): WireVersionEntry {
  const pinned = pin ? servedVersion(table, pin, now) : undefined;
  return (
    pinned ??
    table.versions.find((v) => v.version === table.floor) ?? {
      version: table.floor,
      deprecatedAt: null,
      sunsetAt: null,
    }
  );
}

/**
 * `Deprecation` (RFC 9745, a structured-field date `@<epoch seconds>`) and `Sunset` (RFC 8594, an HTTP-date) of a
 * deprecated version.
 */
export function deprecationHeaders(e: WireVersionEntry): Record<string, string> {
  const h: Record<string, string> = {};
  if (e.deprecatedAt) h.deprecation = `@${Math.floor(Date.parse(e.deprecatedAt) / 1000)}`;
  if (e.sunsetAt) h.sunset = new Date(e.sunsetAt).toUTCString();
  return h;
}
