import { describe } from 'vitest';
import { PostgresEventStore } from '@svc/command-api';
import { openPostgres } from '@svc/deploy';
import { freshPostgresSchema, serverUrl } from '../support/engines';
import { eventStoreContract } from './event-store.contract';

const url = serverUrl('postgres');
if (!url) describe.skip('event store contract: PostgreSQL (DATABASE_URL not set)', () => {});
else
  eventStoreContract('PostgreSQL', async () => {
    const schema = await freshPostgresSchema(url);
    const sql = await openPostgres(schema.url);
    const store = await PostgresEventStore.open(sql);
    return Object.assign(store, {
      dispose: async () => {
        await sql.close();
        await schema.drop();
      },
    });
  });
