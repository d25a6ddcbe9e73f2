// The Node-only part of the client (`@svc/client/node`): webhook signature verification, which uses node:crypto.
// Kept out of the main entry so that a browser bundle of it has no Node built-in.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { WebhookEnvelope } from './api-types.js';

export type { WebhookEnvelope };

/** Headers as a `Headers` object or a plain (Node `IncomingHttpHeaders`-like) record. */
export type HeaderBag = Headers | Record<string, string | string[] | undefined>;
const header = (h: HeaderBag, name: string): string | undefined => {
  if (typeof (h as Headers).get === 'function') return (h as Headers).get(name) ?? undefined;
  const entry = Object.entries(h as Record<string, string | string[] | undefined>).find(
    ([k]) => k.toLowerCase() === name,
  );
  const v = entry?.[1];
  return Array.isArray(v) ? v[0] : v;
};

/** The delivery headers of a webhook POST. */
export const WEBHOOK_HEADERS = {
  delivery: 'x-service-delivery',
  timestamp: 'x-service-timestamp',
  signature: 'x-service-signature',
} as const;

/**
 * Whether a webhook delivery is authentic: `X-Service-Signature` is `sha256=` and
 * the hex HMAC-SHA256, keyed by the hex-decoded secret, of `<X-Service-Timestamp>.<raw body>`,
 * compared in constant time; and the timestamp is within `toleranceSeconds` (300)
 * of now. `rawBody` must be the exact bytes received (not re-serialised JSON).
 * Dedupe on `X-Service-Delivery` yourself: delivery is at-least-once.
 */
export function verifySignature(
  rawBody: string | Uint8Array,
  headers: HeaderBag,
  secret: string,
  opts: { toleranceSeconds?: number; now?: Date | number } = {},
): boolean {
  if (!/^[0-9a-fA-F]{64}$/.test(secret))
    throw new Error('The webhook secret is 64 hex characters (the create response)');
  const timestamp = header(headers, WEBHOOK_HEADERS.timestamp);
  const signature = header(headers, WEBHOOK_HEADERS.signature);
  if (!timestamp || !/^\d{1,15}$/.test(timestamp) || !signature || !/^sha256=[0-9a-fA-F]{64}$/.test(signature))
    return false;
  const now = opts.now === undefined ? Date.now() : typeof opts.now === 'number' ? opts.now : opts.now.getTime();
  if (Math.abs(now / 1000 - Number(timestamp)) > (opts.toleranceSeconds ?? 300)) return false;
  const expected = createHmac('sha256', Buffer.from(secret, 'hex')).update(`${timestamp}.`).update(rawBody).digest();
  return timingSafeEqual(expected, Buffer.from(signature.slice('sha256='.length), 'hex'));
}

/** Verifies a delivery (verifySignature) and parses its envelope; an inauthentic one is thrown. */
export function parseWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderBag,
  secret: string,
  opts?: { toleranceSeconds?: number; now?: Date | number },
): WebhookEnvelope {
  if (!verifySignature(rawBody, headers, secret, opts))
    throw new Error('The webhook signature or timestamp is not valid');
  return JSON.parse(typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody)) as WebhookEnvelope;
}
