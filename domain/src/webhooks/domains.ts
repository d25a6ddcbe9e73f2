import { invalid, notFound } from '@svc/contracts';
import { assertNever, type Decider, type EventsOf, unexpected } from '../shared/decider';

/** The domains of one account (stream `webhook-domains-<accountId>`): verification token and state of each. */
export interface DomainsState {
  domains: Map<string, { verificationToken: string; verified: boolean }>;
}

export const verifiedDomains = (s: DomainsState) => [...s.domains].filter(([, d]) => d.verified).map(([name]) => name);

export type WebhookDomainEvent = EventsOf<'WebhookDomainAdded' | 'WebhookDomainVerified'>;

export type WebhookDomainCommand =
  /** The developer registers a domain; adding it twice answers the first token (nothing is written). */
  | { type: 'AddDomain'; accountId: string; domain: string; token: string }
  /**
   * The operator marks a domain verified, registering it first with `token` when the developer has not; verifying twice
   * does nothing.
   */
  | { type: 'VerifyDomainByOperator'; accountId: string; domain: string; token: string }
  /**
   * The developer asks for the DNS check: `txtRecords` are the TXT records of `_webhook-verify.<domain>` (read only for
   * a known, unverified domain).
   */
  | { type: 'VerifyDomainByDns'; accountId: string; domain: string; txtRecords: readonly string[] };

export const webhookDomainsDecider: Decider<DomainsState, WebhookDomainCommand, WebhookDomainEvent> = {
  initialState: () => ({ domains: new Map() }),

  decide(cmd, s) {
    const known = s.domains.get(cmd.domain);
    switch (cmd.type) {
      case 'AddDomain':
        return known
          ? []
          : [
              {
                type: 'WebhookDomainAdded',
                data: { accountId: cmd.accountId, domain: cmd.domain, verificationToken: cmd.token },
              },
            ];
      case 'VerifyDomainByOperator':
        if (known?.verified) return [];
        return [
          ...(known
            ? []
            : [
                {
                  type: 'WebhookDomainAdded',
                  data: { accountId: cmd.accountId, domain: cmd.domain, verificationToken: cmd.token },
                } as const,
              ]),
          { type: 'WebhookDomainVerified', data: { accountId: cmd.accountId, domain: cmd.domain, method: 'operator' } },
        ];
      case 'VerifyDomainByDns':
        if (!known) throw notFound();
        if (known.verified) return [];
        if (!cmd.txtRecords.some((r) => r.trim() === known.verificationToken))
          throw invalid(`No TXT record ${verificationRecordName(cmd.domain)} carries the verification token`);
        return [
          { type: 'WebhookDomainVerified', data: { accountId: cmd.accountId, domain: cmd.domain, method: 'dns' } },
        ];
      default:
        return assertNever(cmd);
    }
  },

  evolve(s, e) {
    const domains = new Map(s.domains);
    switch (e.type) {
      case 'WebhookDomainAdded':
        if (!domains.has(e.data.domain))
          domains.set(e.data.domain, { verificationToken: e.data.verificationToken, verified: false });
        return { domains };
      case 'WebhookDomainVerified': {
        const d = domains.get(e.data.domain);
        if (d) domains.set(e.data.domain, { ...d, verified: true });
        return { domains };
      }
      default:
        return unexpected(e, s);
    }
  },
};

/** The DNS TXT record name that proves control of `domain` (decisions §6). */
export const verificationRecordName = (domain: string) => `_webhook-verify.${domain}`;
