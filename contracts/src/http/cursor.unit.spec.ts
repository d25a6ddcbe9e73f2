import { describe, expect, it } from 'vitest';
import { ServiceError } from '../errors';
import { CursorCodec } from './cursor';

const codec = new CursorCodec('unit-test-secret');
const scope = 'contexts:tenant-a';
const params = { limit: 2, type: 'invoice' };
const position = ['2026-01-01T00:00:00.000Z', 'ctx-42'];

/** Runs `fn` and returns the ServiceError code it threw (fails when it does not throw one). */
function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ServiceError);
    return (e as ServiceError).code;
  }
  throw new Error('expected a ServiceError, nothing was thrown');
}

describe('CursorCodec', () => {
  it('round-trips a position for the same scope and parameters', () => {
    const cursor = codec.encode(scope, params, position);
    expect(codec.decode(scope, params, cursor)).toEqual(position);
  });

  it('produces a URL-safe opaque string that does not reveal the position', () => {
    const cursor = codec.encode(scope, params, position);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(cursor).not.toContain('ctx-42');
    expect(Buffer.from(cursor, 'base64url').toString('utf8')).not.toContain('ctx-42');
  });

  it('ignores parameter order, startFrom itself and undefined parameters when binding', () => {
    const cursor = codec.encode(scope, { limit: 2, type: 'invoice' }, position);
    expect(codec.decode(scope, { type: 'invoice', limit: 2, startFrom: 'whatever', extra: undefined }, cursor)).toEqual(
      position,
    );
  });

  it('rejects a cursor presented with other parameters', () => {
    const cursor = codec.encode(scope, params, position);
    expect(codeOf(() => codec.decode(scope, { ...params, limit: 3 }, cursor))).toBe('INVALID_CURSOR');
    expect(codeOf(() => codec.decode(scope, { limit: 2 }, cursor))).toBe('INVALID_CURSOR');
  });

  it('rejects a cursor altered by one byte', () => {
    const cursor = codec.encode(scope, params, position);
    const raw = Buffer.from(cursor, 'base64url');
    for (const at of [0, 12, 20, 28, raw.length - 1]) {
      const altered = Buffer.from(raw);
      altered[at] ^= 0x01;
      expect(codeOf(() => codec.decode(scope, params, altered.toString('base64url')))).toBe('INVALID_CURSOR');
    }
  });

  it('rejects a cursor altered by one character', () => {
    const cursor = codec.encode(scope, params, position);
    const i = Math.floor(cursor.length / 2);
    const altered = cursor.slice(0, i) + (cursor[i] === 'A' ? 'B' : 'A') + cursor.slice(i + 1);
    expect(codeOf(() => codec.decode(scope, params, altered))).toBe('INVALID_CURSOR');
  });

  it('rejects a cursor presented in a different scope', () => {
    const cursor = codec.encode(scope, params, position);
    expect(codeOf(() => codec.decode('contexts:tenant-b', params, cursor))).toBe('INVALID_CURSOR');
  });

  it('rejects a cursor issued under another secret', () => {
    const cursor = new CursorCodec('another-secret').encode(scope, params, position);
    expect(codeOf(() => codec.decode(scope, params, cursor))).toBe('INVALID_CURSOR');
  });

  it('rejects hand-built base64', () => {
    const handBuilt = [
      Buffer.from(JSON.stringify(position)).toString('base64url'),
      Buffer.from(JSON.stringify(position)).toString('base64'),
      Buffer.alloc(64, 7).toString('base64url'),
      'abc',
      '',
      '!!!not-base64!!!',
    ];
    for (const c of handBuilt) expect(codeOf(() => codec.decode(scope, params, c))).toBe('INVALID_CURSOR');
  });

  it('maps INVALID_CURSOR to a 400', () => {
    const err = (() => {
      try {
        codec.decode(scope, params, 'abc');
      } catch (e) {
        return e as ServiceError;
      }
    })();
    expect(err?.status).toBe(400);
  });
});
