import { INSERT_PASSAGES_ONLY, PgTextIndex } from '@svc/search';
import { describe, expect, it } from 'vitest';
import { scratchSql, serverUrl } from '../support/engines';
import { textIndexContract } from './text-index.contract';

const open = (kind: Parameters<typeof scratchSql>[0]) => async () => {
  const { sql, dispose } = await scratchSql(kind);
  return Object.assign(new PgTextIndex(sql), { dispose });
};

textIndexContract('PostgreSQL full-text search on PGlite (embedded)', open('pglite'));
textIndexContract(
  'PostgreSQL full-text search on PGlite in its own thread (the embedded default)',
  open('pglite-thread'),
);
if (!serverUrl('postgres'))
  describe.skip('text index contract: PostgreSQL full-text search on a server (DATABASE_URL not set)', () => {});
else textIndexContract('PostgreSQL full-text search on a server', open('postgres'));

// A regression: the planner pulled the insert's lateral subquery up, so to_tsvector ran for the tsv column and again
// for the passage length; every searchable write analysed its text twice (a third more of the search thread's CPU).
describe('passage insert', () => {
  it('analyses each passage text once', async () => {
    const { sql, dispose } = await scratchSql('pglite');
    try {
      const idx = new PgTextIndex(sql, { sqlSearch: false });
      await idx.init();
      const one = (v: unknown) => [v];
      const params = [
        one('i'),
        one(0),
        one('t'),
        one('c'),
        one('record'),
        one('note'),
        one(null),
        one(null),
        one('[]'),
        one('{}'),
        one(new Date().toISOString()),
        one('some words here'),
        one('some words here'),
      ];
      const { rows } = await sql.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (VERBOSE, COSTS OFF) ${INSERT_PASSAGES_ONLY}`,
        params,
      );
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      // The length's subplan unnests the tsvector computed once (`unnest((to_tsvector(…)))`, a reference in
      // parentheses), not a second to_tsvector of the text (`unnest(to_tsvector(…))`).
      expect(plan).toMatch(/unnest\(\(to_tsvector\(/);
      expect(plan).not.toMatch(/unnest\(to_tsvector\(/);
    } finally {
      await dispose();
    }
  });
});
