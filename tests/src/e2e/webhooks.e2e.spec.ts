/**
 * Signed webhooks, end to end (issue 19): the developer portal, the registration rules (every SSRF refusal of the
 * spec), delivery to an HTTPS receiver on loopback whose certificate a CA made here signed (trusted through
 * WEBHOOK_CA_FILE), the signature, the envelope, retries with the same id, auto-disable and re-enable, DNS answers
 * that change between registration and delivery, isolation between accounts and between live and test.
 *
 * Hostnames resolve through the test-only resolver seam WEBHOOK_TEST_DNS_FILE (a JSON file read on every lookup);
 * WEBHOOK_ALLOW_PRIVATE_TARGETS=1 lets them point at 127.0.0.1; WEBHOOK_RETRY_SCALE=0.01 makes the first retry 300 ms.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyDelivery } from '@svc/domain';
import { serverUrl, tempDir } from '../support/engines';
import {
  eventually,
  OPERATOR_TOKEN,
  startService,
  THROUGH_ROUTER,
  type Api,
  type Bootstrap,
  type TestService,
} from '../support/service';
import { makeCertificates, Receiver } from './webhooks-receiver';

const SCALE = 0.01;

/**
 * Embedded engines always; PostgreSQL too when DATABASE_URL names a server (the delivery table and the read model on
 * both). Through the router (E2E_TARGET=router) the deployment is on PostgreSQL either way: it runs once.
 */
const ENGINES = ['embedded', ...(serverUrl('postgres') && !THROUGH_ROUTER ? ['postgres'] : [])] as const as readonly (
  'embedded' | 'postgres'
)[];

describe.each(ENGINES)('webhooks (%s)', (engine) => {
  const dir = tempDir('svc-webhooks-');
  const dnsFile = join(dir.dir, 'dns.json');
  const dns: Record<string, string[]> = {};
  const setDns = (name: string, addresses: string[]) => {
    dns[name] = addresses;
    writeFileSync(dnsFile, JSON.stringify(dns));
  };
  let svc: TestService;
  let api: Api;
  let A: Bootstrap;
  let B: Bootstrap;
  let receiver: Receiver;
  const logs: string[] = [];
  const url = (host: string, path: string) => `https://${host}:${receiver.port}${path}`;

  const register = async (
    acct: Bootstrap,
    env: 'live' | 'test',
    host: string,
    path: string,
    events = ['document.indexed'],
  ) => {
    const r = await api.post('/developer/webhooks', acct.developerToken, {
      tenantId: acct.tenants[env].tenantId,
      url: url(host, path),
      events,
    });
    expect(r.status, r.text).toBe(201);
    return r.body as { id: string; secret: string; tenantId: string };
  };
  let docN = 0;
  const ingest = async (key: string) => {
    const r = await api.post('/v1/documents', key, {
      title: `secret title ${++docN}`,
      text: `Webhook test document number ${docN}.`,
      indexMode: 'TEXT',
    });
    expect(r.status, r.text).toBe(201);
    return r.body.id as string;
  };

  beforeAll(
    async () => {
      const certs = makeCertificates(dir.dir);
      receiver = await new Receiver(certs).start();
      for (const h of [
        'a.example.test',
        'b.example.test',
        'c.example.test',
        'd.example.test',
        'e.example.test',
        'f.example.test',
        'x.other.test',
      ])
        setDns(h, ['127.0.0.1']);
      svc = await startService({
        engine,
        env: {
          WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
          WEBHOOK_CA_FILE: certs.caFile,
          WEBHOOK_RETRY_SCALE: String(SCALE),
          WEBHOOK_TEST_DNS_FILE: dnsFile,
        },
        log: (m) => logs.push(m),
      });
      expect(logs.some((l) => l.includes('WARNING: WEBHOOK_ALLOW_PRIVATE_TARGETS=1'))).toBe(true);
      api = svc.api;
      A = svc.bootstrap;
      B = await api.newAccount({ plan: 'enterprise' });
      for (const [acct, domain] of [
        [A, 'example.test'],
        [B, 'other.test'],
      ] as const) {
        const added = await api.post('/developer/domains', acct.developerToken, { domain });
        expect(added.status, added.text).toBe(201);
        expect(added.body).toMatchObject({ domain, verified: false });
        expect(added.body.verificationToken).toMatch(/^wv_/);
        const v = await api.post('/operator/domains/verify', OPERATOR_TOKEN, { accountId: acct.accountId, domain });
        expect(v.status, v.text).toBe(200);
        expect(v.body.verified).toBe(true);
      }
    },
    THROUGH_ROUTER ? 300_000 : 120_000,
  );

  afterAll(async () => {
    await svc?.stop();
    await receiver?.stop();
    dir.remove();
  });

  it('developer paths take the developer token only: root keys and minted tokens get 403', async () => {
    const minted = await api.post('/v1/tokens', A.tenants.live.rootKey, { scope: { allowedActions: ['records:r'] } });
    expect(minted.status, minted.text).toBe(201);
    for (const key of [A.tenants.live.rootKey, A.tenants.test.rootKey, minted.body.token]) {
      expect(
        (
          await api.post('/developer/webhooks', key, {
            tenantId: A.tenants.live.tenantId,
            url: url('a.example.test', '/x'),
            events: ['document.indexed'],
          })
        ).status,
      ).toBe(403);
      expect((await api.get(`/developer/webhooks?tenantId=${A.tenants.live.tenantId}`, key)).status).toBe(403);
      expect((await api.get('/developer/domains', key)).status).toBe(403);
      expect((await api.post('/developer/domains', key, { domain: 'example.test' })).status).toBe(403);
    }
    const domains = await api.get('/developer/domains', A.developerToken);
    expect(domains.status).toBe(200);
    expect(domains.body).toMatchObject({ data: [{ domain: 'example.test', verified: true }], nextCursor: null });
  });

  it(
    'registration rules: https, non-empty events, own tenant (403), verified domain (403), public addresses ' +
      'after DNS (400)',
    async () => {
      const tenantId = A.tenants.live.tenantId;
      const post = (body: Record<string, unknown>) =>
        api.post('/developer/webhooks', A.developerToken, { tenantId, events: ['record.indexed'], ...body });
      expect((await post({ url: `http://a.example.test:${receiver.port}/x` })).status).toBe(400);
      expect((await post({ url: url('a.example.test', '/x'), events: [] })).status).toBe(400);
      expect((await post({ url: url('a.example.test', '/x'), events: undefined })).status).toBe(400);
      expect((await post({ url: url('a.example.test', '/x'), tenantId: B.tenants.live.tenantId })).status).toBe(403);
      expect((await post({ url: url('x.other.test', '/x') })).status).toBe(403); // B's domain, not A's
      // Every refused class, as the only answer, beside a public one, and in IPv4-mapped IPv6 form.
      const refused: Record<string, string[]> = {
        'meta.example.test': ['169.254.169.254'],
        'linklocal.example.test': ['169.254.10.1'],
        'v6linklocal.example.test': ['fe80::1'],
        'mapped-meta.example.test': ['::ffff:169.254.169.254'],
        'mapped-hex.example.test': ['::ffff:a9fe:a9fe'],
        'cgnat.example.test': ['100.64.0.1'],
        'mapped-cgnat.example.test': ['::ffff:100.100.1.1'],
        'zero.example.test': ['0.0.0.0'],
        'zero8.example.test': ['0.1.2.3'],
        'any6.example.test': ['::'],
        'multicast.example.test': ['224.0.0.251'],
        'multicast6.example.test': ['ff02::1'],
        'ula.example.test': ['fd00::1'],
        'reserved.example.test': ['240.0.0.1'],
        'broadcast.example.test': ['255.255.255.255'],
        'mixed.example.test': ['93.184.216.34', '169.254.169.254'],
        'nxdomain.example.test': [],
      };
      for (const [host, addrs] of Object.entries(refused)) {
        setDns(host, addrs);
        const r = await post({ url: `https://${host}/hook` });
        expect(r.status, `${host} -> ${addrs.join(',')}: ${r.text}`).toBe(400);
      }
      // IP literals are checked as they are (and are never a verified domain).
      expect((await post({ url: 'https://169.254.169.254/latest' })).status).toBe(400);
      expect((await post({ url: 'https://[::ffff:169.254.169.254]/x' })).status).toBe(400);
      // PUT re-runs the rules when the url changes.
      const w = await register(A, 'live', 'a.example.test', '/rules');
      expect(
        (await api.put(`/developer/webhooks/${w.id}`, A.developerToken, { url: 'https://meta.example.test/x' })).status,
      ).toBe(400);
      expect(
        (await api.put(`/developer/webhooks/${w.id}`, A.developerToken, { url: url('x.other.test', '/x') })).status,
      ).toBe(403);
      expect(
        (await api.put(`/developer/webhooks/${w.id}`, B.developerToken, { events: ['record.failed'] })).status,
      ).toBe(404);
    },
  );

  it('get, list and delete; the secret (64 hex) only in the create response', async () => {
    const w = await register(A, 'test', 'b.example.test', '/crud', ['record.indexed', 'document.failed']);
    expect(w.secret).toMatch(/^[0-9a-f]{64}$/);
    const got = await api.get(`/developer/webhooks/${w.id}`, A.developerToken);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({
      id: w.id,
      url: url('b.example.test', '/crud'),
      domain: 'b.example.test',
      events: ['record.indexed', 'document.failed'],
      status: 'ACTIVE',
      disabledReason: null,
      consecutiveFailures: 0,
      apiVersion: '2024-01',
      tenantId: A.tenants.test.tenantId,
      createdAt: expect.any(Number),
    });
    expect((await api.get(`/developer/webhooks/${w.id}`, B.developerToken)).status).toBe(404);
    const list = await api.get(`/developer/webhooks?tenantId=${A.tenants.test.tenantId}`, A.developerToken);
    expect(list.status).toBe(200);
    expect(list.body.data.map((x: any) => x.id)).toContain(w.id);
    expect(list.body.data.every((x: any) => !('secret' in x))).toBe(true);
    expect(list.body).toHaveProperty('nextCursor');
    // A tenant not the caller's (another account's, or unknown) is 403, as registering for it is (spec "Errors": tenant
    // not owned).
    for (const tenantId of [A.tenants.test.tenantId, A.tenants.live.tenantId, 'no-such-tenant']) {
      const foreign = await api.get(`/developer/webhooks?tenantId=${tenantId}`, B.developerToken);
      expect(foreign.status, tenantId).toBe(403);
      expect(foreign.body.errorCode).toBe('FORBIDDEN');
    }
    expect((await api.del(`/developer/webhooks/${w.id}`, B.developerToken)).status).toBe(404);
    expect((await api.del(`/developer/webhooks/${w.id}`, A.developerToken)).status).toBe(204);
    expect((await api.get(`/developer/webhooks/${w.id}`, A.developerToken)).status).toBe(404);
  });

  it(
    'delivers a signed envelope: headers, signature with the secret, envelope and data fields; isolation ' +
      'between accounts and live/test',
    async () => {
      const aLive = await register(A, 'live', 'c.example.test', '/a-live');
      const aTest = await register(A, 'test', 'c.example.test', '/a-test');
      const bLive = await register(B, 'live', 'x.other.test', '/b-live');
      const liveDoc = await ingest(A.tenants.live.rootKey);
      const testDoc = await ingest(A.tenants.test.rootKey);
      await eventually(async () => receiver.at('/a-live').length >= 1 && receiver.at('/a-test').length >= 1, 30_000);
      await new Promise((r) => setTimeout(r, 500));
      const [live] = receiver.at('/a-live');
      expect(receiver.at('/a-live')).toHaveLength(1);
      expect(receiver.at('/a-test')).toHaveLength(1);
      expect(receiver.at('/b-live')).toHaveLength(0);
      expect(live.headers['content-type']).toBe('application/json');
      expect(live.headers['x-service-delivery']).toBe(live.json.id);
      expect(live.headers['x-service-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
      expect(Math.abs(Number(live.headers['x-service-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
      expect(
        verifyDelivery({
          secretHex: aLive.secret,
          timestamp: live.headers['x-service-timestamp'],
          body: live.body,
          signature: live.headers['x-service-signature'],
          nowSeconds: Math.floor(Date.now() / 1000),
        }),
      ).toBe(true);
      expect(
        verifyDelivery({
          secretHex: aTest.secret,
          timestamp: live.headers['x-service-timestamp'],
          body: live.body,
          signature: live.headers['x-service-signature'],
          nowSeconds: Math.floor(Date.now() / 1000),
        }),
      ).toBe(false);
      expect(live.json).toEqual({
        id: expect.any(String),
        version: '2024-01',
        type: 'document.indexed',
        created: expect.any(Number),
        tenantId: A.tenants.live.tenantId,
        livemode: true,
        data: { id: liveDoc, status: 'INDEXED', indexMode: 'TEXT', folderId: expect.any(String) },
      });
      expect(live.body).not.toContain('secret title');
      const [test] = receiver.at('/a-test');
      expect(test.json).toMatchObject({
        type: 'document.indexed',
        tenantId: A.tenants.test.tenantId,
        livemode: false,
        data: { id: testDoc },
      });
      // B's live registration hears B's events only.
      const bDoc = await ingest(B.tenants.live.rootKey);
      await eventually(async () => receiver.at('/b-live').length >= 1, 30_000);
      expect(receiver.at('/b-live')[0].json).toMatchObject({
        tenantId: B.tenants.live.tenantId,
        livemode: true,
        data: { id: bDoc },
      });
      expect(receiver.at('/a-live')).toHaveLength(1);
      // The delivery history: newest first, the record without the payload.
      const hist = await api.get(`/developer/webhooks/${aLive.id}/deliveries`, A.developerToken);
      expect(hist.status).toBe(200);
      expect(hist.body.data[0]).toEqual({
        id: live.json.id,
        webhookId: aLive.id,
        eventType: 'document.indexed',
        sourceId: liveDoc,
        sourceType: 'document',
        status: 'DELIVERED',
        attempts: 1,
        nextRetryAt: null,
        createdAt: expect.any(String),
      });
      expect((await api.get(`/developer/webhooks/${aLive.id}/deliveries?limit=201`, A.developerToken)).status).toBe(
        400,
      );
      expect((await api.get(`/developer/webhooks/${aLive.id}/deliveries`, B.developerToken)).status).toBe(404);
      // A DELIVERED delivery cannot be retried by hand.
      expect(
        (await api.post(`/developer/webhooks/${aLive.id}/deliveries/${live.json.id}/retry`, A.developerToken)).status,
      ).toBe(400);
      for (const w of [aLive, aTest, bLive])
        await api.del(`/developer/webhooks/${w.id}`, w === bLive ? B.developerToken : A.developerToken);
    },
    60_000,
  );

  it('a failed attempt is retried about 30 s (scaled) later, same delivery id and a fresh signature', async () => {
    receiver.mode('/flaky', 'flaky');
    const w = await register(A, 'live', 'd.example.test', '/flaky');
    await ingest(A.tenants.live.rootKey);
    await eventually(async () => receiver.at('/flaky').length >= 2, 30_000);
    const [first, second] = receiver.at('/flaky');
    expect(first.status).toBe(500);
    expect(second.status).toBe(200);
    expect(second.json.id).toBe(first.json.id);
    expect(second.headers['x-service-delivery']).toBe(first.headers['x-service-delivery']);
    const gap = second.at - first.at;
    expect(gap).toBeGreaterThanOrEqual(30_000 * SCALE - 50);
    expect(gap).toBeLessThan(30_000 * SCALE + 2_000);
    for (const r of [first, second])
      expect(
        verifyDelivery({
          secretHex: w.secret,
          timestamp: r.headers['x-service-timestamp'],
          body: r.body,
          signature: r.headers['x-service-signature'],
          nowSeconds: Math.floor(Date.now() / 1000),
        }),
      ).toBe(true);
    const hist = await eventually(async () => {
      const h = await api.get(`/developer/webhooks/${w.id}/deliveries`, A.developerToken);
      return h.body.data[0]?.status === 'DELIVERED' ? h.body : null;
    });
    expect(hist.data[0]).toMatchObject({ id: first.json.id, attempts: 2, status: 'DELIVERED' });
    // A success reset the count.
    expect((await api.get(`/developer/webhooks/${w.id}`, A.developerToken)).body.consecutiveFailures).toBe(0);
    await api.del(`/developer/webhooks/${w.id}`, A.developerToken);
  }, 60_000);

  it('10 consecutive failures disable the registration; PUT status ACTIVE re-enables, resets the count', async () => {
    receiver.mode('/dead', 'fail');
    const w = await register(A, 'live', 'e.example.test', '/dead');
    for (let i = 0; i < 10; i++) await ingest(A.tenants.live.rootKey);
    const disabled = await eventually(async () => {
      const g = await api.get(`/developer/webhooks/${w.id}`, A.developerToken);
      return g.body.status === 'DISABLED' ? g.body : null;
    }, 60_000);
    expect(disabled).toMatchObject({ status: 'DISABLED', disabledReason: 'consecutive_failures' });
    expect(disabled.consecutiveFailures).toBeGreaterThanOrEqual(10);
    // Nothing more is sent while disabled.
    const seen = receiver.at('/dead').length;
    await new Promise((r) => setTimeout(r, 1_000));
    expect(receiver.at('/dead').length).toBeLessThanOrEqual(seen + 4); // at most the attempts already in flight
    receiver.mode('/dead', 'ok');
    const up = await api.put(`/developer/webhooks/${w.id}`, A.developerToken, { status: 'ACTIVE' });
    expect(up.status, up.text).toBe(200);
    expect(up.body).toMatchObject({ status: 'ACTIVE', disabledReason: null, consecutiveFailures: 0 });
    // The pending retries go out again once re-enabled.
    await eventually(async () => receiver.at('/dead').some((r) => r.status === 200), 30_000);
    await api.del(`/developer/webhooks/${w.id}`, A.developerToken);
  }, 90_000);

  it(
    'a slow receiver of one tenant does not delay another tenant; a manual disable stops deliveries ' +
      '(disabledReason manual)',
    async () => {
      receiver.mode('/slow', 'slow:4000');
      const slow: string[] = [];
      for (let i = 0; i < 20; i++) slow.push((await register(B, 'live', 'x.other.test', '/slow')).id);
      await ingest(B.tenants.live.rootKey);
      // B's 20 deliveries now hold B's slots for 4 s each; A's delivery goes out meanwhile.
      await new Promise((r) => setTimeout(r, 300));
      const fast = await register(A, 'live', 'c.example.test', '/fast');
      const t0 = Date.now();
      await ingest(A.tenants.live.rootKey);
      await eventually(async () => receiver.at('/fast').length === 1, 10_000, 20);
      expect(Date.now() - t0).toBeLessThan(3_000);
      expect(receiver.at('/slow').length).toBe(0); // still waiting on the slow receiver
      const off = await api.put(`/developer/webhooks/${fast.id}`, A.developerToken, { status: 'DISABLED' });
      expect(off.status).toBe(200);
      expect(off.body).toMatchObject({ status: 'DISABLED', disabledReason: 'manual' });
      await ingest(A.tenants.live.rootKey);
      await new Promise((r) => setTimeout(r, 1_000));
      expect(receiver.at('/fast')).toHaveLength(1);
      await api.del(`/developer/webhooks/${fast.id}`, A.developerToken);
      await eventually(async () => receiver.at('/slow').length === 20, 30_000);
      for (const id of slow) await api.del(`/developer/webhooks/${id}`, B.developerToken);
    },
    60_000,
  );

  it('tenant teardown removes the tenant registrations (and their deliveries); the other keeps its own', async () => {
    const C = await api.newAccount({ plan: 'enterprise' });
    expect(
      (await api.post('/operator/domains/verify', OPERATOR_TOKEN, { accountId: C.accountId, domain: 'example.test' }))
        .status,
    ).toBe(200);
    const test = await register(C, 'test', 'a.example.test', '/c-test');
    const live = await register(C, 'live', 'a.example.test', '/c-live');
    await ingest(C.tenants.test.rootKey);
    await eventually(async () => receiver.at('/c-test').length === 1, 30_000);
    expect((await api.del(`/developer/tenants/${C.tenants.test.tenantId}`, C.developerToken)).status).toBe(204);
    expect((await api.get(`/developer/webhooks/${test.id}`, C.developerToken)).status).toBe(404);
    expect(
      (await api.put(`/developer/webhooks/${test.id}`, C.developerToken, { events: ['record.failed'] })).status,
    ).toBe(404);
    expect(
      (await api.get(`/developer/webhooks?tenantId=${C.tenants.test.tenantId}`, C.developerToken)).body.data,
    ).toEqual([]);
    expect((await api.get(`/developer/webhooks/${live.id}`, C.developerToken)).status).toBe(200);
    expect(
      (
        await api.post('/developer/webhooks', C.developerToken, {
          tenantId: C.tenants.test.tenantId,
          url: url('a.example.test', '/again'),
          events: ['document.indexed'],
        })
      ).status,
    ).toBe(403);
  }, 60_000);

  it(
    'DNS answers that change after registration: the delivery-time gate fails closed (FAILED, ' +
      'ssrf_blocked), nothing is sent; manual retry after re-enabling',
    async () => {
      setDns('f.example.test', ['127.0.0.1']);
      const w = await register(A, 'live', 'f.example.test', '/rebind');
      setDns('f.example.test', ['169.254.169.254']);
      await ingest(A.tenants.live.rootKey);
      const blocked = await eventually(async () => {
        const g = await api.get(`/developer/webhooks/${w.id}`, A.developerToken);
        return g.body.status === 'DISABLED' ? g.body : null;
      }, 30_000);
      expect(blocked.disabledReason).toBe('ssrf_blocked');
      expect(receiver.at('/rebind')).toHaveLength(0);
      const [failed] = (await api.get(`/developer/webhooks/${w.id}/deliveries`, A.developerToken)).body.data;
      expect(failed).toMatchObject({ status: 'FAILED', attempts: 1 });
      // A mixed answer (one public, one not) is refused as well; so is no answer.
      setDns('f.example.test', []);
      expect((await api.put(`/developer/webhooks/${w.id}`, A.developerToken, { status: 'ACTIVE' })).status).toBe(200);
      expect(
        (await api.post(`/developer/webhooks/${w.id}/deliveries/${failed.id}/retry`, A.developerToken)).status,
      ).toBe(200);
      await eventually(
        async () => (await api.get(`/developer/webhooks/${w.id}`, A.developerToken)).body.status === 'DISABLED',
        30_000,
      );
      expect(receiver.at('/rebind')).toHaveLength(0);
      // Back to a good answer: re-enable, retry the FAILED delivery by hand; it arrives with the same id.
      setDns('f.example.test', ['127.0.0.1']);
      expect((await api.put(`/developer/webhooks/${w.id}`, A.developerToken, { status: 'ACTIVE' })).status).toBe(200);
      const retried = await api.post(`/developer/webhooks/${w.id}/deliveries/${failed.id}/retry`, A.developerToken);
      expect(retried.status, retried.text).toBe(200);
      expect(retried.body).toMatchObject({ id: failed.id, status: 'PENDING' });
      await eventually(async () => receiver.at('/rebind').length === 1, 30_000);
      expect(receiver.at('/rebind')[0].json.id).toBe(failed.id);
      expect(
        (await api.post(`/developer/webhooks/${w.id}/deliveries/${failed.id}/retry`, A.developerToken)).status,
      ).toBe(400);
      expect((await api.post(`/developer/webhooks/${w.id}/deliveries/nope/retry`, A.developerToken)).status).toBe(404);
    },
    60_000,
  );
});

describe('webhooks without WEBHOOK_ALLOW_PRIVATE_TARGETS', () => {
  const dir = tempDir('svc-webhooks-strict-');
  const dnsFile = join(dir.dir, 'dns.json');
  let svc: TestService;
  const logs: string[] = [];

  beforeAll(
    async () => {
      writeFileSync(
        dnsFile,
        JSON.stringify({
          'loop.example.test': ['127.0.0.1'],
          'loop6.example.test': ['::1'],
          'mapped.example.test': ['::ffff:127.0.0.1'],
          'ten.example.test': ['10.1.2.3'],
          'one72.example.test': ['172.16.5.4'],
          'one92.example.test': ['192.168.0.10'],
          'public.example.test': ['93.184.216.34'],
          'txt:_webhook-verify.dns.test': [],
        }),
      );
      svc = await startService({ env: { WEBHOOK_TEST_DNS_FILE: dnsFile }, log: (m) => logs.push(m) });
      const v = await svc.api.post('/operator/domains/verify', OPERATOR_TOKEN, {
        accountId: svc.bootstrap.accountId,
        domain: 'example.test',
      });
      expect(v.status, v.text).toBe(200);
    },
    THROUGH_ROUTER ? 300_000 : 120_000,
  );

  afterAll(async () => {
    await svc?.stop();
    dir.remove();
  });

  it(
    'loopback and RFC 1918 targets are refused (also IPv4-mapped); a public one registers; no warning is ' + 'logged',
    async () => {
      const A = svc.bootstrap;
      for (const host of ['loop', 'loop6', 'mapped', 'ten', 'one72', 'one92']) {
        const r = await svc.api.post('/developer/webhooks', A.developerToken, {
          tenantId: A.tenants.live.tenantId,
          url: `https://${host}.example.test/h`,
          events: ['record.failed'],
        });
        expect(r.status, `${host}: ${r.text}`).toBe(400);
      }
      const ok = await svc.api.post('/developer/webhooks', A.developerToken, {
        tenantId: A.tenants.live.tenantId,
        url: 'https://public.example.test/h',
        events: ['record.failed', 'trigger.failed'],
      });
      expect(ok.status, ok.text).toBe(201);
      expect(logs.some((l) => l.includes('WEBHOOK_ALLOW_PRIVATE_TARGETS'))).toBe(false);
    },
  );

  it('DNS TXT verification: the token must be in _webhook-verify.<domain>', async () => {
    const A = svc.bootstrap;
    const added = await svc.api.post('/developer/domains', A.developerToken, { domain: 'dns.test' });
    expect(added.status).toBe(201);
    expect((await svc.api.post('/developer/domains/dns.test/verify', A.developerToken)).status).toBe(400);
    const table = JSON.parse(readFileSync(dnsFile, 'utf8'));
    table['txt:_webhook-verify.dns.test'] = [added.body.verificationToken];
    writeFileSync(dnsFile, JSON.stringify(table));
    const v = await svc.api.post('/developer/domains/dns.test/verify', A.developerToken);
    expect(v.status, v.text).toBe(200);
    expect(v.body).toEqual({ domain: 'dns.test', verificationToken: added.body.verificationToken, verified: true });
    expect((await svc.api.post('/developer/domains/unknown.test/verify', A.developerToken)).status).toBe(404);
  });
});
