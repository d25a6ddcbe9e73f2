import { checkNumberValue, invalid, RESERVED_NAMES, type SchemaDefinition, ServiceError } from '@svc/contracts';
import { compilePattern, patternTest, PATTERN_CHECK_BUDGET } from './pattern';
import type { PayloadSealing } from '../shared/sealing';
import { ownValue } from './own-value';

type FieldDef = NonNullable<SchemaDefinition['fields']>[number];

export const INLINE_LIMIT_BYTES = 224 * 1024;
/** Largest payload of one record, document or user, serialised (docs/limits.md): larger is 413. */
export const MAX_PAYLOAD_BYTES = 1024 * 1024;
/** At this size (or always on LARGE_PAYLOAD) a payload is stored out of line. */
export const EXTERNALIZE_AT_BYTES = 4 * 1024;

const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const PHONE_RE = /^\+?[0-9 ()./-]{6,32}$/;
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):?(\d{2}))?)?$/;

/**
 * An ISO-8601 date or date-time that names a real instant: Date.parse alone rolls 2026-02-31 over to March 3 and
 * takes 24:00, so the calendar day, the clock and the offset are checked field by field.
 */
export function isIsoDate(v: string): boolean {
  const m = DATE_RE.exec(v);
  if (!m) return false;
  const [y, mo, d, h = 0, mi = 0, s = 0, oh = 0, om = 0] = m
    .slice(1)
    .map((x) => (x === undefined ? undefined : Number(x)));
  const day = new Date(Date.UTC(y!, mo! - 1, d!));
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== mo! - 1 || day.getUTCDate() !== d) return false;
  return h! <= 23 && mi! <= 59 && s! <= 59 && oh! <= 23 && om! <= 59 && !Number.isNaN(Date.parse(v));
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Numbers in payloads obey the spec's number rules wherever they sit, and no key is `__proto__` (the JSON body was
 * checked, this guards other paths).
 */
function checkNumbers(v: unknown, path: string): void {
  if (typeof v === 'number') {
    const why = checkNumberValue(v);
    if (why) throw invalid(`payload.${path}: ${why}`);
  } else if (Array.isArray(v)) v.forEach((x, i) => checkNumbers(x, `${path}[${i}]`));
  else if (isObject(v))
    for (const [k, x] of Object.entries(v)) {
      // An own `__proto__` key (JSON.parse makes one) would re-prototype any object it is copied into.
      if (k === '__proto__') throw invalid(`payload${path ? `.${path}` : ''}: '__proto__' is not allowed as a key`);
      checkNumbers(x, path ? `${path}.${k}` : k);
    }
}

const isMultiple = (value: number, of: number) => {
  const q = value / of;
  return Math.abs(q - Math.round(q)) < 1e-9;
};

/** Pattern matching work left for one payload (see PATTERN_CHECK_BUDGET). */
type PatternBudget = { left: number };

function checkPattern(at: string, pattern: string, v: string, budget: PatternBudget): void {
  const c = compilePattern(pattern);
  // Only a pattern stored before patterns were checked at schema write can fail here.
  if (!c.ok) throw invalid(`${at}: the schema's validation.pattern ${c.reason}; update the schema`);
  const cost = c.size * (v.length + 1);
  if (cost > budget.left)
    throw invalid(
      `${at}: too long to check against the pattern (pattern checks of one payload may cost ` +
        `${PATTERN_CHECK_BUDGET.toLocaleString('en-US')} steps, value length × pattern size ${c.size})`,
    );
  budget.left -= cost;
  if (!patternTest(c, v)) throw invalid(`${at}: does not match the pattern`);
}

function checkField(f: FieldDef, v: unknown, budget: PatternBudget): void {
  const at = `payload.${f.fieldId}`;
  const val = f.validation ?? {};
  switch (f.fieldType) {
    case 'string':
      if (typeof v !== 'string') throw invalid(`${at}: must be a string`);
      break;
    case 'number':
      if (typeof v !== 'number') throw invalid(`${at}: must be a number`);
      break;
    case 'boolean':
      if (typeof v !== 'boolean') throw invalid(`${at}: must be a boolean`);
      break;
    case 'date':
      if (typeof v === 'number') {
        if (!Number.isInteger(v)) throw invalid(`${at}: must be an ISO-8601 date or epoch milliseconds`);
      } else if (typeof v !== 'string' || !isIsoDate(v))
        throw invalid(`${at}: must be an ISO-8601 date or epoch milliseconds`);
      break;
    case 'enum':
      if (!f.enumValues!.some((e) => e === v))
        throw invalid(`${at}: must be one of ${f.enumValues!.map((e) => JSON.stringify(e)).join(', ')}`);
      break;
    case 'array':
      if (!Array.isArray(v)) throw invalid(`${at}: must be an array`);
      break;
    case 'object':
      if (!isObject(v)) throw invalid(`${at}: must be an object`);
      break;
    case 'reference':
      if (f.cardinality === 'many') {
        if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x.length === 0))
          throw invalid(`${at}: must be an array of reference strings`);
      } else if (typeof v !== 'string' || v.length === 0) throw invalid(`${at}: must be a reference string`);
      break;
  }
  if (typeof v === 'string') {
    if (val.minLength !== undefined && [...v].length < val.minLength)
      throw invalid(`${at}: shorter than ${val.minLength}`);
    if (val.maxLength !== undefined && [...v].length > val.maxLength)
      throw invalid(`${at}: longer than ${val.maxLength}`);
    if (val.pattern !== undefined) checkPattern(at, val.pattern, v, budget);
    if (val.email && !EMAIL_RE.test(v)) throw invalid(`${at}: must be an email address`);
    if (val.url) {
      let ok = false;
      try {
        ok = ['http:', 'https:'].includes(new URL(v).protocol);
      } catch {
        ok = false;
      }
      if (!ok) throw invalid(`${at}: must be an http(s) URL`);
    }
    if (val.phone && !PHONE_RE.test(v)) throw invalid(`${at}: must be a phone number`);
  }
  if (typeof v === 'number') {
    if (val.min !== undefined && v < val.min) throw invalid(`${at}: below the minimum ${val.min}`);
    if (val.max !== undefined && v > val.max) throw invalid(`${at}: above the maximum ${val.max}`);
    if (val.multipleOf !== undefined && !isMultiple(v, val.multipleOf))
      throw invalid(`${at}: must be a multiple of ${val.multipleOf}`);
    if (val.step !== undefined && !isMultiple(v - (val.min ?? 0), val.step))
      throw invalid(`${at}: must be on a step of ${val.step}`);
  }
  if (Array.isArray(v)) {
    if (val.minItems !== undefined && v.length < val.minItems) throw invalid(`${at}: fewer than ${val.minItems} items`);
    if (val.maxItems !== undefined && v.length > val.maxItems) throw invalid(`${at}: more than ${val.maxItems} items`);
  }
}

/**
 * Validates a payload against a schema before anything is stored. A bare schema
 * (no `fields`) accepts any payload; undeclared keys pass through either way.
 * Absent (or null) fields are skipped; `enforceRequired` refuses absent required
 * ones (records and documents: on create only).
 */
export function validatePayload(
  def: SchemaDefinition,
  payload: Record<string, unknown>,
  opts: { enforceRequired: boolean },
): void {
  for (const k of Object.keys(payload)) if (RESERVED_NAMES.has(k)) throw invalid(`payload: '${k}' is reserved`);
  checkNumbers(payload, '');
  const budget: PatternBudget = { left: PATTERN_CHECK_BUDGET };
  for (const f of def.fields ?? []) {
    const v = ownValue(payload, f.fieldId);
    const required = f.required || f.validation?.required;
    if (v === undefined || v === null) {
      if (required && opts.enforceRequired) throw invalid(`payload.${f.fieldId}: is required`);
      continue;
    }
    checkField(f, v, budget);
  }
}

/** Size of the inline (non-externalised) fields, for the 224 KB limit. */
export const payloadBytes = (payload: Record<string, unknown>) => Buffer.byteLength(JSON.stringify(payload), 'utf8');

export function checkInlineLimit(def: SchemaDefinition, payload: Record<string, unknown>): number {
  const bytes = payloadBytes(payload);
  if (bytes > MAX_PAYLOAD_BYTES)
    throw new ServiceError(
      'PAYLOAD_TOO_LARGE',
      `payload: ${bytes} bytes serialised, over the ${MAX_PAYLOAD_BYTES / 1024 / 1024} MiB limit`,
      { details: { limitBytes: MAX_PAYLOAD_BYTES } },
    );
  const inlineKeys = new Set((def.fields ?? []).filter((f) => f.inline).map((f) => f.fieldId));
  const externalized = bytes >= EXTERNALIZE_AT_BYTES || def.storageProfile === 'LARGE_PAYLOAD';
  const inlineBytes = externalized
    ? payloadBytes(Object.fromEntries(Object.entries(payload).filter(([k]) => inlineKeys.has(k))))
    : bytes;
  if (inlineBytes > INLINE_LIMIT_BYTES) throw invalid(`payload: inline fields exceed ${INLINE_LIMIT_BYTES / 1024} KB`);
  return bytes;
}

/**
 * What a payload about to be stored (created or changed) must hold: its schema's rules for the keys present and
 * the size limits; required fields too when `enforceRequired` (spec FieldDef `required`: enforced on create).
 */
export function checkStoredPayload(
  def: SchemaDefinition,
  payload: Record<string, unknown>,
  opts: { enforceRequired: boolean },
): void {
  validatePayload(def, payload, opts);
  checkInlineLimit(def, payload);
}

/** RFC 7386 merge patch: null deletes a key, objects merge recursively, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/**
 * The plaintext payload a PUT or PATCH body leaves: PUT's `payload` replaces the stored one (absent: empty);
 * PATCH merges it into the stored one, unsealed (RFC 7386), and without one keeps the stored one.
 */
export function changedPayload(
  sealing: Pick<PayloadSealing, 'unseal'>,
  kind: 'put' | 'patch',
  body: Record<string, unknown>,
  stored: Record<string, unknown>,
): Record<string, unknown> {
  if (kind === 'put') return (body.payload as Record<string, unknown> | undefined) ?? {};
  const plain = sealing.unseal(stored);
  return body.payload !== undefined ? (mergePatch(plain, body.payload) as Record<string, unknown>) : plain;
}
