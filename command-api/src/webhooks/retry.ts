import { deliveryParams, deliveryResponse, notFound, route, type RouteSpec } from '@svc/contracts';
import {
  decideManualRetry,
  type DeliveryRow,
  deliveryView,
  loadAggregate,
  ownedWebhook,
  webhookDecider,
  webhookStreams,
} from '@svc/domain';
import type { WebhookCommandDeps } from './registrations';

/**
 * Manual retry (spec "Webhook delivery status"): a FAILED delivery is re-queued
 * (PENDING, due now, same id; the dispatcher sends it with a fresh timestamp
 * and signature); any other state is a 400. The deliveries table is the
 * dispatcher's (projectors/src/webhooks/deliveries.ts).
 */
export function webhookRetryRoute(w: WebhookCommandDeps): RouteSpec {
  return route({
    method: 'POST',
    url: '/developer/webhooks/:id/deliveries/:deliveryId/retry',
    auth: 'developer',
    summary: 'Re-queue a FAILED delivery (400 when it is not FAILED)',
    params: deliveryParams,
    response: deliveryResponse,
    write: true,
    handler: async ({ params, principal: p, meta }) => {
      const { state } = await loadAggregate(w.deps.store, webhookStreams.webhook(params.id), webhookDecider);
      ownedWebhook(state, p.accountId);
      const now = meta.now.getTime();
      return w.sql.tx(async (q) => {
        const { rows } = await q.query<DeliveryRow>(
          'SELECT * FROM webhook_deliveries WHERE delivery_id = $1 AND webhook_id = $2 FOR UPDATE',
          [params.deliveryId, params.id],
        );
        if (!rows.length) throw notFound();
        const next = decideManualRetry(
          { status: rows[0].status, attempts: Number(rows[0].attempts), nextAttemptAt: null },
          now,
        );
        const { rows: updated } = await q.query<DeliveryRow>(
          'UPDATE webhook_deliveries SET status = $2, next_attempt_at = $3 WHERE delivery_id = $1 RETURNING *',
          [params.deliveryId, next.status, next.nextAttemptAt],
        );
        await q.query(`SELECT pg_notify('webhook_deliveries', $1)`, [params.id]);
        return deliveryView(updated[0]);
      });
    },
  });
}
