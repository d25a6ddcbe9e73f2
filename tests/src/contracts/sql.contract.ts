import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sql, sqlBatch } from '@svc/domain';

/**
 * The SQL port (domain/src/ports/sql.ts) as its users rely on it: values of every type they store come back
 * as stored, a database error keeps its SQLSTATE code, a transaction commits or rolls back as a whole, and a
 * statement sent outside a transaction never runs inside one that is open.
 */
export function sqlContract(name: string, open: () => Promise<Sql & { dispose: () => Promise<void> }>) {
  describe(`SQL port contract: ${name}`, () => {
    let sql: Sql & { dispose: () => Promise<void> };
    beforeAll(async () => {
      sql = await open();
      await sql.exec(
        `DROP TABLE IF EXISTS sc_items; CREATE TABLE sc_items (id text PRIMARY KEY, n bigint, at ` +
          `timestamptz, doc jsonb, tags text[], tsv tsvector)`,
      );
    });
    afterAll(async () => sql?.dispose());

    it('values come back as stored: text, bigint, timestamptz, jsonb, arrays, tsvector', async () => {
      const at = new Date('2026-11-27T10:00:00.123Z');
      await sql.query(`INSERT INTO sc_items VALUES ($1, $2, $3, $4, $5, to_tsvector('english', $6))`, [
        'a',
        42,
        at,
        JSON.stringify({ k: [1, 'x'] }),
        ['p', 'q'],
        'Running dogs',
      ]);
      const { rows } = await sql.query<{
        id: string;
        n: number | bigint;
        at: Date;
        doc: unknown;
        tags: string[];
        tsv: string;
      }>('SELECT * FROM sc_items WHERE id = $1', ['a']);
      expect(rows).toHaveLength(1);
      expect(Number(rows[0].n)).toBe(42);
      expect(new Date(rows[0].at).toISOString()).toBe(at.toISOString());
      expect(rows[0].doc).toEqual({ k: [1, 'x'] });
      expect(rows[0].tags).toEqual(['p', 'q']);
      expect(rows[0].tsv).toBe("'dog':2 'run':1");
    });

    it(
      'parameters of every shape the service sends arrive intact: arrays with quotes, commas, braces, ' +
        'backslashes and nulls, objects as JSON, booleans, unicode, empty arrays',
      async () => {
        const texts = ['plain', 'a "quoted", {braced} \\ back\\slash', null, 'ünïcödé ✓ 𝄞', '', 'NULL'];
        const { rows } = await sql.query<{ t: string | null; n: number; b: boolean; j: unknown }>(
          `SELECT t, n::int AS n, b, j FROM unnest($1::text[], $2::bigint[], $3::boolean[], $4::jsonb[]) ` +
            `WITH ORDINALITY AS x(t, n, b, j, i) ORDER BY i`,
          [
            texts,
            [1, 2, 3, 4, 5, 6],
            [true, false, true, false, true, false],
            texts.map((t, i) => JSON.stringify({ i, t, nested: [t] })),
          ],
        );
        expect(rows.map((r) => r.t)).toEqual(texts);
        expect(rows.map((r) => r.n)).toEqual([1, 2, 3, 4, 5, 6]);
        expect(rows.map((r) => r.b)).toEqual([true, false, true, false, true, false]);
        expect(rows.map((r) => r.j)).toEqual(texts.map((t, i) => ({ i, t, nested: [t] })));
        const obj = await sql.query<{ doc: unknown; flag: boolean; none: string[] }>(
          `SELECT $1::jsonb AS doc, $2::boolean AS flag, $3::text[] AS none`,
          [{ a: [1, 'two', null], b: { c: 'é' } }, false, []],
        );
        expect(obj.rows).toEqual([{ doc: { a: [1, 'two', null], b: { c: 'é' } }, flag: false, none: [] }]);
        const nul = await sql.query(`SELECT $1::text AS t`, ['before\u0000after']).catch((x) => x);
        expect(nul).toBeInstanceOf(Error);
        expect((await sql.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      },
    );

    it('a database error keeps its SQLSTATE code and message; the connection stays usable', async () => {
      await sql.query(`INSERT INTO sc_items (id) VALUES ('dup')`);
      const e = await sql.query(`INSERT INTO sc_items (id) VALUES ('dup')`).catch((x) => x);
      expect(e).toBeInstanceOf(Error);
      expect(e.code).toBe('23505');
      expect(String(e.message)).toMatch(/duplicate key/);
      expect((await sql.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    });

    it('a transaction that throws leaves nothing; one that returns commits everything and its value', async () => {
      await expect(
        sql.tx(async (q) => {
          await q.query(`INSERT INTO sc_items (id) VALUES ('t1')`);
          throw new Error('changed my mind');
        }),
      ).rejects.toThrow('changed my mind');
      expect((await sql.query(`SELECT id FROM sc_items WHERE id = 't1'`)).rows).toEqual([]);
      const out = await sql.tx(async (q) => {
        await q.query(`INSERT INTO sc_items (id) VALUES ('t2')`);
        await q.exec(`INSERT INTO sc_items (id) VALUES ('t3'); INSERT INTO sc_items (id) VALUES ('t4')`);
        return 'done';
      });
      expect(out).toBe('done');
      expect(
        (await sql.query(`SELECT id FROM sc_items WHERE id IN ('t2', 't3', 't4') ORDER BY id`)).rows.map((r) => r.id),
      ).toEqual(['t2', 't3', 't4']);
    });

    it('a statement sent while a transaction is open is not part of it (the rollback does not undo it)', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let entered!: () => void;
      const inside = new Promise<void>((r) => (entered = r));
      const tx = sql
        .tx(async (q) => {
          await q.query(`INSERT INTO sc_items (id) VALUES ('in-tx')`);
          entered();
          await gate;
          throw new Error('rolled back');
        })
        .catch((e) => e);
      await inside;
      const outside = sql.query(`INSERT INTO sc_items (id) VALUES ('outside')`);
      release();
      expect(await tx).toBeInstanceOf(Error);
      await outside;
      expect(
        (await sql.query(`SELECT id FROM sc_items WHERE id IN ('in-tx', 'outside') ORDER BY id`)).rows.map((r) => r.id),
      ).toEqual(['outside']);
    });

    it(
      'a batch runs its statements in order in one transaction: their rows come back in order; one failing ' +
        'takes all back',
      async () => {
        const rows = await sqlBatch(sql, [
          { text: `INSERT INTO sc_items (id, n) VALUES ('b1', 1), ('b2', 2)` },
          { text: `UPDATE sc_items SET n = n * 10 WHERE id = ANY($1::text[]) RETURNING id, n`, params: [['b1', 'b2']] },
          { text: `SELECT count(*)::int AS c FROM sc_items WHERE id LIKE 'b%'` },
        ]);
        expect(rows[1].map((r) => Number((r as { n: number }).n)).sort()).toEqual([10, 20]);
        expect(rows[2]).toEqual([{ c: 2 }]);
        const e = await sqlBatch(sql, [
          { text: `INSERT INTO sc_items (id) VALUES ('b3')` },
          { text: `INSERT INTO sc_items (id) VALUES ('b1')` },
        ]).catch((x) => x);
        expect(e.code).toBe('23505');
        expect((await sql.query(`SELECT id FROM sc_items WHERE id = 'b3'`)).rows).toEqual([]);
        expect(await sqlBatch(sql, [])).toEqual([]);
      },
    );

    it('NOTIFY reaches a listener after the commit', async () => {
      const heard: string[] = [];
      const stop = await sql.listen('sc_channel', (p) => heard.push(p));
      await sql.tx(async (q) => {
        await q.query(`SELECT pg_notify('sc_channel', 'hello')`);
      });
      for (let i = 0; i < 50 && !heard.length; i++) await new Promise((r) => setTimeout(r, 20));
      await stop();
      expect(heard).toEqual(['hello']);
    });
  });
}
