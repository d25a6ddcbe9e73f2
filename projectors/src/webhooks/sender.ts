import { isIP, type LookupFunction } from 'node:net';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { Agent, request } from 'undici';
import {
  type AddressPolicy,
  checkResolved,
  classifyAddress,
  type HostResolver,
  signDelivery,
  webhookHostname,
} from '@svc/domain';

/** Delivery timeouts (spec "Delivery mechanics"). */
export const CONNECT_TIMEOUT_MS = 5_000;
export const RESPONSE_TIMEOUT_MS = 30_000;
/** At most this much of a receiver's answer is read (then the connection is dropped). */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** Connection pools kept (one per hostname and checked address). */
const MAX_AGENTS = 256;

export type SendOutcome =
  | { kind: 'delivered'; status: number }
  | { kind: 'failed'; status?: number; error?: string }
  /** The delivery-time address gate refused the target (fail closed): nothing was sent. */
  | { kind: 'refused'; reason: string };

export interface SenderOptions {
  resolver: HostResolver;
  policy: AddressPolicy;
  /** Extra CA certificates to trust (WEBHOOK_CA_FILE), besides the system's. */
  ca?: string;
  connectTimeoutMs?: number;
  responseTimeoutMs?: number;
}

/**
 * A lookup that answers only the address checked a moment ago, whatever name it is asked for: no second DNS answer can
 * slip in.
 */
export function pinnedLookup(address: string): LookupFunction {
  const family = isIP(address);
  return ((_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => {
    if (opts?.all) cb(null, [{ address, family }]);
    else cb(null, address, family);
  }) as unknown as LookupFunction;
}

/**
 * One delivery attempt: re-resolve the hostname, check every address (fail
 * closed), then POST to the first checked address with the connection pinned
 * to it, so DNS rebinding between check and connect is impossible. The
 * signature is made here, at send time, over the exact body bytes.
 */
export class WebhookSender {
  /** Built once: parsing the CA bundle per connection would cost ~100 ms a delivery. */
  private readonly tls: { secureContext: SecureContext } | undefined;

  constructor(private readonly o: SenderOptions) {
    this.tls = o.ca ? { secureContext: createSecureContext({ ca: [...rootCertificates, o.ca] }) } : undefined;
  }

  /**
   * `signal` aborts the attempt (a stopping dispatcher): the outcome is then `failed` and the caller leaves the
   * delivery due.
   */
  async send(d: {
    url: string;
    deliveryId: string;
    body: string;
    secretHex: string;
    nowMs: number;
    signal?: AbortSignal;
  }): Promise<SendOutcome> {
    let hostname: string;
    try {
      hostname = webhookHostname(d.url);
    } catch {
      return { kind: 'refused', reason: 'invalid url' };
    }
    const addresses =
      classifyAddress(hostname) !== 'invalid'
        ? [hostname]
        : await this.o.resolver.lookup(hostname).catch(() => [] as string[]);
    const check = checkResolved(addresses, this.o.policy);
    if (!check.ok) return { kind: 'refused', reason: check.reason };
    const timestamp = Math.floor(d.nowMs / 1000);
    const agent = this.agentFor(hostname, addresses[0]);
    try {
      const res = await request(d.url, {
        method: 'POST',
        dispatcher: agent,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'svc-webhooks/1',
          'x-service-delivery': d.deliveryId,
          'x-service-timestamp': String(timestamp),
          'x-service-signature': signDelivery(d.secretHex, timestamp, d.body),
        },
        body: d.body,
        signal: AbortSignal.any([
          AbortSignal.timeout(
            (this.o.connectTimeoutMs ?? CONNECT_TIMEOUT_MS) + (this.o.responseTimeoutMs ?? RESPONSE_TIMEOUT_MS),
          ),
          ...(d.signal ? [d.signal] : []),
        ]),
      } as Parameters<typeof request>[1]);
      let read = 0;
      for await (const chunk of res.body) {
        read += (chunk as Buffer).length;
        if (read > MAX_RESPONSE_BYTES) break;
      }
      return res.statusCode >= 200 && res.statusCode < 300
        ? { kind: 'delivered', status: res.statusCode }
        : { kind: 'failed', status: res.statusCode };
    } catch (e) {
      return { kind: 'failed', error: e instanceof Error ? `${e.name}: ${e.message}`.slice(0, 200) : 'error' };
    }
  }

  /**
   * Connections are kept per (hostname, checked address): a pool only ever
   * connects to the address it is named after (its lookup is pinned), so
   * reusing it never reaches an address that was not checked. At most
   * MAX_AGENTS pools; the least recently used is closed.
   */
  private readonly agents = new Map<string, Agent>();

  private agentFor(hostname: string, address: string): Agent {
    const key = `${hostname}|${address}`;
    let agent = this.agents.get(key);
    if (agent) {
      this.agents.delete(key);
      this.agents.set(key, agent);
      return agent;
    }
    agent = new Agent({
      connect: { timeout: this.o.connectTimeoutMs ?? CONNECT_TIMEOUT_MS, lookup: pinnedLookup(address), ...this.tls },
      headersTimeout: this.o.responseTimeoutMs ?? RESPONSE_TIMEOUT_MS,
      bodyTimeout: this.o.responseTimeoutMs ?? RESPONSE_TIMEOUT_MS,
      keepAliveTimeout: 10_000,
      connections: 8,
    });
    this.agents.set(key, agent);
    if (this.agents.size > MAX_AGENTS) {
      const [oldest, pool] = this.agents.entries().next().value!;
      this.agents.delete(oldest);
      pool.close().catch(() => {});
    }
    return agent;
  }

  async close(): Promise<void> {
    const pools = [...this.agents.values()];
    this.agents.clear();
    await Promise.all(pools.map((a) => a.destroy().catch(() => {})));
  }
}
