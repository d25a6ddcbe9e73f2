import { route, type RouteSpec, ServiceError } from '@svc/contracts';
import type { EventStore, Sql } from '@svc/domain';
import type { KafkaFeed, KafkaRelay, ProjectionRunner } from '@svc/projectors';
import type { describeEmbedder, VectorModelRebuild } from '@svc/search';
import { type LogSources, ServiceMetrics } from './metrics';

type Stats = { name: string; position: number };

/** What health, readiness and metrics report on. */
export interface SystemStatus {
  role: string;
  sql: Sql;
  /** The search side's own database, when it is not `sql` (the embedded default's thread). */
  searchSql?: Sql;
  store: EventStore;
  /** The projection runner, when this process runs it (readiness waits on its lag, quarantine and failures). */
  runner?: ProjectionRunner;
  /** The other log subscribers, in /readyz order and in /metrics order (runner first in both). */
  readyzSubscribers(): Stats[];
  metricsSubscribers(): Stats[];
  relay?: KafkaRelay;
  feed?: KafkaFeed;
  kafkaTopic?: string;
  embedderInfo?: ReturnType<typeof describeEmbedder>;
  modelRebuild?: VectorModelRebuild;
}

/** The log gauges' sources in a SystemStatus. */
export const logSourcesOf = (s: SystemStatus): LogSources => ({
  head: () => s.store.headPosition(),
  subscribers: () => [...s.metricsSubscribers(), ...(s.relay ? [s.relay.stats] : [])],
  kafka: () => s.feed?.statuses() ?? [],
  embedder: s.embedderInfo,
});

/** GET /healthz, /readyz and /metrics (every role); `metrics` also observes the edge (app.ts). */
export function systemRoutes(s: SystemStatus, metrics?: ServiceMetrics): RouteSpec[] {
  const { role, sql, searchSql, store, runner, relay, feed, embedderInfo, modelRebuild } = s;
  return [
    route({
      method: 'GET',
      url: '/healthz',
      operationId: 'getLiveness',
      auth: 'none',
      summary: 'Liveness',
      handler: async () => ({ status: 'ok', role }),
    }),
    route({
      method: 'GET',
      url: '/readyz',
      operationId: 'getReadiness',
      errors: [503],
      auth: 'none',
      summary:
        'Readiness: the databases answer, the read models are caught up within 10,000 events, and no ' +
        'projection is failing or holds quarantined events',
      handler: async () => {
        try {
          await sql.query('SELECT 1');
        } catch {
          throw new ServiceError('UNAVAILABLE', 'The database is not reachable');
        }
        if (searchSql && searchSql !== sql) {
          try {
            await searchSql.query('SELECT 1');
          } catch (e) {
            throw new ServiceError(
              'UNAVAILABLE',
              `The search database is not reachable: ${e instanceof Error ? e.message : String(e)}`,
            );
          }
        }
        const head = await store.headPosition();
        const lag = runner ? head - runner.current : 0;
        if (lag > 10_000) throw new ServiceError('UNAVAILABLE', `Read models are ${lag} events behind`);
        if (runner && runner.stats.quarantined > 0)
          throw new ServiceError(
            'UNAVAILABLE',
            `Read models hold ${runner.stats.quarantined} quarantined event(s): ` +
              `${runner.stats.lastError ?? ''} (GET /operator/projections/quarantine)`,
          );
        if (runner && runner.stats.failing >= 5)
          throw new ServiceError('UNAVAILABLE', `Read models are failing: ${runner.stats.lastError ?? ''}`);
        const relayLag = relay ? head - relay.current : 0;
        if (relayLag > 10_000) throw new ServiceError('UNAVAILABLE', `The Kafka relay is ${relayLag} events behind`);
        const subscriber = (x: Stats) => ({
          ...x,
          lag: Math.max(0, head - x.position),
          ...(feed ? { feed: feed.status(x.name) } : {}),
        });
        return {
          status: 'ready',
          role,
          headPosition: head,
          projections: s.readyzSubscribers().map(subscriber),
          ...(relay ? { relay: { ...relay.stats, lag: Math.max(0, relayLag), topic: s.kafkaTopic! } } : {}),
          ...(embedderInfo
            ? { embeddings: { ...embedderInfo, ...(modelRebuild ? { rebuild: modelRebuild.status() } : {}) } }
            : {}),
        };
      },
    }),
    route({
      method: 'GET',
      url: '/metrics',
      operationId: 'getMetrics',
      contentType: 'text/plain',
      auth: 'none',
      summary:
        'Prometheus metrics: HTTP requests and latency per route, open event streams, event-loop lag, GC ' +
        'and heap, the head of the log, position and lag of each log subscriber, Kafka consumer lag',
      handler: async ({ reply }) => {
        // Made on first use when app.ts gave none (the route catalogue declares these routes without a process).
        metrics ??= new ServiceMetrics(s.role, logSourcesOf(s));
        reply.type(metrics.contentType);
        return metrics.text();
      },
    }),
  ];
}
