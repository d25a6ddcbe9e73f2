import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { ServiceError } from '../errors';

/**
 * Opaque list cursors: AES-256-GCM over the position, bound to a digest of the
 * query parameters they were issued for. Anything not issued by us for these
 * parameters (built by hand, altered, replayed elsewhere) is a 400.
 */
export class CursorCodec {
  private readonly key: Buffer;

  constructor(secret: Buffer | string) {
    this.key = createHash('sha256').update('cursor:').update(secret).digest();
  }

  encode(scope: string, params: Record<string, unknown>, position: unknown): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    c.setAAD(this.bind(scope, params));
    const body = Buffer.concat([c.update(JSON.stringify(position), 'utf8'), c.final()]);
    return Buffer.concat([iv, c.getAuthTag(), body]).toString('base64url');
  }

  decode<T>(scope: string, params: Record<string, unknown>, cursor: string): T {
    try {
      const raw = Buffer.from(cursor, 'base64url');
      if (raw.length < 29 || raw.toString('base64url') !== cursor) throw new Error('malformed');
      const d = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
      d.setAAD(this.bind(scope, params));
      d.setAuthTag(raw.subarray(12, 28));
      return JSON.parse(Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8')) as T;
    } catch {
      throw new ServiceError('INVALID_CURSOR');
    }
  }

  /** Scope (e.g. tenant + context + endpoint) and every parameter but the cursor itself. */
  private bind(scope: string, params: Record<string, unknown>): Buffer {
    const norm = Object.keys(params)
      .filter((k) => k !== 'startFrom' && params[k] !== undefined)
      .sort()
      .map((k) => [k, params[k]]);
    return createHash('sha256').update(scope).update('\u0000').update(JSON.stringify(norm)).digest();
  }
}
