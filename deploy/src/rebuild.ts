import { loadConfig } from './config';
import { buildService } from './service';

/**
 * `npm run rebuild -- <read-models|search-index|all>`: drops the read models (or the search index) and replays the
 * event log from position 0. Run it with the service stopped (the embedded database is single-process) or against a
 * shared PostgreSQL with every process stopped.
 *
 * `npm run rebuild -- --online read-models [--url <projector's address>]`: asks the running projector process
 * (POST /operator/rebuilds, OPERATOR_TOKEN) to rebuild the read models beside the serving ones and switch over when
 * caught up, and follows its progress until it is done. Reads go on meanwhile (docs/operations.md).
 */
const args = process.argv.slice(2);
if (args.includes('--online')) await online(args.filter((a) => a !== '--online'));
else await offline(args[0] ?? 'all');

async function online(rest: string[]) {
  const at = rest.indexOf('--url');
  const base = (at >= 0 ? rest[at + 1] : process.env.REBUILD_URL) ?? `http://127.0.0.1:${process.env.PORT ?? 8080}`;
  const target = rest.filter((_, i) => (i !== at && i !== at + 1) || at < 0)[0] ?? 'read-models';
  const token = process.env.OPERATOR_TOKEN;
  if (!token) {
    console.error('set OPERATOR_TOKEN (the operator API of the projector process)');
    process.exit(2);
  }
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(new URL(path, base), {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (!res.ok) {
      console.error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
      process.exit(1);
    }
    return json;
  };
  let p = await call('POST', '/operator/rebuilds', { target });
  console.log(`rebuild ${p.id} of ${target} started at ${base}`);
  while (p.state === 'building' || p.state === 'switching') {
    await new Promise((r) => setTimeout(r, 2000));
    p = await call('GET', `/operator/rebuilds/${p.id}`);
    console.log(`${p.state}: position ${p.position} of ${p.head}, ${p.eventsPerSecond} events/s`);
  }
  if (p.state !== 'done') {
    console.error(`rebuild failed: ${p.error}; the serving read models are unchanged`);
    process.exit(1);
  }
  console.log(
    `switched at position ${p.position} (${p.events} events, ${p.eventsPerSecond} events/s; the live ` +
      `projector paused ${p.pausedMs} ms)`,
  );
}

async function offline(target: string) {
  // The replay reads the event store itself: no Kafka consumer (it would only join the running projector's groups as a
  // standby).
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
}
