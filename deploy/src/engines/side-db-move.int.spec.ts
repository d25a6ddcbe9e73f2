import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sql } from '@svc/domain';
import { ActivityLogStore, type ActivityRow } from '@svc/query-api';
import { moveActivityLog } from './side-db-move';
import { openPglite, tableExists } from './sql';

/**
 * The activity log's move from the main embedded database into the second one: a move cut short (the target
 * failing part-way) resumes where it stopped at the next try, so every entry arrives exactly once.
 */
const dir = mkdtempSync(join(tmpdir(), 'svc-al-move-'));
let from: Sql;
let to: Sql;
const tenantId = randomUUID();
const ENTRIES = 30_000; // several copy steps (256 heap pages each)

beforeAll(async () => {
  [from, to] = await Promise.all([openPglite(join(dir, 'main')), openPglite(join(dir, 'side'))]);
  const source = new ActivityLogStore(from);
  await source.init();
  const row = (i: number): ActivityRow => ({
    tenantId,
    contextId: null,
    atUs: 1_700_000_000_000_000 + i,
    method: 'POST',
    resource: 'records',
    status: 201,
    keyId: 'k',
    durationMs: 1.5,
    path: '/v1/records',
    requestId: `req-${i}`,
    errorCode: null,
  });
  for (let i = 0; i < ENTRIES; i += 5000) await source.insert(Array.from({ length: 5000 }, (_, j) => row(i + j)));
  await new ActivityLogStore(to).init();
  await to.query(
    `INSERT INTO al_entries (tenant_id, at_us, method, resource, status, request_id) VALUES ($1, 1, ` +
      `'GET', 'usage', 200, 'already-there')`,
    [tenantId],
  );
}, 120_000);

afterAll(async () => {
  await Promise.all([from?.close(), to?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

describe('activity log move', () => {
  it('resumes a move cut short without copying an entry twice, then drops the source', async () => {
    // The target fails on its second copy step.
    let steps = 0;
    const failing: Sql = { ...to, tx: (fn) => (++steps === 2 ? Promise.reject(new Error('disk full')) : to.tx(fn)) };
    await expect(moveActivityLog(from, failing, () => {})).rejects.toThrow('disk full');
    const partial = (await to.query<{ n: number }>('SELECT count(*)::int AS n FROM al_entries')).rows[0].n;
    expect(partial).toBeGreaterThan(1);
    expect(partial).toBeLessThan(ENTRIES + 1);
    expect(await tableExists(from, 'al_entries'), 'the source stays until the move completes').toBe(true);

    const heard: string[] = [];
    expect(await moveActivityLog(from, to, (m) => heard.push(m))).toBe(true);
    const { rows } = await to.query<{ n: number; distinct_ids: number }>(
      'SELECT count(*)::int AS n, count(DISTINCT request_id)::int AS distinct_ids FROM al_entries',
    );
    expect(rows[0]).toEqual({ n: ENTRIES + 1, distinct_ids: ENTRIES + 1 });
    expect(await tableExists(from, 'al_entries')).toBe(false);
    expect(await tableExists(to, 'al_move')).toBe(false);
    expect(heard.join('\n')).toMatch(/activity log: moved \d+ entries/);
    const read = await new ActivityLogStore(to).query({ tenantId, fromMs: 0, limit: 3 });
    expect(read.entries.map((e) => e.requestId)).toEqual([
      `req-${ENTRIES - 1}`,
      `req-${ENTRIES - 2}`,
      `req-${ENTRIES - 3}`,
    ]);

    // Nothing left to move: nothing happens.
    expect(await moveActivityLog(from, to, () => {})).toBe(false);
  }, 120_000);
});
