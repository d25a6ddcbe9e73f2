// The console's one way to the service: @svc/client with the signed-in credential, at the origin and path the console
// is served from (the API's root is the directory of /console, so a path prefix in front of the router works too).
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, createClient, unwrap, type ServiceClient } from '@svc/client';
import type { Session } from './session';
import { observeRateLimit } from './rate-limit';

/** unwrap(client.GET(...)): the answer's data, or its refusal thrown as an ApiError. */
export { ApiError, unwrap };
export type { ServiceClient };

/** The API's base URL: the directory the console page is served from. */
export const apiBase = (): string => new URL('.', location.href).href.replace(/\/+$/, '');

export function clientFor(s: Pick<Session, 'token' | 'contextId'>): ServiceClient {
  const client = createClient({
    baseUrl: apiBase(),
    token: s.token,
    ...(s.contextId ? { contextId: s.contextId } : {}),
  });
  // The rate-limit headers of every answer, for the usage screen's headroom.
  client.use(observeRateLimit);
  return client;
}

export const ClientContext = createContext<ServiceClient | undefined>(undefined);

export function useClient(): ServiceClient {
  const c = useContext(ClientContext);
  if (!c) throw new ApiError(401, { message: 'Not signed in', errorCode: 'UNAUTHORIZED' });
  return c;
}

/** Turns whatever a call threw into an ApiError (a network failure too), so every screen shows refusals one way. */
export function asApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  return new ApiError(0, { message: e instanceof Error ? e.message : String(e), errorCode: 'NETWORK' });
}

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` with the client on mount and whenever `deps` change; a late answer of a superseded run is dropped. */
export function useLoad<T>(load: (c: ServiceClient) => Promise<T>, deps: unknown[]): Loaded<T> {
  const client = useClient();
  const [state, setState] = useState<{ data?: T; error?: ApiError; loading: boolean }>({ loading: true });
  const run = useRef(0);
  const reload = useCallback(() => {
    const mine = ++run.current;
    setState((s) => ({ ...s, loading: true }));
    load(client).then(
      (data) => mine === run.current && setState({ data, loading: false }),
      (e) => mine === run.current && setState({ error: asApiError(e), loading: false }),
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [client, ...deps]);
  useEffect(reload, [reload]);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}
