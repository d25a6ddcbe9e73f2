import { describe, expect, it } from 'vitest';
import type { EventMetadata } from '@svc/contracts';
import { decodeMetadata, encodeMetadata, METADATA_KEY, toActualRevision, toStreamState } from './event-store-kurrentdb';

const metadata: EventMetadata = {
  tenantId: 't',
  contextId: 'c',
  accountId: null,
  actorKeyId: null,
  userId: 'u',
  requestId: 'r',
  occurredAt: '2025-01-01T00:00:00.000Z',
  schemaVersion: 1,
};

describe('KurrentDB mapping', () => {
  it('maps expected revisions to stream states', () => {
    expect(toStreamState('any')).toBe('any');
    expect(toStreamState('no_stream')).toBe('no_stream');
    expect(toStreamState('stream_exists')).toBe('stream_exists');
    expect(toStreamState(0)).toBe(0n);
    expect(toStreamState(41)).toBe(41n);
    expect(() => toStreamState(-1)).toThrow();
    expect(() => toStreamState(1.5)).toThrow();
  });

  it('maps the actual stream state of a conflict', () => {
    expect(toActualRevision('no_stream')).toBe('no_stream');
    expect(toActualRevision(7n)).toBe(7);
  });

  it('encodes metadata as one string property and decodes it back', () => {
    const encoded = encodeMetadata(metadata);
    expect(Object.values(encoded).every((v) => typeof v === 'string')).toBe(true);
    expect(decodeMetadata(encoded)).toEqual(metadata);
    // as read back after multiStreamAppend: the server adds properties of its own
    expect(decodeMetadata({ ...encoded, '$schema.name': 'X', '$schema.format': 'Json' })).toEqual(metadata);
    // plain JSON metadata written by other tools
    expect(decodeMetadata({ tenantId: 'x' })).toEqual({ tenantId: 'x' });
    expect(() => decodeMetadata(undefined)).toThrow();
    expect(METADATA_KEY.startsWith('$')).toBe(false);
  });
});
