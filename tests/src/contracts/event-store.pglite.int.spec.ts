import { PostgresEventStore } from '@svc/command-api';
import { scratchSql } from '../support/engines';
import { eventStoreContract } from './event-store.contract';

eventStoreContract('PGlite (embedded)', async () => {
  const { sql, dispose } = await scratchSql('pglite');
  return Object.assign(await PostgresEventStore.open(sql), { dispose });
});
