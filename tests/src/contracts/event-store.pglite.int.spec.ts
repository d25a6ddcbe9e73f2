import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Sql } from '@svc/domain';
import { PostgresEventStore } from '@svc/deploy';
import { scratchSql } from '../support/engines';
import { eventStoreContract } from './event-store.contract';

eventStoreContract('PGlite (embedded)', async () => {
  const { sql, dispose } = await scratchSql('pglite');
  return Object.assign(await PostgresEventStore.open(sql), { dispose });
});

describe('PGlite stream cache', () => {
  it('a stream read while an append to it commits is not cached without that append', async () => {
    const { sql, dispose } = await scratchSql('pglite');
    // The stream read's answer is held back until the append has committed: the read saw the stream before it.
    let hold: Promise<void> | undefined;
    const held: Sql = {
      ...sql,
      query: async <T>(text: string, params?: unknown[]) => {
        const r = await sql.query<T>(text, params);
        if (hold && /WHERE stream_id = \$1 AND revision/.test(text)) await hold;
        return r;
      },
    };
    const store = await PostgresEventStore.open(held);
    try {
      const ev = () => ({
        id: randomUUID(),
        type: 'NoteAdded',
        data: { n: 1 },
        metadata: {
          tenantId: 't',
          contextId: 'c',
          accountId: null,
          actorKeyId: null,
          userId: null,
          requestId: randomUUID(),
          occurredAt: new Date().toISOString(),
          schemaVersion: 1,
        },
      });
      await store.append('s-1', [ev()], 'no_stream');
      let release!: () => void;
      hold = new Promise((r) => (release = r));
      const read = store.readStream('s-1');
      await new Promise((r) => setTimeout(r, 20)); // the read has run its query
      await store.append('s-1', [ev()], 0);
      release();
      expect(await read).toHaveLength(1); // what it saw
      hold = undefined;
      expect((await store.readStream('s-1')).map((e) => e.revision)).toEqual([0, 1]);
      await store.append('s-1', [ev()], 1); // the stream's revision is known right
      expect((await store.readStream('s-1')).map((e) => e.revision)).toEqual([0, 1, 2]);
    } finally {
      await dispose();
    }
  });
});
