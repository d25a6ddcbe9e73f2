import { z } from 'zod';
import { invalid } from '../errors';
import { LIST_LIMIT } from '../common';
import type { CursorCodec } from './cursor';

/** A `limit` query parameter within `bounds` (its default when absent; out of bounds is a 400, never reduced). */
export const limitParamWithin = (bounds: { min: number; max: number; default: number }) =>
  z
    .union([z.string(), z.number()])
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return bounds.default;
      const n = typeof v === 'number' ? v : /^-?\d+$/.test(v) ? Number(v) : NaN;
      if (!Number.isInteger(n) || n < bounds.min || n > bounds.max) {
        ctx.addIssue({ code: 'custom', message: `limit must be an integer from ${bounds.min} to ${bounds.max}` });
        return z.NEVER;
      }
      return n;
    });

/**
 * The one pagination helper: `limit` 1-100 (default 20; larger is a 400, never
 * reduced) and an encrypted `startFrom` bound to the other query parameters.
 */
export const limitParam = limitParamWithin(LIST_LIMIT);

/** The query of a list with no filters: a page size and the cursor. */
export const pageQuery = z.object({ limit: limitParam, startFrom: z.string().optional() });

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

export class Paginator {
  constructor(private readonly codec: CursorCodec) {}

  /** Decodes `startFrom` (if any) for a list whose parameters are `params` in `scope`. */
  start<K>(scope: string, params: Record<string, unknown>, startFrom: string | undefined): K | undefined {
    if (startFrom === undefined) return undefined;
    if (startFrom === '') throw invalid('startFrom must be a cursor returned by this list');
    return this.codec.decode<K>(scope, params, startFrom);
  }

  /**
   * Builds a page from `limit + 1` fetched rows: the extra row only tells that
   * more remain; the cursor holds the key of the last row returned.
   */
  page<R, T, K>(
    scope: string,
    params: Record<string, unknown>,
    rows: R[],
    limit: number,
    keyOf: (r: R) => K,
    map: (r: R) => T,
  ): Page<T> {
    const more = rows.length > limit;
    const shown = more ? rows.slice(0, limit) : rows;
    return {
      data: shown.map(map),
      nextCursor: more ? this.codec.encode(scope, params, keyOf(shown[shown.length - 1])) : null,
    };
  }
}
