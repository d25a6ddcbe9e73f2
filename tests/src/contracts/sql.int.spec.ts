import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { describe, expect, it } from 'vitest';
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

describe.skipIf(process.platform !== 'linux')('the embedded search database thread and the scheduler', () => {
  it('opens its database at the service priority and runs at its niceness (SEARCH_DB_NICE) once open', async () => {
    // Opened at niceness 5 on a busy machine, the database held the service's start up; it lowers its priority once
    // open.
    const tasks = () =>
      new Map(
        readdirSync('/proc/self/task').map((t) => {
          try {
            const stat = readFileSync(`/proc/self/task/${t}/stat`, 'utf8');
            return [t, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])] as const;
          } catch {
            return [t, NaN] as const;
          }
        }),
      );
    const before = new Set(tasks().keys());
    const samples: Array<Map<string, number>> = [];
    let open = true;
    const sampler = (async () => {
      while (open) {
        samples.push(tasks());
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const { sql, dispose } = await scratchSql('pglite-thread').finally(() => (open = false));
    await sampler;
    try {
      const lowered = [...tasks()].filter(([t, nice]) => !before.has(t) && nice === 5).map(([t]) => t);
      expect(lowered).toHaveLength(1); // the database's thread, and only it
      const whileOpening = samples.map((s) => s.get(lowered[0])).filter((n) => n !== undefined);
      expect(whileOpening.length).toBeGreaterThan(3);
      // Open at the service's priority for all but (at most) the last moments before it answered ready.
      expect(whileOpening.filter((n) => n === getPriority()).length).toBeGreaterThan(whileOpening.length / 2);
      expect((await sql.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await dispose();
    }
  }, 60_000);
});
