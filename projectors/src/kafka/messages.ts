import { EVENT_TYPES, eventCodec, type EventMetadata, type EventType, metadataCodec } from '@svc/contracts';
import { asStoredEvent, type RecordedEvent, type StoredEvent } from '@svc/domain';

/**
 * One event as one Kafka message (docs/engines/kafka.md):
 *
 * - key: the stream id, so one entity's events land in one partition, in order;
 * - value: the event's data, Avro binary with the schema of `contracts/` for its
 *   type (`eventCodec(type)`);
 * - headers: `svc-event-type`, `svc-schema-fingerprint` (of that schema),
 *   `svc-metadata` (the metadata, Avro binary with `metadataCodec`) and
 *   `svc-metadata-fingerprint`, `svc-event-id`, `svc-stream-id`,
 *   `svc-revision`, `svc-position` (global log position), `svc-prev-position`
 *   (position of the event before it in the global log: consumers use the chain
 *   to apply events in exact global order across partitions), `content-type`.
 *
 * An event type the catalogue does not know, or stored data its schema cannot
 * carry (neither happens today), travels as JSON with `content-type:
 * application/json`, so the relay never stalls on it.
 */
export const H = {
  type: 'svc-event-type',
  fingerprint: 'svc-schema-fingerprint',
  metadata: 'svc-metadata',
  metadataFingerprint: 'svc-metadata-fingerprint',
  eventId: 'svc-event-id',
  streamId: 'svc-stream-id',
  revision: 'svc-revision',
  position: 'svc-position',
  prev: 'svc-prev-position',
  contentType: 'content-type',
  /**
   * The W3C trace context of the write (metadata.traceparent), when traces are on: the projector continues its trace.
   */
  traceparent: 'traceparent',
} as const;

export const AVRO = 'avro/binary';
export const JSON_CONTENT = 'application/json';

export interface OutMessage {
  key: string;
  value: Buffer;
  headers: Record<string, string | Buffer>;
}

/** What a consumer gets back: the stored event and the position before it in the global log. */
export interface FeedEvent {
  event: StoredEvent;
  prev: number;
}

const known = (type: string): type is EventType => Object.hasOwn(EVENT_TYPES, type);

export function toMessage(e: RecordedEvent, prev: number): OutMessage {
  let codec = known(e.type) ? eventCodec(e.type) : undefined;
  let value: Buffer;
  try {
    value = codec ? codec.encode(e.data) : Buffer.from(JSON.stringify(e.data));
  } catch {
    // Stored data its Avro schema cannot carry (none is known): JSON keeps the relay moving and loses nothing.
    codec = undefined;
    value = Buffer.from(JSON.stringify(e.data));
  }
  return {
    key: e.streamId,
    value,
    headers: {
      [H.type]: e.type,
      [H.contentType]: codec ? AVRO : JSON_CONTENT,
      ...(codec ? { [H.fingerprint]: codec.fingerprint } : {}),
      [H.metadata]: metadataCodec.encode(e.metadata),
      [H.metadataFingerprint]: metadataCodec.fingerprint,
      [H.eventId]: e.id,
      [H.streamId]: e.streamId,
      [H.revision]: String(e.revision),
      [H.position]: String(e.position),
      [H.prev]: String(prev),
      ...(e.metadata.traceparent ? { [H.traceparent]: e.metadata.traceparent } : {}),
    },
  };
}

type InHeaders = Record<string, Buffer | string | (Buffer | string)[] | undefined> | undefined;

const header = (h: InHeaders, name: string): Buffer | undefined => {
  const v = h?.[name];
  const one = Array.isArray(v) ? v[0] : v;
  return one === undefined ? undefined : Buffer.isBuffer(one) ? one : Buffer.from(one);
};
const text = (h: InHeaders, name: string): string => {
  const b = header(h, name);
  if (!b) throw new Error(`message has no ${name} header`);
  return b.toString('utf8');
};

export class SchemaMismatchError extends Error {}

/** Decodes a message the relay wrote; refuses one whose schema fingerprint is not this build's. */
export function fromMessage(m: { key?: Buffer | null; value: Buffer | null; headers?: InHeaders }): FeedEvent {
  const h = m.headers;
  const type = text(h, H.type);
  const contentType = text(h, H.contentType);
  const value = m.value ?? Buffer.alloc(0);
  let data: Record<string, unknown>;
  if (contentType === AVRO) {
    if (!known(type)) throw new SchemaMismatchError(`unknown event type ${type}`);
    const codec = eventCodec(type);
    const fp = text(h, H.fingerprint);
    if (fp !== codec.fingerprint)
      throw new SchemaMismatchError(`${type}: schema fingerprint ${fp} is not this build's ${codec.fingerprint}`);
    data = codec.decode(value) as Record<string, unknown>;
  } else {
    data = JSON.parse(value.toString('utf8'));
  }
  const mfp = text(h, H.metadataFingerprint);
  if (mfp !== metadataCodec.fingerprint)
    throw new SchemaMismatchError(
      `metadata schema fingerprint ${mfp} is not this build's ${metadataCodec.fingerprint}`,
    );
  const metadata = metadataCodec.decode(header(h, H.metadata)!) as EventMetadata;
  const traceparent = header(h, H.traceparent);
  if (traceparent) metadata.traceparent = traceparent.toString('utf8');
  return {
    event: asStoredEvent({
      id: text(h, H.eventId),
      type,
      data,
      metadata,
      streamId: text(h, H.streamId),
      revision: Number(text(h, H.revision)),
      position: Number(text(h, H.position)),
    }),
    prev: Number(text(h, H.prev)),
  };
}
