import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PostgresEventStore } from './engines/event-store-postgres';
import { restoreBackup, verifyBackup } from './backup/archive';
import { FileBlobStore } from './engines/blobs';
import { loadConfig } from './config';
import { openSql } from './engines/sql';
import { buildService } from './service';

/**
 * `npm run restore -- <file>`: restores a backup (`npm run backup`) into an EMPTY DATA_DIR (and, with DATABASE_URL,
 * an empty schema): the events at their positions, service-secret.key, bootstrap.json and the blobs, then rebuilds
 * every projection from the log (the read models and the search index, as `npm run rebuild -- all`). It refuses a
 * data directory or a database that already holds anything.
 */
const file = process.argv[2];
if (!file || file.startsWith('-')) {
  console.error('usage: npm run restore -- <file>');
  process.exit(2);
}
const fail = (m: string): never => {
  console.error(`restore: ${m}`);
  process.exit(2);
};
const config = loadConfig();
if (config.eventStoreUrl)
  fail('EVENTSTORE_URL is set: restore KurrentDB with its own tools (this restore writes the PostgreSQL event store)');
if (!existsSync(file)) fail(`${file} does not exist`);
const { manifest } = await verifyBackup(file).catch((e: Error) => fail(`${file}: ${e.message}`));
if (manifest.secretSource === 'env' && !config.serviceSecret)
  fail(
    'the backup was taken with SERVICE_SECRET set: set the same SERVICE_SECRET for the restore and for ' +
      'the restored service',
  );
if (existsSync(config.dataDir) && readdirSync(config.dataDir).length > 0)
  fail(`DATA_DIR ${config.dataDir} is not empty: restore into an empty directory`);
mkdirSync(config.dataDir, { recursive: true });

const started = Date.now();
const sql = await openSql({ databaseUrl: config.databaseUrl, dataDir: join(config.dataDir, 'pg'), poolSize: 2 });
const store = await PostgresEventStore.open(sql);
let restored;
try {
  if ((await store.headPosition()) > 0)
    fail('the database already holds events: restore into an empty database (or schema)');
  const blobs = config.objectStoreUrl ? undefined : new FileBlobStore(join(config.dataDir, 'blobs'));
  restored = await restoreBackup(file, {
    store,
    writeFile: async (name, data) => writeFileSync(join(config.dataDir, name), data, { mode: 0o600 }),
    putBlob: blobs ? async (key, data) => void (await blobs.put(key, data)) : undefined,
  });
  // The reactors resume where they were at the backup, before any of them starts: no webhook is sent again, no trigger
  // fired twice.
  await sql.exec('CREATE TABLE IF NOT EXISTS proj_checkpoints (name text PRIMARY KEY, position bigint NOT NULL)');
  for (const [name, position] of Object.entries(restored.manifest.reactors))
    await sql.query(
      'INSERT INTO proj_checkpoints (name, position) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET ' +
        'position = excluded.position',
      [name, position],
    );
} finally {
  await store.close();
  await sql.close();
}
console.log(
  `restored ${restored.events} events (up to position ${restored.manifest.position}) and ` +
    `${restored.blobs} blobs in ${Date.now() - started} ms; rebuilding the projections`,
);

// The projections, replayed from position 0 by a projector process of its own (no Kafka: it reads the log itself).
const service = await buildService({ ...config, role: 'projector', kafkaBrokers: undefined }, (m) => console.log(m));
try {
  let t = Date.now();
  await service.runner.stop();
  const position = await service.runner.rebuild();
  console.log(`rebuilt ${service.runner.name} to position ${position} in ${Date.now() - t} ms`);
  if (service.searchIndexer) {
    t = Date.now();
    const p = await service.searchIndexer.rebuild();
    console.log(`rebuilt ${service.searchIndexer.name} to position ${p} in ${Date.now() - t} ms`);
  }
} finally {
  await service.close();
}
console.log(`restore done in ${Date.now() - started} ms`);
