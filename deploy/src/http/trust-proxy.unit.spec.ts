import { afterAll, describe, expect, it } from 'vitest';
import { createEdge, type EdgeOptions } from './edge';

/**
 * TRUST_PROXY_HOPS at the edge (docs/limits.md): the client address is the one `hops` entries from the right of
 * X-Forwarded-For plus the TCP peer; with 0 the header is not read. Fastify 5.12.1 and later ignore a numeric
 * trustProxy, so the edge passes a hop-counting function: this checks it really moves req.ip.
 */
describe('the client address with TRUST_PROXY_HOPS = 0, 1, 2', () => {
  const apps: ReturnType<typeof createEdge>[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
  });

  async function ipOf(hops: number, xff: string | undefined): Promise<string> {
    const opts: EdgeOptions = {
      resolveCredential: async () => null,
      contextExists: async () => false,
      trustProxyHops: hops,
    };
    const app = createEdge(opts);
    apps.push(app);
    app.get('/ip', async (req) => ({ ip: req.ip }));
    const r = await app.inject({
      method: 'GET',
      url: '/ip',
      remoteAddress: '10.1.1.1',
      headers: xff === undefined ? {} : { 'x-forwarded-for': xff },
    });
    expect(r.statusCode, r.body).toBe(200);
    return r.json().ip;
  }

  it.each([
    // hops, X-Forwarded-For as received, the client address
    [0, undefined, '10.1.1.1'],
    [0, '203.0.113.1', '10.1.1.1'],
    [0, '198.51.100.9, 203.0.113.1', '10.1.1.1'],
    [1, undefined, '10.1.1.1'],
    [1, '203.0.113.1', '203.0.113.1'],
    [1, '198.51.100.9, 203.0.113.1', '203.0.113.1'],
    [1, 'not-an-address, 198.51.100.9, 203.0.113.1', '203.0.113.1'],
    [2, '203.0.113.1', '203.0.113.1'],
    [2, '198.51.100.9, 203.0.113.1', '198.51.100.9'],
    [2, 'forged, 198.51.100.9, 203.0.113.1', '198.51.100.9'],
  ])('hops %i, X-Forwarded-For %s: %s', async (hops, xff, ip) => {
    expect(await ipOf(hops, xff)).toBe(ip);
  });
});
