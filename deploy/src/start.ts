import { loadConfig } from './config';
import { StartupError, buildService, type Service } from './service';

/** The launcher: the only place that listens. SIGTERM/SIGINT close cleanly. */
let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (e) {
  // A variable the service cannot take: its one-line reason, no stack.
  console.error(`cannot start: ${(e as Error).message}`);
  process.exit(1);
}
const started = Date.now();
let service: Service;
try {
  service = await buildService(config);
} catch (e) {
  // A refusal names its cause in one line; anything else keeps its stack.
  if (!(e instanceof StartupError)) throw e;
  console.error(`cannot start: ${e.message}`);
  process.exit(1);
}
await service.app.listen({ port: config.port, host: config.host });
console.log(`service (role ${config.role}) listening on http://${config.host}:${config.port} in ${Date.now() - started} ms; data in ${config.dataDir}`);
if (service.bootstrapFile) console.log(`first start: account keys written to ${service.bootstrapFile} (mode 0600)`);

let closing = false;
for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  process.on(sig, async () => {
    if (closing) return;
    closing = true;
    console.log(`${sig}: shutting down`);
    const t = setTimeout(() => process.exit(1), 15_000);
    try {
      await service.close();
    } finally {
      clearTimeout(t);
      process.exit(0);
    }
  });
}
