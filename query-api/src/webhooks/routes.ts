import { z } from 'zod';
import {
  deliveryResponse,
  domainResponse,
  forbidden,
  idParam,
  limitParam,
  listDeliveriesQuery,
  listEnvelope,
  notFound,
  pageQuery,
  type Paginator,
  route,
  type RouteSpec,
  webhookResponse,
  type WebhookResponse,
} from '@svc/contracts';
import { type DeliveryRow, deliveryView, type Sql, TENANCY_TABLES, WEBHOOK_TABLES } from '@svc/domain';

interface WebhookRow {
  webhook_id: string;
  account_id: string;
  tenant_id: string;
  url: string;
  domain: string;
  events: string[] | string;
  api_version: string;
  status: 'ACTIVE' | 'DISABLED';
  disabled_reason: WebhookResponse['disabledReason'];
  consecutive_failures: number;
  created_at: string | number;
}

const view = (r: WebhookRow): WebhookResponse => ({
  id: r.webhook_id,
  url: r.url,
  domain: r.domain,
  events: typeof r.events === 'string' ? JSON.parse(r.events) : r.events,
  status: r.status,
  disabledReason: r.disabled_reason,
  consecutiveFailures: Number(r.consecutive_failures),
  apiVersion: r.api_version,
  tenantId: r.tenant_id,
  createdAt: Number(r.created_at),
});

const COLUMNS =
  'webhook_id, account_id, tenant_id, url, domain, events, api_version, status, disabled_reason, ' +
  'consecutive_failures, created_at';

/** Developer-portal reads of webhooks, their deliveries and the account's domains (developer token only). */
export function webhookQueryRoutes(sql: Sql, pages: Paginator): RouteSpec[] {
  const owned = async (id: string, accountId: string) => {
    const { rows } = await sql.query<WebhookRow>(
      `SELECT ${COLUMNS} FROM ${WEBHOOK_TABLES.webhooks} WHERE webhook_id = $1 AND account_id = $2`,
      [id, accountId],
    );
    if (!rows.length) throw notFound();
    return rows[0];
  };
  return [
    route({
      method: 'GET',
      url: '/developer/webhooks/:id',
      auth: 'developer',
      summary: 'Read a webhook configuration (never the secret)',
      params: idParam,
      response: webhookResponse,
      handler: async ({ params, principal: p }) => view(await owned(params.id, p.accountId)),
    }),
    route({
      method: 'GET',
      url: '/developer/webhooks',
      auth: 'developer',
      summary: 'List the webhook configurations of one of the account tenants, oldest first',
      query: z.object({ tenantId: z.string().min(1).max(128), limit: limitParam, startFrom: z.string().optional() }),
      response: listEnvelope(webhookResponse),
      handler: async ({ query, principal: p }) => {
        // Another account's (or an unknown) tenant is 403, as registering a webhook for it is (spec "Errors": tenant
        // not owned).
        const { rows: own } = await sql.query(
          `SELECT 1 FROM ${TENANCY_TABLES.tenants} WHERE tenant_id = $1 AND account_id = $2`,
          [query.tenantId, p.accountId],
        );
        if (!own.length) throw forbidden();
        const scope = `webhooks:${p.accountId}`;
        const params = { tenantId: query.tenantId, limit: query.limit };
        const after = pages.start<[number, string]>(scope, params, query.startFrom) ?? [-1, ''];
        const { rows } = await sql.query<WebhookRow>(
          `SELECT ${COLUMNS} FROM ${WEBHOOK_TABLES.webhooks} WHERE account_id = $1 AND tenant_id = $2 AND ` +
            `(created_at, ` +
            `webhook_id) > ($3, $4) ORDER BY created_at, webhook_id LIMIT $5`,
          [p.accountId, query.tenantId, after[0], after[1], query.limit + 1],
        );
        return pages.page(
          scope,
          params,
          rows,
          query.limit,
          (r) => [Number(r.created_at), r.webhook_id] as [number, string],
          view,
        );
      },
    }),
    route({
      method: 'GET',
      url: '/developer/webhooks/:id/deliveries',
      auth: 'developer',
      summary: 'Delivery history of a webhook, newest first (limit default 50, max 200); never the payload',
      params: idParam,
      query: listDeliveriesQuery,
      response: listEnvelope(deliveryResponse),
      handler: async ({ params, query, principal: p }) => {
        await owned(params.id, p.accountId);
        const scope = `webhook-deliveries:${params.id}`;
        const cursorParams = { limit: query.limit };
        const before = pages.start<[number, string]>(scope, cursorParams, query.startFrom);
        const { rows } = await sql
          .query<DeliveryRow>(
            `SELECT delivery_id, webhook_id, event_type, source_id, source_type, status, attempts, ` +
              `next_attempt_at, created_at FROM webhook_deliveries
           WHERE webhook_id = $1 AND ` +
              `($2::bigint IS NULL OR (created_at, delivery_id) < ($2::bigint, $3::text)) ORDER BY ` +
              `created_at DESC, delivery_id DESC LIMIT $4`,
            [params.id, before ? before[0] : null, before ? before[1] : '', query.limit + 1],
          )
          .catch((e) => (/webhook_deliveries/.test(String(e)) ? { rows: [] } : Promise.reject(e)));
        return pages.page(
          scope,
          cursorParams,
          rows,
          query.limit,
          (r) => [Number(r.created_at), r.delivery_id] as [number, string],
          deliveryView,
        );
      },
    }),
    route({
      method: 'GET',
      url: '/developer/domains',
      auth: 'developer',
      summary: 'List the account webhook domains with their verification token and state',
      query: pageQuery,
      response: listEnvelope(domainResponse),
      handler: async ({ query, principal: p }) => {
        const scope = `webhook-domains:${p.accountId}`;
        const params = { limit: query.limit };
        const after = pages.start<string>(scope, params, query.startFrom) ?? '';
        const { rows } = await sql.query<{ domain: string; verification_token: string; verified: boolean }>(
          `SELECT domain, verification_token, verified FROM ${WEBHOOK_TABLES.domains} WHERE account_id = $1 AND ` +
            'domain > $2 ORDER BY domain LIMIT $3',
          [p.accountId, after, query.limit + 1],
        );
        return pages.page(
          scope,
          params,
          rows,
          query.limit,
          (r) => r.domain,
          (r) => ({ domain: r.domain, verificationToken: r.verification_token, verified: r.verified }),
        );
      },
    }),
  ];
}
