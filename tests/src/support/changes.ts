import { createParser } from 'eventsource-parser';
import type { Api } from './service';

/** One event of GET /v1/changes as a client reads it (parsed by eventsource-parser, never matched as raw text). */
export interface ChangeEvent {
  id: string | undefined;
  event: string | undefined;
  data: {
    position: number;
    type: string;
    entityId: string;
    typeName: string | null;
    version: number | null;
    at: string;
    entity: Record<string, any> | null;
  };
  /** When this client parsed it (ms, performance.now()). */
  receivedAt: number;
}

export interface ChangeStream {
  status: number;
  /** The refusal's body (status not 200). */
  body?: any;
  headers: Headers;
  events: ChangeEvent[];
  /** Comment lines seen (`: ping`). */
  comments: string[];
  /** Resolves once `n` events arrived in all (rejects after `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<ChangeEvent[]>;
  /** Resolves with the first event (of all received) that `match` accepts. */
  waitUntil(match: (e: ChangeEvent) => boolean, timeoutMs?: number): Promise<ChangeEvent>;
  close(): void;
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
}

/** Opens a change stream (`query` without the `?`; `lastEventId` sent as the Last-Event-ID header). */
export async function openChanges(
  api: Api,
  token: string,
  o: { query?: string; lastEventId?: string; headers?: Record<string, string> } = {},
): Promise<ChangeStream> {
  const abort = new AbortController();
  const headers: Record<string, string> = { accept: 'text/event-stream', ...(o.headers ?? {}) };
  if (o.lastEventId !== undefined) headers['last-event-id'] = o.lastEventId;
  const res = await api.fetch('GET', `/v1/changes${o.query ? `?${o.query}` : ''}`, {
    token,
    headers,
    signal: abort.signal,
  });
  const events: ChangeEvent[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  if (res.status !== 200) {
    const text = await res.text();
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    const never = () => Promise.reject(new Error(`stream refused: ${res.status}`));
    return {
      status: res.status,
      body,
      headers: res.headers,
      events,
      comments,
      waitFor: never,
      waitUntil: never,
      close: () => {},
      ended: Promise.resolve(),
    };
  }
  const parser = createParser({
    onEvent: (m) => {
      events.push({ id: m.id, event: m.event, data: JSON.parse(m.data), receivedAt: performance.now() });
      for (const w of waiters) w();
    },
    onComment: (c) => comments.push(c.trim()),
  });
  const ended = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
        parser.feed(decoder.decode(chunk, { stream: true }));
    } catch {
      // aborted by close()
    } finally {
      for (const w of waiters) w();
    }
  })();
  let done = false;
  void ended.then(() => (done = true));
  const until = (ok: () => boolean, what: string, timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (ok()) {
          waiters.delete(check);
          clearTimeout(t);
          resolve();
        } else if (done) {
          waiters.delete(check);
          clearTimeout(t);
          reject(new Error(`stream ended before ${what} (${events.length} events)`));
        }
      };
      const t = setTimeout(() => {
        waiters.delete(check);
        reject(
          new Error(
            `timed out waiting for ${what} (${events.length} events: ${events.map((e) => e.event).join(', ')})`,
          ),
        );
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  return {
    status: res.status,
    headers: res.headers,
    events,
    comments,
    async waitFor(n, timeoutMs = 15_000) {
      await until(() => events.length >= n, `${n} events`, timeoutMs);
      return events.slice(0, n);
    },
    async waitUntil(match, timeoutMs = 15_000) {
      let found: ChangeEvent | undefined;
      await until(() => (found = events.find(match)) !== undefined, 'a matching event', timeoutMs);
      return found!;
    },
    close: () => abort.abort(),
    ended,
  };
}
