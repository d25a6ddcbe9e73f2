import { openPglite } from '@svc/deploy';
import { MemoryTextIndex, PgTextIndex } from '@svc/search';
import { tempDir } from '../support/engines';
import { textIndexContract } from './text-index.contract';

// The embedded default as the service runs it (SERVICE_ROLE=all): PostgreSQL FTS on PGlite as the store (kept for
// memory only: no SQL search statistics), queries from memory.
textIndexContract('in-memory BM25 over PostgreSQL full-text search (embedded, role all)', async () => {
  const tmp = tempDir();
  const sql = await openPglite(tmp.dir);
  return Object.assign(new MemoryTextIndex(new PgTextIndex(sql, { sqlSearch: false })), {
    dispose: async () => {
      await sql.close();
      tmp.remove();
    },
  });
});
