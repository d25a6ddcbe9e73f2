import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverUrl, tempDir } from '../support/engines';
import { eventually, freePort, type Api } from '../support/service';
import { brokers, kafkaScript, SKIP_REASON } from './kafka-support';
import { Topology } from './topology';

/**
 * Faults of the distributed deployment (four processes, as in
 * split-roles.e2e.spec.ts) on a Kafka broker of this suite's own
 * (deploy/engines/kafka.sh on free ports), so it can be stopped:
 *
 * - the projector process is SIGKILLed while writes stream in and started
 *   again: every acknowledged write is in the read models exactly once (its
 *   version and its history rows are exact, lists hold each record once);
 * - Kafka is stopped for 10 s while writes continue: every write still
 *   succeeds (the event store is the source of truth; the response waits for
 *   the read models at most 10 s, then answers), and once Kafka is back the
 *   relay and the projector catch up with nothing lost or doubled.
 */
const skip = !brokers ? SKIP_REASON : !serverUrl('postgres') ? 'DATABASE_URL not set (the split roles share a PostgreSQL)' : undefined;

interface Acked {
  id: string;
  n: number;
  updates: number;
}

describe.skipIf(!!skip)(`faults of the split roles on Kafka${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let t: Topology;
  let api: Api;
  let root: string;
  let typeName: string;
  const state = tempDir('svc-kafka-fault-');
  let kenv: Record<string, string>;

  beforeAll(async () => {
    const port = await freePort();
    let cport = await freePort();
    while (cport === port) cport = await freePort();
    kenv = { KAFKA_PORT: String(port), KAFKA_CONTROLLER_PORT: String(cport), KAFKA_STATE_DIR: state.dir };
    const k = await kafkaScript('start', kenv);
    if (k.code !== 0) throw new Error(`kafka.sh start failed: ${k.out}`);
    t = await Topology.start({ kafkaBrokers: `127.0.0.1:${port}` });
    api = t.api;
    const acct = await api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 });
    root = acct.tenants.live.rootKey;
    const s = await api.post('/v1/schemas', root, {
      typeName: `Fault_${randomUUID().slice(0, 8)}`, displayName: 'Faults', allowedSurfaces: ['record'],
      fields: [{ fieldId: 'title', fieldType: 'string', searchable: true }, { fieldId: 'n', fieldType: 'number' }],
    });
    expect(s.status, s.text).toBe(201);
    typeName = s.body.typeName;
  }, 300_000);

  afterAll(async () => {
    await t?.stop();
    await kafkaScript('clean', kenv ?? {});
    state.remove();
  }, 120_000);

  /** Every record of the type, following the cursor. */
  async function listAll(): Promise<any[]> {
    const out: any[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 200; pages++) {
      const r = await api.get(`/v1/records?type=${typeName}&limit=100${cursor ? `&startFrom=${encodeURIComponent(cursor)}` : ''}`, root);
      expect(r.status, r.text).toBe(200);
      out.push(...r.body.data);
      cursor = r.body.nextCursor;
      if (!cursor) break;
    }
    return out;
  }

  /** Waits until the relay has published the head and every projection of the projector has applied it. */
  async function caughtUp(timeoutMs = 180_000): Promise<void> {
    await eventually(async () => {
      const r = await t.readyz('relay');
      if (r.relay?.lag !== 0) return false;
      const p = await t.readyz('projector');
      // Every subscriber of the projector role (read models, search index, document worker, trigger runner, webhook dispatcher).
      return p.projections?.length === 5 && p.projections.every((x: any) => x.position >= r.headPosition);
    }, timeoutMs, 250);
    // The search projector appends outcomes (RecordsIndexed) that go round once more.
    await eventually(async () => {
      const r = await t.readyz('relay');
      const p = await t.readyz('projector');
      return r.relay.lag === 0 && p.projections.every((x: any) => x.position >= r.headPosition);
    }, timeoutMs, 250);
  }

  /** Every acknowledged write is there exactly once: version, history rows and list membership are exact. */
  async function verify(acked: Acked[]): Promise<void> {
    for (const a of acked) {
      const g = await api.get(`/v1/records/${a.id}`, root);
      expect(g.status, `record ${a.id}: ${g.text}`).toBe(200);
      expect(g.body.version, `record ${a.id}`).toBe(1 + a.updates);
      expect(g.body.payload.n).toBe(a.updates ? a.n * 10 : a.n);
      const v = await api.get(`/v1/records/${a.id}/versions?limit=100`, root);
      expect(v.body.data.map((x: any) => x.version).sort(), `history of ${a.id}`).toEqual(Array.from({ length: 1 + a.updates }, (_, i) => i + 1));
    }
    const listed = (await listAll()).map((r) => r.id);
    expect(new Set(listed).size).toBe(listed.length);
    const set = new Set(listed);
    expect(acked.filter((a) => !set.has(a.id)).map((a) => a.id)).toEqual([]);
  }

  async function write(n: number, update: boolean): Promise<Acked> {
    const c = await api.post('/v1/records', root, { typeName, payload: { title: `item ${n}`, n } });
    if (c.status !== 201) throw new Error(`create ${n}: ${c.status} ${c.text}`);
    let updates = 0;
    if (update) {
      const u = await api.patch(`/v1/records/${c.body.id}`, root, { payload: { n: n * 10 } });
      if (u.status !== 200) throw new Error(`update ${n}: ${u.status} ${u.text}`);
      updates = 1;
    }
    return { id: c.body.id, n, updates };
  }

  it('SIGKILL of the projector mid-stream, then a restart: nothing lost, nothing applied twice', async () => {
    const TOTAL = 200;
    const acked: Acked[] = [];
    let next = 0;
    let killed = false;
    const restart = (async () => {
      await eventually(async () => acked.length >= 40, 120_000, 20);
      await t.kill('projector', 'SIGKILL');
      killed = true;
      await new Promise((r) => setTimeout(r, 1000));
      await t.startRole('projector');
    })();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < TOTAL) {
          const n = next++;
          acked.push(await write(n, n % 3 === 0));
        }
      }),
    );
    await restart;
    expect(killed).toBe(true);
    await caughtUp();
    expect(acked).toHaveLength(TOTAL);
    await verify(acked);
    // The search projector survived too: every record reached a final index status.
    for (const a of acked.slice(0, 30)) await eventually(async () => (await api.get(`/v1/records/${a.id}`, root)).body.indexStatus === 'INDEXED', 60_000, 100);
    const p = await t.readyz('projector');
    for (const x of p.projections) expect(x.feed.transport).toBe('kafka');
  }, 600_000);

  it('Kafka stopped for 10 s while writes continue: every write succeeds, the projections catch up after it returns', async () => {
    const acked: Acked[] = [];
    const failures: string[] = [];
    let stop = false;
    let during = 0;
    let kafkaDown = false;
    let n = 100_000;
    const writers = Array.from({ length: 6 }, async () => {
      while (!stop) {
        const i = n++;
        try {
          acked.push(await write(i, i % 4 === 0));
          if (kafkaDown) during += 1;
        } catch (e) {
          failures.push(String(e));
        }
      }
    });
    await new Promise((r) => setTimeout(r, 2000));
    const down = await kafkaScript('stop', kenv);
    expect(down.code, down.out).toBe(0);
    kafkaDown = true;
    await new Promise((r) => setTimeout(r, 10_000));
    const up = await kafkaScript('start', kenv);
    kafkaDown = false;
    expect(up.code, up.out).toBe(0);
    await new Promise((r) => setTimeout(r, 3000));
    stop = true;
    await Promise.all(writers);
    expect(failures).toEqual([]);
    expect(during).toBeGreaterThan(0);
    await caughtUp();
    await verify(acked);
  }, 600_000);
});
