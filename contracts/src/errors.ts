/**
 * The one catalogue of error codes. Each code appears once, with the HTTP status
 * the edge answers with. Domain code throws `ServiceError(code, ...)` (or the
 * shorthands below) and never names a status; only the HTTP edge turns the code
 * into a status and the error body. A failure that is a bug, not an answer,
 * is an `InternalError` (500 INTERNAL, logged, its message never shown).
 *
 * `reserved` marks the codes the spec gives to a feature not built yet (scripts,
 * inference): nothing throws them today, and the feature that first does drops
 * the mark. Every other code is thrown somewhere. `errors.unit.spec.ts` checks
 * both, and that `docs/api.md` ("Errors") lists every code with its status.
 */
export const ERROR_CATALOGUE = {
  VALIDATION_ERROR: { status: 400, message: 'The request is invalid.' },
  BAD_HTTP: { status: 400, message: 'The request is not valid HTTP.' },
  INVALID_CURSOR: { status: 400, message: 'startFrom is not a cursor issued for these parameters.' },
  UNSUPPORTED_WIRE_VERSION: { status: 400, message: 'Unsupported Service-Version.' },
  SCRIPT_ERROR: { status: 400, message: 'The script failed.' },
  RESOURCE_LIMIT_EXCEEDED: { status: 400, message: 'A resource limit was exceeded.' },
  WRITE_BUFFER_CAP_EXCEEDED: { status: 400, message: 'The write buffer cap was exceeded.' },
  RESULT_TOO_LARGE: { status: 400, message: 'The result is too large.' },
  UNAUTHORIZED: { status: 401, message: 'Missing or invalid credentials.' },
  PAYMENT_REQUIRED: { status: 402, message: 'The monthly credit ceiling is reached.' },
  INSUFFICIENT_BALANCE: { status: 402, message: 'The inference balance is exhausted.' },
  SUBSCRIPTION_LIMIT_EXCEEDED: { status: 402, message: 'The plan cap is reached.', reserved: 'inference' },
  FORBIDDEN: { status: 403, message: 'Forbidden.' },
  AUTHORIZATION_DENIED: { status: 403, message: 'The script call was denied.' },
  NOT_FOUND: { status: 404, message: 'Not found.' },
  VERSION_CONFLICT: { status: 409, message: 'expectedVersion does not match the current version.' },
  CONFLICT: { status: 409, message: 'The request conflicts with the current state.' },
  CONCURRENT_MODIFICATION: { status: 409, message: 'A concurrent modification was detected.' },
  IDEMPOTENCY_IN_PROGRESS: { status: 409, message: 'A request with this Idempotency-Key is in flight.' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request is too large.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Unsupported content type.' },
  HEADERS_TOO_LARGE: { status: 431, message: 'The request headers are too large.' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, message: 'The Idempotency-Key was used for a different request.' },
  RATE_LIMITED: { status: 429, message: 'Rate limit exceeded.' },
  INTERNAL: { status: 500, message: 'Internal error.' },
  EXECUTION_OUTCOME_UNKNOWN: { status: 500, message: 'The script outcome is unknown.' },
  NOT_IMPLEMENTED: { status: 501, message: 'Not implemented.' },
  UNAVAILABLE: { status: 503, message: 'The service is temporarily unavailable.' },
  EXECUTION_NOT_STARTED: { status: 503, message: 'The script was not started.' },
  EXECUTION_CONTAINER_BUSY: { status: 503, message: 'The script container is busy.' },
  TIMEOUT: { status: 504, message: 'The script timed out.' },
} as const satisfies Record<string, { status: number; message: string; reserved?: 'scripts' | 'inference' }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export class ServiceError extends Error {
  readonly code: ErrorCode;
  /** Extra, documented fields added to the error body (e.g. `total`, `limit`). */
  readonly details: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    code: ErrorCode,
    message?: string,
    opts: { details?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message ?? ERROR_CATALOGUE[code].message);
    this.name = 'ServiceError';
    this.code = code;
    this.details = opts.details;
    this.headers = opts.headers;
  }

  get status(): number {
    return ERROR_CATALOGUE[this.code].status;
  }
}

export const isServiceError = (e: unknown): e is ServiceError => e instanceof ServiceError;

/**
 * A broken invariant: a bug, or a store answering what it must not (an id used
 * twice, an unexpected event, a capability the engine lacks). Not an answer to
 * the caller: the edge logs it and answers 500 INTERNAL with the catalogue's
 * message, never this one. Thrown instead of a bare `Error` on request paths.
 */
export class InternalError extends Error {
  readonly code = 'INTERNAL' as const;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'InternalError';
  }
}

/** Shorthands for the errors every feature raises. One message each, so bodies never differ. */
export const invalid = (message: string, details?: Record<string, unknown>) =>
  new ServiceError('VALIDATION_ERROR', message, { details });
/** A failed zod parse as a validation message: its first five issues, each with its path. */
export const zodMessage = (e: { issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }> }) =>
  e.issues
    .slice(0, 5)
    .map((i) => (i.path.length ? `${i.path.map(String).join('.')}: ${i.message}` : i.message))
    .join('; ');
/** Missing, out of scope and other tenant all read the same. */
export const notFound = () => new ServiceError('NOT_FOUND');
/** Never names the permission that was missing. */
export const forbidden = () => new ServiceError('FORBIDDEN');
export const versionConflict = () => new ServiceError('VERSION_CONFLICT');
export const conflict = (message: string) => new ServiceError('CONFLICT', message);
export const notImplemented = (message: string) => new ServiceError('NOT_IMPLEMENTED', message);
