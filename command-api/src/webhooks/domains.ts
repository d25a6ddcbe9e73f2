import { randomBytes } from 'node:crypto';
import {
  domainParam,
  domainResponse,
  notFound,
  registerDomainBody,
  type RequestMeta,
  route,
  type RouteSpec,
  verifyDomainBody,
} from '@svc/contracts';
import {
  type DomainsState,
  handleCommand,
  metadataFor,
  streams,
  verificationRecordName,
  type WebhookDomainCommand,
  webhookDomainsDecider,
  webhookStreams,
} from '@svc/domain';
import type { WebhookCommandDeps } from './registrations';

const newToken = () => `wv_${randomBytes(16).toString('hex')}`;

/**
 * Webhook domains (decisions §6, §9): the developer registers a domain and gets
 * its verification token; the operator API marks it verified, or the developer
 * asks for a DNS check of the TXT record `_webhook-verify.<domain>`.
 */
export function webhookDomainRoutes(w: WebhookCommandDeps): RouteSpec[] {
  const { deps } = w;
  const shown = (domain: string, d: { verificationToken: string; verified: boolean }) => ({
    domain,
    verificationToken: d.verificationToken,
    verified: d.verified,
  });
  /**
   * Runs one command on an account's domains and answers `domain` as its developer sees it.
   * `txtRecords` are what `lookup` read from the DNS (none without a lookup).
   */
  const onDomains = async (
    accountId: string,
    domain: string,
    meta: RequestMeta,
    command: (txtRecords: string[]) => WebhookDomainCommand,
    lookup?: (s: DomainsState) => Promise<string[]>,
  ) => {
    const { state } = await handleCommand(deps, {
      streamId: webhookStreams.domains(accountId),
      aggregate: webhookDomainsDecider,
      metadata: metadataFor(meta, null, null),
      prepare: async (s) => (lookup ? await lookup(s) : []),
      decide: (s, txtRecords) => ({ events: webhookDomainsDecider.decide(command(txtRecords), s) }),
    });
    return shown(domain, state.domains.get(domain)!);
  };
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
      handler: ({ body, principal: p, meta }) =>
        onDomains(p.accountId, body.domain, meta, () => ({
          type: 'AddDomain',
          accountId: p.accountId,
          domain: body.domain,
          token: newToken(),
        })),
    }),
    route({
      method: 'POST',
      url: '/developer/domains/:domain/verify',
      auth: 'developer',
      summary:
        'Verify a registered domain by its DNS TXT record _webhook-verify.<domain> carrying the verification token',
      params: domainParam,
      response: domainResponse,
      write: true,
      handler: ({ params, principal: p, meta }) =>
        onDomains(
          p.accountId,
          params.domain,
          meta,
          (txtRecords) => ({ type: 'VerifyDomainByDns', accountId: p.accountId, domain: params.domain, txtRecords }),
          // The DNS is asked only about a known domain not verified yet.
          async (s) => {
            const known = s.domains.get(params.domain);
            return known && !known.verified
              ? await w.resolver.txt(verificationRecordName(params.domain)).catch(() => [])
              : [];
          },
        ),
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
        if ((await deps.store.readStream(streams.account(body.accountId), { maxCount: 1 })).length === 0)
          throw notFound();
        return onDomains(body.accountId, body.domain, meta, () => ({
          type: 'VerifyDomainByOperator',
          accountId: body.accountId,
          domain: body.domain,
          token: newToken(),
        }));
      },
    }),
  ];
}
