import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PostgresEventStore } from '@svc/deploy';
import { type NewEvent, WrongExpectedRevisionError } from '@svc/domain';
import { scratchSql, serverUrl } from '../support/engines';
import { eventStoreContract } from './event-store.contract';

if (!serverUrl('postgres')) describe.skip('event store contract: PostgreSQL (DATABASE_URL not set)', () => {});
else
  eventStoreContract('PostgreSQL', async () => {
    const { sql, dispose } = await scratchSql('postgres');
    return Object.assign(await PostgresEventStore.open(sql), { dispose });
  });

/** The server's stream cache may be behind the log (another process appends): a read from it is checked at append. */
if (serverUrl('postgres'))
  describe('PostgreSQL stream cache (readStreamCached)', () => {
    it('a cached read behind the log fails its check at append; the stream is then read from the log', async () => {
      const { sql, dispose } = await scratchSql('postgres');
      try {
        const [a, b] = [await PostgresEventStore.open(sql), await PostgresEventStore.open(sql)];
        const ev = (type: string): NewEvent => ({
          id: randomUUID(),
          type,
          data: {},
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
        await a.append('s-1', [ev('A')], 'no_stream');
        const read = await a.readStreamCached('s-1');
        expect(read.exact).toBe(false);
        expect(read.events.map((e) => e.revision)).toEqual([0]);
        // Another process (b) appends: a's copy is now behind.
        await b.append('s-1', [ev('B')], 0);
        expect((await a.readStreamCached('s-1')).events.length).toBe(1);
        await expect(
          a.appendMulti([
            { streamId: 'other', events: [ev('C')], expectedRevision: 'no_stream' },
            { streamId: 's-1', events: [], expectedRevision: 0 },
          ]),
        ).rejects.toBeInstanceOf(WrongExpectedRevisionError);
        expect(await a.readStream('other')).toEqual([]);
        expect((await a.readStreamCached('s-1')).events.map((e) => e.revision)).toEqual([0, 1]);
        // A check that holds writes the other streams and nothing to the checked one.
        await a.appendMulti([
          { streamId: 'other', events: [ev('C')], expectedRevision: 'no_stream' },
          { streamId: 's-1', events: [], expectedRevision: 1 },
        ]);
        expect((await a.readStream('other')).length).toBe(1);
        expect((await a.readStream('s-1')).length).toBe(2);
        // This process's own append keeps its copy current.
        await a.append('s-1', [ev('D')], 1);
        expect((await a.readStreamCached('s-1')).events.map((e) => e.revision)).toEqual([0, 1, 2]);
        await a.close();
        await b.close();
      } finally {
        await dispose();
      }
    });
  });
