import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { NewEvent } from '@svc/domain';
import { PostgresEventStore } from '@svc/deploy';
import { buildService, loadConfig, openSql } from '@svc/deploy';
import { freshPostgresSchema, tempDir } from '../src/support/engines';
import { ROOT } from '../src/support/service';

/**
 * Backup and restore time (docs/benchmarks.md "Backup and restore"):
 *
 *   npx tsx --conditions=svc-source tests/bench/backup.ts            # embedded (PGlite)
 *   DATABASE_URL=postgres://... npx tsx --conditions=svc-source tests/bench/backup.ts
 *
 * A service creates a schema and one record through the API; its RecordCreated event is the template of
 * BENCH_BACKUP_EVENTS (default 100,000) RecordCreated events appended straight through the event-store adapter
 * (2,000 streams a batch). Then `deploy/src/backup.ts` and `deploy/src/restore.ts` run as the commands do, as child
 * processes, and their own timings (backup; restore's append and its projection rebuild) are printed, with the
 * figure per 1,000,000 events extrapolated linearly.
 */
const total = Number(process.env.BENCH_BACKUP_EVENTS ?? 100_000);
const base = process.env.DATABASE_URL || undefined;
const work = tempDir('svc-bench-backup-');
const dataDir = join(work.dir, 'original');
const schema = base ? await freshPostgresSchema(base) : undefined;
const env: Record<string, string> = {
  DATA_DIR: dataDir,
  PORT: '0',
  DEFAULT_PLAN: 'enterprise',
  LOG_LEVEL: 'silent',
  ...(schema ? { DATABASE_URL: schema.url } : {}),
};

function run(script: string, file: string, e: Record<string, string>): Promise<{ ms: number; out: string }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let out = '';
    const child = spawn(process.execPath, ['--import', 'tsx', `deploy/src/${script}.ts`, file], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: '',
        EVENTSTORE_URL: '',
        KAFKA_BROKERS: '',
        ELASTICSEARCH_URL: '',
        REDIS_URL: '',
        SERVICE_SECRET: '',
        LOG_LEVEL: 'warn',
        ...e,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolve({ ms: performance.now() - started, out })
        : reject(new Error(`${script} exited ${code}: ${out}`)),
    );
  });
}

try {
  // The template event, written by the service itself.
  const service = await buildService(loadConfig(env as NodeJS.ProcessEnv), () => {});
  await service.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = service.app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const token: string = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')).tenants.test.rootKey;
  const post = async (path: string, body: unknown) => {
    const r = await fetch(url + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (r.status !== 201) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    return (await r.json()) as { id: string };
  };
  const typeName = 'backup_note';
  await post('/v1/schemas', {
    typeName,
    displayName: 'Backup note',
    allowedSurfaces: ['record'],
    fields: [
      { fieldId: 'title', fieldType: 'string', required: true },
      { fieldId: 'body', fieldType: 'string' },
      { fieldId: 'tag', fieldType: 'string' },
    ],
    lookupFields: ['tag'],
  });
  const first = await post('/v1/records', { typeName, payload: { title: 'template', body: 'x', tag: 't0' } });
  const [template] = (await service.store.readStream(`record-${first.id}`)).filter((e) => e.type === 'RecordCreated');
  await service.close();

  // The log, straight through the adapter (the service is stopped: the embedded database is single-process).
  const sql = await openSql({ databaseUrl: schema?.url, dataDir: join(dataDir, 'pg'), poolSize: 2 });
  const store = await PostgresEventStore.open(sql);
  const t0 = performance.now();
  for (let appended = 0; appended < total;) {
    const n = Math.min(2000, total - appended);
    const requests = Array.from({ length: n }, (_, i) => {
      const k = appended + i;
      const recordId = randomUUID();
      const payload = {
        title: `note ${k}`,
        body: `backup bench note ${k}: ${'lorem ipsum dolor sit amet '.repeat(4)}`,
        tag: `t${k % 16}`,
      };
      const event = {
        id: randomUUID(),
        type: 'RecordCreated',
        data: { ...(template.data as object), recordId, payload },
        metadata: { ...template.metadata, requestId: randomUUID(), occurredAt: new Date().toISOString() },
      } as NewEvent;
      return { streamId: `record-${recordId}`, events: [event], expectedRevision: 'no_stream' as const };
    });
    await store.appendMulti(requests);
    appended += n;
  }
  const head = await store.headPosition();
  console.log(
    `seeded ${head.toLocaleString('en-US')} events in ${((performance.now() - t0) / 1000).toFixed(1)} s ` +
      `(${base ? 'PostgreSQL' : 'PGlite'})`,
  );
  await store.close();
  await sql.close();

  const file = join(work.dir, 'bench.backup');
  const b = await run('backup', file, { ...env, LOG_LEVEL: 'warn' });
  const bytes = statSync(file).size;
  console.log(b.out.trim());
  const target = base ? await freshPostgresSchema(base) : undefined;
  const r = await run('restore', file, {
    DATA_DIR: join(work.dir, 'restored'),
    ...(target ? { DATABASE_URL: target.url } : {}),
  });
  console.log(r.out.trim());
  const per = (ms: number) => `${(((ms / head) * 1_000_000) / 60_000).toFixed(1)} min per 1,000,000 events`;
  const appendMs = Number(/restored \d+ events .* in (\d+) ms/.exec(r.out)?.[1]);
  const rebuildMs = Number(/rebuilt read-models to position \d+ in (\d+) ms/.exec(r.out)?.[1]);
  console.log(
    `backup: ${(b.ms / 1000).toFixed(1)} s for ${head} events, ${(bytes / 1e6).toFixed(1)} MB ` +
      `(${Math.round(bytes / head)} bytes/event); ${per(b.ms)} (process start included)`,
  );
  console.log(
    `restore: ${(r.ms / 1000).toFixed(1)} s in all; ${per(r.ms)}; the log ${(appendMs / 1000).toFixed(1)} ` +
      `s (${per(appendMs)}), the read models ${(rebuildMs / 1000).toFixed(1)} s (${per(rebuildMs)})`,
  );
  await target?.drop();
} finally {
  await schema?.drop();
  work.remove();
}
