import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openChanges } from '../support/changes';
import { serverUrl } from '../support/engines';
import { Topology } from './topology';

/**
 * The change stream in the split deployment (relay, projector, two query replicas, command; PostgreSQL and Kafka;
 * Elasticsearch when set) behind the shipped router: a query replica has no projector, so it follows the read
 * models' checkpoint row and reads the log by position. A stream read on one replica resumes on the other (through
 * the router, with the first replica stopped) with no gap and no duplicate; record.indexed comes once search
 * finds the record; the router passes the stream through unbuffered.
 */
const brokers = serverUrl('kafka');
const postgres = serverUrl('postgres');

describe.skipIf(!brokers || !postgres)('change stream across query replicas (split roles, through the router)', () => {
  let t: Topology;
  let key: string;
  const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    t = await Topology.start({ kafkaBrokers: brokers!, env: { DEFAULT_PLAN: 'enterprise' } });
    key = t.bootstrap.tenants.live.rootKey;
  }, 240_000);

  afterAll(async () => {
    await t?.stop();
  }, 120_000);

  const schema = async () => {
    const typeName = uniq('Split');
    const r = await t.api.post('/v1/schemas', key, {
      typeName,
      displayName: 'S',
      allowedSurfaces: ['record'],
      fields: [{ fieldId: 'title', fieldType: 'string', searchable: true }],
    });
    expect(r.status, r.text).toBe(201);
    return typeName;
  };
  const record = async (typeName: string, title: string, indexMode = 'NONE') => {
    const r = await t.api.post('/v1/records', key, { typeName, payload: { title }, indexMode });
    expect(r.status, r.text).toBe(201);
    return r.body.id as string;
  };

  it('record.indexed through the router arrives once search finds the record', async () => {
    const type = await schema();
    const word = `zq${randomUUID().replace(/-/g, '').slice(0, 10)}`;
    const s = await openChanges(t.api, key, { query: `types=${type}` });
    expect(s.status).toBe(200);
    const id = await record(type, `about ${word}`, 'TEXT');
    await s.waitUntil((e) => e.event === 'record.indexed' && e.data.entityId === id, 60_000);
    const found = await t.api.post('/v1/search', key, { query: word, mode: 'TEXT' });
    s.close();
    expect(found.status, found.text).toBe(200);
    expect(found.body.results.map((r: any) => r.documentId)).toContain(id);
    expect(s.events.map((e) => e.event)).toEqual(['record.created', 'record.indexed']);
  }, 90_000);

  it('read k of N on query-1; with query-1 stopped, resume via the router on query-2: exactly the rest', async () => {
    const type = await schema();
    const N = 30;
    const k = 11;
    // The replica's position before the writes: its stream from the present, then the writes.
    const first = await openChanges(t.role('query-1').api, key, { query: `types=${type}` });
    expect(first.status).toBe(200);
    const made: string[] = [];
    for (let i = 0; i < N; i++) made.push(await record(type, `r${i}`));
    const seen = await first.waitFor(k, 30_000);
    first.close();
    expect(seen.map((e) => e.data.entityId)).toEqual(made.slice(0, k));

    await t.kill('query-1', 'SIGTERM');
    try {
      const rest = await openChanges(t.api, key, { query: `types=${type}`, lastEventId: seen[k - 1].id });
      expect(rest.status).toBe(200);
      await rest.waitFor(N - k, 30_000);
      const late = await record(type, 'late');
      await rest.waitFor(N - k + 1, 30_000);
      await new Promise((r) => setTimeout(r, 500));
      rest.close();
      expect(rest.events.map((e) => e.data.entityId)).toEqual([...made.slice(k), late]);
      expect(rest.events.map((e) => Number(e.id))).toEqual(
        [...rest.events.map((e) => Number(e.id))].sort((a, b) => a - b),
      );
    } finally {
      await t.startRole('query', 'query-1');
    }
  }, 180_000);

  it('the same resume on each replica directly gives the same events', async () => {
    const type = await schema();
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push(await record(type, `x${i}`));
    const onEach = [];
    for (const name of t.queryNames()) {
      const s = await openChanges(t.role(name).api, key, { query: `types=${type}&startFrom=0` });
      await s.waitFor(8, 30_000);
      s.close();
      onEach.push(s.events.map((e) => `${e.id}:${e.event}:${e.data.entityId}`));
    }
    expect(onEach[0]).toHaveLength(8);
    expect(onEach[1]).toEqual(onEach[0]);
    expect(onEach[0].map((x) => x.split(':')[2])).toEqual(ids);
  }, 120_000);
});
