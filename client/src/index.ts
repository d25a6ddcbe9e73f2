// @svc/client: a typed client of the service (docs/client.md). The types are generated from the service's
// /openapi.json (src/generated/openapi.ts, `npm run generate -w client`); every request goes through
// openapi-fetch over them. This file only adds what a description cannot say: errors as values, pagination,
// the presigned upload, the event streams and webhook signatures. It imports no other workspace.
import { createHmac, timingSafeEqual } from 'node:crypto';
import createFetchClient, { type Client } from 'openapi-fetch';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { components, operations, paths } from './generated/openapi';

export type { components, operations, paths };
export type Schemas = components['schemas'];
/** The error body `{message, errorCode, requestId}` (spec "Errors"). */
export type ErrorBody = Schemas['Error'];
/** One frame of each inference stream, `{event, data}`, discriminated by `event`. */
export type RagEvent = Schemas['RagEvent'];
export type AskDocumentEvent = Schemas['AskDocumentEvent'];
export type ChatEvent = Schemas['ChatEvent'];
export type StreamEvent = RagEvent | AskDocumentEvent | ChatEvent;

type JsonBody<O, S extends number> = O extends { responses: { [K in S]: { content: { 'application/json': infer B } } } } ? B : never;
type RequestBody<O> = O extends { requestBody: { content: { 'application/json': infer B } } } ? B : O extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
/** The JSON body of an operation's request and of its 200 / 201 answer, by operation id: `Body<'createRecord'>`, `Answer<'getRecord'>`. */
export type Body<Op extends keyof operations> = RequestBody<operations[Op]>;
export type Answer<Op extends keyof operations> = JsonBody<operations[Op], 200> | JsonBody<operations[Op], 201>;

/**
 * A refusal of the service as a value: the HTTP status, the body's `errorCode`
 * (branch on it, not on the message) and `requestId` (the error body's, else the
 * `x-request-id` header). `body` is the whole error body (some carry more fields).
 */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  readonly errorCode: string | undefined;
  readonly requestId: string | undefined;
  readonly body: ErrorBody & Record<string, unknown>;

  constructor(status: number, body: unknown, requestIdHeader?: string | null) {
    const b = (body && typeof body === 'object' ? body : { message: typeof body === 'string' && body ? body : `HTTP ${status}` }) as ErrorBody & Record<string, unknown>;
    // The reserved stubs answer {error: "not_implemented"} (spec "Errors").
    const code = b.errorCode ?? (typeof b.error === 'string' ? b.error : undefined);
    super(`${status}${code ? ` ${code}` : ''}: ${b.message ?? b.error ?? ''}`);
    this.status = status;
    this.errorCode = code;
    this.requestId = b.requestId ?? requestIdHeader ?? undefined;
    this.body = b;
  }
}

/** What openapi-fetch answers. */
type Fetched<T> = { data?: T; error?: unknown; response: Response };
export type Result<T> = { ok: true; data: T; response: Response } | { ok: false; error: ApiError; response: Response };

/** An openapi-fetch answer as a typed value: `{ok: true, data}` or `{ok: false, error: ApiError}`. */
export async function result<T>(call: Promise<Fetched<T>>): Promise<Result<T>> {
  const { data, error, response } = await call;
  if (response.ok) return { ok: true, data: data as T, response };
  return { ok: false, error: new ApiError(response.status, error, response.headers.get('x-request-id')), response };
}

/** An openapi-fetch answer's data; a refusal is thrown as an ApiError. */
export async function unwrap<T>(call: Promise<Fetched<T>>): Promise<T> {
  const r = await result(call);
  if (!r.ok) throw r.error;
  return r.data;
}

// Lists: GET operations answering the list envelope {data, nextCursor}.
type GetOf<P extends keyof paths> = paths[P] extends { get: infer O } ? O : never;
export type ListPath = { [P in keyof paths]: JsonBody<GetOf<P>, 200> extends { data: unknown[]; nextCursor: string | null } ? P : never }[keyof paths];
export type ItemOf<P extends ListPath> = JsonBody<GetOf<P>, 200> extends { data: Array<infer I> } ? I : never;
type ParamsOf<P extends keyof paths> = GetOf<P> extends { parameters: infer X } ? X : never;
export type ListQuery<P extends ListPath> = ParamsOf<P> extends { query?: infer Q } ? Omit<NonNullable<Q>, 'startFrom'> : never;
type ListPathParams<P extends ListPath> = ParamsOf<P> extends { path: infer X } ? X : never;
export type ListOptions<P extends ListPath> = { query?: ListQuery<P> } & ([ListPathParams<P>] extends [never] ? { path?: undefined } : { path: ListPathParams<P> });

/** Presigned upload in one call: the upload body without the file, and the file. */
export type UploadInput = Omit<Body<'uploadDocument'>, 'fileName' | 'fileType'> & {
  fileName: string;
  /** The file's MIME type (sent as Content-Type and recorded as `fileType`). */
  fileType: string;
  file: Blob | ArrayBuffer | Uint8Array | string;
};
export type DocumentView = Answer<'getDocument'>;

export interface ClientOptions {
  /** The service's base URL (the `servers` entry of /openapi.json, PUBLIC_URL). */
  baseUrl: string;
  /** The bearer credential: a root key, scoped key or minted token (data plane), a developer token, or the operator token. */
  token?: string;
  /** `x-context-id`: the app context a cross-context credential acts in. */
  contextId?: string;
  /** `Service-Version`: pins the response shape of /v1 operations. */
  serviceVersion?: string;
  headers?: Record<string, string>;
  fetch?: typeof globalThis.fetch;
}

export interface ServiceClient extends Client<paths> {
  /** Every item of a list, page after page (`nextCursor` sent back as `startFrom`) until `nextCursor` is null. */
  paginate<P extends ListPath>(path: P, options?: ListOptions<P>): AsyncGenerator<ItemOf<P>>;
  /** Creates the document, PUTs the file to its presigned URL (no Authorization; the required header) and answers the document. */
  uploadDocument(input: UploadInput): Promise<DocumentView>;
  /** Polls a document until its status is one of `until` (default: INDEXED, SKIPPED, STORED or FAILED). */
  waitForDocument(id: string, opts?: { until?: DocumentView['status'][]; timeoutMs?: number; intervalMs?: number }): Promise<DocumentView>;
  /** RAG (POST /v1/rag) as typed events: search_results, optional truncation_warning, content_delta+, done (or error). */
  rag(body: Body<'rag'>): AsyncGenerator<RagEvent>;
  /** Document ask (POST /v1/documents/{id}/ask): document_context, content_delta+, done (or error). The body's `id` (required by the API) is the path's `id` unless given. */
  askDocument(id: string, body: Omit<Body<'askDocument'>, 'id'> & { id?: string }): AsyncGenerator<AskDocumentEvent>;
  /** Chat (POST /v1/chat): content_delta+, done (or error). */
  chat(body: Body<'chat'>): AsyncGenerator<ChatEvent>;
}

/** A client of one service for one credential. The raw typed methods (`GET`, `POST`, ...) are openapi-fetch's. */
export function createClient(options: ClientOptions): ServiceClient {
  const doFetch = options.fetch ?? globalThis.fetch;
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.contextId) headers['x-context-id'] = options.contextId;
  if (options.serviceVersion) headers['service-version'] = options.serviceVersion;
  const http = createFetchClient<paths>({ baseUrl: options.baseUrl.replace(/\/+$/, ''), headers, fetch: doFetch });
  // The generic helpers below call the typed client with a path chosen at run time.
  const untyped = http as unknown as { GET(path: string, init: unknown): Promise<Fetched<unknown>> };

  async function* paginate<P extends ListPath>(path: P, opts?: ListOptions<P>): AsyncGenerator<ItemOf<P>> {
    let startFrom: string | undefined;
    do {
      const page = (await unwrap(untyped.GET(path, { params: { path: opts?.path, query: { ...(opts?.query ?? {}), ...(startFrom ? { startFrom } : {}) } } }))) as { data: ItemOf<P>[]; nextCursor: string | null };
      for (const item of page.data) yield item;
      startFrom = page.nextCursor ?? undefined;
    } while (startFrom);
  }

  async function uploadDocument({ file, ...body }: UploadInput): Promise<DocumentView> {
    const created = await unwrap(http.POST('/v1/documents/upload', { body }));
    const bytes = typeof file === 'string' ? new TextEncoder().encode(file) : file;
    // The presigned URL carries its own grant: no Authorization header (spec "Authentication" 6).
    const put = await doFetch(created.uploadUrl, { method: 'PUT', headers: { 'content-type': body.fileType, [created.requiredHeaderName]: created.requiredHeaderValue }, body: bytes as Blob });
    if (!put.ok) {
      const text = await put.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        /* a storage-layer answer that is not JSON */
      }
      throw new ApiError(put.status, parsed, put.headers.get('x-request-id'));
    }
    await put.body?.cancel().catch(() => {});
    return unwrap(http.GET('/v1/documents/{id}', { params: { path: { id: created.id } } }));
  }

  async function waitForDocument(id: string, opts: { until?: DocumentView['status'][]; timeoutMs?: number; intervalMs?: number } = {}): Promise<DocumentView> {
    const until = opts.until ?? ['INDEXED', 'SKIPPED', 'STORED', 'FAILED'];
    const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
    for (;;) {
      const doc = await unwrap(http.GET('/v1/documents/{id}', { params: { path: { id } } }));
      if (until.includes(doc.status)) return doc;
      if (Date.now() > deadline) throw new Error(`document ${id} is ${doc.status}, not ${until.join(' or ')}, after ${opts.timeoutMs ?? 60_000} ms`);
      await new Promise((r) => setTimeout(r, opts.intervalMs ?? 100));
    }
  }

  const stream = <E extends StreamEvent>(call: Promise<Fetched<unknown>>) => events<E>(call);
  return Object.assign(http, {
    paginate,
    uploadDocument,
    waitForDocument,
    rag: (body: Body<'rag'>) => stream<RagEvent>(http.POST('/v1/rag', { body, parseAs: 'stream' })),
    askDocument: (id: string, body: Omit<Body<'askDocument'>, 'id'> & { id?: string }) => stream<AskDocumentEvent>(http.POST('/v1/documents/{id}/ask', { params: { path: { id } }, body: { ...body, id: body.id ?? id }, parseAs: 'stream' })),
    chat: (body: Body<'chat'>) => stream<ChatEvent>(http.POST('/v1/chat', { body, parseAs: 'stream' })),
  });
}

/**
 * The frames of a Server-Sent Events answer as typed events. A refusal before the
 * stream (a JSON error answer) is thrown as an ApiError; a failure mid-stream is
 * the stream's own `error` event. Ending the loop early cancels the request.
 */
export async function* events<E extends StreamEvent>(call: Promise<Fetched<unknown>>): AsyncGenerator<E> {
  const { error, response } = await call;
  if (!response.ok) throw new ApiError(response.status, error, response.headers.get('x-request-id'));
  if (!response.body) return;
  const frames = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
  const reader = frames.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      yield { event: value.event ?? 'message', data: JSON.parse(value.data) } as E;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** The answer text of a stream (its content_delta events) and its `done` event; an `error` event is thrown. */
export async function collectAnswer(stream: AsyncIterable<StreamEvent>): Promise<{ text: string; done: Schemas['DoneEvent']['data']; events: StreamEvent[] }> {
  let text = '';
  const all: StreamEvent[] = [];
  for await (const e of stream) {
    all.push(e);
    if (e.event === 'content_delta') text += e.data.delta;
    else if (e.event === 'error') throw new ApiError(502, { message: e.data.message, errorCode: e.data.code });
    else if (e.event === 'done') return { text, done: e.data, events: all };
  }
  throw new Error('the stream ended without a done event');
}

// Webhooks (spec "Delivery headers", "Signature contract").

/** Headers as a `Headers` object or a plain (Node `IncomingHttpHeaders`-like) record. */
export type HeaderBag = Headers | Record<string, string | string[] | undefined>;
const header = (h: HeaderBag, name: string): string | undefined => {
  if (typeof (h as Headers).get === 'function') return (h as Headers).get(name) ?? undefined;
  const entry = Object.entries(h as Record<string, string | string[] | undefined>).find(([k]) => k.toLowerCase() === name);
  const v = entry?.[1];
  return Array.isArray(v) ? v[0] : v;
};

/** The delivery headers of a webhook POST. */
export const WEBHOOK_HEADERS = { delivery: 'x-service-delivery', timestamp: 'x-service-timestamp', signature: 'x-service-signature' } as const;

/**
 * Whether a webhook delivery is authentic: `X-Service-Signature` is `sha256=` and
 * the hex HMAC-SHA256, keyed by the hex-decoded secret, of `<X-Service-Timestamp>.<raw body>`,
 * compared in constant time; and the timestamp is within `toleranceSeconds` (300)
 * of now. `rawBody` must be the exact bytes received (not re-serialised JSON).
 * Dedupe on `X-Service-Delivery` yourself: delivery is at-least-once.
 */
export function verifySignature(rawBody: string | Uint8Array, headers: HeaderBag, secret: string, opts: { toleranceSeconds?: number; now?: Date | number } = {}): boolean {
  if (!/^[0-9a-fA-F]{64}$/.test(secret)) throw new Error('The webhook secret is 64 hex characters (the create response)');
  const timestamp = header(headers, WEBHOOK_HEADERS.timestamp);
  const signature = header(headers, WEBHOOK_HEADERS.signature);
  if (!timestamp || !/^\d{1,15}$/.test(timestamp) || !signature || !/^sha256=[0-9a-fA-F]{64}$/.test(signature)) return false;
  const now = opts.now === undefined ? Date.now() : typeof opts.now === 'number' ? opts.now : opts.now.getTime();
  if (Math.abs(now / 1000 - Number(timestamp)) > (opts.toleranceSeconds ?? 300)) return false;
  const expected = createHmac('sha256', Buffer.from(secret, 'hex')).update(`${timestamp}.`).update(rawBody).digest();
  return timingSafeEqual(expected, Buffer.from(signature.slice('sha256='.length), 'hex'));
}

/** The event envelope a webhook delivers (spec "Event envelope"), discriminated by `type` (`data` narrows with it). */
export type WebhookEnvelope = Schemas['WebhookEnvelope'];

/** Verifies a delivery (verifySignature) and parses its envelope; an inauthentic one is thrown. */
export function parseWebhook(rawBody: string | Uint8Array, headers: HeaderBag, secret: string, opts?: { toleranceSeconds?: number; now?: Date | number }): WebhookEnvelope {
  if (!verifySignature(rawBody, headers, secret, opts)) throw new Error('The webhook signature or timestamp is not valid');
  return JSON.parse(typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody)) as WebhookEnvelope;
}
