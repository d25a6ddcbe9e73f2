import { afterAll, describe, expect, it } from 'vitest';
import type { Sql } from '@svc/domain';
import { openPostgres } from '@svc/deploy';
import { readModelProjections } from '@svc/projectors';
import { freshPostgresSchema, serverUrl } from '../support/engines';

/**
 * Processes starting together on one PostgreSQL server each create the read models (CREATE ... IF NOT EXISTS):
 * two query replicas' starts deadlocked each other (40P01, "waits for AccessExclusiveLock ... blocked by"), and one
 * of them exited. Here several connections, as several processes, run every read model's DDL at once on fresh
 * schemas: none may fail.
 */
const url = serverUrl('postgres');
const handles: Sql[] = [];
const drops: Array<() => Promise<void>> = [];
afterAll(async () => {
  await Promise.all(handles.map((h) => h.close()));
  for (const d of drops) await d();
});

describe.skipIf(!url)('read-model DDL from processes starting together (PostgreSQL server)', () => {
  it('runs concurrently on a fresh schema without a deadlock', async () => {
    const ddl = readModelProjections({}).map((p) => p.ddl);
    for (let round = 0; round < 4; round++) {
      const schema = await freshPostgresSchema(url!);
      drops.push(schema.drop);
      const sqls = await Promise.all(Array.from({ length: 6 }, () => openPostgres(schema.url, 2)));
      handles.push(...sqls);
      const results = await Promise.allSettled(
        sqls.map(async (sql) => {
          for (const text of ddl) await sql.exec(text);
        }),
      );
      const failed = results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
      expect(failed, `round ${round}`).toEqual([]);
    }
  }, 120_000);
});
