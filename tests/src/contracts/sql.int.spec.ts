import { describe } from 'vitest';
import { scratchSql, serverUrl } from '../support/engines';
import { sqlContract } from './sql.contract';

const open = (kind: Parameters<typeof scratchSql>[0]) => async () => {
  const { sql, dispose } = await scratchSql(kind);
  return Object.assign(sql, { dispose });
};

sqlContract('PGlite in the service thread', open('pglite'));
sqlContract('PGlite in its own thread (the embedded search database)', open('pglite-thread'));
if (!serverUrl('postgres')) describe.skip('SQL port contract: PostgreSQL server (DATABASE_URL not set)', () => {});
else sqlContract('PostgreSQL server', open('postgres'));
