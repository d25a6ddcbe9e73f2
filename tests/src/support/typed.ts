// Typed calls for the suites: the answer types are the generated ones (client/src/generated/openapi.ts), so a
// renamed response field fails the typecheck of every suite that reads it.
import { result } from '@svc/client';

export { ApiError, result, unwrap, type Answer, type Body } from '@svc/client';

type Fetched<T> = { data?: T; error?: unknown; response: Response };

/**
 * The data of an answer with exactly `status` (a create's 201, a repeat's 200); any other answer fails with its body.
 */
export async function expectStatus<T>(call: Promise<Fetched<T>>, status: number): Promise<T> {
  const r = await result(call);
  if (r.response.status !== status)
    throw new Error(`expected ${status}, got ${r.response.status}: ${JSON.stringify(r.ok ? r.data : r.error.body)}`);
  if (!r.ok) throw r.error;
  return r.data;
}

/** The refusal of an answer with exactly `status` (an ApiError: `errorCode`, `requestId`, `body`). */
export async function expectRefusal(call: Promise<Fetched<unknown>>, status: number) {
  const r = await result(call);
  if (r.ok || r.response.status !== status)
    throw new Error(`expected ${status}, got ${r.response.status}: ${JSON.stringify(r.ok ? r.data : r.error.body)}`);
  return r.error;
}
