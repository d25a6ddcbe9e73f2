import { RE2JS } from 're2js';

/**
 * Tenant-authored `validation.pattern`s run on RE2 (re2js), never on the
 * backtracking `RegExp`: matching is linear in the value, so a pattern such as
 * `^(a+)+$` cannot stall the request thread. Patterns are written in JavaScript
 * regular-expression syntax (Unicode mode) and translated (`\uXXXX`, `\u{…}`,
 * `(?<name>…)`, `[^]`); what RE2 cannot run in linear time — lookahead,
 * lookbehind, backreferences — is rejected when the schema is written.
 */
export const MAX_PATTERN_LENGTH = 1000;
/**
 * Matching work the pattern checks of one payload may spend: the sum over its
 * pattern-checked string values of (value length × compiled pattern size). Linear
 * is not free: a large pattern over a multi-megabyte value would still hold the thread.
 */
export const PATTERN_CHECK_BUDGET = 5_000_000;

export type CompiledPattern = { ok: true; re: RE2JS; size: number } | { ok: false; reason: string };

const CACHE_MAX = 500;
const cache = new Map<string, CompiledPattern>();

const UNSUPPORTED = 'is not supported (RE2 syntax: no lookahead, lookbehind or backreferences)';

/** Whether a pattern valid in Unicode mode uses `\k<name>` (the translation would read it as the letter k). */
function hasNamedBackreference(pattern: string): boolean {
  for (let i = 0; i < pattern.length; i++) if (pattern[i] === '\\') if (pattern[++i] === 'k') return true;
  return false;
}

function build(pattern: string): CompiledPattern {
  if (pattern.length > MAX_PATTERN_LENGTH)
    return { ok: false, reason: `is longer than ${MAX_PATTERN_LENGTH} characters` };
  // First as JavaScript (Unicode mode, as before): the syntax tenants write. Compiling never runs the backtracker.
  try {
    new RegExp(pattern, 'u');
  } catch {
    return { ok: false, reason: 'is not a valid regular expression' };
  }
  if (hasNamedBackreference(pattern)) return { ok: false, reason: `${UNSUPPORTED}: \\k<name>` };
  try {
    const re = RE2JS.compile(RE2JS.translateRegExp(pattern));
    return { ok: true, re, size: Math.max(1, re.programSize()) };
  } catch (e) {
    const why = e instanceof Error ? e.message.replace(/^error parsing regexp: /, '') : 'invalid';
    return { ok: false, reason: `${UNSUPPORTED}: ${why}` };
  }
}

/** The compiled form of a pattern (cached; the cache keeps the most recently used patterns). */
export function compilePattern(pattern: string): CompiledPattern {
  let c = cache.get(pattern);
  if (c) {
    cache.delete(pattern);
    cache.set(pattern, c);
    return c;
  }
  c = build(pattern);
  cache.set(pattern, c);
  if (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value!);
  return c;
}

/** Why a pattern cannot be stored, or null when it can. */
export const patternProblem = (pattern: string): string | null => {
  const c = compilePattern(pattern);
  return c.ok ? null : c.reason;
};

/** Unanchored search, like `RegExp.prototype.test`. */
export const patternTest = (c: Extract<CompiledPattern, { ok: true }>, value: string): boolean => c.re.test(value);
