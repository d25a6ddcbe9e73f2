import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Sql } from '@svc/domain';
import { openPglite, openPgliteThread, openPostgres } from '@svc/deploy';

/** A throwaway directory for an embedded engine. */
export function tempDir(prefix = 'svc-test-'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * A fresh PostgreSQL schema on the server of DATABASE_URL, so suites never see
 * each other's tables. Returns a URL whose search_path points at it.
 */
export async function freshPostgresSchema(baseUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const schema = `t_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const u = new URL(baseUrl);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return {
    url: u.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: baseUrl });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    },
  };
}

/** Server engines switched on by their URL variable; the reason a suite is skipped otherwise. */
export const SERVER_ENGINES = {
  postgres: { env: 'DATABASE_URL' },
  eventstore: { env: 'EVENTSTORE_URL' },
  kafka: { env: 'KAFKA_BROKERS' },
  elasticsearch: { env: 'ELASTICSEARCH_URL' },
  redis: { env: 'REDIS_URL' },
} as const;

export const serverUrl = (engine: keyof typeof SERVER_ENGINES): string | undefined =>
  process.env[SERVER_ENGINES[engine].env] || undefined;

/**
 * A SQL connection on a throwaway place, for a contract suite: PGlite (in this thread or its own) in a temporary
 * directory, or a fresh schema of DATABASE_URL. `dispose` closes it and removes the place.
 */
export async function scratchSql(
  kind: 'pglite' | 'pglite-thread' | 'postgres',
): Promise<{ sql: Sql; dispose: () => Promise<void> }> {
  if (kind === 'postgres') {
    const url = serverUrl('postgres');
    if (!url) throw new Error('DATABASE_URL is not set');
    const schema = await freshPostgresSchema(url);
    const sql = await openPostgres(schema.url);
    return { sql, dispose: async () => (await sql.close(), await schema.drop()) };
  }
  const tmp = tempDir();
  const sql = kind === 'pglite' ? await openPglite(tmp.dir) : await openPgliteThread(tmp.dir, { nice: 5 });
  return { sql, dispose: async () => (await sql.close(), tmp.remove()) };
}
