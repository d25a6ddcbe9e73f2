import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The signature contract (spec "Signature contract"): HMAC-SHA256 over
 * `<timestamp>.<raw body>`, keyed with the 32 bytes the hex secret decodes to,
 * hex output prefixed `sha256=`.
 */
export function signDelivery(secretHex: string, timestamp: number | string, body: string | Buffer): string {
  const mac = createHmac('sha256', Buffer.from(secretHex, 'hex'));
  mac.update(`${timestamp}.`);
  mac.update(body);
  return `sha256=${mac.digest('hex')}`;
}

/** What a receiver does: recompute, compare in constant time, refuse a timestamp more than `toleranceSeconds` away. */
export function verifyDelivery(o: {
  secretHex: string;
  timestamp: string;
  body: string | Buffer;
  signature: string;
  nowSeconds: number;
  toleranceSeconds?: number;
}): boolean {
  const ts = Number(o.timestamp);
  if (!/^\d+$/.test(o.timestamp) || Math.abs(o.nowSeconds - ts) > (o.toleranceSeconds ?? 300)) return false;
  const want = Buffer.from(signDelivery(o.secretHex, o.timestamp, o.body));
  const got = Buffer.from(o.signature);
  return want.length === got.length && timingSafeEqual(want, got);
}
