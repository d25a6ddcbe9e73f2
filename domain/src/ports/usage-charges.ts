import type { Principal, RequestMeta } from '@svc/contracts';
import type { SearchMode } from '../usage/charges';

/**
 * Charges for work once it was served (docs/api.md "Usage"): the read side
 * (search, and later inference and scripts) charges through this port. The
 * adapter is command-api's UsageMeter, which appends to the tenant's usage
 * stream; deploy hands it to the query routes.
 */
export interface UsageCharges {
  /** A search served (POST /v1/search, 200). */
  search(meta: RequestMeta, mode: SearchMode): Promise<void>;
  /** Script executions that ran; `charged: false` for service-side failures. */
  scriptExecution(
    meta: RequestMeta,
    run: { executions?: number; totalMillis: number; charged: boolean },
  ): Promise<void>;
  /** An inference call, counted when the stream finalises; the cents go to the balance, not to credits. */
  inferenceCall(meta: RequestMeta, surface: 'chat' | 'rag' | 'ask', costCents?: number): Promise<void>;
  /** `calls` reads (default one) of `bytes` response bytes in all (each event of the change stream is one read). */
  countRead(p: Principal, bytes: number, at?: Date, calls?: number): void;
}
