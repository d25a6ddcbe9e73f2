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
  return delay === null
    ? { status: 'FAILED', attempts, nextAttemptAt: null }
    : { status: 'PENDING', attempts, nextAttemptAt: now + delay };
}

/** Manual retry: only a FAILED delivery is re-queued (PENDING, due now, attempts kept); anything else is a 400. */
export function decideManualRetry(d: DeliveryProgress, now: number): DeliveryProgress {
  if (d.status !== 'FAILED') throw invalid('Only a FAILED delivery can be retried');
  return { status: 'PENDING', attempts: d.attempts, nextAttemptAt: now };
}

/** A `webhook_deliveries` row as the delivery APIs read it (the payload is never shown). */
export interface DeliveryRow {
  delivery_id: string;
  webhook_id: string;
  event_type: string;
  source_id: string;
  source_type: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: string | number | null;
  created_at: string | number;
}

/**
 * The delivery record as the API shows it (spec "Webhook delivery record"): the list and the manual retry answer with
 * it.
 */
export const deliveryView = (r: DeliveryRow) => ({
  id: r.delivery_id,
  webhookId: r.webhook_id,
  eventType: r.event_type,
  sourceId: r.source_id,
  sourceType: r.source_type,
  status: r.status,
  attempts: Number(r.attempts),
  nextRetryAt: r.next_attempt_at === null ? null : new Date(Number(r.next_attempt_at)).toISOString(),
  createdAt: new Date(Number(r.created_at)).toISOString(),
});
