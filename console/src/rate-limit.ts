// Rate-limit headroom as the service reports it: every counted answer (writes, POST /v1/search, inference) carries
// X-RateLimit-Limit and X-RateLimit-Remaining for the account's current one-minute window. The client of the session
// passes each answer through `observeRateLimit`, so a screen can show the last figures without spending a request.
export interface RateLimitReading {
  limit: number;
  remaining: number;
  /** When the answer came (ms since the epoch). */
  at: number;
  /** The request that carried them (`POST /v1/search`). */
  request: string;
}

let last: RateLimitReading | undefined;
const listeners = new Set<(r: RateLimitReading) => void>();

/** An openapi-fetch middleware: notes the headers of every answer that has them. */
export const observeRateLimit = {
  onResponse({ request, response }: { request: Request; response: Response }) {
    const limit = response.headers.get('x-ratelimit-limit');
    const remaining = response.headers.get('x-ratelimit-remaining');
    if (limit === null || remaining === null) return undefined;
    last = {
      limit: Number(limit),
      remaining: Number(remaining),
      at: Date.now(),
      request: `${request.method} ${new URL(request.url).pathname}`,
    };
    for (const l of listeners) l(last);
    return undefined;
  },
};

export const lastRateLimit = (): RateLimitReading | undefined => last;

export function onRateLimit(l: (r: RateLimitReading) => void): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}
