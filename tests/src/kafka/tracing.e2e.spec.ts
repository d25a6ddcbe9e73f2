import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverUrl } from '../support/engines';
import { attr, callerContext, otlpReceiver } from '../support/otlp';
import { eventually } from '../support/service';
import { brokers, SKIP_REASON } from './kafka-support';
import { Topology } from './topology';

/**
 * Traces across roles (docs/operations.md "Traces"): the roles as processes behind the router, each exporting to one
 * local OTLP receiver. A write sent with a `traceparent` is one trace: the command role's edge span (the caller's
 * child), its event-store append, and the projector's batch that applied it, fed by Kafka (the relay carried the
 * trace context in the message's `traceparent` header); the relay's publish is in it too.
 */
const skip = !brokers
  ? SKIP_REASON
  : !serverUrl('postgres')
    ? 'DATABASE_URL not set (the split roles share a PostgreSQL)'
    : undefined;

describe.skipIf(!!skip)(`traces across split roles${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let t: Topology;
  let otlp: Awaited<ReturnType<typeof otlpReceiver>>;

  beforeAll(async () => {
    otlp = await otlpReceiver();
    // OTEL_BSP_SCHEDULE_DELAY (read by the SDK): each process exports within a fraction of a second.
    t = await Topology.start({
      kafkaBrokers: brokers!,
      queryReplicas: 1,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: '200' },
    });
  }, 300_000);
  afterAll(async () => {
    await t?.stop();
    await otlp?.close();
  }, 60_000);

  it('a write through the router is one trace: command edge -> append -> projector batch', async () => {
    const acct = await t.api.newAccount({ plan: 'enterprise' });
    const root = acct.tenants.live.rootKey;
    const s = await t.api.post('/v1/schemas', root, {
      typeName: `Traced${Date.now()}`,
      displayName: 'Traced',
      allowedSurfaces: ['record'],
      fields: [{ fieldId: 'title', fieldType: 'string' }],
    });
    expect(s.status, s.text).toBe(201);

    const caller = callerContext();
    const r = await fetch(`${t.router.url}/v1/records`, {
      method: 'POST',
      headers: { authorization: `Bearer ${root}`, 'content-type': 'application/json', traceparent: caller.traceparent },
      body: JSON.stringify({ typeName: s.body.typeName, payload: { title: 'Across roles' } }),
    });
    expect(r.status).toBe(201);

    const spans = (await eventually(async () => {
      const mine = otlp.spans.filter((x) => x.traceId === caller.traceId);
      // The edge span ends (and is exported) after the answer, possibly after the projector's batch.
      const projected = mine.some(
        (x) =>
          x.name === 'projection batch' &&
          x.resource['svc.role'] === 'projector' &&
          attr(x, 'svc.projection') === 'read-models',
      );
      return projected &&
        mine.some((x) => x.name === 'POST /v1/records') &&
        mine.some((x) => x.name === 'kafka publish')
        ? mine
        : null;
    }, 30_000))!;
    const edge = spans.find((x) => x.name === 'POST /v1/records')!;
    expect(edge, JSON.stringify(spans.map((x) => [x.name, x.resource['svc.role']]))).toBeDefined();
    expect(edge.resource['svc.role']).toBe('command');
    expect(edge.parentSpanId).toBe(caller.spanId);
    const append = spans.find((x) => x.name === 'event-store append' && x.parentSpanId === edge.spanId)!;
    expect(append.resource['svc.role']).toBe('command');
    const batch = spans.find(
      (x) =>
        x.name === 'projection batch' &&
        x.resource['svc.role'] === 'projector' &&
        attr(x, 'svc.projection') === 'read-models',
    )!;
    expect(batch.parentSpanId).toBe(append.spanId);
    // The relay's publish of the write is in the trace too, beside the batch (both continue the append's context).
    const publish = spans.find((x) => x.name === 'kafka publish')!;
    expect(publish.resource['svc.role']).toBe('relay');
    expect(publish.parentSpanId).toBe(append.spanId);
  });
});
