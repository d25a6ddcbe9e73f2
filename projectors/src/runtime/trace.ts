import { context, type Link, propagation, ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';
import type { StoredEvent } from '@svc/domain';

/** Links beyond the first write's parent, at most: a large catch-up batch does not carry thousands. */
const MAX_LINKS = 32;

/**
 * A projection batch as a span (docs/operations.md "Traces"): the child of the first event's write (its
 * metadata.traceparent, stamped at append, carried by Kafka's `traceparent` header), so one write is one trace
 * from the edge to its projection; the batch's other writes are links. Events without a trace context (traces
 * off where they were written) start no span: with traces off the batch costs one pass over its metadata.
 * The Kafka relay's publish of a batch is a span the same way (`kafka publish`, relay.ts).
 */
export async function traceBatch<T>(
  name: string,
  events: StoredEvent[],
  fn: () => Promise<T>,
  spanName = 'projection batch',
): Promise<T> {
  const parents = [...new Set(events.map((e) => e.metadata.traceparent).filter((t): t is string => !!t))];
  if (!parents.length) return fn();
  const contextOf = (traceparent: string) => propagation.extract(ROOT_CONTEXT, { traceparent });
  const parent = contextOf(parents[0]);
  const links: Link[] = parents
    .slice(1, 1 + MAX_LINKS)
    .map((t) => trace.getSpanContext(contextOf(t)))
    .filter((c) => c !== undefined)
    .map((c) => ({ context: c }));
  const span = trace.getTracer('svc').startSpan(
    spanName,
    {
      links,
      attributes: {
        'svc.projection': name,
        'svc.events': events.length,
        'svc.position': events[events.length - 1].position,
      },
    },
    parent,
  );
  try {
    return await context.with(trace.setSpan(parent, span), fn);
  } catch (e) {
    span.recordException(e as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (e as Error)?.message });
    throw e;
  } finally {
    span.end();
  }
}
