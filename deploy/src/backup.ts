import { renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PostgresEventStore } from './engines/event-store-postgres';
import { REACTORS, writeBackup } from './backup/archive';
import { loadConfig } from './config';
import { openSql, tableExists } from './engines/sql';

/**
 * `npm run backup -- <file>`: the event log up to its head when the backup starts, the service secret
 * (service-secret.key), bootstrap.json and the blobs under DATA_DIR/blobs, in one gzipped file (mode 0600) that is
 * as sensitive as the secret itself (docs/operations.md "Backup and restore"). Against PostgreSQL (DATABASE_URL) it
 * runs beside the service; the embedded database (PGlite) is single-process, so there the service must be stopped.
 */
const file = process.argv[2];
if (!file || file.startsWith('-')) {
  console.error('usage: npm run backup -- <file>');
  process.exit(2);
}
const config = loadConfig();
if (config.eventStoreUrl) {
  console.error(
    'backup: EVENTSTORE_URL is set: back up KurrentDB with its own tools (this backup reads the ' +
      'PostgreSQL event store)',
  );
  process.exit(2);
}
const sql = await openSql({ databaseUrl: config.databaseUrl, dataDir: join(config.dataDir, 'pg'), poolSize: 2 });
const store = await PostgresEventStore.open(sql);
const partial = `${file}.partial`;
try {
  const started = Date.now();
  const r = await writeBackup(
    {
      store,
      dataDir: config.dataDir,
      secretSource: config.serviceSecret ? 'env' : 'file',
      blobsDir: config.objectStoreUrl ? undefined : join(config.dataDir, 'blobs'),
      reactors: async () =>
        (await tableExists(sql, 'proj_checkpoints'))
          ? Object.fromEntries(
              (
                await sql.query<{ name: string; position: string }>(
                  'SELECT name, position FROM proj_checkpoints WHERE name = ANY($1)',
                  [REACTORS],
                )
              ).rows.map((r) => [r.name, Number(r.position)]),
            )
          : {},
    },
    partial,
  );
  // Renamed when whole: a file under the asked name is always a complete backup.
  renameSync(partial, file);
  console.log(
    `backed up ${r.events} events (up to position ${r.position}) and ${r.blobs} blobs to ${file} in ` +
      `${Date.now() - started} ms`,
  );
  if (config.serviceSecret)
    console.log('SERVICE_SECRET is set: it is not in the file; the restored service needs the same SERVICE_SECRET');
  if (config.objectStoreUrl)
    console.log(
      'OBJECT_STORE_URL is set: the blobs are in the object store, not in the file; back the bucket up ' +
        'with its own tools',
    );
} catch (e) {
  rmSync(partial, { force: true });
  console.error(`backup failed: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 1;
} finally {
  await store.close();
  await sql.close();
}
