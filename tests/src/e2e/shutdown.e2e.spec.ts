/**
 * A stop never waits on a client: open change streams end first, requests in flight get a grace period, and a
 * connection still open after it is cut. Before, a client that aborted a GET /v1/changes without its socket closing
 * (Node's fetch) held the server's close for about 70 s, past the 15 s after which `npm start` exits with code 1 on
 * SIGTERM; a rolling restart waited on every such browser.
 */
import { describe, expect, it } from 'vitest';
import { inProcessOnly, startService } from '../support/service';

describe.skipIf(!!inProcessOnly)('stopping with change streams open', () => {
  it('ends within the grace period though one stream was aborted by its client and another is still read', async () => {
    const svc = await startService();
    const root = svc.bootstrap.tenants.test.rootKey;
    const abort = new AbortController();
    const aborted = await fetch(`${svc.url}/v1/changes`, {
      headers: { authorization: `Bearer ${root}` },
      signal: abort.signal,
    });
    expect(aborted.status).toBe(200);
    const open = await fetch(`${svc.url}/v1/changes`, { headers: { authorization: `Bearer ${root}` } });
    expect(open.status).toBe(200);
    abort.abort();
    // Time for the abort to reach the server (the socket stays open: Node's fetch does not close it).
    await new Promise((r) => setTimeout(r, 500));
    const started = Date.now();
    await svc.stop();
    const took = Date.now() - started;
    console.log(`[shutdown] stopped in ${took} ms with one aborted and one open change stream`);
    // The 15 s of start.ts's SIGTERM watchdog: a stop past it exits with code 1 instead of cleanly.
    expect(took).toBeLessThan(15_000);
    // The stream that was still being read ended (the server closed it), it did not hang.
    await expect(open.text()).resolves.toContain(': stream open');
  }, 120_000);
});
