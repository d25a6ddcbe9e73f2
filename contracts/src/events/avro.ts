import avro from 'avsc';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { EVENT_TYPES, eventMetadata, type EventType } from './catalogue';

/**
 * Avro schemas derived from the zod catalogue, so the two can never disagree.
 * Free-form objects become strings with the `json` logical type; optional and
 * nullable fields become unions with null (default null).
 */
class JsonLogicalType extends avro.types.LogicalType {
  override _fromValue(v: unknown) {
    return JSON.parse(v as string);
  }
  override _toValue(v: unknown) {
    // null is never a json value here: refusing it lets a ['null', json] union (an optional json field) pick its
    // branch.
    return v === null ? undefined : JSON.stringify(v);
  }
  override _resolve(type: avro.Type) {
    if (avro.Type.isType(type, 'string', 'logical:json')) return (x: unknown) => x;
    return undefined;
  }
}

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  additionalProperties?: unknown;
};

const JSON_STRING = { type: 'string', logicalType: 'json' } as unknown as avro.Schema;

function toAvro(js: JsonSchema, name: string): avro.Schema {
  if (js.anyOf) {
    const nonNull = js.anyOf.filter((s) => s.type !== 'null');
    const hasNull = nonNull.length !== js.anyOf.length;
    const inner = nonNull.length === 1 ? toAvro(nonNull[0], name) : JSON_STRING;
    return hasNull ? ['null', inner as never] : inner;
  }
  if (Array.isArray(js.type)) {
    const nonNull = js.type.filter((t) => t !== 'null');
    const inner = nonNull.length === 1 ? toAvro({ ...js, type: nonNull[0] }, name) : JSON_STRING;
    return js.type.includes('null') ? ['null', inner as never] : inner;
  }
  switch (js.type) {
    case 'string':
      return 'string';
    case 'integer':
      return 'long';
    case 'number':
      return 'double';
    case 'boolean':
      return 'boolean';
    case 'array':
      return { type: 'array', items: toAvro(js.items ?? {}, `${name}_item`) };
    case 'object':
      if (!js.properties) return JSON_STRING;
      return {
        type: 'record',
        name,
        fields: Object.entries(js.properties).map(([field, sub]) => {
          const t = toAvro(sub, `${name}_${field}`);
          const optional = !(js.required ?? []).includes(field);
          if (!optional) return { name: field, type: t };
          const union = Array.isArray(t) ? t : ['null', t];
          return { name: field, type: union, default: null };
        }),
      } as never;
    default:
      return JSON_STRING;
  }
}

function avroSchemaOf(schema: z.ZodTypeAny, name: string): avro.Schema {
  return toAvro(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema, name);
}

/** Removes the nulls Avro wrote for absent optional fields, so zod accepts the value again. */
function dropAbsent(value: unknown, js: JsonSchema): unknown {
  // Arrays of records (UsageMetered items): each element as a plain object, its absent fields dropped too.
  if (Array.isArray(value)) return js.items ? value.map((v) => dropAbsent(v, nonNullOf(js.items!))) : value;
  if (value === null || typeof value !== 'object' || !js.properties) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const sub = js.properties[k];
    const required = (js.required ?? []).includes(k);
    const nullable =
      sub && (sub.anyOf?.some((s) => s.type === 'null') || (Array.isArray(sub.type) && sub.type.includes('null')));
    if (v === null && !required && !nullable) continue;
    out[k] = sub ? dropAbsent(v, nonNullOf(sub)) : v;
  }
  return out;
}
const nonNullOf = (js: JsonSchema): JsonSchema => (js.anyOf ? (js.anyOf.find((s) => s.type !== 'null') ?? js) : js);

export interface AvroCodec {
  type: avro.Type;
  /** Canonical-form fingerprint, hex; carried in message headers. */
  fingerprint: string;
  encode(value: unknown): Buffer;
  decode(buf: Buffer): unknown;
}

function codec(schema: z.ZodTypeAny, name: string): AvroCodec {
  const js = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const type = avro.Type.forSchema(avroSchemaOf(schema, name), { logicalTypes: { json: JsonLogicalType } });
  const fingerprint = createHash('sha256').update(JSON.stringify(type.schema())).digest('hex').slice(0, 16);
  return {
    type,
    fingerprint,
    encode: (value) => type.toBuffer(value),
    decode: (buf) => dropAbsent(type.fromBuffer(buf), js),
  };
}

const cache = new Map<string, AvroCodec>();

export function eventCodec(eventType: EventType): AvroCodec {
  let c = cache.get(eventType);
  if (!c) {
    c = codec(EVENT_TYPES[eventType], `svc.events.${eventType}`);
    cache.set(eventType, c);
  }
  return c;
}

// traceparent travels as its own Kafka header (projectors/src/kafka/messages.ts), not in the Avro metadata.
export const metadataCodec: AvroCodec = codec(eventMetadata.omit({ traceparent: true }), 'svc.events.EventMetadata');

/** The Avro schema (JSON) of every event type, for registries and docs. */
export function avroCatalogue(): Record<string, unknown> {
  return Object.fromEntries((Object.keys(EVENT_TYPES) as EventType[]).map((t) => [t, eventCodec(t).type.schema()]));
}
