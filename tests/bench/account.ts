import type { FastifyInstance } from 'fastify';
import { OPERATOR_TOKEN, type Bootstrap } from '../src/support/service';

/**
 * The terms of the account every bench drives: a negotiated burst limit and a credit limit far above any load
 * (the gates still run and count every request, but never refuse), and an inference balance for RAG.
 */
export const BENCH_ACCOUNT_TERMS = {
  plan: 'enterprise',
  rateLimitPerMinute: 100_000_000,
  creditLimit: 1_000_000_000_000,
  inferenceBalanceCents: 1_000_000,
};

/** Gives the bootstrap account of a service built in this process the bench's terms (operator API, through inject). */
export async function benchAccountInProcess(app: FastifyInstance, boot: Bootstrap): Promise<void> {
  const r = await app.inject({
    method: 'PATCH',
    url: `/operator/accounts/${boot.accountId}`,
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
    payload: JSON.stringify(BENCH_ACCOUNT_TERMS),
  });
  if (r.statusCode !== 200) throw new Error(`bench account update failed: ${r.statusCode} ${r.body}`);
}
