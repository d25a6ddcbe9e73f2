import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { openPglite } from './sql';
import { openPgliteThread } from './sql-thread';

/**
 * An empty data directory starts from a copy of an initialised cluster (PGLITE_TEMPLATE_DIR) instead of running
 * initdb: each copy is a database of its own, and a template root that cannot be written changes nothing.
 */
const dir = mkdtempSync(join(tmpdir(), 'svc-pglite-template-'));
const previous = process.env.PGLITE_TEMPLATE_DIR;
afterEach(() => {
  if (previous === undefined) delete process.env.PGLITE_TEMPLATE_DIR;
  else process.env.PGLITE_TEMPLATE_DIR = previous;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const count = async (sql: Awaited<ReturnType<typeof openPglite>>, table: string) =>
  (
    await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name = $1`, [
      table,
    ])
  ).rows[0].n;

describe('PGlite data directories seeded from a template', () => {
  it('makes the template once and gives each empty directory its own copy', async () => {
    process.env.PGLITE_TEMPLATE_DIR = join(dir, 'templates');
    const a = await openPglite(join(dir, 'a'));
    const template = readdirSync(join(dir, 'templates'));
    expect(template).toHaveLength(1);
    expect(existsSync(join(dir, 'templates', template[0], 'PG_VERSION'))).toBe(true);
    await a.exec('CREATE TABLE only_in_a (x int); INSERT INTO only_in_a VALUES (7)');

    const b = await openPglite(join(dir, 'b'));
    const c = await openPgliteThread(join(dir, 'c'));
    expect(await count(b, 'only_in_a')).toBe(0);
    expect(await count(c, 'only_in_a')).toBe(0);
    await b.exec('CREATE TABLE only_in_b (x int)');
    expect(await count(a, 'only_in_b')).toBe(0);
    await Promise.all([a.close(), b.close(), c.close()]);

    // The data stays where it was written, across a restart; the template is untouched.
    const again = await openPglite(join(dir, 'a'));
    expect((await again.query<{ x: number }>('SELECT x FROM only_in_a')).rows).toEqual([{ x: 7 }]);
    await again.close();
    const fromTemplate = await openPglite(join(dir, 'd'));
    expect(await count(fromTemplate, 'only_in_a')).toBe(0);
    await fromTemplate.close();
  });

  it('a template root that cannot be written: the directory is initialised as before', async () => {
    const file = join(dir, 'not-a-directory');
    writeFileSync(file, 'x');
    process.env.PGLITE_TEMPLATE_DIR = join(file, 'templates');
    const db = await openPglite(join(dir, 'e'));
    await db.exec('CREATE TABLE t (x int); INSERT INTO t VALUES (1)');
    expect((await db.query<{ x: number }>('SELECT x FROM t')).rows).toEqual([{ x: 1 }]);
    await db.close();
    expect(existsSync(join(dir, 'e', 'PG_VERSION'))).toBe(true);
  });
});
