/**
 * The spec's number rules ("Shared conventions"): every JSON number must be
 * finite, inside the signed 64-bit range, carry at most 38 significant digits,
 * and not be a non-zero magnitude below 1e-130. Digits are lost by JSON.parse, so
 * the literals are checked in the raw text before parsing.
 */
const INT64_MAX = 9223372036854775807n;
const MAX_SIGNIFICANT_DIGITS = 38;
const MIN_EXPONENT = -130;

/** Returns a reason when a literal breaks a rule, else null. */
export function checkNumberLiteral(literal: string): string | null {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal);
  if (!m) return `invalid number ${literal}`;
  const [, , intPart, fracPart = '', expPart = '0'] = m;
  const exp = Number(expPart);
  // significant digits: the mantissa without leading and trailing zeros
  const digits = (intPart + fracPart).replace(/^0+/, '').replace(/0+$/, '');
  if (digits.length === 0) return null; // zero
  if (digits.length > MAX_SIGNIFICANT_DIGITS)
    return `number ${literal} has more than ${MAX_SIGNIFICANT_DIGITS} significant digits`;
  // decimal exponent of the leading digit: value = 0.d1d2... x 10^(pointPos)
  const intDigits = intPart.replace(/^0+/, '').length;
  const leadingFracZeros = intDigits > 0 ? 0 : fracPart.length - fracPart.replace(/^0+/, '').length;
  const magnitude = (intDigits > 0 ? intDigits - 1 : -(leadingFracZeros + 1)) + exp;
  if (magnitude < MIN_EXPONENT) return `number ${literal} is too small in magnitude`;
  if (magnitude > 18) return `number ${literal} is outside the signed 64-bit range`;
  if (magnitude === 18) {
    // compare exactly: the integer part of the value against 2^63-1 (or 2^63 for negatives)
    const shift = exp;
    const all = intPart + fracPart;
    const pointAt = intPart.length + shift;
    const whole = BigInt(
      pointAt >= all.length ? all + '0'.repeat(pointAt - all.length) : all.slice(0, Math.max(pointAt, 0)) || '0',
    );
    const hasFraction = pointAt < all.length && /[1-9]/.test(all.slice(pointAt));
    const limit = literal.startsWith('-') ? INT64_MAX + 1n : INT64_MAX;
    if (whole > limit || (whole === limit && hasFraction))
      return `number ${literal} is outside the signed 64-bit range`;
  }
  return null;
}

/** Scans JSON text for number literals (outside strings) and returns the first violation. */
export const findNumberViolation = (text: string): string | null => scanJsonText(text);

/**
 * One pass over JSON text, before it is parsed: the number rules, and when
 * `shape` is given, nesting depth and the count of values (approximated by
 * separators and openings), so a deep or huge body is refused in linear time
 * without building it.
 */
export function scanJsonText(text: string, shape?: { maxDepth: number; maxValues: number }): string | null {
  const n = text.length;
  let i = 0;
  let depth = 0;
  let values = 1;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (shape && (c === 91 /* [ */ || c === 123 /* { */ || c === 44) /* , */) {
      if (c !== 44 && ++depth > shape.maxDepth) return `nesting deeper than ${shape.maxDepth} levels`;
      if (++values > shape.maxValues) return `The body has more than ${shape.maxValues} values`;
      i++;
      continue;
    }
    if (shape && (c === 93 /* ] */ || c === 125) /* } */) {
      depth--;
      i++;
      continue;
    }
    if (c === 34 /* " */) {
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 92 /* \ */) i += 2;
        else if (d === 34) {
          i++;
          break;
        } else i++;
      }
      continue;
    }
    if (c === 45 /* - */ || (c >= 48 && c <= 57)) {
      let j = i + 1;
      while (j < n) {
        const d = text.charCodeAt(j);
        if ((d >= 48 && d <= 57) || d === 46 || d === 101 || d === 69 || d === 43 || d === 45) j++;
        else break;
      }
      const reason = checkNumberLiteral(text.slice(i, j));
      if (reason) return reason;
      i = j;
      continue;
    }
    i++;
  }
  return null;
}

const TWO_POW_63 = 2 ** 63;

/**
 * Checks an already-parsed value (not from JSON text, e.g. a script result).
 * A double carries at most 17 significant digits, and 2^63 - 1 rounds to 2^63,
 * so the range check is on magnitude ≤ 2^63 (the exact limits were checked on the text).
 */
export function checkNumberValue(v: number): string | null {
  if (!Number.isFinite(v)) return `number ${v} is not finite`;
  if (Math.abs(v) > TWO_POW_63) return `number ${v} is outside the signed 64-bit range`;
  if (v !== 0 && Math.abs(v) < 1e-130) return `number ${v} is too small in magnitude`;
  return null;
}
