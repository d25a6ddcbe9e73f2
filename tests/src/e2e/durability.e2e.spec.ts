import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVER_ENGINES, tempDir } from '../support/engines';
import { eventually, spawnService, type Api, type Bootstrap, freePort, waitForExit } from '../support/service';

/**
 * Durability: SIGKILL the service while 1,000 writes are in flight, restart it
 * on the same data directory, and find every write that was acknowledged with a
 * 2xx; the projections catch up with nothing lost or doubled.
 */

const TOTAL = 1000;
const IN_FLIGHT = 32;
const KILL_AFTER_ACKS = 300;
const TYPE = 'durable_item';
/** Embedded engines only: blank any server-engine variable the test process inherited (empty counts as unset). */
const EMBEDDED: Record<string, string> = Object.fromEntries(Object.values(SERVER_ENGINES).map((e) => [e.env, '']));

interface Sent {
  i: number;
  externalId: string;
  payload: { n: number; label: string };
}
interface Acked extends Sent {
  status: number;
  id: string;
  version: number;
}

/** Every record of the context, following nextCursor with limit=100. */
async function listAll(api: Api, key: string): Promise<Array<Record<string, any>>> {
  const out: Array<Record<string, any>> = [];
  let cursor: string | null = null;
  for (let pages = 0; ; pages++) {
    if (pages > 100) throw new Error('too many pages');
    const path: string =
      `/v1/records?type=${TYPE}&limit=100&includePayload=true` +
      (cursor ? `&startFrom=${encodeURIComponent(cursor)}` : '');
    const r = await api.get(path, key);
    if (r.status !== 200) throw new Error(`list failed: ${r.status} ${r.text}`);
    out.push(...r.body.data);
    cursor = r.body.nextCursor;
    if (cursor === null) return out;
  }
}

/** Runs `fn` over `items` with at most `width` calls in flight. */
async function pool<T, R>(items: T[], width: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const k = next++;
        out[k] = await fn(items[k]);
      }
    }),
  );
  return out;
}

describe('durability: SIGKILL with 1,000 writes in flight, then restart', () => {
  const dir = tempDir('svc-durability-');
  const children: ChildProcess[] = [];
  let port: number;
  let api: Api;
  let root: string;
  let output1 = () => '';
  const sent: Sent[] = [];
  const acked: Acked[] = [];
  const failed: Array<{ i: number; error: string }> = [];
  const non2xx: Array<{ i: number; status: number; text: string }> = [];
  let killedAt = -1;
  const killDelayMs = Math.floor(Math.random() * 40);
  let loadMs = 0;

  beforeAll(async () => {
    port = await freePort();
    const first = await spawnService(dir.dir, port, EMBEDDED);
    children.push(first.child);
    output1 = first.output;
    api = first.api;
    const boot = JSON.parse(readFileSync(join(dir.dir, 'bootstrap.json'), 'utf8')) as Bootstrap;
    root = boot.tenants.live.rootKey;

    const s = await api.post('/v1/schemas', root, {
      typeName: TYPE,
      displayName: 'Durable item',
      allowedSurfaces: ['record'],
      fields: [
        { fieldId: 'n', fieldType: 'number', required: true },
        { fieldId: 'label', fieldType: 'string' },
      ],
    });
    expect(s.status, s.text).toBe(201);

    for (let i = 0; i < TOTAL; i++)
      sent.push({ i, externalId: `ext-${i.toString().padStart(4, '0')}`, payload: { n: i, label: `item ${i}` } });

    const started = Date.now();
    let next = 0;
    let killScheduled = false;
    const worker = async () => {
      while (next < TOTAL) {
        const req = sent[next++];
        try {
          const r = await api.post('/v1/records', root, {
            typeName: TYPE,
            externalId: req.externalId,
            payload: req.payload,
          });
          if (r.status >= 200 && r.status < 300 && r.body?.id) {
            acked.push({ ...req, status: r.status, id: r.body.id, version: r.body.version });
            if (!killScheduled && acked.length >= KILL_AFTER_ACKS) {
              // A small random delay lands the kill at a different point of the commit / project / answer cycle each
              // run.
              killScheduled = true;
              setTimeout(() => {
                killedAt = acked.length;
                first.child.kill('SIGKILL');
              }, killDelayMs);
            }
          } else non2xx.push({ i: req.i, status: r.status, text: r.text.slice(0, 300) });
        } catch (e) {
          failed.push({ i: req.i, error: String((e as Error)?.cause ?? e) });
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    loadMs = Date.now() - started;
    await waitForExit(first.child);

    const second = await spawnService(dir.dir, port, EMBEDDED);
    children.push(second.child);
    api = second.api;
    // The runner catches up on events committed but not yet projected when the process died.
    await eventually(
      async () => {
        const r = await api.get('/readyz');
        return r.status === 200 && r.body.projections?.[0]?.position === r.body.headPosition;
      },
      60_000,
      100,
    );
  }, 180_000);

  afterAll(async () => {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill('SIGKILL');
        await waitForExit(c).catch(() => {});
      }
    }
    dir.remove();
  }, 60_000);

  it('the kill happened while writes were in flight', () => {
    // eslint-disable-next-line no-console
    console.log(
      `durability: ${acked.length} acknowledged, ${non2xx.length} non-2xx, ${failed.length} failed of ` +
        `${TOTAL}; killed ${killDelayMs} ms after ack ${KILL_AFTER_ACKS}, at ${killedAt} acks; load phase ` +
        `${loadMs} ms`,
    );
    expect(
      killedAt,
      `never reached ${KILL_AFTER_ACKS} acks; first service output:\n${output1()}`,
    ).toBeGreaterThanOrEqual(KILL_AFTER_ACKS);
    expect(acked.length).toBeGreaterThanOrEqual(KILL_AFTER_ACKS);
    expect(acked.length).toBeLessThan(TOTAL); // some were in flight or not yet sent when it died
    expect(non2xx, JSON.stringify(non2xx.slice(0, 5))).toEqual([]); // before the kill every write succeeded
    expect(acked.every((a) => a.status === 201 && a.version === 1)).toBe(true);
    expect(new Set(acked.map((a) => a.id)).size).toBe(acked.length);
  });

  it('every acknowledged write is readable by id with the same payload', async () => {
    const misses: string[] = [];
    await pool(acked, 16, async (a) => {
      const r = await api.get(`/v1/records/${a.id}`, root);
      if (r.status !== 200) return misses.push(`${a.externalId} ${a.id}: ${r.status}`);
      const b = r.body;
      if (
        b.id !== a.id ||
        b.externalId !== a.externalId ||
        b.typeName !== TYPE ||
        b.version !== 1 ||
        JSON.stringify(b.payload) !== JSON.stringify(a.payload)
      )
        misses.push(`${a.externalId} ${a.id}: ${r.text.slice(0, 200)}`);
    });
    expect(misses).toEqual([]);
  }, 120_000);

  it(
    'the list has no duplicate ids or externalIds, includes every acknowledged id, and each record has ' +
      'exactly one version row',
    async () => {
      const listed = await listAll(api, root);
      // eslint-disable-next-line no-console
      console.log(
        `durability: ${listed.length} records listed after restart (${listed.length - acked.length} ` +
          `committed but never acknowledged)`,
      );
      const ids = listed.map((r) => r.id);
      const exts = listed.map((r) => r.externalId);
      expect(new Set(ids).size).toBe(listed.length);
      expect(new Set(exts).size).toBe(listed.length);
      expect(exts.every((x) => typeof x === 'string' && x.startsWith('ext-'))).toBe(true);
      const idSet = new Set(ids);
      expect(acked.filter((a) => !idSet.has(a.id)).map((a) => a.externalId)).toEqual([]);
      // listed records never outnumber the creates that were launched
      expect(listed.length).toBeGreaterThanOrEqual(acked.length);
      expect(listed.length).toBeLessThanOrEqual(TOTAL);
      // the payload of every listed record matches what its externalId was sent with
      const byExt = new Map(sent.map((s) => [s.externalId, s]));
      expect(
        listed
          .filter((r) => JSON.stringify(r.payload) !== JSON.stringify(byExt.get(r.externalId)?.payload))
          .map((r) => r.id),
      ).toEqual([]);

      const wrongVersions: string[] = [];
      await pool(listed, 16, async (rec) => {
        const v = await api.get(`/v1/records/${rec.id}/versions?limit=100`, root);
        if (
          v.status !== 200 ||
          v.body.data.length !== 1 ||
          v.body.data[0].eventType !== 'RecordCreated' ||
          v.body.data[0].version !== 1
        )
          wrongVersions.push(`${rec.id}: ${v.status} ${v.text.slice(0, 200)}`);
      });
      expect(wrongVersions).toEqual([]);
    },
    120_000,
  );

  it('re-POSTing an acknowledged externalId answers 200 with the same id (no double create)', async () => {
    const wrong: string[] = [];
    await pool(acked, 16, async (a) => {
      const r = await api.post('/v1/records', root, { typeName: TYPE, externalId: a.externalId, payload: a.payload });
      if (r.status !== 200 || r.body?.id !== a.id) wrong.push(`${a.externalId}: ${r.status} ${r.body?.id} != ${a.id}`);
    });
    expect(wrong).toEqual([]);
    const listed = await listAll(api, root);
    expect(new Set(listed.map((r) => r.id)).size).toBe(listed.length);
    expect(new Set(listed.map((r) => r.externalId)).size).toBe(listed.length);
  }, 120_000);

  it('a client retrying each unacknowledged write converges on exactly 1,000 records, one per externalId', async () => {
    const ackedExt = new Set(acked.map((a) => a.externalId));
    const retry = sent.filter((s) => !ackedExt.has(s.externalId));
    const statuses = await pool(retry, 16, async (s) => {
      const r = await api.post('/v1/records', root, { typeName: TYPE, externalId: s.externalId, payload: s.payload });
      return r.status;
    });
    expect(statuses.filter((st) => st !== 200 && st !== 201)).toEqual([]);
    const listed = await listAll(api, root);
    expect(listed.length).toBe(TOTAL);
    expect(new Set(listed.map((r) => r.id)).size).toBe(TOTAL);
    expect(new Set(listed.map((r) => r.externalId)).size).toBe(TOTAL);
  }, 120_000);

  it('after a clean stop, the event log holds exactly one RecordCreated per listed record', async () => {
    const listed = await listAll(api, root);
    const c = children[children.length - 1];
    c.kill('SIGTERM');
    await waitForExit(c);
    expect(c.exitCode).toBe(0);
    const db = await PGlite.create({ dataDir: join(dir.dir, 'pg') });
    try {
      const { rows } = await db.query<{ n: number; ext: number }>(
        `SELECT count(*)::int AS n, count(DISTINCT data->>'externalId')::int AS ext FROM es_events WHERE ` +
          `event_type = 'RecordCreated'`,
      );
      expect(rows[0].n).toBe(listed.length);
      expect(rows[0].ext).toBe(listed.length);
      const cp = await db.query<{ name: string; position: number }>(
        `SELECT name, position::int AS position FROM proj_checkpoints`,
      );
      const head = await db.query<{ p: number }>(`SELECT coalesce(max(position), 0)::int AS p FROM es_events`);
      // Every checkpointed subscriber (read models, reactors such as the document worker) stopped at the head.
      expect(cp.rows.map((r) => r.name)).toContain('read-models');
      expect(cp.rows.map((r) => [r.name, r.position])).toEqual(cp.rows.map((r) => [r.name, head.rows[0].p]));
    } finally {
      await db.close();
    }
  }, 120_000);
});
