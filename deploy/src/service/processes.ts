import cluster from 'node:cluster';
import type { Logger } from 'pino';
import { AggregatorRegistry } from 'prom-client';
import { METRICS_REQUEST, METRICS_REPLY, SUPERVISED } from '../http/metrics';

/** How long the supervisor waits for its processes to close after SIGTERM/SIGINT before it kills them. */
const CLOSE_MS = 20_000;
/** A process that dies after it listened is started again after this pause (a crash loop stays slow). */
const RESTART_MS = 1_000;

/**
 * SERVICE_PROCESSES above 1 (roles command and query, on a server database): this process forks that many copies of
 * the service, which listen on the one port (each accepts its own connections from it), and serves nothing itself.
 * The first copy starts alone and the others once it listens, so a first start on an empty database opens its
 * account once. A copy that dies before it listened stops the whole start (its reason is in its own log lines, exit
 * code 1, as a single process would); one that dies later is started again. SIGTERM and SIGINT are passed on; the
 * supervisor exits once every copy closed. /metrics, answered by any copy, counts every copy: the supervisor gathers
 * them (prom-client's cluster aggregation: counters and histograms summed, the log's gauges as in metrics.ts).
 */
export function superviseProcesses(processes: number, logger: Logger): void {
  // The processes take connections from the shared socket themselves. node:cluster's default on Linux (this process
  // accepts and hands each connection to the next in turn) lost a connection handed to a process that had just died:
  // its client waited forever.
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  const gathered = new AggregatorRegistry();
  let closing = false;
  const running = () => Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
  const fork = () => {
    const w = cluster.fork({ [SUPERVISED]: '1' });
    let listened = false;
    w.once('listening', () => (listened = true));
    w.once('exit', (code, signal) => {
      if (closing) {
        if (!running().length) process.exit(0);
        return;
      }
      if (!listened) {
        logger.fatal(`cannot start: process ${w.process.pid} exited before it listened (${signal ?? code})`);
        closing = true;
        for (const other of running()) other.process.kill('SIGTERM');
        setTimeout(() => process.exit(1), CLOSE_MS).unref();
        if (!running().length) process.exit(1);
        return;
      }
      logger.error(`process ${w.process.pid} exited (${signal ?? code}); another starts in ${RESTART_MS} ms`);
      setTimeout(() => closing || fork(), RESTART_MS);
    });
    return w;
  };
  cluster.on('message', (worker, m: { type?: string; id?: number }) => {
    if (m?.type !== METRICS_REQUEST) return;
    gathered.clusterMetrics().then(
      (text) => worker.isConnected() && worker.send({ type: METRICS_REPLY, id: m.id, text }),
      (e: Error) => worker.isConnected() && worker.send({ type: METRICS_REPLY, id: m.id, error: e.message }),
    );
  });
  // The line below is what operators (and tests) wait for, so it is written once every process listens.
  fork().once('listening', () => {
    let waiting = processes - 1;
    for (let i = 1; i < processes; i++)
      fork().once('listening', () => {
        if (--waiting === 0)
          logger.info(`${processes} processes serve this role (SERVICE_PROCESSES); supervisor pid ${process.pid}`);
      });
  });
  for (const sig of ['SIGTERM', 'SIGINT'] as const)
    process.on(sig, () => {
      if (closing) return;
      closing = true;
      logger.info(`${sig}: closing ${running().length} processes`);
      for (const w of running()) w.process.kill(sig);
      setTimeout(() => {
        for (const w of running()) w.process.kill('SIGKILL');
        process.exit(1);
      }, CLOSE_MS).unref();
      if (!running().length) process.exit(0);
    });
}
