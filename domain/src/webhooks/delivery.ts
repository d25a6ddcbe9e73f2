import { invalid } from '@svc/contracts';
import { retryDelayMs } from './backoff';

/** The delivery state machine (spec "Webhook delivery status"). */
export type DeliveryStatus = 'PENDING' | 'DELIVERED' | 'FAILED';

export interface DeliveryProgress {
  status: DeliveryStatus;
  attempts: number;
  /** Epoch ms of the next attempt; null once settled. */
  nextAttemptAt: number | null;
}

export type AttemptOutcome = { ok: true } | { ok: false };

/** After an attempt: a 2xx is DELIVERED; a failure waits for the next backoff step, or is FAILED after the last. */
export function afterAttempt(d: DeliveryProgress, outcome: AttemptOutcome, now: number, scale = 1): DeliveryProgress {
  const attempts = d.attempts + 1;
  if (outcome.ok) return { status: 'DELIVERED', attempts, nextAttemptAt: null };
  const delay = retryDelayMs(attempts, scale);
  return delay === null ? { status: 'FAILED', attempts, nextAttemptAt: null } : { status: 'PENDING', attempts, nextAttemptAt: now + delay };
}

/** Manual retry: only a FAILED delivery is re-queued (PENDING, due now, attempts kept); anything else is a 400. */
export function decideManualRetry(d: DeliveryProgress, now: number): DeliveryProgress {
  if (d.status !== 'FAILED') throw invalid('Only a FAILED delivery can be retried');
  return { status: 'PENDING', attempts: d.attempts, nextAttemptAt: now };
}
