import { scanJsonText } from './json-numbers';

/**
 * What every request's JSON body, path and query must satisfy before any
 * handler sees it (docs/limits.md). Text must be storable by every engine
 * (PostgreSQL refuses U+0000 in text and jsonb, and a lone surrogate is not
 * Unicode), and a body's shape is bounded so that no single request can hold
 * the event loop: nesting depth, keys per object and values in all.
 */
export const INPUT_LIMITS = {
  /** Nesting depth of objects and arrays (the body itself is depth 1). */
  maxDepth: 32,
  /** Keys of one object. */
  maxKeysPerObject: 1_000,
  /** Values (objects, arrays, strings, numbers, booleans, nulls) in one body. */
  maxValues: 50_000,
} as const;

/** The checks on raw JSON text (numbers, depth, size), before it is parsed. */
export const findJsonTextViolation = (text: string, limits = INPUT_LIMITS) => scanJsonText(text, limits);

/** Keys that would reach an object's prototype in some consumer; refused everywhere. */
const PROTOTYPE_KEYS = new Set(['__proto__']);

/** Why `s` cannot be stored as text, or null. */
export function textViolation(s: string): string | null {
  if (s.includes('\u0000')) return 'contains the NUL character (U+0000)';
  if (!(s as string & { isWellFormed(): boolean }).isWellFormed())
    return 'contains a lone surrogate (not valid Unicode)';
  return null;
}

const where = (path: string[]) => (path.length ? path.join('.') : 'the body');
const short = (k: string) => JSON.stringify(k.length > 40 ? k.slice(0, 40) + '…' : k).replace(/\\u0000/g, '\\0');

/**
 * The first rule the parsed value breaks, or null. Iterative, so that any
 * depth is refused rather than overflowing the stack.
 */
export function findInputViolation(value: unknown, limits = INPUT_LIMITS): string | null {
  const stack: Array<{ v: unknown; depth: number; path: string[] }> = [{ v: value, depth: 1, path: [] }];
  let values = 0;
  while (stack.length) {
    const { v, depth, path } = stack.pop()!;
    if (++values > limits.maxValues) return `The body has more than ${limits.maxValues} values`;
    if (typeof v === 'string') {
      const t = textViolation(v);
      if (t) return `${where(path)}: the text ${t}`;
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth > limits.maxDepth) return `${where(path)}: nesting deeper than ${limits.maxDepth} levels`;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], depth: depth + 1, path: [...path, String(i)] });
      continue;
    }
    const keys = Object.keys(v);
    if (keys.length > limits.maxKeysPerObject)
      return `${where(path)}: more than ${limits.maxKeysPerObject} keys in one object`;
    for (const k of keys) {
      if (PROTOTYPE_KEYS.has(k)) return `${where(path)}: the key ${short(k)} is not allowed`;
      const t = textViolation(k);
      if (t) return `${where(path)}: the key ${short(k)} ${t}`;
      stack.push({ v: (v as Record<string, unknown>)[k], depth: depth + 1, path: [...path, k] });
    }
  }
  return null;
}
