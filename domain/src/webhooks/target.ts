import { forbidden, invalid } from '@svc/contracts';
import { checkResolved, classifyAddress, type AddressPolicy } from './address';

/**
 * How webhook code learns where a hostname points (the dns module in
 * production; a test seam in tests, see docs/webhooks.md). `lookup` returns
 * every address (A and AAAA); an empty list means unresolvable.
 */
export interface HostResolver {
  lookup(hostname: string): Promise<string[]>;
  /** TXT records of a name (domain verification), each record's strings joined. */
  txt(name: string): Promise<string[]>;
}

/** The hostname of an https URL (lower case, no trailing dot, IPv6 brackets removed); a 400 otherwise. */
export function webhookHostname(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw invalid('url is not a valid URL');
  }
  if (u.protocol !== 'https:') throw invalid('url must start with https://');
  if (u.username || u.password) throw invalid('url must not carry credentials');
  const host = u.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  if (!host) throw invalid('url has no hostname');
  return host;
}

/** True when `hostname` is the verified `domain` itself or a name under it. */
export const hostUnderDomain = (hostname: string, domain: string) =>
  hostname === domain || hostname.endsWith(`.${domain}`);

/** The verified domain that covers `hostname`, if any. */
export const coveringDomain = (hostname: string, verified: Iterable<string>): string | undefined => {
  let best: string | undefined;
  for (const d of verified) if (hostUnderDomain(hostname, d) && (!best || d.length > best.length)) best = d;
  return best;
};

/**
 * Registration rules 4 and 5 (rules 1-3 are the body schema and the tenant
 * check): the hostname resolves, every address is public (400), and a verified
 * domain of the account covers it (403). Returns the covering domain.
 */
export async function checkRegistrationTarget(
  url: string,
  o: { resolver: HostResolver; policy: AddressPolicy; verifiedDomains: Iterable<string> },
): Promise<string> {
  const hostname = webhookHostname(url);
  // An IP literal is checked as it is (and can never be a verified domain).
  const addresses =
    classifyAddress(hostname) !== 'invalid' ? [hostname] : await o.resolver.lookup(hostname).catch(() => []);
  const check = checkResolved(addresses, o.policy);
  if (!check.ok)
    throw invalid(
      check.reason === 'unresolvable'
        ? 'The url hostname does not resolve'
        : 'The url hostname resolves to an address that is not publicly routable',
    );
  const domain = coveringDomain(hostname, o.verifiedDomains);
  if (!domain) throw forbidden();
  return hostname;
}
