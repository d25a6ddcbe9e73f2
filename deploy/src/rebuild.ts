import { loadConfig } from './config';
import { buildService } from './service';

/**
 * `npm run rebuild -- <read-models|search-index|all>`: drops the read models (or the search index) and replays the
 * event log from position 0. Run it with the service stopped (the embedded
 * database is single-process) or against a shared PostgreSQL.
 */
const target = process.argv[2] ?? 'all';
// The replay reads the event store itself: no Kafka consumer (it would only join the running projector's groups as a standby).
const config = { ...loadConfig(), role: 'projector' as const, kafkaBrokers: undefined };
const service = await buildService(config, (m) => console.log(m));
const known = [service.runner.name, ...(service.searchIndexer ? [service.searchIndexer.name] : []), 'all'];
if (!known.includes(target)) {
  console.error(`unknown projection '${target}'; known: ${known.join(', ')}`);
  await service.close();
  process.exit(2);
}
if (target === 'all' || target === service.runner.name) {
  const started = Date.now();
  await service.runner.stop();
  const position = await service.runner.rebuild();
  console.log(`rebuilt ${service.runner.name} to position ${position} in ${Date.now() - started} ms`);
}
// The search index (its own checkpoint): empties the text and vector indexes and replays the log.
if (service.searchIndexer && (target === 'all' || target === service.searchIndexer.name)) {
  const started = Date.now();
  const position = await service.searchIndexer.rebuild();
  console.log(`rebuilt ${service.searchIndexer.name} to position ${position} in ${Date.now() - started} ms`);
}
await service.close();
