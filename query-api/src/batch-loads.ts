import DataLoader from 'dataloader';

/**
 * Loads by key, coalesced: a load asked for while `concurrency` batches are running waits for one of them to end,
 * and goes with every other load that waited into one query. An idle loader runs a load at the next turn of the
 * event loop (with whatever else that turn asked for), so a quiet service pays no delay; a busy one pays one query
 * per batch instead of one per read (the cost of a read the cache has not seen is the query's round trip, not its
 * row). A load never joins a query that has started, so it sees every write answered before it was asked.
 */
export function batchLoads<V>(
  loadMany: (keys: readonly string[]) => Promise<Map<string, V>>,
  o: { concurrency: number; maxBatch?: number },
): (key: string) => Promise<V | null> {
  /** Batches dispatched or about to be; the others wait in `waiting`, each for a running one to end. */
  let slots = 0;
  const waiting: Array<() => void> = [];
  const loader = new DataLoader<string, V | null>(
    async (keys) => {
      try {
        const found = await loadMany([...new Set(keys)]);
        return keys.map((k) => found.get(k) ?? null);
      } finally {
        const next = waiting.shift();
        if (next) next();
        else slots -= 1;
      }
    },
    {
      cache: false,
      maxBatchSize: o.maxBatch ?? 100,
      batchScheduleFn: (dispatch) => {
        if (slots >= o.concurrency) return void waiting.push(dispatch);
        slots += 1;
        setImmediate(dispatch);
      },
    },
  );
  return (key) => loader.load(key);
}
