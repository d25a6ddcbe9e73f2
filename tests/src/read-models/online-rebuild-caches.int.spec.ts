import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql, SqlQueryable, StoredEvent } from '@svc/domain';
import { openPostgres, PostgresEventStore } from '@svc/deploy';
import { OnlineRebuild, ProjectionRunner, type SqlProjection } from '@svc/projectors';
import { freshPostgresSchema, serverUrl } from '../support/engines';
import { eventMetadata } from '../support/events';

/**
 * An online rebuild and this process's read-model caches. The build applies the events that arrive while the live
 * projector is paused, so the live projector's commit hooks never hear of them and the caches keep the rows from
 * before. The switch releases the writes waiting on those events: a client reading its write right then must find
 * the caches already dropped (the regression: they were dropped only after the live projector resumed and had
 * released the waiting writes, which then read a cached row from before their write).
 */
const skip = !serverUrl('postgres') ? 'DATABASE_URL not set (the online rebuild needs PostgreSQL)' : undefined;

const meta = eventMetadata();

/** A read model of notes (id -> body) with a cache in front, invalidated by the projection's commit hook. */
function notes(cache?: Map<string, string>): SqlProjection {
  return {
    name: 'notes',
    ddl: 'CREATE TABLE IF NOT EXISTS rm_notes (id text PRIMARY KEY, body text NOT NULL)',
    tables: ['rm_notes'],
    async apply(q: SqlQueryable, e: StoredEvent) {
      const d = e.data as unknown as { id: string; body: string };
      await q.query(
        'INSERT INTO rm_notes (id, body) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body',
        [d.id, d.body],
      );
    },
    afterCommit(events) {
      for (const e of events) cache?.delete((e.data as unknown as { id: string }).id);
    },
  };
}

describe.skipIf(!!skip)('online rebuild: the caches are dropped before the switch releases a waiting write', () => {
  let schema: Awaited<ReturnType<typeof freshPostgresSchema>>;
  let sql: Sql;
  let store: PostgresEventStore;
  const opened: Sql[] = [];

  beforeAll(async () => {
    schema = await freshPostgresSchema(serverUrl('postgres')!);
    sql = await openPostgres(schema.url, 4);
    store = await PostgresEventStore.open(sql);
  });
  afterAll(async () => {
    for (const s of opened) await s.close().catch(() => {});
    await store?.close();
    await sql?.close();
    await schema?.drop();
  });

  const write = (id: string, body: string) =>
    store.append(`note-${id}`, [{ id: randomUUID(), type: 'NoteWritten', data: { id, body }, metadata: meta }], 'any');

  it('a write applied by the build during the pause reads back as written, not from the cache', async () => {
    const cache = new Map<string, string>();
    const read = async (id: string) => {
      const hit = cache.get(id);
      if (hit !== undefined) return hit;
      const { rows } = await sql.query<{ body: string }>('SELECT body FROM rm_notes WHERE id = $1', [id]);
      cache.set(id, rows[0].body);
      return rows[0].body;
    };
    const live = new ProjectionRunner('notes', sql, store, [notes(cache)]);
    await live.init();
    await write('n1', 'first');
    await live.replayTo(await store.headPosition());
    expect(await read('n1')).toBe('first');

    // While the live projector is paused, a client's write lands and waits for the read models (its barrier).
    let readBack: Promise<string> | undefined;
    const paused = live.paused.bind(live);
    live.paused = (fn) =>
      paused(async () => {
        const { position } = await write('n1', 'second');
        readBack = live.waitFor(position, 30_000).then(() => read('n1'));
        return fn();
      });
    const rebuild = new OnlineRebuild({
      id: 'r1',
      live,
      sql,
      store,
      projections: [notes()],
      openShadow: async (path) => {
        const u = new URL(schema.url);
        u.searchParams.set('options', `-c search_path=${path.join(',')}`);
        const s = await openPostgres(u.toString(), 2);
        opened.push(s);
        return s;
      },
      onSwitched: () => cache.clear(),
      switchLag: 1000,
    });
    const done = await rebuild.run();
    expect(done.state, done.error ?? '').toBe('done');
    expect(readBack).toBeDefined();
    expect(await readBack).toBe('second');
  });
});
