// A payload edited field by field, from the schema: a control per field of its type, each showing the API's error
// about `payload.<fieldId>`. Values the person typed are sent as typed when they are not what the field takes (text in
// a number field): the API's refusal then says so next to the field, as it would for any client.
import type { Answer } from '@svc/client';
import type { ApiError } from '../api';
import { CheckField, SelectField, TextField } from './fields';

type Schema = Answer<'getSchema'>;
export type SchemaField = NonNullable<Schema['fields']>[number];

/** The form's text of each field (JSON for arrays, objects and many-references). */
export type PayloadDraft = Record<string, string | boolean>;

const isJson = (f: SchemaField) =>
  f.fieldType === 'array' || f.fieldType === 'object' || (f.fieldType === 'reference' && f.cardinality === 'many');

export function draftOf(fields: SchemaField[], payload: Record<string, unknown> = {}): PayloadDraft {
  const d: PayloadDraft = {};
  for (const f of fields) {
    const v = payload[f.fieldId];
    if (f.fieldType === 'boolean') d[f.fieldId] = v === true;
    else if (v === undefined || v === null) d[f.fieldId] = '';
    else d[f.fieldId] = isJson(f) ? JSON.stringify(v, null, 2) : String(v);
  }
  return d;
}

/** The value a field's text stands for; undefined when it is empty (the key is left out). */
export function valueOf(f: SchemaField, text: string | boolean): unknown {
  if (f.fieldType === 'boolean') return text === true;
  const s = String(text);
  if (s.trim() === '') return undefined;
  if (f.fieldType === 'number') return s.trim() !== '' && !Number.isNaN(Number(s)) ? Number(s) : s;
  if (f.fieldType === 'enum') {
    const hit = (f.enumValues ?? []).find((e) => String(e) === s);
    return hit ?? s;
  }
  if (isJson(f)) {
    try {
      return JSON.parse(s);
    } catch {
      return s;
    }
  }
  return s;
}

/** The whole payload of a draft (a create or a PUT). */
export function payloadOf(fields: SchemaField[], draft: PayloadDraft): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = valueOf(f, draft[f.fieldId] ?? '');
    if (v !== undefined) out[f.fieldId] = v;
  }
  return out;
}

/** A merge patch of what changed from `before` (a cleared field is null: removed). */
export function patchOf(
  fields: SchemaField[],
  draft: PayloadDraft,
  before: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = valueOf(f, draft[f.fieldId] ?? '');
    const was = before[f.fieldId];
    if (JSON.stringify(v) === JSON.stringify(was)) continue;
    if (v === undefined) {
      if (was !== undefined && !(f.fieldType === 'boolean' && was === false)) out[f.fieldId] = null;
    } else out[f.fieldId] = v;
  }
  return out;
}

export function PayloadFields({
  fields,
  draft,
  onChange,
  error,
}: {
  fields: SchemaField[];
  draft: PayloadDraft;
  onChange: (d: PayloadDraft) => void;
  error?: ApiError;
}) {
  const set = (id: string, v: string | boolean) => onChange({ ...draft, [id]: v });
  return (
    <>
      {fields.map((f) => {
        const path = `payload.${f.fieldId}`;
        const label = `${f.fieldId}${f.fieldType === 'string' ? '' : ` (${f.fieldType})`}`;
        if (f.fieldType === 'boolean')
          return (
            <CheckField
              label={f.fieldId}
              path={path}
              checked={draft[f.fieldId] === true}
              onChange={(v) => set(f.fieldId, v)}
              error={error}
            />
          );
        if (f.fieldType === 'enum')
          return (
            <SelectField
              label={label}
              path={path}
              value={String(draft[f.fieldId] ?? '')}
              onChange={(v) => set(f.fieldId, v)}
              error={error}
              required={!!f.required}
              options={[
                { value: '', label: '(none)' },
                ...(f.enumValues ?? []).map((e) => ({ value: String(e), label: String(e) })),
              ]}
            />
          );
        return (
          <TextField
            label={label}
            path={path}
            value={String(draft[f.fieldId] ?? '')}
            onInput={(v) => set(f.fieldId, v)}
            error={error}
            required={!!f.required}
            multiline={isJson(f)}
            rows={4}
            hint={
              f.fieldType === 'date'
                ? 'ISO-8601 (2026-02-28 or 2026-02-28T09:30:00Z)'
                : isJson(f)
                  ? 'JSON'
                  : f.sensitive
                    ? 'Sensitive: reads back as ********'
                    : f.description
            }
          />
        );
      })}
    </>
  );
}
