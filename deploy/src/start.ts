import cluster from 'node:cluster';
import { loadConfig } from './config';
import { createLogger } from './log';
import type { Service } from './service';
import { superviseProcesses } from './service/processes';

/** The launcher: the only place that listens. SIGTERM/SIGINT close cleanly. */
let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (e) {
  // A variable the service cannot take: its one-line reason, no stack.
  console.error(`cannot start: ${(e as Error).message}`);
  process.exit(1);
}
if (config.processes > 1 && cluster.isPrimary) {
  // SERVICE_PROCESSES: this process only supervises the ones that serve (service/processes.ts).
  superviseProcesses(config.processes, createLogger(config.logLevel, config.role));
} else await serve(config);

async function serve(config: ReturnType<typeof loadConfig>) {
  // Loaded here, not above: a supervisor of SERVICE_PROCESSES never loads the service's code.
  const { StartupError, buildService } = await import('./service');
  const started = Date.now();
  let service: Service;
  try {
    service = await buildService(config);
  } catch (e) {
    // A refusal names its cause in one line; anything else keeps its stack.
    if (!(e instanceof StartupError)) throw e;
    createLogger('fatal', config.role).fatal(`cannot start: ${e.message}`);
    console.error(`cannot start: ${e.message}`);
    process.exit(1);
  }
  const { logger } = service;
  await service.app.listen({ port: config.port, host: config.host });
  logger.info(
    `service (role ${config.role}) listening on http://${config.host}:${config.port} in ` +
      `${Date.now() - started} ms; data in ${config.dataDir}`,
  );
  if (service.bootstrapFile) logger.info(`first start: account keys written to ${service.bootstrapFile} (mode 0600)`);

  let closing = false;
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    process.on(sig, async () => {
      if (closing) return;
      closing = true;
      logger.info(`${sig}: shutting down`);
      const t = setTimeout(() => process.exit(1), 15_000);
      try {
        await service.close();
      } finally {
        clearTimeout(t);
        logger.flush();
        process.exit(0);
      }
    });
  }
}
