import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/engines';
import { eventually, startService, type Api, type TestService } from '../support/service';

/**
 * The embedded default keeps the search side's tables in a database of their own (DATA_DIR/pg-search, in its
 * own thread). A data directory written with them in the main database (SEARCH_DB=main, or a build before the
 * split) is moved at the next start: search answers the same at once, nothing is indexed or embedded again,
 * the main database no longer holds the tables, and indexing carries on from where it was.
 */
const WORDS = ['volcano', 'glacier', 'harbour', 'lantern', 'orchard', 'quarry'];

async function search(api: Api, token: string, query: string, mode: 'TEXT' | 'SEMANTIC' | 'HYBRID') {
  const r = await api.post('/v1/search', token, { query, mode, limit: 20 });
  expect(r.status, r.text).toBe(200);
  return r.body.results.map(
    (x: { recordId?: string; documentId?: string; score: number }) =>
      `${x.recordId ?? x.documentId}:${x.score.toFixed(6)}`,
  ) as string[];
}

/** Request ids of the tenant's activity log entries (newest first, at most 500). */
async function logged(api: Api, token: string): Promise<string[]> {
  const r = await api.get('/v1/admin/logs?limit=500', token);
  expect(r.status, r.text).toBe(200);
  return r.body.entries.map((e: { requestId: string }) => e.requestId);
}
const hasTable = async (svc: TestService, db: 'sql' | 'searchSql', table: string) =>
  (
    await svc.service[db].query<{ n: number }>(
      `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema() AND ` +
        `table_name = $1`,
      [table],
    )
  ).rows[0].n > 0;

const tablesIn = async (svc: TestService, db: 'sql' | 'searchSql') =>
  (
    await svc.service[db].query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND ` +
        `(table_name LIKE 'si\\_%' OR table_name LIKE 'ti\\_%') ORDER BY 1`,
    )
  ).rows.map((r) => r.table_name);

describe('search tables moved from the main embedded database to their own', () => {
  const dir = tempDir('svc-e2e-move-');
  let svc: TestService | undefined;
  afterAll(async () => {
    await svc?.stop();
    dir.remove();
  });

  it('search answers the same right after the move, nothing is indexed again, and new writes are indexed', async () => {
    svc = await startService({ dataDir: dir.dir, env: { SEARCH_DB: 'main' } });
    const root = svc.bootstrap.tenants.live.rootKey;
    expect(svc.service.searchSql).toBe(svc.service.sql);
    const schema = await svc.api.post('/v1/schemas', root, {
      typeName: `Place_${randomUUID().slice(0, 6)}`,
      displayName: 'Places',
      allowedSurfaces: ['record'],
      indexMode: 'HYBRID',
      fields: [
        { fieldId: 'title', fieldType: 'string', searchable: true },
        { fieldId: 'body', fieldType: 'string', searchable: true },
      ],
    });
    expect(schema.status, schema.text).toBe(201);
    const typeName = schema.body.typeName as string;
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const w = WORDS[i % WORDS.length];
      const r = await svc.api.post('/v1/records', root, {
        typeName,
        payload: {
          title: `The ${w} ${i}`,
          body: `Visitors describe the ${w} near the ${WORDS[(i + 2) % WORDS.length]}, entry ${i}.`,
        },
      });
      expect(r.status, r.text).toBe(201);
      ids.push(r.body.id);
    }
    const indexed = async () => {
      for (const id of ids)
        if ((await svc!.api.get(`/v1/records/${id}`, root)).body.indexStatus !== 'INDEXED') return false;
      return true;
    };
    await eventually(indexed, 120_000, 100);
    const queries = [
      ['volcano', 'TEXT'],
      ['a lantern by the harbour', 'SEMANTIC'],
      ['glacier orchard', 'HYBRID'],
    ] as const;
    const before = [];
    for (const [q, mode] of queries) before.push(await search(svc.api, root, q, mode));
    expect(before[0].length).toBeGreaterThan(0);
    const checkpoint = svc.service.searchIndexer!.stats.position;
    expect(await tablesIn(svc, 'sql')).toContain('ti_passages');
    // The activity log is in the main database too (it lives with the search side's tables).
    const writes = new Set(
      await eventually(async () => {
        const ids = await logged(svc!.api, root);
        return ids.length >= 12 ? ids : null;
      }),
    );
    expect(await hasTable(svc, 'sql', 'al_entries')).toBe(true);
    await svc.service.close();

    // The default layout: the tables move at start.
    const heard: string[] = [];
    svc = await startService({ dataDir: dir.dir, log: (m) => heard.push(m) });
    expect(svc.service.searchSql).not.toBe(svc.service.sql);
    expect(
      heard.some((m) => /search index: moved \d+ rows to its own embedded database/.test(m)),
      heard.join('\n'),
    ).toBe(true);
    expect(svc.service.searchIndexer!.stats.position).toBeGreaterThanOrEqual(checkpoint);
    expect(svc.service.searchIndexer!.stats.vectorJobs, 'no passage is embedded again').toBe(0);
    const after = [];
    for (const [q, mode] of queries) after.push(await search(svc.api, root, q, mode));
    expect(after).toEqual(before);
    expect(await tablesIn(svc, 'sql'), 'the main database no longer holds search tables').toEqual([]);
    expect(await tablesIn(svc, 'searchSql')).toEqual(expect.arrayContaining(['si_items', 'ti_passages']));
    // The SQL search's statistics are not kept where the in-memory index answers every query.
    expect(await tablesIn(svc, 'searchSql')).not.toContain('ti_terms');
    // The activity log moved with them: every entry written before is listed, once, and new requests are recorded
    // there.
    expect(
      heard.some((m) => /activity log: moved \d+ entries to the second embedded database/.test(m)),
      heard.join('\n'),
    ).toBe(true);
    const moved = await logged(svc.api, root);
    expect(moved.filter((id) => writes.has(id)).sort()).toEqual([...writes].sort());
    expect(await hasTable(svc, 'sql', 'al_entries'), 'the main database no longer holds the activity log').toBe(false);
    expect(await hasTable(svc, 'searchSql', 'al_move'), 'the move left no progress behind').toBe(false);
    expect(new Set(moved).size, 'no entry twice').toBe(moved.length);
    await eventually(async () => (await logged(svc!.api, root)).length > moved.length);

    // Indexing carries on in the moved tables.
    const r = await svc.api.post('/v1/records', root, {
      typeName,
      payload: { title: 'A quarry of zircon', body: 'zircon crystals in the quarry' },
    });
    expect(r.status, r.text).toBe(201);
    ids.push(r.body.id);
    await eventually(indexed, 120_000, 100);
    expect((await search(svc.api, root, 'zircon', 'TEXT')).map((x) => x.split(':')[0])).toEqual([r.body.id]);

    // A second start moves nothing and answers as before it.
    const volcano = await search(svc.api, root, 'volcano', 'TEXT');
    await svc.service.close();
    heard.length = 0;
    svc = await startService({ dataDir: dir.dir, log: (m) => heard.push(m) });
    expect(heard.some((m) => m.includes('moved'))).toBe(false);
    expect(await search(svc.api, root, 'volcano', 'TEXT')).toEqual(volcano);
  }, 300_000);

  it('/readyz answers 503 naming the search database when its thread is gone', async () => {
    expect((await svc!.api.get('/readyz')).status).toBe(200);
    await svc!.service.searchSql.close();
    const r = await svc!.api.get('/readyz');
    expect(r.status, r.text).toBe(503);
    expect(r.text).toMatch(/search database is not reachable/);
  });
});
