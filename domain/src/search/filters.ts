import { invalid } from '@svc/contracts';

/**
 * Search `filters` (spec "Content search"): top-level keys AND-combined; a
 * value is a scalar (equality), an array of scalars (any of them) or an
 * operator map. `$eq $ne $gt $gte $lt $lte` take a scalar and AND-combine
 * within one map; `$in $nin` take an array of scalars and stand alone. Unknown
 * operators, non-scalar operands, malformed keys and reserved tenancy/ownership
 * keys are rejected (400) before anything runs.
 */
export type Scalar = string | number | boolean;
export type FilterOp = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'nin';

export interface FilterClause {
  key: string;
  op: FilterOp;
  /** A scalar for eq…lte, an array for in / nin. */
  value: Scalar | Scalar[];
}

export const FILTER_KEY_RE = /^[A-Za-z_][A-Za-z0-9_-]*$/;
/** Tenancy and ownership are never caller filters: they come from the credential and the dedicated parameters. */
export const RESERVED_FILTER_KEYS = new Set([
  'tenantId',
  'tenant_id',
  'contextId',
  'context_id',
  'accountId',
  'account_id',
  'userId',
  'user_id',
  'scopes',
  'scope',
  'orgId',
  'clientId',
]);
const SCALAR_OPS = { $eq: 'eq', $ne: 'ne', $gt: 'gt', $gte: 'gte', $lt: 'lt', $lte: 'lte' } as const;
const ARRAY_OPS = { $in: 'in', $nin: 'nin' } as const;
const MAX_KEYS = 32;
const MAX_ARRAY = 100;

const isScalar = (v: unknown): v is Scalar =>
  typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

function scalars(key: string, op: string, v: unknown): Scalar[] {
  if (!Array.isArray(v)) throw invalid(`filters.${key}: ${op} takes an array of scalars`);
  if (v.length > MAX_ARRAY) throw invalid(`filters.${key}: at most ${MAX_ARRAY} values`);
  for (const x of v)
    if (!isScalar(x)) throw invalid(`filters.${key}: ${op} values must be strings, numbers or booleans`);
  return v as Scalar[];
}

export function parseFilters(raw: unknown): FilterClause[] {
  if (raw === undefined || raw === null) return [];
  if (typeof raw !== 'object' || Array.isArray(raw)) throw invalid('filters must be an object');
  const entries = Object.entries(raw as Record<string, unknown>);
  if (entries.length > MAX_KEYS) throw invalid(`filters: at most ${MAX_KEYS} keys`);
  const out: FilterClause[] = [];
  for (const [key, v] of entries) {
    if (!FILTER_KEY_RE.test(key) || key.length > 64) throw invalid(`filters: malformed key '${key.slice(0, 64)}'`);
    if (RESERVED_FILTER_KEYS.has(key))
      throw invalid(`filters: '${key}' is reserved; use the userId / orgId / clientId parameters`);
    if (isScalar(v)) {
      out.push({ key, op: 'eq', value: v });
    } else if (Array.isArray(v)) {
      out.push({ key, op: 'in', value: scalars(key, 'an array filter', v) });
    } else if (v !== null && typeof v === 'object') {
      const ops = Object.entries(v as Record<string, unknown>);
      if (!ops.length) throw invalid(`filters.${key}: empty operator map`);
      const hasArrayOp = ops.some(([op]) => op in ARRAY_OPS);
      if (hasArrayOp && ops.length > 1)
        throw invalid(`filters.${key}: $in / $nin cannot be combined with other operators`);
      for (const [op, operand] of ops) {
        if (op in ARRAY_OPS)
          out.push({ key, op: ARRAY_OPS[op as keyof typeof ARRAY_OPS], value: scalars(key, op, operand) });
        else if (op in SCALAR_OPS) {
          if (!isScalar(operand)) throw invalid(`filters.${key}: ${op} takes a string, number or boolean`);
          out.push({ key, op: SCALAR_OPS[op as keyof typeof SCALAR_OPS], value: operand });
        } else throw invalid(`filters.${key}: unknown operator '${op.slice(0, 32)}'`);
      }
    } else {
      throw invalid(`filters.${key}: value must be a scalar, an array of scalars or an operator map`);
    }
  }
  return out;
}

/**
 * Epoch milliseconds of an ISO-8601 operand (dates are stored as epoch ms), or
 * null when the operand is not a date. Numbers are compared as given (epoch ms for dates).
 */
export function dateOperand(v: Scalar): number | null {
  if (typeof v !== 'string' || !/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v)) return null;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : t;
}

/**
 * Evaluates clauses against attributes in memory (the reference semantics the
 * adapters implement): equality matches a scalar or any element of an array
 * attribute; ranges compare numbers with numbers (a date operand as epoch ms)
 * and strings with strings; `$ne` / `$nin` also match when the attribute is absent.
 */
export function matchesFilters(attrs: Record<string, unknown>, clauses: FilterClause[]): boolean {
  // Own keys only: a filter on `constructor` must not read Object.prototype.constructor.
  return clauses.every((c) => matchClause(Object.hasOwn(attrs, c.key) ? attrs[c.key] : undefined, c));
}

function eq(a: unknown, v: Scalar): boolean {
  const vals = Array.isArray(a) ? a : [a];
  const d = dateOperand(v);
  return vals.some((x) => x === v || (d !== null && x === d));
}
function cmp(a: unknown, v: Scalar, op: 'gt' | 'gte' | 'lt' | 'lte'): boolean {
  if (Array.isArray(a) || a === undefined || a === null) return false;
  const d = dateOperand(v);
  let l: number | string, r: number | string;
  if (typeof a === 'number' && (typeof v === 'number' || d !== null)) [l, r] = [a, typeof v === 'number' ? v : d!];
  else if (typeof a === 'string' && typeof v === 'string') [l, r] = [a, v];
  else return false;
  return op === 'gt' ? l > r : op === 'gte' ? l >= r : op === 'lt' ? l < r : l <= r;
}
function matchClause(a: unknown, c: FilterClause): boolean {
  switch (c.op) {
    case 'eq':
      return eq(a, c.value as Scalar);
    case 'ne':
      return !eq(a, c.value as Scalar);
    case 'in':
      return (c.value as Scalar[]).some((v) => eq(a, v));
    case 'nin':
      return !(c.value as Scalar[]).some((v) => eq(a, v));
    default:
      return cmp(a, c.value as Scalar, c.op);
  }
}
