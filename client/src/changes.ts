// The change stream (GET /v1/changes) as an async iterator that survives dropped connections: it reconnects with
// Last-Event-ID set to the last event it yielded, so the server resumes right after it (no gap, no duplicate).
// fetch + eventsource-parser rather than EventSource: EventSource cannot send an Authorization header.
import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';
import type { Schemas } from './api-types.js';
import { ApiError } from './errors.js';

/** The entity kinds a stream can be limited to (`entities`). */
export type ChangeEntityKind = 'records' | 'documents' | 'folders';
/** The change stream's events as the API description gives them: `{event, data}` per event name. */
type Described = Schemas['StreamChangesEvent'];
/** The event names; `record.indexed` comes once a record is searchable. */
export type ChangeEventType = Described['event'];
export type RecordChangeType = Extract<ChangeEventType, `record.${string}`>;
export type DocumentChangeType = Extract<ChangeEventType, `document.${string}`>;
export type FolderChangeType = Extract<ChangeEventType, `folder.${string}`>;

/**
 * One change as the stream's `data:` carries it: `{position, type, entityId, typeName, version, at, entity}`, where
 * `position` is the change's place in the log (also the SSE `id:`; pass it as `startFrom` to resume after it) and
 * `entity` what a GET of the entity answers this caller at that version (null after a delete). Discriminated by
 * `type`: checking it narrows `entity` to a record, a document or a folder.
 */
export type ChangeEvent = {
  [N in ChangeEventType]: Omit<Extract<Described, { event: N }>['data'], 'type'> & { type: N };
}[ChangeEventType];

export interface ChangesOptions {
  /** Only records and documents of these type names (folders have none and are left out). */
  types?: string[];
  /** Only these entity kinds (default: all three). */
  entities?: ChangeEntityKind[];
  /**
   * Start after this position (an earlier event's `position`). Without it the stream starts at the head: changes from
   * now on.
   */
  startFrom?: number | string;
  /** Ends the iteration (quietly: the loop just stops) and closes the connection. */
  signal?: AbortSignal;
  /**
   * The first wait before reconnecting, in ms (default: the server's `retry:` or 1,000); doubled on each failed
   * attempt, up to 30 s.
   */
  retryMs?: number;
}

/** What the stream needs of the client: where, with which headers and credential, through which fetch. */
export interface ChangesConnection {
  baseUrl: string;
  headers: Record<string, string>;
  bearer: () => Promise<string | undefined>;
  fetch: typeof globalThis.fetch;
}

/** Answers worth another attempt: too many open streams, and a proxy or service briefly unavailable. */
const RETRYABLE = new Set([408, 429, 502, 503, 504]);
const MAX_RETRY_MS = 30_000;

/** Waits `ms`, or less when the signal aborts. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Seconds of a Retry-After header, in ms (0 when absent or a date). */
const retryAfterMs = (r: Response): number => {
  const s = Number(r.headers.get('retry-after'));
  return Number.isFinite(s) && s > 0 ? s * 1000 : 0;
};

/**
 * The caller's visible changes, oldest first, until `signal` aborts or the loop ends. A dropped connection (a
 * network error, the server closing the stream, a 429/502/503/504 answer) is opened again after a wait, resuming
 * after the last event yielded. Any other refusal (401, 403, 400, ...) is thrown as an ApiError.
 */
export async function* changes(conn: ChangesConnection, opts: ChangesOptions = {}): AsyncGenerator<ChangeEvent> {
  const outer = opts.signal;
  let last: string | undefined;
  let serverRetryMs: number | undefined;
  let failures = 0;
  const wait = async (atLeastMs = 0) => {
    const base = opts.retryMs ?? serverRetryMs ?? 1000;
    await pause(Math.max(atLeastMs, Math.min(MAX_RETRY_MS, base * 2 ** Math.max(0, failures - 1))), outer);
  };
  while (!outer?.aborted) {
    const query = new URLSearchParams();
    if (opts.types?.length) query.set('types', opts.types.join(','));
    if (opts.entities?.length) query.set('entities', opts.entities.join(','));
    if (last === undefined && opts.startFrom !== undefined) query.set('startFrom', String(opts.startFrom));
    const headers: Record<string, string> = { ...conn.headers, accept: 'text/event-stream' };
    const token = await conn.bearer();
    if (token) headers.authorization = `Bearer ${token}`;
    if (last !== undefined) headers['last-event-id'] = last;

    // One controller per connection: the caller's signal, or the loop ending early, closes it.
    const ctl = new AbortController();
    const onAbort = () => ctl.abort(outer?.reason);
    outer?.addEventListener('abort', onAbort, { once: true });
    let reader: ReadableStreamDefaultReader<EventSourceMessage> | undefined;
    try {
      let response: Response;
      try {
        response = await conn.fetch(`${conn.baseUrl}/v1/changes${query.toString() ? `?${query}` : ''}`, {
          headers,
          signal: ctl.signal,
        });
      } catch {
        if (outer?.aborted) return;
        failures++;
        await wait();
        continue;
      }
      if (!response.ok) {
        if (!RETRYABLE.has(response.status)) throw await ApiError.from(response);
        await response.body?.cancel().catch(() => {});
        failures++;
        await wait(retryAfterMs(response));
        continue;
      }
      failures = 0;
      if (!response.body)
        throw new ApiError(
          response.status,
          { message: 'the change stream answered without a body' },
          response.headers.get('x-request-id'),
        );
      reader = response.body
        .pipeThrough(new TextDecoderStream())
        .pipeThrough(new EventSourceParserStream({ onRetry: (ms) => (serverRetryMs = ms) }))
        .getReader();
      for (;;) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch {
          if (outer?.aborted) return;
          break; // the connection dropped mid-stream
        }
        if (next.done) break; // the server ended the stream: open it again, as EventSource does
        const message = next.value;
        if (!message.data) continue;
        const change = JSON.parse(message.data) as ChangeEvent;
        last = message.id ?? String(change.position);
        yield change;
      }
    } finally {
      outer?.removeEventListener('abort', onAbort);
      await reader?.cancel().catch(() => {});
      ctl.abort();
    }
    await wait();
  }
}
