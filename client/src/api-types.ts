// The types a caller names, derived from the generated description (./generated/openapi.ts).
import type { components, operations, paths } from './generated/openapi.js';

export type { components, operations, paths };
export type Schemas = components['schemas'];
/** The error body `{message, errorCode, requestId}`. */
export type ErrorBody = Schemas['Error'];
/** One frame of each inference stream, `{event, data}`, discriminated by `event`. */
export type RagEvent = Schemas['RagEvent'];
export type AskDocumentEvent = Schemas['AskDocumentEvent'];
export type ChatEvent = Schemas['ChatEvent'];
export type StreamEvent = RagEvent | AskDocumentEvent | ChatEvent;
/** The event envelope a webhook delivers, discriminated by `type` (`data` narrows with it). */
export type WebhookEnvelope = Schemas['WebhookEnvelope'];

type JsonBody<O, S extends number> = O extends { responses: { [K in S]: { content: { 'application/json': infer B } } } }
  ? B
  : never;
type RequestBody<O> = O extends { requestBody: { content: { 'application/json': infer B } } }
  ? B
  : O extends { requestBody?: { content: { 'application/json': infer B } } }
    ? B
    : never;
/**
 * The JSON body of an operation's request and of its 200 / 201 answer, by operation id: `Body<'createRecord'>`,
 * `Answer<'getRecord'>`.
 */
export type Body<Op extends keyof operations> = RequestBody<operations[Op]>;
export type Answer<Op extends keyof operations> = JsonBody<operations[Op], 200> | JsonBody<operations[Op], 201>;

// Lists: GET operations answering the list envelope {data, nextCursor}.
type GetOf<P extends keyof paths> = paths[P] extends { get: infer O } ? O : never;
export type ListPath = {
  [P in keyof paths]: JsonBody<GetOf<P>, 200> extends { data: unknown[]; nextCursor: string | null } ? P : never;
}[keyof paths];
export type ItemOf<P extends ListPath> = JsonBody<GetOf<P>, 200> extends { data: Array<infer I> } ? I : never;
type ParamsOf<P extends keyof paths> = GetOf<P> extends { parameters: infer X } ? X : never;
export type ListQuery<P extends ListPath> =
  ParamsOf<P> extends { query?: infer Q } ? Omit<NonNullable<Q>, 'startFrom'> : never;
type ListPathParams<P extends ListPath> = ParamsOf<P> extends { path: infer X } ? X : never;
export type ListOptions<P extends ListPath> = { query?: ListQuery<P> } & ([ListPathParams<P>] extends [never]
  ? { path?: undefined }
  : { path: ListPathParams<P> });

/** Presigned upload in one call: the upload body without the file, and the file. */
export type UploadInput = Omit<Body<'uploadDocument'>, 'fileName' | 'fileType'> & {
  fileName: string;
  /** The file's MIME type (sent as Content-Type and recorded as `fileType`). */
  fileType: string;
  file: Blob | ArrayBuffer | Uint8Array | string;
};
export type DocumentView = Answer<'getDocument'>;
