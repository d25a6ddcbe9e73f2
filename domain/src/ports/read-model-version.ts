/**
 * The read models' version a request saw (docs/api.md "Consistency and caching").
 *
 * A process without a projector beside it (roles command and query) hears of no change to the read models in
 * time: another process's projector applies it, and a notification can arrive after the client's next request.
 * Its caches are checked instead against a version read on each request: the projection runner's checkpoint row
 * (`proj_checkpoints`), written in the same transaction as every batch it applies (and touched by a quarantine
 * release, which re-applies events without moving it). Its position and `xmin` (the transaction that last wrote
 * the row) change whenever the read models do; a write's response waits until that row is at the write
 * (read-your-writes barrier), so the client's next request reads a version at or after it, on any replica.
 *
 * The version is read by the credential lookup every such request makes anyway (one more column of the same
 * statement, hence of the same snapshot: no round trip of its own) and rides on the principal, under a symbol:
 * not serialized, and kept by the object spread that narrows a principal to another context. A cache entry is
 * stamped with the version of the request that read it (read before the entry's own read) and answers only a
 * request that saw that same version: the read models have not changed in between, so the entry is what the
 * database would answer now. Without a version (no credential, or a role that does not read one) the cache is
 * not used.
 */
const VERSION = Symbol.for('svc.readModelVersion');

/** The statement fragment (a scalar subquery) that reads the version of runner `$name` (a bound parameter). */
export const readModelVersionSql = (nameParam: string) =>
  `(SELECT position::text || '.' || xmin::text FROM proj_checkpoints WHERE name = ${nameParam})`;

/** Stamps `o` (a principal) with the read models' version its request saw. */
export function stampReadModelVersion<T extends object>(o: T, version: string | null | undefined): T {
  if (version) (o as Record<symbol, unknown>)[VERSION] = version;
  return o;
}

/** The read models' version stamped on `o` (a principal), if any. */
export const readModelVersionOf = (o: object | null | undefined): string | undefined =>
  o ? ((o as Record<symbol, unknown>)[VERSION] as string | undefined) : undefined;
