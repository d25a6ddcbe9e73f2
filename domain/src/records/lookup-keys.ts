import { createHash } from 'node:crypto';
import type { SchemaDefinition } from '@svc/contracts';
import { lookupsOf, type Lookup } from '../schemas/schema';
import { ownValue } from './own-value';

/**
 * Lookup index keys: every indexed value becomes a text key whose byte order
 * (COLLATE "C") is the value order, so exact, range, prefix and sort-window
 * queries are plain text comparisons. Numbers and dates encode their IEEE-754
 * bits order-preservingly; strings keep their text behind a type tag.
 */
type FieldDef = NonNullable<SchemaDefinition['fields']>[number];

export function encodeNumber(n: number): string {
  const buf = Buffer.alloc(8);
  buf.writeDoubleBE(n === 0 ? 0 : n); // -0 and 0 are one key
  if (buf[0] & 0x80) for (let i = 0; i < 8; i++) buf[i] = ~buf[i] & 0xff;
  else buf[0] |= 0x80;
  return buf.toString('hex');
}

/** Epoch milliseconds of a date field value (ISO-8601 text or epoch ms), or null. */
export function dateMillis(v: unknown): number | null {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string') {
    const t = Date.parse(v);
    return Number.isNaN(t) ? null : t;
  }
  return null;
}

/**
 * Longest key kept verbatim, in UTF-8 bytes. A btree row holds at most 2,704
 * bytes and a lookup row carries up to four keys (k1..k3 and the sort key), so
 * a longer value is keyed by its first KEY_PREFIX_CHARS characters and a hash
 * of the whole: exact lookups still match, order among values sharing that
 * prefix follows the hash (docs/limits.md).
 */
export const MAX_KEY_BYTES = 466;
export const KEY_PREFIX_CHARS = 100;

function bounded(tag: string, text: string): string {
  const key = tag + text;
  if (Buffer.byteLength(key, 'utf8') <= MAX_KEY_BYTES) return key;
  // \u0001 sorts before every printable character, so the long value sorts right after its prefix.
  let prefix = '';
  let n = 0;
  for (const ch of text) {
    if (n++ === KEY_PREFIX_CHARS) break;
    prefix += ch;
  }
  return tag + prefix + '\u0001' + createHash('sha256').update(text).digest('hex');
}

/** The key of one value under a field's type; null when the value cannot be indexed. */
export function encodeValue(field: FieldDef | undefined, v: unknown): string | null {
  if (v === undefined || v === null) return null;
  const type = field?.fieldType;
  if (type === 'date') {
    const ms = dateMillis(v);
    return ms === null ? null : 'n' + encodeNumber(ms);
  }
  if (typeof v === 'number') return 'n' + encodeNumber(v);
  if (typeof v === 'string') return bounded('s', v);
  if (typeof v === 'boolean') return v ? 'b1' : 'b0';
  return bounded('j', JSON.stringify(v));
}

/** The sort key of a record under the schema's `sortBy` ('' when it has no value: sorts first, never in a window). */
export function sortKey(
  def: SchemaDefinition | undefined,
  r: { payload: Record<string, unknown>; createdAt: string; updatedAt: string },
): string {
  const by = def?.sortBy ?? 'createdAt';
  if (by === 'createdAt') return 'n' + encodeNumber(Date.parse(r.createdAt));
  if (by === 'lastUpdated') return 'n' + encodeNumber(Date.parse(r.updatedAt));
  const f = def?.fields?.find((x) => x.fieldId === by);
  return encodeValue(f, ownValue(r.payload, by)) ?? '';
}

/** The key of a sortFrom / sortTo bound, in the sorted field's own units (epoch ms for timestamps). */
export function sortBoundKey(def: SchemaDefinition | undefined, raw: string | number): string | null {
  const by = def?.sortBy ?? 'createdAt';
  if (by === 'createdAt' || by === 'lastUpdated') {
    const ms = typeof raw === 'number' ? raw : /^-?\d+(\.\d+)?$/.test(raw) ? Number(raw) : Date.parse(raw);
    return Number.isFinite(ms) ? 'n' + encodeNumber(ms) : null;
  }
  const f = def?.fields?.find((x) => x.fieldId === by);
  const v =
    f &&
    (f.fieldType === 'number' || f.fieldType === 'date') &&
    typeof raw === 'string' &&
    /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(raw)
      ? Number(raw)
      : raw;
  return encodeValue(f, v);
}

export interface IndexEntry {
  /** Field name, or comma-joined names of a composite lookup. */
  field: string;
  k1: string;
  k2: string | null;
  k3: string | null;
  /** For a unique lookup: at most one record per value. */
  unique: boolean;
}

/**
 * The lookup-index entries of a record. Sensitive fields index the blind
 * (keyed HMAC) value the write path computed, never the value itself.
 */
export function indexEntries(
  def: SchemaDefinition,
  payload: Record<string, unknown>,
  blind: Record<string, string> = {},
): IndexEntry[] {
  const byId = new Map((def.fields ?? []).map((f) => [f.fieldId, f]));
  const key = (name: string) =>
    byId.get(name)?.sensitive
      ? blind[name]
        ? 'h' + blind[name]
        : null
      : encodeValue(byId.get(name), ownValue(payload, name));
  const out: IndexEntry[] = [];
  for (const l of lookupsOf(def) as Lookup[]) {
    if (l.kind === 'single') {
      const k = key(l.fieldName);
      if (k !== null) out.push({ field: l.fieldName, k1: k, k2: null, k3: null, unique: l.unique });
    } else {
      const ks = l.fieldNames.map(key);
      if (ks[0] === null) continue;
      out.push({ field: l.fieldNames.join(','), k1: ks[0], k2: ks[1] ?? null, k3: ks[2] ?? null, unique: false });
    }
  }
  return out;
}
