import { randomBytes } from 'node:crypto';
import {
  createWebhookBody,
  forbidden,
  idParam,
  notFound,
  route,
  type RouteSpec,
  updateWebhookBody,
  WEBHOOK_API_VERSION,
  webhookCreatedResponse,
  webhookResponse,
} from '@svc/contracts';
import {
  accountDecider,
  type AddressPolicy,
  checkRegistrationTarget,
  type CommandDeps,
  handleCommand,
  type HostResolver,
  isTornDown,
  loadAggregate,
  metadataFor,
  ownedWebhook,
  ownTenant,
  sealWebhookSecret,
  type Sql,
  streams,
  verifiedDomains,
  webhookDecider,
  webhookDomainsDecider,
  type WebhookState,
  webhookStreams,
  WEBHOOK_TABLES,
} from '@svc/domain';

export interface WebhookCommandDeps {
  deps: CommandDeps;
  /** Where hostnames point (registration rule 4); the test seam of docs/webhooks.md replaces it in tests. */
  resolver: HostResolver;
  policy: AddressPolicy;
  /** Seals the signing secret before it enters the log (derived from the service secret, purpose `webhook-secret`). */
  sealKey: Buffer;
  /** The read models (the failure count of `rm_webhooks`, the deliveries of `webhook_deliveries`). */
  sql: Sql;
}

/** The configuration as GET shows it (never the secret). */
const view = (s: WebhookState & { exists: true }, consecutiveFailures = 0) => ({
  id: s.webhookId,
  url: s.url,
  domain: s.domain,
  events: s.events,
  status: s.status,
  disabledReason: s.disabledReason,
  consecutiveFailures,
  apiVersion: s.apiVersion,
  tenantId: s.tenantId,
  createdAt: s.createdAt,
});

async function verifiedDomainsOf(w: WebhookCommandDeps, accountId: string) {
  const { state } = await loadAggregate(w.deps.store, webhookStreams.domains(accountId), webhookDomainsDecider);
  return verifiedDomains(state);
}

/** Developer-portal writes of webhook registrations (spec "Webhook operations"; developer token only). */
export function webhookCommandRoutes(w: WebhookCommandDeps): RouteSpec[] {
  const { deps } = w;
  return [
    route({
      method: 'POST',
      url: '/developer/webhooks',
      auth: 'developer',
      summary: 'Register a webhook for one of the account tenants; the signing secret is in this response only',
      body: createWebhookBody,
      response: webhookCreatedResponse,
      status: 201,
      write: true,
      handler: async ({ body, principal: p, meta }) => {
        // Rules 1 and 2 (https, non-empty events) are the body schema; 3: own tenant (403); 4: public addresses (400);
        // 5: verified domain (403).
        const { state: account } = await loadAggregate(deps.store, streams.account(p.accountId), accountDecider);
        if (!account.exists) throw forbidden();
        const environment = ownTenant(account.tenants, body.tenantId);
        if (await isTornDown(deps.store, body.tenantId)) throw forbidden();
        const domain = await checkRegistrationTarget(body.url, {
          resolver: w.resolver,
          policy: w.policy,
          verifiedDomains: await verifiedDomainsOf(w, p.accountId),
        });
        const secret = randomBytes(32).toString('hex');
        const webhookId = deps.ids.newId();
        const { state } = await handleCommand(deps, {
          streamId: webhookStreams.webhook(webhookId),
          aggregate: webhookDecider,
          metadata: metadataFor(meta, body.tenantId, null),
          fresh: true,
          decide: (s) => ({
            events: webhookDecider.decide(
              {
                type: 'RegisterWebhook',
                webhookId,
                accountId: p.accountId,
                tenantId: body.tenantId,
                livemode: environment === 'live',
                url: body.url,
                domain,
                events: [...new Set(body.events)],
                apiVersion: body.apiVersion ?? WEBHOOK_API_VERSION,
                sealedSecret: sealWebhookSecret(w.sealKey, secret),
                createdAt: meta.now.getTime(),
              },
              s,
            ),
          }),
        });
        return { ...view(state as WebhookState & { exists: true }), secret };
      },
    }),
    route({
      method: 'PUT',
      url: '/developer/webhooks/:id',
      auth: 'developer',
      summary:
        'Update url, events, apiVersion or status (ACTIVE re-enables and resets the failure count; ' +
        'DISABLED disables by hand); the URL rules re-run when url changes',
      params: idParam,
      body: updateWebhookBody,
      response: webhookResponse,
      write: true,
      handler: async ({ params, body, principal: p, meta }) => {
        const streamId = webhookStreams.webhook(params.id);
        const { state: before } = await loadAggregate(deps.store, streamId, webhookDecider);
        const current = ownedWebhook(before, p.accountId);
        if (await isTornDown(deps.store, current.tenantId)) throw notFound();
        const urlChanged = body.url !== undefined && body.url !== current.url;
        const domain = urlChanged
          ? await checkRegistrationTarget(body.url!, {
              resolver: w.resolver,
              policy: w.policy,
              verifiedDomains: await verifiedDomainsOf(w, p.accountId),
            })
          : current.domain;
        const { state } = await handleCommand(deps, {
          streamId,
          aggregate: webhookDecider,
          metadata: metadataFor(meta, current.tenantId, null),
          decide: (s) => ({
            events: webhookDecider.decide({ type: 'UpdateWebhook', accountId: p.accountId, body, domain }, s),
          }),
        });
        if (!state.exists) throw notFound();
        // The failure count is kept by the dispatcher in the read model (reset by a re-enable).
        const { rows } = await w.sql.query<{ n: number }>(
          `SELECT consecutive_failures AS n FROM ${WEBHOOK_TABLES.webhooks} WHERE webhook_id = $1`,
          [params.id],
        );
        return view(state, Number(rows[0]?.n ?? 0));
      },
    }),
    route({
      method: 'DELETE',
      url: '/developer/webhooks/:id',
      auth: 'developer',
      summary:
        'Delete a webhook registration and its deliveries (the only way to roll a secret is delete, then create)',
      params: idParam,
      status: 204,
      write: true,
      handler: async ({ params, principal: p, meta }) => {
        const streamId = webhookStreams.webhook(params.id);
        const { state } = await loadAggregate(deps.store, streamId, webhookDecider);
        const current = ownedWebhook(state, p.accountId);
        if (await isTornDown(deps.store, current.tenantId)) throw notFound();
        await handleCommand(deps, {
          streamId,
          aggregate: webhookDecider,
          metadata: metadataFor(meta, current.tenantId, null),
          decide: (s) => ({ events: webhookDecider.decide({ type: 'DeleteWebhook', accountId: p.accountId }, s) }),
        });
        return null;
      },
    }),
  ];
}
