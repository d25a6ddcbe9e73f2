import { PostgresEventStore } from '@svc/command-api';
import { openPglite } from '@svc/deploy';
import { tempDir } from '../support/engines';
import { eventStoreContract } from './event-store.contract';

eventStoreContract('PGlite (embedded)', async () => {
  const tmp = tempDir();
  const sql = await openPglite(tmp.dir);
  const store = await PostgresEventStore.open(sql);
  return Object.assign(store, {
    dispose: async () => {
      await sql.close();
      tmp.remove();
    },
  });
});
