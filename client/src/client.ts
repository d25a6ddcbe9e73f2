// createClient: openapi-fetch's typed methods over the generated paths, plus what a description cannot say
// (pagination, the presigned upload, the event streams, the change stream).
import createFetchClient, { type Client } from 'openapi-fetch';
import type {
  AskDocumentEvent,
  Body,
  ChatEvent,
  DocumentView,
  ItemOf,
  ListOptions,
  ListPath,
  paths,
  RagEvent,
  StreamEvent,
  UploadInput,
} from './api-types.js';
import { changes, type ChangeEvent, type ChangesOptions } from './changes.js';
import { ApiError, unwrap, type Fetched } from './errors.js';
import { events } from './streams.js';

/** A bearer credential, or a function giving one (called before every request, so it can refresh a JWT). */
export type TokenSource = string | (() => string | undefined | Promise<string | undefined>);

export interface ClientOptions {
  /** The service's base URL (the `servers` entry of /openapi.json). */
  baseUrl: string;
  /**
   * The bearer credential, sent as `Authorization: Bearer <token>`: a root or scoped key, a minted token, a JWT
   * from the app's own identity provider, a developer token or the operator token. A function is called before
   * each request (and each reconnection of `changes()`): return a fresh JWT from it.
   */
  token?: TokenSource;
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
  /**
   * Creates the document, PUTs the file to its presigned URL (no Authorization; the required header) and answers the
   * document.
   */
  uploadDocument(input: UploadInput): Promise<DocumentView>;
  /** Polls a document until its status is one of `until` (default: INDEXED, SKIPPED, STORED or FAILED). */
  waitForDocument(
    id: string,
    opts?: { until?: DocumentView['status'][]; timeoutMs?: number; intervalMs?: number },
  ): Promise<DocumentView>;
  /**
   * RAG (POST /v1/rag) as typed events: search_results, optional truncation_warning, content_delta+, done (or error).
   */
  rag(body: Body<'rag'>): AsyncGenerator<RagEvent>;
  /**
   * Document ask (POST /v1/documents/{id}/ask): document_context, content_delta+, done (or error). The body's `id`
   * (required by the API) is the path's `id` unless given.
   */
  askDocument(id: string, body: Omit<Body<'askDocument'>, 'id'> & { id?: string }): AsyncGenerator<AskDocumentEvent>;
  /** Chat (POST /v1/chat): content_delta+, done (or error). */
  chat(body: Body<'chat'>): AsyncGenerator<ChatEvent>;
  /**
   * The change stream (GET /v1/changes) as an async iterator that reconnects and resumes after the last event it
   * yielded.
   */
  changes(options?: ChangesOptions): AsyncGenerator<ChangeEvent>;
}

/** A client of one service for one credential. The raw typed methods (`GET`, `POST`, ...) are openapi-fetch's. */
export function createClient(options: ClientOptions): ServiceClient {
  const doFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.contextId) headers['x-context-id'] = options.contextId;
  if (options.serviceVersion) headers['service-version'] = options.serviceVersion;
  const token = options.token;
  const bearer = async (): Promise<string | undefined> => (typeof token === 'function' ? await token() : token);
  const http = createFetchClient<paths>({ baseUrl, headers, fetch: doFetch });
  if (token !== undefined) {
    http.use({
      async onRequest({ request }) {
        const value = await bearer();
        if (value) request.headers.set('authorization', `Bearer ${value}`);
        return request;
      },
    });
  }
  // The generic helpers below call the typed client with a path chosen at run time.
  const untyped = http as unknown as { GET(path: string, init: unknown): Promise<Fetched<unknown>> };

  async function* paginate<P extends ListPath>(path: P, opts?: ListOptions<P>): AsyncGenerator<ItemOf<P>> {
    let startFrom: string | undefined;
    do {
      const page = (await unwrap(
        untyped.GET(path, {
          params: { path: opts?.path, query: { ...(opts?.query ?? {}), ...(startFrom ? { startFrom } : {}) } },
        }),
      )) as { data: ItemOf<P>[]; nextCursor: string | null };
      for (const item of page.data) yield item;
      startFrom = page.nextCursor ?? undefined;
    } while (startFrom);
  }

  async function uploadDocument({ file, ...body }: UploadInput): Promise<DocumentView> {
    const created = await unwrap(http.POST('/v1/documents/upload', { body }));
    const bytes = typeof file === 'string' ? new TextEncoder().encode(file) : file;
    // The presigned URL carries its own grant: no Authorization header.
    const put = await doFetch(created.uploadUrl, {
      method: 'PUT',
      headers: { 'content-type': body.fileType, [created.requiredHeaderName]: created.requiredHeaderValue },
      body: bytes as Blob,
    });
    if (!put.ok) throw await ApiError.from(put);
    await put.body?.cancel().catch(() => {});
    return unwrap(http.GET('/v1/documents/{id}', { params: { path: { id: created.id } } }));
  }

  async function waitForDocument(
    id: string,
    opts: { until?: DocumentView['status'][]; timeoutMs?: number; intervalMs?: number } = {},
  ): Promise<DocumentView> {
    const until = opts.until ?? ['INDEXED', 'SKIPPED', 'STORED', 'FAILED'];
    const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
    for (;;) {
      const doc = await unwrap(http.GET('/v1/documents/{id}', { params: { path: { id } } }));
      if (until.includes(doc.status)) return doc;
      if (Date.now() > deadline)
        throw new Error(
          `document ${id} is ${doc.status}, not ${until.join(' or ')}, after ${opts.timeoutMs ?? 60_000} ms`,
        );
      await new Promise((r) => setTimeout(r, opts.intervalMs ?? 100));
    }
  }

  const stream = <E extends StreamEvent>(call: Promise<Fetched<unknown>>) => events<E>(call);
  return Object.assign(http, {
    paginate,
    uploadDocument,
    waitForDocument,
    rag: (body: Body<'rag'>) => stream<RagEvent>(http.POST('/v1/rag', { body, parseAs: 'stream' })),
    askDocument: (id: string, body: Omit<Body<'askDocument'>, 'id'> & { id?: string }) =>
      stream<AskDocumentEvent>(
        http.POST('/v1/documents/{id}/ask', {
          params: { path: { id } },
          body: { ...body, id: body.id ?? id },
          parseAs: 'stream',
        }),
      ),
    chat: (body: Body<'chat'>) => stream<ChatEvent>(http.POST('/v1/chat', { body, parseAs: 'stream' })),
    changes: (opts?: ChangesOptions) => changes({ baseUrl, headers, bearer, fetch: doFetch }, opts),
  });
}
