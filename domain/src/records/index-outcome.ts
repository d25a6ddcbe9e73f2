/**
 * Of several index outcomes per record, the one that can still apply: the record's highest `forRevision`, the
 * later of equals (decided later). Used where outcomes are reported (the search side) and where they are applied
 * (the records read model), so both keep the same one.
 */
export function newestOutcomes<T>(
  items: Iterable<T>,
  outcomeOf: (x: T) => { recordId: string; forRevision: number },
): Map<string, T> {
  const newest = new Map<string, T>();
  for (const x of items) {
    const o = outcomeOf(x);
    const held = newest.get(o.recordId);
    if (held === undefined || outcomeOf(held).forRevision <= o.forRevision) newest.set(o.recordId, x);
  }
  return newest;
}
