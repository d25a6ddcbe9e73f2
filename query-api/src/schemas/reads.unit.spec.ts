import { describe, expect, it } from 'vitest';
import type { Sql } from '@svc/domain';
import { SchemaReads } from './reads';

/** A schemas read model that counts its reads; `hold` keeps a read in flight. */
function readModel() {
  const state = {
    doc: { typeName: 'Card', fields: [{ fieldId: 'pin', fieldType: 'string' }] } as Record<string, unknown>,
    reads: 0,
    hold: undefined as Promise<void> | undefined,
  };
  const sql = {
    kind: 'postgres',
    async query() {
      state.reads++;
      const doc = state.doc;
      if (state.hold) await state.hold;
      return { rows: [{ doc }] };
    },
  } as unknown as Sql;
  return { state, sql };
}
const sensitive = { typeName: 'Card', fields: [{ fieldId: 'pin', fieldType: 'string', sensitive: true }] };

describe('SchemaReads definitions', () => {
  it('beside a projector: kept until invalidated; concurrent requests share one read', async () => {
    const { state, sql } = readModel();
    const schemas = new SchemaReads(sql, { ttlMs: 60_000 });
    await Promise.all([schemas.definition('s1'), schemas.definition('s1'), schemas.definition('s1')]);
    expect(state.reads).toBe(1);
    state.doc = sensitive;
    expect(await schemas.definition('s1')).not.toEqual(sensitive);
    schemas.invalidate('s1');
    expect(await schemas.definition('s1')).toEqual(sensitive);
    expect(state.reads).toBe(2);
  });

  it('a read in flight when the schema is invalidated is not kept', async () => {
    const { state, sql } = readModel();
    const schemas = new SchemaReads(sql, { ttlMs: 60_000 });
    let release!: () => void;
    state.hold = new Promise((r) => (release = r));
    const pending = schemas.definition('s1');
    state.doc = sensitive;
    schemas.invalidate('s1');
    release();
    state.hold = undefined;
    expect(await pending).not.toEqual(sensitive);
    expect(await schemas.definition('s1')).toEqual(sensitive);
  });

  it(
    "versioned: an entry answers only the read models' version it was read at; without a version, the " + 'database',
    async () => {
      const { state, sql } = readModel();
      const schemas = new SchemaReads(sql, { versioned: true });
      await Promise.all([schemas.definition('s1', 'v1'), schemas.definition('s1', 'v1')]);
      expect(state.reads).toBe(1);
      state.doc = sensitive;
      expect(await schemas.definition('s1', 'v2')).toEqual(sensitive);
      expect(await schemas.definition('s1', 'v2')).toEqual(sensitive);
      expect(state.reads).toBe(2);
      await schemas.definition('s1');
      await schemas.definition('s1');
      expect(state.reads).toBe(4);
    },
  );
});
