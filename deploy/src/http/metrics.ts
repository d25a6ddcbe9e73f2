import type { FastifyReply, FastifyRequest } from 'fastify';
import cluster from 'node:cluster';
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RouteSpec } from '@svc/contracts';

/** A log subscriber's gauge row (projections, workers, the relay). */
export interface SubscriberGauge {
  name: string;
  position: number;
  quarantined?: number;
}

/** A Kafka feed's status row. */
export interface KafkaGauge {
  name: string;
  groupId?: unknown;
  lagMessages?: unknown;
  buffered?: unknown;
  gapFills?: unknown;
  active?: unknown;
}

/** What the log gauges are read from, at each scrape. */
export interface LogSources {
  head(): Promise<number>;
  subscribers(): SubscriberGauge[];
  kafka(): KafkaGauge[];
  embedder?: { model: string | null; dims: number; kind: string };
}

/** Set in the environment of a process started by the supervisor of SERVICE_PROCESSES (service/processes.ts). */
export const SUPERVISED = 'SVC_SUPERVISED';
/** A supervised process asks its supervisor for every process's metrics, and gets them gathered. */
export const METRICS_REQUEST = 'svc:metrics-request';
export const METRICS_REPLY = 'svc:metrics-reply';
const supervised = () => cluster.isWorker && process.env[SUPERVISED] === '1';
let asked = 0;

/** Every supervised process's metrics, gathered by the supervisor; this process's own if it does not answer. */
function gatheredMetrics(own: Registry): Promise<string> {
  const id = ++asked;
  return new Promise((resolve) => {
    const done = (text: string | Promise<string>) => {
      clearTimeout(timer);
      process.off('message', onReply);
      resolve(text);
    };
    const onReply = (m: { type?: string; id?: number; text?: string; error?: string }) => {
      if (m?.type === METRICS_REPLY && m.id === id) done(m.text ?? own.metrics());
    };
    const timer = setTimeout(() => done(own.metrics()), 5_000);
    process.on('message', onReply);
    process.send!({ type: METRICS_REQUEST, id });
  });
}

/**
 * The process's Prometheus metrics (prom-client), served at GET /metrics: the HTTP edge (requests and latency per
 * route template and status, open event streams), Node's own (event-loop lag, GC, heap, handles: prom-client's
 * default collectors) and the log's gauges, read at scrape time. Every label is bounded: route templates, methods,
 * status codes, subscriber and model names; nothing per tenant, credential or id.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status_code'>;
  private readonly duration: Histogram<'method' | 'route' | 'status_code'>;
  private readonly streams: Gauge<'route'>;

  constructor(role: string, log?: LogSources) {
    const registry = this.registry;
    registry.setDefaultLabels({ role });
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });
    this.requests = new Counter({
      name: 'svc_http_requests_total',
      help: 'HTTP requests answered, by route template, method and status',
      labelNames: ['method', 'route', 'status_code'],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: 'svc_http_request_duration_seconds',
      help:
        'Time from the request to the end of its answer (an event stream: until it closed), by route ' +
        'template, method and status',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
    this.streams = new Gauge({
      name: 'svc_sse_streams_open',
      help: 'Server-Sent Events streams open now (RAG, chat, the change stream)',
      labelNames: ['route'],
      registers: [registry],
    });
    if (log) registerLogGauges(registry, log);
    // Under the supervisor: its gathering asks every process for this registry (prom-client's cluster listener).
    if (supervised()) {
      AggregatorRegistry.setRegistries([registry]);
      new AggregatorRegistry();
    }
  }

  /** The edge's onRequest: an event-stream route counts as open until its connection closes. */
  onRequest = (req: FastifyRequest, reply: FastifyReply): void => {
    const spec = req.routeOptions.config?.spec as RouteSpec | undefined;
    if (!spec?.stream) return;
    const route = routeOf(req);
    this.streams.inc({ route });
    reply.raw.once('close', () => this.streams.dec({ route }));
  };

  /** The edge's onResponse: cheap (two label lookups). */
  onResponse = (req: FastifyRequest, reply: FastifyReply, durationMs: number): void => {
    const labels = { method: req.method, route: routeOf(req), status_code: String(reply.statusCode) };
    this.requests.inc(labels);
    this.duration.observe(labels, durationMs / 1000);
  };

  /** The metrics of this process, or of every process serving the role under SERVICE_PROCESSES. */
  text(): Promise<string> {
    return supervised() ? gatheredMetrics(this.registry) : this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/** The route template (bounded), never the URL; requests that matched no route share one label. */
const routeOf = (req: FastifyRequest): string => (req.routeOptions.url as string | undefined) ?? 'unmatched';

/**
 * Under SERVICE_PROCESSES every process reports these and the supervisor gathers them: a position or a lag is the
 * same log seen by each, so it is gathered as the furthest behind (positions: min) or the largest, never summed.
 */
function registerLogGauges(registry: Registry, log: LogSources): void {
  new Gauge({
    name: 'svc_event_store_head_position',
    aggregator: 'max',
    help: 'Position of the newest event in the global log',
    registers: [registry],
    async collect() {
      this.set(await log.head());
    },
  });
  new Gauge({
    name: 'svc_subscriber_position',
    aggregator: 'min',
    help: 'Last global position a log subscriber (projection, worker, relay) has applied or published',
    labelNames: ['subscriber'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of log.subscribers()) this.set({ subscriber: s.name }, s.position);
    },
  });
  new Gauge({
    name: 'svc_subscriber_lag_events',
    aggregator: 'max',
    help: 'Events between the head of the log and the subscriber',
    labelNames: ['subscriber'],
    registers: [registry],
    async collect() {
      const h = await log.head();
      this.reset();
      for (const s of log.subscribers()) this.set({ subscriber: s.name }, Math.max(0, h - s.position));
    },
  });
  new Gauge({
    name: 'svc_projection_quarantined_events',
    aggregator: 'max',
    help:
      'Events a projection could not apply, with the later events of their streams, held until an operator ' +
      'retries or skips them',
    labelNames: ['subscriber'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of log.subscribers())
        if (s.quarantined !== undefined) this.set({ subscriber: s.name }, s.quarantined);
    },
  });
  const kafka = (name: string, help: string, value: (k: KafkaGauge) => number) =>
    new Gauge({
      name,
      help,
      aggregator: 'max',
      labelNames: ['subscriber', 'group'],
      registers: [registry],
      collect() {
        this.reset();
        for (const k of log.kafka()) this.set({ subscriber: k.name, group: String(k.groupId) }, value(k));
      },
    });
  kafka(
    'svc_kafka_consumer_lag_messages',
    "Messages between the partitions' high watermarks and the offsets applied (Kafka feed)",
    (k) => Number(k.lagMessages ?? 0),
  );
  kafka(
    'svc_kafka_consumer_buffered_events',
    'Events received from Kafka that wait for their predecessor in the global log',
    (k) => Number(k.buffered ?? 0),
  );
  kafka('svc_kafka_consumer_gap_fills', 'Times a hole in the topic was read from the event store instead', (k) =>
    Number(k.gapFills ?? 0),
  );
  kafka('svc_kafka_consumer_active', "1 when this process holds the group's partitions, 0 on standby", (k) =>
    k.active ? 1 : 0,
  );
  const e = log.embedder;
  if (e) {
    const g = new Gauge({
      name: 'svc_embeddings_model',
      aggregator: 'max',
      help:
        'The embedding model in use (1); kind="none", model="" when the service runs without one ' +
        '(BUILTIN_EMBEDDINGS_MODEL=none: no semantic search)',
      labelNames: ['model', 'dims', 'kind'],
      registers: [registry],
    });
    g.set({ model: e.model ?? '', dims: String(e.dims), kind: e.kind }, 1);
  }
}
