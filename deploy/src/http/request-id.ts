import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * A client's X-Request-Id is taken as the request's id when it is 1-128 characters of `[A-Za-z0-9._:-]`: nothing
 * that could break a log line or a header. The router (router-config.ts) applies the same pattern.
 */
export const REQUEST_ID_PATTERN = '^[A-Za-z0-9._:-]{1,128}$';
const VALID = new RegExp(REQUEST_ID_PATTERN);

/** The request's id: the client's valid X-Request-Id, else a new UUID (an invalid one is ignored, never refused). */
export function requestIdOf(req: Pick<IncomingMessage, 'headers'>): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && VALID.test(given) ? given : randomUUID();
}
