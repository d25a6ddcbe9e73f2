import { promises as dns } from 'node:dns';
import { readFileSync } from 'node:fs';
import type { HostResolver } from '@svc/domain';

/**
 * The system resolver: every A and AAAA answer of a name (an error or no answer is an empty list, which fails closed).
 */
export const systemResolver = (): HostResolver => ({
  lookup: async (hostname) =>
    (await dns.lookup(hostname, { all: true, verbatim: true }).catch(() => [])).map((a) => a.address),
  txt: async (name) => (await dns.resolveTxt(name).catch(() => [] as string[][])).map((parts) => parts.join('')),
});

/**
 * TEST ONLY (WEBHOOK_TEST_DNS_FILE): answers from a JSON file `{"<hostname>":
 * ["<address>", ...], "txt:<name>": ["<record>"]}`, read again on every
 * lookup, so a test can change a name's answer between registration and
 * delivery (DNS rebinding). Names the file does not list resolve to nothing.
 * Never set it in production: whoever writes the file decides where webhooks go.
 */
export const fileResolver = (file: string): HostResolver => {
  const table = (): Record<string, string[]> => {
    try {
      return JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      return {};
    }
  };
  return {
    lookup: async (hostname) => table()[hostname.toLowerCase()] ?? [],
    txt: async (name) => table()[`txt:${name.toLowerCase()}`] ?? [],
  };
};

export const webhookResolver = (testDnsFile?: string): HostResolver =>
  testDnsFile ? fileResolver(testDnsFile) : systemResolver();
