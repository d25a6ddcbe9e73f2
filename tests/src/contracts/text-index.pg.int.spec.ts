import { PgTextIndex } from '@svc/projectors';
import { describe } from 'vitest';
import { scratchSql, serverUrl } from '../support/engines';
import { textIndexContract } from './text-index.contract';

const open = (kind: Parameters<typeof scratchSql>[0]) => async () => {
  const { sql, dispose } = await scratchSql(kind);
  return Object.assign(new PgTextIndex(sql), { dispose });
};

textIndexContract('PostgreSQL full-text search on PGlite (embedded)', open('pglite'));
textIndexContract('PostgreSQL full-text search on PGlite in its own thread (the embedded default)', open('pglite-thread'));
if (!serverUrl('postgres')) describe.skip('text index contract: PostgreSQL full-text search on a server (DATABASE_URL not set)', () => {});
else textIndexContract('PostgreSQL full-text search on a server', open('postgres'));
