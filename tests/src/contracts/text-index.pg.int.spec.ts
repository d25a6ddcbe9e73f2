import { openPglite, openPgliteThread, openPostgres } from '@svc/deploy';
import { PgTextIndex } from '@svc/projectors';
import { describe } from 'vitest';
import { freshPostgresSchema, serverUrl, tempDir } from '../support/engines';
import { textIndexContract } from './text-index.contract';

textIndexContract('PostgreSQL full-text search on PGlite (embedded)', async () => {
  const tmp = tempDir();
  const sql = await openPglite(tmp.dir);
  return Object.assign(new PgTextIndex(sql), {
    dispose: async () => {
      await sql.close();
      tmp.remove();
    },
  });
});

textIndexContract('PostgreSQL full-text search on PGlite in its own thread (the embedded default)', async () => {
  const tmp = tempDir();
  const sql = await openPgliteThread(tmp.dir);
  return Object.assign(new PgTextIndex(sql), {
    dispose: async () => {
      await sql.close();
      tmp.remove();
    },
  });
});

const url = serverUrl('postgres');
if (!url) describe.skip('text index contract: PostgreSQL full-text search on a server (DATABASE_URL not set)', () => {});
else
  textIndexContract('PostgreSQL full-text search on a server', async () => {
    const schema = await freshPostgresSchema(url);
    const sql = await openPostgres(schema.url);
    return Object.assign(new PgTextIndex(sql), {
      dispose: async () => {
        await sql.close();
        await schema.drop();
      },
    });
  });
