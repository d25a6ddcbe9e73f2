import { randomBytes } from 'node:crypto';
import { domainParam, domainResponse, notFound, registerDomainBody, route, type RouteSpec, verifyDomainBody } from '@svc/contracts';
import { streams, verificationRecordName, webhookDomainsDecider, webhookStreams } from '@svc/domain';
import { handleCommand, metadataFor } from '../handle-command';
import type { WebhookCommandDeps } from './registrations';

const newToken = () => `wv_${randomBytes(16).toString('hex')}`;

/**
 * Webhook domains (decisions §6, §9): the developer registers a domain and gets
 * its verification token; the operator API marks it verified, or the developer
 * asks for a DNS check of the TXT record `_webhook-verify.<domain>`.
 */
export function webhookDomainRoutes(w: WebhookCommandDeps): RouteSpec[] {
  const { deps } = w;
  const shown = (domain: string, d: { verificationToken: string; verified: boolean }) => ({ domain, verificationToken: d.verificationToken, verified: d.verified });
  return [
    route({
      method: 'POST',
      url: '/developer/domains',
      auth: 'developer',
      summary: 'Register a domain for webhook verification and get its verification token (idempotent)',
      body: registerDomainBody,
      response: domainResponse,
      status: 201,
      write: true,
      handler: async ({ body, principal: p, meta }) => {
        const { state } = await handleCommand(deps, {
          streamId: webhookStreams.domains(p.accountId),
          aggregate: webhookDomainsDecider,
          metadata: metadataFor(meta, null, null),
          decide: (s) => ({ events: webhookDomainsDecider.decide({ type: 'AddDomain', accountId: p.accountId, domain: body.domain, token: newToken() }, s) }),
        });
        return shown(body.domain, state.domains.get(body.domain)!);
      },
    }),
    route({
      method: 'POST',
      url: '/developer/domains/:domain/verify',
      auth: 'developer',
      summary: 'Verify a registered domain by its DNS TXT record _webhook-verify.<domain> carrying the verification token',
      params: domainParam,
      response: domainResponse,
      write: true,
      handler: async ({ params, principal: p, meta }) => {
        const { state } = await handleCommand(deps, {
          streamId: webhookStreams.domains(p.accountId),
          aggregate: webhookDomainsDecider,
          metadata: metadataFor(meta, null, null),
          // The DNS is asked only about a known domain not verified yet.
          prepare: async (s) => {
            const known = s.domains.get(params.domain);
            return known && !known.verified ? await w.resolver.txt(verificationRecordName(params.domain)).catch(() => []) : [];
          },
          decide: (s, txtRecords) => ({ events: webhookDomainsDecider.decide({ type: 'VerifyDomainByDns', accountId: p.accountId, domain: params.domain, txtRecords }, s) }),
        });
        return shown(params.domain, state.domains.get(params.domain)!);
      },
    }),
    route({
      method: 'POST',
      url: '/operator/domains/verify',
      auth: 'operator',
      summary: 'Mark a webhook domain of an account verified (registering it first when the developer has not)',
      body: verifyDomainBody,
      response: domainResponse,
      write: true,
      handler: async ({ body, meta }) => {
        if ((await deps.store.readStream(streams.account(body.accountId), { maxCount: 1 })).length === 0) throw notFound();
        const { state } = await handleCommand(deps, {
          streamId: webhookStreams.domains(body.accountId),
          aggregate: webhookDomainsDecider,
          metadata: metadataFor(meta, null, null),
          decide: (s) => ({ events: webhookDomainsDecider.decide({ type: 'VerifyDomainByOperator', accountId: body.accountId, domain: body.domain, token: newToken() }, s) }),
        });
        return shown(body.domain, state.domains.get(body.domain)!);
      },
    }),
  ];
}
