import { describe } from 'vitest';
import { openPglite, openPgliteThread, openPostgres } from '@svc/deploy';
import { freshPostgresSchema, serverUrl, tempDir } from '../support/engines';
import { sqlContract } from './sql.contract';

const embedded = (open: (dir: string) => ReturnType<typeof openPglite>) => async () => {
  const tmp = tempDir();
  const sql = await open(tmp.dir);
  return Object.assign(sql, {
    dispose: async () => {
      await sql.close();
      tmp.remove();
    },
  });
};

sqlContract('PGlite in the service thread', embedded(openPglite));
sqlContract('PGlite in its own thread (the embedded search database)', embedded((dir) => openPgliteThread(dir, { nice: 5 })));

const url = serverUrl('postgres');
if (!url) describe.skip('SQL port contract: PostgreSQL server (DATABASE_URL not set)', () => {});
else
  sqlContract('PostgreSQL server', async () => {
    const schema = await freshPostgresSchema(url);
    const sql = await openPostgres(schema.url);
    return Object.assign(sql, {
      dispose: async () => {
        await sql.close();
        await schema.drop();
      },
    });
  });
