// Live updates: a screen subscribes to the change stream (GET /v1/changes through the client's changes(), which
// reconnects and resumes after the last event) for as long as it is shown, and is told of each change it cares about.
// One connection per subscribed screen; the stream closes when the screen goes (the AbortController).
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ChangeEntityKind, ChangeEvent } from '@svc/client';
import { asApiError, useClient, type ApiError } from './api';

export interface LiveOptions {
  /** Only records and documents of these types. */
  types?: string[];
  entities?: ChangeEntityKind[];
  /** Off: no connection (a screen's "Live" switch). */
  enabled?: boolean;
}

export interface Live {
  /** The changes seen since the screen subscribed, newest first (at most 50). */
  recent: ChangeEvent[];
  /** Set when the stream was refused (a credential without read permission, for example). */
  error: ApiError | undefined;
}

/** Calls `onChange` for every change as it arrives while the screen is shown. */
export function useChanges(onChange: (e: ChangeEvent) => void, opts: LiveOptions = {}): Live {
  const client = useClient();
  const [recent, setRecent] = useState<ChangeEvent[]>([]);
  const [error, setError] = useState<ApiError>();
  // The latest callback, so a re-render does not reopen the stream.
  const handler = useRef(onChange);
  handler.current = onChange;
  const key = JSON.stringify([opts.types ?? [], opts.entities ?? [], opts.enabled ?? true]);
  useEffect(() => {
    if (opts.enabled === false) return;
    const stop = new AbortController();
    setError(undefined);
    (async () => {
      try {
        for await (const change of client.changes({
          types: opts.types,
          entities: opts.entities,
          signal: stop.signal,
        })) {
          setRecent((r) => [change, ...r].slice(0, 50));
          handler.current(change);
        }
      } catch (e) {
        if (!stop.signal.aborted) setError(asApiError(e));
      }
    })();
    return () => stop.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [client, key]);
  return { recent, error };
}

/** A counter and a function that bumps it at most once per `ms` (the last call within a window is not lost). */
export function useThrottledTick(ms: number): [number, () => void] {
  const [tick, setTick] = useState(0);
  const timer = useRef<ReturnType<typeof setTimeout>>();
  const bump = () => {
    if (timer.current) return;
    timer.current = setTimeout(() => {
      timer.current = undefined;
      setTick((t) => t + 1);
    }, ms);
  };
  return [tick, bump];
}
