/**
 * Traces (docs/operations.md "Traces"): with OTEL_EXPORTER_OTLP_ENDPOINT set, the service exports its spans over
 * OTLP/HTTP (JSON) to a local receiver. A write sent with a `traceparent` is one trace: the caller's span is the
 * parent of the edge span, which is the parent of the event-store append, which is the parent of each projection's
 * batch that applied the write. A search is the edge span with its legs and the query embedding as children; a
 * RAG answer adds one span for the model call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startService, type TestService } from '../support/service';
import { attr, callerContext, otlpReceiver } from '../support/otlp';

describe('traces over OTLP', () => {
  let svc: TestService;
  let otlp: Awaited<ReturnType<typeof otlpReceiver>>;
  let root: string;
  let typeName: string;

  beforeAll(async () => {
    otlp = await otlpReceiver();
    // The batch processor's delay (read by the SDK from the environment): spans reach the receiver within a second.
    process.env.OTEL_BSP_SCHEDULE_DELAY = '200';
    svc = await startService({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url } });
    root = svc.bootstrap.tenants.test.rootKey;
    typeName = `Traced${Date.now()}`;
    const r = await svc.api.post('/v1/schemas', root, {
      typeName,
      displayName: 'Traced',
      allowedSurfaces: ['record'],
      fields: [{ fieldId: 'title', fieldType: 'string', searchable: true }],
    });
    expect(r.status).toBe(201);
  });
  afterAll(async () => {
    await svc?.stop();
    await otlp?.close();
    delete process.env.OTEL_BSP_SCHEDULE_DELAY;
  });

  const send = (method: string, path: string, body: unknown, traceparent: string) =>
    fetch(`${svc.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${root}`, 'content-type': 'application/json', traceparent },
      body: JSON.stringify(body),
    });
  const ofTrace = (traceId: string) => otlp.spans.filter((s) => s.traceId === traceId);

  it('follows a write from the edge through the append to its projections, under the caller trace', async () => {
    const caller = callerContext();
    const r = await send(
      'POST',
      '/v1/records',
      { typeName, payload: { title: 'Lighthouse keeper' } },
      caller.traceparent,
    );
    expect(r.status).toBe(201);
    const requestId = r.headers.get('x-request-id');

    const spans = (await eventually(async () => {
      const t = ofTrace(caller.traceId);
      // The edge span ends (and is exported) after the answer, possibly after the batch.
      return t.some((s) => s.name === 'projection batch' && attr(s, 'svc.projection') === 'read-models') &&
        t.some((s) => s.name === 'POST /v1/records')
        ? t
        : null;
    }, 20_000))!;
    const edge = spans.find((s) => s.name === 'POST /v1/records')!;
    expect(edge, JSON.stringify(spans.map((s) => s.name))).toBeDefined();
    expect(edge.parentSpanId).toBe(caller.spanId);
    expect(edge.kind).toBe(2); // SPAN_KIND_SERVER
    expect(attr(edge, 'svc.request_id')).toBe(requestId);
    expect(attr(edge, 'http.response.status_code')).toBe(201);
    expect(edge.resource).toMatchObject({ 'service.name': 'svc', 'svc.role': 'all' });

    const append = spans.find((s) => s.name === 'event-store append' && s.parentSpanId === edge.spanId);
    expect(append, JSON.stringify(spans.map((s) => [s.name, s.parentSpanId]))).toBeDefined();
    const batch = spans.find((s) => s.name === 'projection batch' && attr(s, 'svc.projection') === 'read-models')!;
    expect(batch.parentSpanId).toBe(append!.spanId);
    expect(attr(batch, 'svc.events')).toBeGreaterThanOrEqual(1);
  });

  it('shows a hybrid search as the edge span with its TEXT and SEMANTIC legs and the query embedding', async () => {
    const caller = callerContext();
    const r = await send('POST', '/v1/search', { query: 'lighthouse', mode: 'HYBRID' }, caller.traceparent);
    expect(r.status).toBe(200);

    const spans = (await eventually(async () => {
      const t = ofTrace(caller.traceId);
      return t.some((s) => s.name === 'POST /v1/search') ? t : null;
    }, 20_000))!;
    const edge = spans.find((s) => s.name === 'POST /v1/search')!;
    expect(edge.parentSpanId).toBe(caller.spanId);
    const children = spans.filter((s) => s.parentSpanId === edge.spanId).map((s) => s.name);
    expect(children).toEqual(expect.arrayContaining(['search TEXT', 'search SEMANTIC', 'model embed', 'search fuse']));
    const embed = spans.find((s) => s.name === 'model embed')!;
    expect(attr(embed, 'svc.purpose')).toBe('query');
  });

  it(
    'shows a RAG answer as the edge span with its retrieval and one span for the model call, over the whole ' +
      'stream',
    async () => {
      const caller = callerContext();
      const r = await send('POST', '/v1/rag', { query: 'Who keeps the lighthouse?' }, caller.traceparent);
      expect(r.status).toBe(200);
      await r.text(); // the stream to its end

      const spans = (await eventually(async () => {
        const t = ofTrace(caller.traceId);
        return t.some((s) => s.name === 'POST /v1/rag') && t.some((s) => s.name === 'model builtin-extractive')
          ? t
          : null;
      }, 20_000))!;
      const edge = spans.find((s) => s.name === 'POST /v1/rag')!;
      const model = spans.find((s) => s.name === 'model builtin-extractive')!;
      expect(model.parentSpanId).toBe(edge.spanId);
      expect(attr(model, 'svc.surface')).toBe('rag');
      expect(spans.filter((s) => s.parentSpanId === edge.spanId).map((s) => s.name)).toEqual(
        expect.arrayContaining(['search TEXT', 'model builtin-extractive']),
      );
    },
  );

  it('starts a trace of its own for a request without traceparent', async () => {
    const r = await fetch(`${svc.url}/v1/records?typeName=${typeName}`, {
      headers: { authorization: `Bearer ${root}` },
    });
    expect(r.status).toBe(200);
    const requestId = r.headers.get('x-request-id');
    const edge = (await eventually(
      async () => otlp.spans.find((s) => attr(s, 'svc.request_id') === requestId) ?? null,
      20_000,
    ))!;
    expect(edge.name).toBe('GET /v1/records');
    expect(edge.parentSpanId ?? '').toBe('');
  });
});
