import { describe, expect, it } from 'vitest';
import { eventCodec, metadataCodec } from '@svc/contracts';
import type { RecordedEvent } from '@svc/domain';
import { fromMessage, H, SchemaMismatchError, toMessage } from './messages';

const meta = {
  tenantId: 't1',
  contextId: 'c1',
  accountId: 'a1',
  actorKeyId: 'k1',
  userId: null,
  requestId: 'r1',
  occurredAt: '2026-11-21T00:00:00.000Z',
  schemaVersion: 1,
};
const event = (over: Partial<RecordedEvent> = {}): RecordedEvent => ({
  id: 'e1',
  type: 'FolderCreated',
  data: {
    folderId: 'f1',
    name: 'Top',
    description: null,
    parentFolderId: null,
    slug: 'top',
    depth: 1,
    isProtected: false,
    userId: null,
    scopes: ['a'],
  },
  metadata: meta,
  streamId: 'folder-f1',
  revision: 0,
  position: 42,
  ...over,
});

describe('Kafka messages', () => {
  it(
    'key = stream id; value = the contracts Avro of the type; headers carry fingerprint, ids, positions; ' +
      'decoding gives the event back',
    () => {
      const e = event();
      const m = toMessage(e, 41);
      expect(m.key).toBe('folder-f1');
      expect(m.headers[H.fingerprint]).toBe(eventCodec('FolderCreated').fingerprint);
      expect(m.headers[H.metadataFingerprint]).toBe(metadataCodec.fingerprint);
      expect(m.headers[H.contentType]).toBe('avro/binary');
      expect(eventCodec('FolderCreated').decode(m.value)).toEqual(e.data);
      expect({ ...m.headers, [H.metadata]: undefined }).toMatchObject({
        [H.type]: 'FolderCreated',
        [H.eventId]: 'e1',
        [H.streamId]: 'folder-f1',
        [H.revision]: '0',
        [H.position]: '42',
        [H.prev]: '41',
      });
      const back = fromMessage({ key: Buffer.from(m.key), value: m.value, headers: m.headers });
      expect(back).toEqual({ event: e, prev: 41 });
    },
  );

  it(
    "a write's trace context travels as the traceparent header, outside the Avro metadata, and comes back " +
      'in the metadata',
    () => {
      const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      const e = event({ metadata: { ...meta, traceparent } });
      const m = toMessage(e, 41);
      expect(m.headers[H.traceparent]).toBe(traceparent);
      // The metadata's schema (and fingerprint) is the same with traces on or off: an old consumer reads it.
      expect(metadataCodec.decode(m.headers[H.metadata] as Buffer)).toEqual(meta);
      expect(fromMessage({ value: m.value, headers: m.headers }).event.metadata).toEqual({ ...meta, traceparent });
      expect(toMessage(event(), 41).headers).not.toHaveProperty(H.traceparent);
    },
  );

  it('a fingerprint this build does not know is refused (the feed then reads that event from the event store)', () => {
    const m = toMessage(event(), 41);
    expect(() =>
      fromMessage({ value: m.value, headers: { ...m.headers, [H.fingerprint]: 'ffffffffffffffff' } }),
    ).toThrow(SchemaMismatchError);
  });

  it('data the Avro schema cannot carry travels as JSON rather than stalling the relay', () => {
    const e = event({ data: { folderId: 'f1' } });
    const m = toMessage(e, 0);
    expect(m.headers[H.contentType]).toBe('application/json');
    expect(fromMessage({ value: m.value, headers: m.headers }).event).toEqual(e);
  });

  it('an event type outside the catalogue travels as JSON', () => {
    const e = event({ type: 'SomethingNew', data: { x: [1, { y: null }] } });
    const m = toMessage(e, 0);
    expect(m.headers[H.contentType]).toBe('application/json');
    expect(fromMessage({ value: m.value, headers: m.headers }).event).toEqual(e);
  });
});
