import { context, propagation, type Span, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppendRequest, EventStore, NewEvent, SearchEngines } from '@svc/domain';
import type { InferenceModel } from '@svc/query-api';

/**
 * Traces (docs/operations.md "Traces"): with OTEL_EXPORTER_OTLP_ENDPOINT set, one tracer provider per process
 * exports spans over OTLP/HTTP (JSON); unset, nothing here is loaded but `@opentelemetry/api`, whose tracer is
 * the no-op one, and no span is started at all (the edge hook and the port wrappers are not installed).
 */
export const TRACER = 'svc';
export const tracer = (): Tracer => trace.getTracer(TRACER);

export interface Tracing {
  /** Exports the spans still buffered and stops the provider. */
  shutdown(): Promise<void>;
}

export async function startTracing(
  endpoint: string | undefined,
  serviceName: string,
  role: string,
): Promise<Tracing | undefined> {
  if (!endpoint) return undefined;
  // Loaded only when tracing is on: an unset endpoint costs no SDK.
  const [
    { BasicTracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    { resourceFromAttributes },
    { W3CTraceContextPropagator },
    { AsyncLocalStorageContextManager },
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/core'),
    import('@opentelemetry/context-async-hooks'),
  ]);
  const exporter = new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName, 'svc.role': role }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  // A span follows the request through awaits (AsyncLocalStorage); traceparent is the W3C header.
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

const ended = (span: Span, e?: unknown) => {
  if (e !== undefined) {
    span.recordException(e as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (e as Error)?.message });
  }
  span.end();
};

/** Runs `fn` in a span, the active one's child; a throw marks the span as an error. */
export async function inSpan<T>(
  name: string,
  attributes: Record<string, string | number | boolean>,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      const out = await fn(span);
      ended(span);
      return out;
    } catch (e) {
      ended(span, e);
      throw e;
    }
  });
}

const SPAN = Symbol('span');
type Traced = FastifyRequest & { [SPAN]?: Span };

/**
 * A server span per request, `<METHOD> <route template>`, the child of the caller's `traceparent` when it sends one.
 * Installed before the edge's other hooks: `done` is called inside the span's context, so the handler and every
 * span it starts (append, search legs, model calls) belong to it.
 */
export function traceRequests(app: FastifyInstance): void {
  app.addHook('onRequest', (req, _reply, done) => {
    const parent = propagation.extract(context.active(), req.headers);
    const route = req.routeOptions.url ?? 'unmatched';
    const span = tracer().startSpan(
      `${req.method} ${route}`,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': req.method, 'http.route': route, 'svc.request_id': req.id },
      },
      parent,
    );
    (req as Traced)[SPAN] = span;
    context.with(trace.setSpan(parent, span), done);
  });
  app.addHook('onResponse', (req, reply, done) => {
    const span = (req as Traced)[SPAN];
    if (span) {
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
    done();
  });
}

/** The active span's W3C traceparent, or undefined when none is recording. */
function traceparentNow(): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/**
 * Stamps the writing span's traceparent on each event's metadata: the relay and the projectors continue the trace from
 * it.
 */
const stamped = (events: NewEvent[]): NewEvent[] => {
  const tp = traceparentNow();
  return tp ? events.map((e) => ({ ...e, metadata: { ...e.metadata, traceparent: tp } })) : events;
};

/** The event store with a span per append (`event-store append`), whose context the events carry. */
export function tracedStore(store: EventStore): EventStore {
  // Delegation, not a prototype: the adapter's methods keep `this` (their own state) whichever is called.
  const traced: EventStore = {
    append: (streamId, events, expected) =>
      inSpan('event-store append', { 'svc.stream_id': streamId, 'svc.events': events.length }, async (span) => {
        const r = await store.append(streamId, stamped(events), expected);
        span.setAttribute('svc.position', r.position);
        return r;
      }),
    appendMulti: (requests: AppendRequest[]) =>
      inSpan(
        'event-store append',
        { 'svc.streams': requests.length, 'svc.events': requests.reduce((n, r) => n + r.events.length, 0) },
        () => store.appendMulti(requests.map((r) => ({ ...r, events: stamped(r.events) }))),
      ),
    readStream: (streamId, o) => store.readStream(streamId, o),
    readAll: (after, max) => store.readAll(after, max),
    headPosition: () => store.headPosition(),
    onAppended: (listener) => store.onAppended(listener),
    close: () => store.close(),
  };
  if (store.readTenant) traced.readTenant = (tenantId, after, max) => store.readTenant!(tenantId, after, max);
  return traced;
}

/** The search engines with a span per leg (`search TEXT`, `search SEMANTIC`) and per model call (`model embed`). */
export function traceSearch<T extends SearchEngines>(engines: T): void {
  const text = engines.text;
  const textSearch = text.search.bind(text);
  text.search = (q) => inSpan('search TEXT', { 'svc.limit': q.limit }, () => textSearch(q));
  const vectors = engines.vectors;
  const vectorSearch = vectors.search.bind(vectors);
  vectors.search = (q) => inSpan('search SEMANTIC', { 'svc.limit': q.limit }, () => vectorSearch(q));
  const embedder = engines.embedder;
  const embed = embedder.embed.bind(embedder);
  embedder.embed = (texts, o) =>
    inSpan('model embed', { 'svc.texts': texts.length, 'svc.purpose': o?.purpose ?? 'passage' }, () => embed(texts, o));
}

/**
 * A model with a span per call (`model <id>`): from the request until its answer's last piece (or its failure, or
 * the client going away), so a streamed answer's span lasts as long as the stream.
 */
export function traceModel(model: InferenceModel): InferenceModel {
  return {
    entry: model.entry,
    async *stream(request) {
      const span = tracer().startSpan(`model ${model.entry.id}`, {
        attributes: {
          'svc.model': model.entry.id,
          'svc.surface': request.surface,
          'svc.max_tokens': request.maxTokens,
        },
      });
      let pieces = 0;
      try {
        const inner = context.with(trace.setSpan(context.active(), span), () =>
          model.stream(request)[Symbol.asyncIterator](),
        );
        for (;;) {
          const next = await context.with(trace.setSpan(context.active(), span), () => inner.next());
          if (next.done) break;
          if (typeof next.value === 'string') pieces += 1;
          else
            span.setAttributes({
              'svc.input_tokens': next.value.inputTokens,
              'svc.output_tokens': next.value.outputTokens,
            });
          yield next.value;
        }
        span.setAttribute('svc.pieces', pieces);
        ended(span);
      } catch (e) {
        ended(span, e);
        throw e;
      } finally {
        // An early return (the client went away) ends the span too; end() twice is a no-op.
        span.end();
      }
    },
  };
}
