import type { SchemaDefinition } from '@svc/contracts';
import { chunkText, type Passage } from './chunking';
import { dateMillis } from '../records/lookup-keys';
import { ownValue } from '../records/own-value';

/**
 * What of a record the search index sees. Only `searchable` fields that are not
 * `sensitive` become text (keyword and semantic relevance); `filterable`
 * non-sensitive fields become filter attributes. Sensitive values are sealed
 * objects in the events and never reach an index.
 */
export type AttrScalar = string | number | boolean;
export type AttrValue = AttrScalar | AttrScalar[];

/** Item fields every indexed item carries and `filters` may name (a payload field of the same name wins). */
export const BUILTIN_FILTER_KEYS = ['typeName', 'status', 'externalId', 'schemaId', 'indexMode', 'fileType'] as const;

type FieldDef = NonNullable<SchemaDefinition['fields']>[number];

function textOf(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return v.map(textOf).filter(Boolean).join(', ');
  if (typeof v === 'object')
    return Object.values(v as Record<string, unknown>)
      .map(textOf)
      .filter(Boolean)
      .join(', ');
  return '';
}

/** The searchable text of a record: one paragraph per searchable, non-sensitive field with a value, in schema order. */
export function searchableText(
  def: Pick<SchemaDefinition, 'fields'> | undefined,
  payload: Record<string, unknown>,
): string {
  const parts: string[] = [];
  for (const f of def?.fields ?? []) {
    if (!f.searchable || f.sensitive) continue;
    const t = textOf(ownValue(payload, f.fieldId)).trim();
    if (t) parts.push(t);
  }
  return parts.join('\n\n');
}

function attrOf(f: FieldDef, v: unknown): AttrValue | undefined {
  const one = (x: unknown): AttrScalar | undefined => {
    if (f.fieldType === 'date') return dateMillis(x) ?? undefined;
    if (typeof x === 'string' || typeof x === 'boolean') return x;
    if (typeof x === 'number' && Number.isFinite(x)) return x;
    return undefined;
  };
  if (Array.isArray(v)) {
    const xs = v.map(one).filter((x): x is AttrScalar => x !== undefined);
    return xs.length ? xs : undefined;
  }
  return one(v);
}

/** Filter attributes: built-in item fields, then filterable non-sensitive payload fields (dates as epoch ms). */
export function filterAttributes(
  def: Pick<SchemaDefinition, 'fields'> | undefined,
  payload: Record<string, unknown>,
  builtins: Partial<Record<(typeof BUILTIN_FILTER_KEYS)[number], string | null>>,
): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const [k, v] of Object.entries(builtins)) if (typeof v === 'string') out[k] = v;
  for (const f of def?.fields ?? []) {
    if (!f.filterable || f.sensitive) continue;
    const a = attrOf(f, ownValue(payload, f.fieldId));
    if (a !== undefined) out[f.fieldId] = a;
  }
  return out;
}

/** Passages of a record's searchable text (empty when it has none: the record is SKIPPED). */
export function recordPassages(
  def: Pick<SchemaDefinition, 'fields'> | undefined,
  payload: Record<string, unknown>,
): Passage[] {
  const text = searchableText(def, payload);
  return text ? chunkText(text) : [];
}
