import { z } from 'zod';

/**
 * The one price table (decisions §5). Everything is metered in milli-credits
 * (1 credit = 1,000 milli-credits); the defaults below are the decided prices and
 * PRICES_JSON (a partial object of the same shape, merged over them) overrides
 * any of them at start. Sizes are binary: 1 KB = 1,024 bytes, 1 MB = 1,024 KB,
 * 1 GB = 1,024 MB. docs/api.md "Usage" explains how each figure is computed.
 */
export interface PriceTable {
  /** Record and document writes (create, replace, patch; deletes are free). */
  writes: { recordMilli: number; documentMilli: number };
  /**
   * Index credits per lookup field the write indexes (a declared lookup field with a value): equality 1,
   * range-enabled 3. Automatic lookups (schema, externalId, userId, scopes) are counted in `indexCount` at 1
   * each but charged `automatic` (0 by default: decisions §5 charges per declared lookup field).
   */
  index: { equality: number; range: number; automatic: number; creditMilli: number };
  /** Per search served, by mode. */
  search: { TEXT: number; SEMANTIC: number; HYBRID: number };
  /** Document text ingest: per started `unitBytes` of UTF-8 text. */
  textIngest: { unitBytes: number; milliPerUnit: number };
  /** File ingest: per started `unitBytes` of the uploaded file. */
  fileIngest: { unitBytes: number; milliPerUnit: number };
  /** Script execution: baseline per execution, included time per execution, billable ms per milli-credit. */
  scriptExecution: { baselineMillis: number; includedMillis: number; millisPerMilli: number };
  /**
   * Reads: free up to the included calls and bytes out per account and month, then 1 credit per `callsPerCredit` /
   * `bytesPerCredit`.
   */
  reads: { includedCalls: number; callsPerCredit: number; includedBytes: number; bytesPerCredit: number };
  /**
   * Monthly allowances in whole credits per plan; `enterprise` takes the account's `creditLimit` (none: no ceiling).
   */
  allowances: { free: number; starter: number; pro: number; scale: number };
  /**
   * Inference, charged to the account's inference balance in cents: each model's credits per 1k input and output
   * tokens (the built-in model's, and each LLM_MODELS model's), and what a credit costs in cents.
   */
  inference: {
    centsPerCredit: number;
    builtinInputCreditsPer1kTokens: number;
    builtinOutputCreditsPer1kTokens: number;
    llmInputCreditsPer1kTokens: number;
    llmOutputCreditsPer1kTokens: number;
  };
}

const KB = 1024;
const MB = 1024 * KB;
const GB = 1024 * MB;

export const DEFAULT_PRICES: PriceTable = {
  writes: { recordMilli: 1000, documentMilli: 1000 },
  index: { equality: 1, range: 3, automatic: 0, creditMilli: 1000 },
  search: { TEXT: 1000, SEMANTIC: 1000, HYBRID: 2000 },
  textIngest: { unitBytes: 10 * KB, milliPerUnit: 1000 },
  fileIngest: { unitBytes: 100 * KB, milliPerUnit: 2000 },
  scriptExecution: { baselineMillis: 5, includedMillis: 50, millisPerMilli: 1 },
  reads: { includedCalls: 100_000, callsPerCredit: 1000, includedBytes: GB, bytesPerCredit: 10 * MB },
  allowances: { free: 1000, starter: 50_000, pro: 250_000, scale: 1_000_000 },
  inference: {
    centsPerCredit: 0.1,
    builtinInputCreditsPer1kTokens: 0,
    builtinOutputCreditsPer1kTokens: 0,
    llmInputCreditsPer1kTokens: 1,
    llmOutputCreditsPer1kTokens: 2,
  },
};

const amount = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const unit = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
/** Inference prices may be fractional (half a credit per 1k tokens). */
const rate = z.number().min(0).max(1_000_000);
const override = z
  .object({
    writes: z.object({ recordMilli: amount, documentMilli: amount }).partial().strict(),
    index: z.object({ equality: amount, range: amount, automatic: amount, creditMilli: amount }).partial().strict(),
    search: z.object({ TEXT: amount, SEMANTIC: amount, HYBRID: amount }).partial().strict(),
    textIngest: z.object({ unitBytes: unit, milliPerUnit: amount }).partial().strict(),
    fileIngest: z.object({ unitBytes: unit, milliPerUnit: amount }).partial().strict(),
    scriptExecution: z
      .object({ baselineMillis: amount, includedMillis: amount, millisPerMilli: unit })
      .partial()
      .strict(),
    reads: z
      .object({ includedCalls: amount, callsPerCredit: unit, includedBytes: amount, bytesPerCredit: unit })
      .partial()
      .strict(),
    allowances: z.object({ free: amount, starter: amount, pro: amount, scale: amount }).partial().strict(),
    inference: z
      .object({
        centsPerCredit: rate,
        builtinInputCreditsPer1kTokens: rate,
        builtinOutputCreditsPer1kTokens: rate,
        llmInputCreditsPer1kTokens: rate,
        llmOutputCreditsPer1kTokens: rate,
      })
      .partial()
      .strict(),
  })
  .partial()
  .strict();

/** The price table: the defaults, with PRICES_JSON (when set) merged over them. Throws naming the problem. */
export function loadPrices(json: string | undefined): PriceTable {
  if (!json || !json.trim()) return DEFAULT_PRICES;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new Error('PRICES_JSON is not valid JSON');
  }
  const r = override.safeParse(raw);
  if (!r.success)
    throw new Error(`PRICES_JSON: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const out = structuredClone(DEFAULT_PRICES) as unknown as Record<string, Record<string, number>>;
  for (const [group, values] of Object.entries(r.data)) Object.assign(out[group], values);
  return out as unknown as PriceTable;
}

export type PlanName = 'free' | 'starter' | 'pro' | 'scale' | 'enterprise';

/**
 * The monthly allowance of an account in whole credits, or null for none. A set
 * `creditLimit` overrides the plan's allowance on every plan; without one the
 * plan's allowance applies (none on `enterprise`). An unset or unknown plan is Free.
 */
export function allowanceOf(
  prices: PriceTable,
  account: { plan?: unknown; creditLimit?: unknown } | null | undefined,
): number | null {
  const limit = account?.creditLimit;
  if (typeof limit === 'number' && Number.isFinite(limit) && limit >= 0) return limit;
  const plan = typeof account?.plan === 'string' ? account.plan : 'free';
  if (plan === 'enterprise') return null;
  return Object.hasOwn(prices.allowances, plan)
    ? prices.allowances[plan as keyof PriceTable['allowances']]
    : prices.allowances.free;
}

/** The billing period of a moment: `YYYY-MM` in UTC. */
export const periodOf = (at: Date | string): string =>
  // A UTC ISO timestamp (every event's occurredAt) is its own period's prefix: no Date to parse per metered event.
  typeof at === 'string' && UTC_ISO.test(at)
    ? at.slice(0, 7)
    : (typeof at === 'string' ? new Date(at) : at).toISOString().slice(0, 7);
const UTC_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
