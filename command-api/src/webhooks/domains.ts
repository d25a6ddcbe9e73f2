import { randomBytes } from 'node:crypto';
import { domainParam, domainResponse, invalid, notFound, registerDomainBody, route, type RouteSpec, verifyDomainBody } from '@svc/contracts';
import { decideAddDomain, decideVerifyDomain, domainsAggregate, streams, verificationRecordName, webhookStreams } from '@svc/domain';
import { handleCommand, loadAggregate, metadataFor } from '../handle-command';
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
        const { state } = await handleCommand(deps, webhookStreams.domains(p.accountId), domainsAggregate, (s) => ({ events: decideAddDomain(s, p.accountId, body.domain, newToken()) }), metadataFor(meta, null, null));
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
        const { state } = await loadAggregate(deps.store, webhookStreams.domains(p.accountId), domainsAggregate);
        const known = state.domains.get(params.domain);
        if (!known) throw notFound();
        if (!known.verified) {
          const records = await w.resolver.txt(verificationRecordName(params.domain)).catch(() => []);
          if (!records.some((r) => r.trim() === known.verificationToken)) throw invalid(`No TXT record ${verificationRecordName(params.domain)} carries the verification token`);
          await handleCommand(deps, webhookStreams.domains(p.accountId), domainsAggregate, (s) => ({ events: decideVerifyDomain(s, p.accountId, params.domain, 'dns', known.verificationToken) }), metadataFor(meta, null, null));
        }
        return shown(params.domain, { ...known, verified: true });
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
        const { state } = await handleCommand(deps, webhookStreams.domains(body.accountId), domainsAggregate, (s) => ({ events: decideVerifyDomain(s, body.accountId, body.domain, 'operator', newToken()) }), metadataFor(meta, null, null));
        return shown(body.domain, state.domains.get(body.domain)!);
      },
    }),
  ];
}
