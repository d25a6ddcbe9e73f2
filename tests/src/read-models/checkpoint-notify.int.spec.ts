import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCheckpoints, type Sql, writeCheckpoint } from '@svc/domain';
import { openPostgres } from '@svc/deploy';
import { notifyCheckpoint, remoteBarrier } from '@svc/projectors';
import { freshPostgresSchema, serverUrl } from '../support/engines';

/**
 * The read-your-writes barrier of a command-only process follows its runner's checkpoint notifications.
 * NOTIFY channels are per database: a deployment (or a test suite) in another schema of the same database
 * announces its own runner's positions on the same channel. Those must never release this barrier: they did,
 * and a revoke answered by a command process before the read models had it (the flaky "a token revoked
 * through B answers 401 on A at once", which failed when another suite's service was committing beside it).
 */
const url = serverUrl('postgres');
describe.skipIf(!url)('checkpoint notifications between schemas of one database (PostgreSQL)', () => {
  const opened: Array<{ sql: Sql; drop: () => Promise<void> }> = [];
  let mine: Sql;
  let other: Sql;
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      const s = await freshPostgresSchema(url!);
      const sql = await openPostgres(s.url);
      await ensureCheckpoints(sql);
      opened.push({ sql, drop: s.drop });
    }
    [mine, other] = opened.map((o) => o.sql);
  });
  afterAll(async () => {
    for (const o of opened) {
      await o.sql.close();
      await o.drop();
    }
  });

  it("another schema's runner, far ahead, does not release this barrier; this schema's runner does", async () => {
    const barrier = await remoteBarrier(mine, 'read-models', 25);
    try {
      await notifyCheckpoint(other, 'read-models', 1_000_000);
      expect(await barrier.waitFor(5, 400), 'released by a notification from another schema').toBe(false);
      await mine.tx(async (q) => {
        await writeCheckpoint(q, 'read-models', 10);
        await notifyCheckpoint(q, 'read-models', 10);
      });
      expect(await barrier.waitFor(5, 3000)).toBe(true);
    } finally {
      await barrier.close();
    }
  });
});
