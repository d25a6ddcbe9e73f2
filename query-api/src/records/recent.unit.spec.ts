import { describe, expect, it } from 'vitest';
import { EVENT_SCHEMA_VERSION } from '@svc/contracts';
import type { StoredEvent } from '@svc/domain';
import { asJsonb, RecentRecords } from './recent';

let position = 0;
const metadata = {
  tenantId: 't1',
  contextId: 'c1',
  accountId: 'a1',
  actorKeyId: 'k1',
  userId: null,
  requestId: 'r1',
  occurredAt: '2026-12-07T01:00:00.000Z',
  schemaVersion: EVENT_SCHEMA_VERSION,
};
const event = (type: string, data: Record<string, unknown>, revision = 0) =>
  ({ id: `e${++position}`, type, data, metadata, streamId: 's', revision, position }) as unknown as StoredEvent;
const created = (recordId: string, payload: Record<string, unknown> = { b: 1, a: 2 }) =>
  event('RecordCreated', {
    recordId,
    schemaId: 'schema-1',
    schemaVersion: 1,
    typeName: 'note',
    payload,
    status: 'ACTIVE',
    folderId: null,
    userId: null,
    scopes: [],
    externalId: null,
    indexMode: 'NONE',
  }) as StoredEvent<'RecordCreated'>;

describe('RecentRecords: the rows of records created lately, until they change', () => {
  it('keeps a new record as the read model holds it (version 1, payload in jsonb key order)', () => {
    const recent = new RecentRecords();
    recent.keep([created('r1', { zeta: 1, a: { y: 1, x: 2 } })]);
    const row = recent.row('r1')!;
    expect(row).toMatchObject({ id: 'r1', version: 1, createdAt: metadata.occurredAt, updatedAt: metadata.occurredAt });
    expect(JSON.stringify(row.payload)).toBe('{"a":{"x":2,"y":1},"zeta":1}');
    expect(row.indexStatus).toBeNull();
    expect(recent.row('other')).toBeUndefined();
  });

  it('does not keep a payload stored out of line (memory stays bounded)', () => {
    const recent = new RecentRecords();
    recent.keep([created('big', { body: 'x'.repeat(5000) }), created('small')]);
    expect(recent.row('big')).toBeUndefined();
    expect(recent.row('small')).toBeDefined();
  });

  it('forgets a record the projector reports changed, and everything on clear', () => {
    const recent = new RecentRecords();
    recent.keep([created('r1'), created('r2')]);
    recent.invalidate(['r1']);
    expect(recent.row('r1')).toBeUndefined();
    expect(recent.row('r2')).toBeDefined();
    recent.clear();
    expect(recent.row('r2')).toBeUndefined();
  });

  it('holds at most its bound, dropping the oldest first', () => {
    const recent = new RecentRecords(2);
    recent.keep([created('r1')]);
    recent.keep([created('r2')]);
    recent.keep([created('r3')]);
    expect([recent.row('r1'), recent.row('r2'), recent.row('r3')].map((r) => r?.id)).toEqual([undefined, 'r2', 'r3']);
  });

  it('asJsonb: keys shortest first, then by UTF-8 bytes; arrays keep order; -0 is 0; __proto__ stays a key', () => {
    expect(JSON.stringify(asJsonb({ bb: 1, a: [{ d: 1, c: 2 }], é: 3, z: -0 }))).toBe(
      '{"a":[{"c":2,"d":1}],"z":0,"bb":1,"é":3}',
    );
    expect(JSON.stringify(asJsonb(JSON.parse('{"__proto__":{"x":1},"a":2}')))).toBe('{"a":2,"__proto__":{"x":1}}');
  });
});
