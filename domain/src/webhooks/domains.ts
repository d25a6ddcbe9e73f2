import type { DomainEvent } from '@svc/contracts';

/** The domains of one account (stream `webhook-domains-<accountId>`): verification token and state of each. */
export interface DomainsState {
  domains: Map<string, { verificationToken: string; verified: boolean }>;
}

export const domainsAggregate = {
  initialState: (): DomainsState => ({ domains: new Map() }),
  evolve(s: DomainsState, e: DomainEvent): DomainsState {
    if (e.type === 'WebhookDomainAdded') {
      const domains = new Map(s.domains);
      if (!domains.has(e.data.domain)) domains.set(e.data.domain, { verificationToken: e.data.verificationToken, verified: false });
      return { domains };
    }
    if (e.type === 'WebhookDomainVerified') {
      const domains = new Map(s.domains);
      const d = domains.get(e.data.domain);
      if (d) domains.set(e.data.domain, { ...d, verified: true });
      return { domains };
    }
    return s;
  },
};

export const verifiedDomains = (s: DomainsState) => [...s.domains].filter(([, d]) => d.verified).map(([name]) => name);

/** Adding a domain twice answers the first token (idempotent). */
export function decideAddDomain(s: DomainsState, accountId: string, domain: string, token: string): DomainEvent[] {
  return s.domains.has(domain) ? [] : [{ type: 'WebhookDomainAdded', data: { accountId, domain, verificationToken: token } }];
}

/** Verifying an unknown domain registers it first (the operator may verify on the developer's behalf); verifying twice does nothing. */
export function decideVerifyDomain(s: DomainsState, accountId: string, domain: string, method: 'operator' | 'dns', token: string): DomainEvent[] {
  const known = s.domains.get(domain);
  if (known?.verified) return [];
  return [
    ...(known ? [] : [{ type: 'WebhookDomainAdded', data: { accountId, domain, verificationToken: token } } as DomainEvent]),
    { type: 'WebhookDomainVerified', data: { accountId, domain, method } },
  ];
}

/** The DNS TXT record name that proves control of `domain` (decisions §6). */
export const verificationRecordName = (domain: string) => `_webhook-verify.${domain}`;
