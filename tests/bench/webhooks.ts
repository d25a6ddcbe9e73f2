/**
 * Webhook delivery benchmark (issue 19): deliveries per second to a local HTTPS receiver, and event -> delivery
 * latency (from the DocumentIndexed event's time in the log to the receiver answering) p50 / p99, with 1 and with
 * 100 registrations on one tenant. The service runs in this process on the embedded engines.
 *
 *   npx tsx tests/bench/webhooks.ts        (BENCH_WEBHOOK_DOCS_1, default 300; BENCH_WEBHOOK_DOCS_100, default 20)
 *
 * `benchWebhooks()` returns the rows for tests/bench/run.ts.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../src/support/engines';
import { OPERATOR_TOKEN, startService } from '../src/support/service';
import { makeCertificates, Receiver } from '../src/e2e/webhooks-receiver';

export interface WebhookBenchRow {
  registrations: number;
  events: number;
  deliveries: number;
  deliveriesPerSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

async function scenario(registrations: number, events: number): Promise<WebhookBenchRow> {
  const dir = tempDir('svc-bench-webhooks-');
  const certs = makeCertificates(dir.dir);
  const receiver = await new Receiver(certs).start();
  const dnsFile = join(dir.dir, 'dns.json');
  writeFileSync(dnsFile, JSON.stringify({ 'bench.example.test': ['127.0.0.1'] }));
  const svc = await startService({
    env: {
      WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
      WEBHOOK_CA_FILE: certs.caFile,
      WEBHOOK_TEST_DNS_FILE: dnsFile,
      RATE_LIMITS: '0',
      METERING: '0',
    },
  });
  try {
    const { api, bootstrap: A } = svc;
    await api.post('/operator/domains/verify', OPERATOR_TOKEN, { accountId: A.accountId, domain: 'example.test' });
    for (let i = 0; i < registrations; i++) {
      const r = await api.post('/developer/webhooks', A.developerToken, {
        tenantId: A.tenants.live.tenantId,
        url: `https://bench.example.test:${receiver.port}/w${i}`,
        events: ['document.indexed'],
      });
      if (r.status !== 201) throw new Error(`register: ${r.status} ${r.text}`);
    }
    const docs: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 2 }, async () => {
        while (next < events) {
          const i = next++;
          const r = await api.post('/v1/documents', A.tenants.live.rootKey, {
            title: `bench ${i}`,
            text: `Webhook bench document ${i}.`,
            indexMode: 'TEXT',
          });
          if (r.status !== 201) throw new Error(`ingest: ${r.status} ${r.text}`);
          docs.push(r.body.id);
        }
      }),
    );
    const want = registrations * events;
    for (const deadline = Date.now() + 300_000; receiver.received.length < want;) {
      if (Date.now() > deadline) throw new Error(`only ${receiver.received.length} of ${want} deliveries arrived`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // Event time: the DocumentIndexed event's time in the log.
    const indexedAt = new Map<string, number>();
    for (const id of docs) {
      const e = (await svc.service.store.readStream(`document-${id}`)).find((x) => x.type === 'DocumentIndexed');
      if (e) indexedAt.set(id, Date.parse(e.metadata.occurredAt));
    }
    const got = receiver.received.filter((r) => r.status === 200);
    const latencies = got.map((r) => r.at - (indexedAt.get(r.json.data.id) ?? r.at));
    const first = Math.min(...got.map((r) => r.at));
    const last = Math.max(...got.map((r) => r.at));
    return {
      registrations,
      events,
      deliveries: got.length,
      deliveriesPerSecond: Math.round((got.length / Math.max(1, last - first)) * 1000),
      latencyP50Ms: pct(latencies, 50),
      latencyP99Ms: pct(latencies, 99),
    };
  } finally {
    await svc.stop();
    await receiver.stop();
    dir.remove();
  }
}

export async function benchWebhooks(): Promise<WebhookBenchRow[]> {
  const env = (k: string, d: number) => (process.env[k] ? Number(process.env[k]) : d);
  return [await scenario(1, env('BENCH_WEBHOOK_DOCS_1', 300)), await scenario(100, env('BENCH_WEBHOOK_DOCS_100', 20))];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  benchWebhooks().then(
    (rows) => {
      console.table(rows);
      process.exit(0);
    },
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
