import { describe } from 'vitest';
import { PostgresEventStore } from '@svc/command-api';
import { scratchSql, serverUrl } from '../support/engines';
import { eventStoreContract } from './event-store.contract';

if (!serverUrl('postgres')) describe.skip('event store contract: PostgreSQL (DATABASE_URL not set)', () => {});
else
  eventStoreContract('PostgreSQL', async () => {
    const { sql, dispose } = await scratchSql('postgres');
    return Object.assign(await PostgresEventStore.open(sql), { dispose });
  });
