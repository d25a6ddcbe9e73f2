/**
 * Webhooks, fault test (issue 19): SIGKILL the service while 500 deliveries are due (50 registrations x 10
 * events, the receiver slow so most are still pending or in flight), restart it on the same data directory and
 * find every delivery received at least once; duplicates (attempts cut short by the kill) are counted and
 * reported, and receivers deduplicate by delivery id.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SERVER_ENGINES, tempDir } from '../support/engines';
import {
  eventually,
  freePort,
  OPERATOR_TOKEN,
  spawnService,
  type Api,
  type Bootstrap,
  waitForExit,
} from '../support/service';
import { makeCertificates, Receiver } from './webhooks-receiver';

const REGISTRATIONS = 50;
const EVENTS = 10;
const EMBEDDED: Record<string, string> = Object.fromEntries(Object.values(SERVER_ENGINES).map((e) => [e.env, '']));

describe('webhooks: SIGKILL with 500 deliveries due, then restart', () => {
  const dir = tempDir('svc-webhooks-fault-');
  const children: ChildProcess[] = [];
  let receiver: Receiver;

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await receiver?.stop();
    dir.remove();
  });

  it('every delivery arrives at least once after the restart', async () => {
    const certs = makeCertificates(dir.dir);
    receiver = await new Receiver(certs).start();
    receiver.defaultMode = 'slow:1500';
    const dnsFile = join(dir.dir, 'dns.json');
    writeFileSync(dnsFile, JSON.stringify({ 'hooks.example.test': ['127.0.0.1'] }));
    const env = {
      ...EMBEDDED,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
      WEBHOOK_CA_FILE: certs.caFile,
      WEBHOOK_TEST_DNS_FILE: dnsFile,
      RATE_LIMITS: '0',
    };
    const dataDir = join(dir.dir, 'data');
    const port = await freePort();
    const first = await spawnService(dataDir, port, env);
    children.push(first.child);
    const api: Api = first.api;
    const A: Bootstrap = await api.newAccount({ plan: 'enterprise' });
    expect(
      (await api.post('/operator/domains/verify', OPERATOR_TOKEN, { accountId: A.accountId, domain: 'example.test' }))
        .status,
    ).toBe(200);
    const hooks: string[] = [];
    for (let i = 0; i < REGISTRATIONS; i++) {
      const r = await api.post('/developer/webhooks', A.developerToken, {
        tenantId: A.tenants.live.tenantId,
        url: `https://hooks.example.test:${receiver.port}/w${i}`,
        events: ['document.indexed'],
      });
      expect(r.status, r.text).toBe(201);
      hooks.push(r.body.id);
    }
    const docs: string[] = [];
    for (let i = 0; i < EVENTS; i++) {
      const r = await api.post('/v1/documents', A.tenants.live.rootKey, {
        title: `doc ${i}`,
        text: `Fault test document ${i}.`,
        indexMode: 'TEXT',
      });
      expect(r.status, r.text).toBe(201);
      docs.push(r.body.id);
    }
    const countDeliveries = async () => {
      let n = 0;
      for (const id of hooks)
        n += (await api.get(`/developer/webhooks/${id}/deliveries?limit=200`, A.developerToken)).body.data.length;
      return n;
    };
    await eventually(async () => (await countDeliveries()) === REGISTRATIONS * EVENTS, 60_000, 200);
    // Some answered, some in flight, most still due.
    await eventually(async () => receiver.received.length >= 20, 60_000, 20);
    const beforeKill = receiver.received.length;
    first.child.kill('SIGKILL');
    await waitForExit(first.child);
    receiver.defaultMode = 'ok';

    const second = await spawnService(dataDir, port, env);
    children.push(second.child);
    const key = (path: string, doc: string) => `${path} ${doc}`;
    const want = new Set(hooks.flatMap((_, i) => docs.map((d) => key(`/w${i}`, d))));
    await eventually(
      async () =>
        new Set(receiver.received.filter((r) => r.status === 200).map((r) => key(r.path, r.json?.data?.id))).size ===
        want.size,
      120_000,
      200,
    );
    const got = receiver.received.filter((r) => r.status === 200);
    const unique = new Set(got.map((r) => r.json.id));
    for (const k of new Set(got.map((r) => key(r.path, r.json.data.id)))) expect(want.has(k)).toBe(true);
    expect(unique.size).toBe(REGISTRATIONS * EVENTS);
    const duplicates = receiver.arrivals.length - unique.size;
    console.log(
      `webhooks fault test: ${beforeKill} answered before the kill, ${receiver.arrivals.length} requests ` +
        `received in all for ${unique.size} deliveries: ${duplicates} duplicate(s) (attempts cut short by ` +
        `the kill, sent again)`,
    );
    expect(new Set(receiver.arrivals).size).toBe(REGISTRATIONS * EVENTS);
    // Every delivery record settles DELIVERED.
    await eventually(
      async () => {
        for (const id of hooks)
          if (
            (await second.api.get(`/developer/webhooks/${id}/deliveries?limit=200`, A.developerToken)).body.data.some(
              (d: any) => d.status !== 'DELIVERED',
            )
          )
            return false;
        return true;
      },
      30_000,
      200,
    );
    second.child.kill('SIGTERM');
    await waitForExit(second.child);
  }, 300_000);
});
