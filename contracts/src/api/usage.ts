import { z } from 'zod';

/**
 * GET /v1/usage (spec "Usage report", "Usage"; docs/api.md "Usage"): the
 * report object itself, not enveloped. Milli figures are exact (1 credit =
 * 1,000 milli-credits); whole-credit figures are rounded down.
 */
const intText = (min: number, max: number, what: string) =>
  z.union([z.number(), z.string()]).transform((v, ctx) => {
    const n = typeof v === 'number' ? v : /^\d+$/.test(v) ? Number(v) : NaN;
    if (!Number.isInteger(n) || n < min || n > max) {
      ctx.addIssue({ code: 'custom', message: `${what} must be a whole number from ${min} to ${max}` });
      return z.NEVER;
    }
    return n;
  });

export const usageQuery = z
  .object({
    year: intText(2000, 9999, 'year').optional(),
    month: intText(1, 12, 'month').optional(),
    /** Display-only filter on `contexts` (cross-context credentials). */
    contextId: z.string().min(1).max(128).optional(),
  })
  .strict();
export type UsageQuery = z.infer<typeof usageQuery>;

const count = z.object({ count: z.number() });
const breakdown = z.record(z.string(), z.number());
const credits = z.object({ used: z.number(), usedMilli: z.number(), breakdown });
const search = z.object({ queries: z.object({ text: count, semantic: count, hybrid: count }) });
const documents = z.object({
  ingest: z.object({
    text: z.object({ count: z.number(), bytes: z.number() }),
    file: z.object({ count: z.number(), bytes: z.number() }),
  }),
  writes: z.object({ count: z.number(), indexCount: z.number() }),
});
const records = z.object({ writes: z.object({ count: z.number(), indexCount: z.number() }) });
const endpoints = z.object({
  chat: z.object({ calls: z.number() }),
  rag: z.object({ calls: z.number() }),
  ask: z.object({ calls: z.number() }),
});
const execution = z.object({
  executions: z.number(),
  totalMillis: z.number(),
  includedMillis: z.number(),
  billableMillis: z.number(),
  credits: z.number(),
  creditsMilli: z.number(),
});
const scopeFigures = {
  credits,
  search,
  documents,
  records,
  inference: z.object({ costCents: z.number(), endpoints }),
  execution,
};
export const usageTenant = z.object({ tenantId: z.string(), environment: z.enum(['live', 'test']), ...scopeFigures });
export const usageContext = z.object({
  contextId: z.string(),
  tenantId: z.string(),
  environment: z.enum(['live', 'test']),
  ...scopeFigures,
});

export const usageReport = z.object({
  period: z.string(),
  accountId: z.string(),
  plan: z.string(),
  credits: credits.extend({
    limit: z.number().optional(),
    limitMilli: z.number().optional(),
    remaining: z.number().optional(),
  }),
  search,
  documents,
  records,
  inference: z.object({ balanceCents: z.number(), costCents: z.number(), endpoints }),
  identity: z.object({ users: z.object({ count: z.number() }), entities: z.object({ count: z.number() }) }),
  reads: z.object({
    calls: z.object({
      used: z.number(),
      included: z.number(),
      overageCredits: z.number(),
      overageCreditsMilli: z.number(),
    }),
    dataOut: z.object({
      bytes: z.number(),
      includedBytes: z.number(),
      overageCredits: z.number(),
      overageCreditsMilli: z.number(),
    }),
  }),
  execution,
  tenants: z.object({ live: usageTenant.nullable(), test: usageTenant.nullable() }),
  contexts: z.array(usageContext),
});
export type UsageReport = z.infer<typeof usageReport>;
