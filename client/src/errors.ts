// Refusals as values: what openapi-fetch answers, turned into ApiError or a Result.
import type { ErrorBody } from './api-types.js';

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
    const b = (
      body && typeof body === 'object' ? body : { message: typeof body === 'string' && body ? body : `HTTP ${status}` }
    ) as ErrorBody & Record<string, unknown>;
    // The reserved stubs answer {error: "not_implemented"}.
    const code = b.errorCode ?? (typeof b.error === 'string' ? b.error : undefined);
    super(`${status}${code ? ` ${code}` : ''}: ${b.message ?? b.error ?? ''}`);
    this.status = status;
    this.errorCode = code;
    this.requestId = b.requestId ?? requestIdHeader ?? undefined;
    this.body = b;
  }

  /** The refusal a non-2xx Response carries (its JSON body, or its text). */
  static async from(response: Response): Promise<ApiError> {
    const text = await response.text().catch(() => '');
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* an answer that is not JSON (a proxy's page) */
    }
    return new ApiError(response.status, body, response.headers.get('x-request-id'));
  }
}

/** What openapi-fetch answers. */
export type Fetched<T> = { data?: T; error?: unknown; response: Response };
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
