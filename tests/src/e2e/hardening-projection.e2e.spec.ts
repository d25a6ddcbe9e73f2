import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eventually,
  OPERATOR_TOKEN,
  startService,
  type Api,
  type Bootstrap,
  type TestService,
} from '../support/service';

/**
 * Hardening, finding 1: a write no projection can apply must never wedge the
 * read models for everyone. (a) long lookup values are keyed by prefix + hash,
 * so they index and exact lookups find them; (b) an event a projection still
 * cannot apply is quarantined with its stream (recorded, /readyz not ready,
 * /metrics counts it), the log moves on for every other stream, and the
 * operator API retries or skips it.
 */
let svc: TestService;
let api: Api;
let a: Bootstrap;
let b: Bootstrap;

const enterprise = () =>
  api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 });
const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;
/** Random text that no compression shrinks: the shape of the probe's poison values. */
const noise = (bytes: number) => randomBytes(bytes).toString('base64').slice(0, bytes);

beforeAll(async () => {
  svc = await startService();
  api = svc.api;
  a = await enterprise();
  b = await enterprise();
});

afterAll(async () => {
  await svc?.stop();
});

async function schemaWithLookups(token: string) {
  const r = await api.post('/v1/schemas', token, {
    typeName: uniq('Poison'),
    displayName: 'Lookup keys',
    allowedSurfaces: ['record'],
    fields: [
      { fieldId: 'code', fieldType: 'string' },
      { fieldId: 'name', fieldType: 'string' },
      { fieldId: 'x', fieldType: 'string' },
      { fieldId: 'y', fieldType: 'string' },
      { fieldId: 'z', fieldType: 'string' },
    ],
    lookupFields: ['name', { fieldName: 'code', unique: true }, { fieldNames: ['x', 'y', 'z'] }],
    sortBy: 'name',
  });
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; typeName: string };
}

async function bystanderWorks() {
  const root = b.tenants.live.rootKey;
  const s = await schemaWithLookups(root);
  const t0 = Date.now();
  const c = await api.post('/v1/records', root, { typeName: s.typeName, payload: { name: 'bob', code: 'b-1' } });
  expect(c.status, c.text).toBe(201);
  expect(Date.now() - t0).toBeLessThan(5_000);
  const g = await api.get(`/v1/records/${c.body.id}`, root);
  expect(g.status, g.text).toBe(200);
  // A freshly minted credential works at once (the credentials read model is not stuck).
  const m = await api.post('/v1/tokens', root, { scope: { allowedActions: ['records:r'] } });
  expect(m.status, m.text).toBe(201);
  expect((await api.get(`/v1/records/${c.body.id}`, m.body.token)).status).toBe(200);
}

describe('long lookup values (single, unique, composite parts, sortBy)', () => {
  it('a 10 KB random value in every lookup field is stored, found by exact lookup, and wedges nothing', async () => {
    const root = a.tenants.live.rootKey;
    const s = await schemaWithLookups(root);
    const payload = { name: noise(10_000), code: noise(10_000), x: noise(4_000), y: noise(4_000), z: noise(4_000) };
    const t0 = Date.now();
    const c = await api.post('/v1/records', root, { typeName: s.typeName, payload });
    expect(c.status, c.text).toBe(201);
    expect(Date.now() - t0).toBeLessThan(5_000);
    const got = await api.get(`/v1/records/${c.body.id}`, root);
    expect(got.status).toBe(200);
    expect(got.body.payload.name).toBe(payload.name);

    const byName = await api.post('/v1/records/lookup', root, { type: s.typeName, field: 'name', value: payload.name });
    expect(byName.status, byName.text).toBe(200);
    expect(byName.body.data.map((r: { id: string }) => r.id)).toEqual([c.body.id]);
    const byCode = await api.post('/v1/records/lookup', root, { type: s.typeName, field: 'code', value: payload.code });
    expect(byCode.body.data.map((r: { id: string }) => r.id)).toEqual([c.body.id]);
    const byTuple = await api.post('/v1/records/lookup', root, {
      type: s.typeName,
      field: 'x,y,z',
      values: [payload.x, payload.y, payload.z],
    });
    expect(byTuple.status, byTuple.text).toBe(200);
    expect(byTuple.body.data.map((r: { id: string }) => r.id)).toEqual([c.body.id]);
    // A value differing only after the kept prefix is a different key.
    const near = await api.post('/v1/records/lookup', root, {
      type: s.typeName,
      field: 'name',
      value: payload.name.slice(0, -1) + '!',
    });
    expect(near.body.data).toEqual([]);
    // Unique still holds for the long value.
    const dup = await api.post('/v1/records', root, {
      typeName: s.typeName,
      payload: { name: 'n', code: payload.code },
    });
    expect(dup.status).toBe(409);

    await bystanderWorks();
    const ready = await api.get('/readyz');
    expect(ready.status, ready.text).toBe(200);
  });
});

describe('an event a projection cannot apply', () => {
  it('is quarantined with its stream; other tenants go on; /readyz, /metrics tell; the operator skips it', async () => {
    const root = a.tenants.live.rootKey;
    const s = await schemaWithLookups(root);
    const c = await api.post('/v1/records', root, { typeName: s.typeName, payload: { name: 'victim' } });
    expect(c.status).toBe(201);
    const streamId = `record-${c.body.id}`;
    // A corrupt event (schemaVersion beyond int4) written past the command side, as an old build or a bad import could.
    const [last] = await svc.service.store.readStream(streamId, { direction: 'backwards', maxCount: 1 });
    const poison = {
      id: randomUUID(),
      type: 'RecordUpdated',
      data: { ...(last.data as object), schemaVersion: 1e12, payload: { name: 'poison' } },
      metadata: { ...last.metadata, requestId: randomUUID(), occurredAt: new Date().toISOString() },
    };
    await svc.service.store.append(streamId, [poison], last.revision);
    // A later event of the same stream waits behind it (parked), so the stream never applies out of order.
    const after = await api.patch(`/v1/records/${c.body.id}`, root, { payload: { name: 'after' } });
    expect([200, 409]).toContain(after.status);

    // Everyone else is served.
    await bystanderWorks();

    const ready = await api.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.text).toMatch(/quarantin/i);
    const metrics = await api.get('/metrics');
    expect(metrics.text).toMatch(/svc_projection_quarantined_events\{[^}]*subscriber="read-models"[^}]*\} [1-9]/);

    const list = await api.get('/operator/projections/quarantine', OPERATOR_TOKEN);
    expect(list.status, list.text).toBe(200);
    const entry = list.body.data.find((e: { streamId: string }) => e.streamId === streamId);
    expect(entry).toMatchObject({ subscriber: 'read-models', streamId, eventType: 'RecordUpdated' });
    expect(entry.error).toMatch(/range|integer/i);

    // Retrying a deterministic failure fails again and keeps it quarantined.
    const retry = await api.post('/operator/projections/quarantine/retry', OPERATOR_TOKEN, { streamId });
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body.remaining).toBeGreaterThan(0);

    const skip = await api.post('/operator/projections/quarantine/skip', OPERATOR_TOKEN, { position: entry.position });
    expect(skip.status, skip.text).toBe(200);
    expect(skip.body.remaining).toBe(0);
    const healed = await api.get('/readyz');
    expect(healed.status, healed.text).toBe(200);
    // The parked PATCH behind it was applied once the stream was released.
    if (after.status === 200) expect((await api.get(`/v1/records/${c.body.id}`, root)).body.payload.name).toBe('after');
  });

  it(
    'an index outcome that reaches the read model while its record is quarantined is applied again when the ' +
      'record is released: INDEXED, not PENDING_INDEX for ever',
    async () => {
      const root = a.tenants.live.rootKey;
      const schema = await api.post('/v1/schemas', root, {
        typeName: uniq('Held'),
        displayName: 'Held',
        allowedSurfaces: ['record'],
        indexMode: 'TEXT',
        fields: [{ fieldId: 'name', fieldType: 'string', searchable: true }],
      });
      expect(schema.status, schema.text).toBe(201);
      const c = await api.post('/v1/records', root, { typeName: schema.body.typeName, payload: { name: 'victim' } });
      expect(c.status, c.text).toBe(201);
      const streamId = `record-${c.body.id}`;
      const [last] = await svc.service.store.readStream(streamId, { direction: 'backwards', maxCount: 1 });
      await svc.service.store.append(
        streamId,
        [
          {
            id: randomUUID(),
            type: 'RecordUpdated',
            data: { ...(last.data as object), schemaVersion: 1e12, payload: { name: 'poison' } },
            metadata: { ...last.metadata, requestId: randomUUID(), occurredAt: new Date().toISOString() },
          },
        ],
        last.revision,
      );
      const word = `zq${randomUUID().replace(/-/g, '').slice(0, 12)}`;
      const after = await api.patch(`/v1/records/${c.body.id}`, root, { payload: { name: `after ${word}` } });
      expect([200, 409]).toContain(after.status);
      // The search side indexes the PATCH (it does not wait for the read models); its outcome event reaches the read
      // model while the record's stream is held, and waits there with the record's own events.
      const parkedOutcome = () =>
        eventually(
          async () => {
            const list = await api.get('/operator/projections/quarantine', OPERATOR_TOKEN);
            return (
              list.body.data.find(
                (e: { streamId: string; eventType: string }) =>
                  e.streamId === streamId && e.eventType === 'RecordsIndexed',
              ) ?? null
            );
          },
          30_000,
          100,
        );
      expect(await parkedOutcome()).toMatchObject({ subscriber: 'read-models' });
      const poisoned = (await api.get('/operator/projections/quarantine', OPERATOR_TOKEN)).body.data.find(
        (e: { streamId: string; eventType: string; parkedBehind: number | null }) =>
          e.streamId === streamId && e.eventType === 'RecordUpdated' && e.parkedBehind === null,
      );
      const skip = await api.post('/operator/projections/quarantine/skip', OPERATOR_TOKEN, {
        position: poisoned.position,
      });
      expect(skip.status, skip.text).toBe(200);
      expect(skip.body.remaining).toBe(0);
      const g = await api.get(`/v1/records/${c.body.id}`, root);
      expect(g.body.payload.name).toBe(`after ${word}`);
      // The outcome parked may be the create's, the PATCH's arriving after the release (a loaded machine: CI saw
      // PENDING_INDEX right after the skip); either way the record ends INDEXED, which it never did when a parked
      // outcome was dropped.
      expect(
        await eventually(async () => {
          const r = await api.get(`/v1/records/${c.body.id}`, root);
          return r.body.indexStatus === 'INDEXED' ? r.body.indexStatus : null;
        }, 30_000),
      ).toBe('INDEXED');
    },
  );

  it('the operator API refuses a skip of a position that is not quarantined', async () => {
    const r = await api.post('/operator/projections/quarantine/skip', OPERATOR_TOKEN, { position: 999_999_999 });
    expect(r.status).toBe(404);
  });
});
