import { spawn } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverUrl } from '../support/engines';
import { NOTE_SCHEMA, percentile, Traffic } from '../support/rebuild-traffic';
import { type Api, eventually, OPERATOR_TOKEN, ROOT, serviceCommand } from '../support/service';
import { brokers, listAllRecords, SKIP_REASON } from './kafka-support';
import { Topology } from './topology';

/**
 * The online rebuild of the read models in the split deployment (relay, projector, two query replicas, command on
 * PostgreSQL and Kafka, Elasticsearch and Redis when set) behind the shipped router: started through the router
 * (POST /operator/rebuilds reaches the projector) while readers and writers go on through it. No read fails, every
 * acknowledged write (those made during the rebuild included) is readable, listed once and found by TEXT search
 * afterwards, and the lists equal what they were. A read model corrupted by hand is repaired by
 * `npm run rebuild -- --online` pointed at the router.
 */
const skip = !brokers
  ? SKIP_REASON
  : !serverUrl('postgres')
    ? 'DATABASE_URL not set (the split roles share a PostgreSQL)'
    : undefined;

async function rebuildThrough(api: Api) {
  const started = await api.post('/operator/rebuilds', OPERATOR_TOKEN, { target: 'read-models' });
  expect(started.status, started.text).toBe(202);
  return eventually(
    async () => {
      const r = await api.get(`/operator/rebuilds/${started.body.id}`, OPERATOR_TOKEN);
      expect(r.status, r.text).toBe(200);
      if (r.body.state === 'building' || r.body.state === 'switching')
        throw new Error(`still ${r.body.state} at ${r.body.position} of ${r.body.head}`);
      return r.body;
    },
    180_000,
    200,
  );
}

describe.skipIf(!!skip)('online rebuild of the read models in the split deployment', () => {
  let t: Topology;
  let root: string;
  const ids: string[] = [];

  beforeAll(async () => {
    t = await Topology.start({ kafkaBrokers: brokers! });
    root = t.bootstrap.tenants.test.rootKey;
    const s = await t.api.post('/v1/schemas', root, NOTE_SCHEMA);
    expect(s.status, s.text).toBe(201);
    // 300 records (8 writers), some updated, some deleted.
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = next++; i < 300; i = next++) {
          const r = await t.api.post('/v1/records', root, {
            typeName: NOTE_SCHEMA.typeName,
            payload: { title: `note ${i}`, body: `before the rebuild ${i}`, n: i },
          });
          expect(r.status, r.text).toBe(201);
          ids.push(r.body.id);
        }
      }),
    );
    for (const id of ids.slice(0, 20))
      expect((await t.api.patch(`/v1/records/${id}`, root, { payload: { n: -1 } })).status).toBe(200);
    for (const id of ids.splice(290, 10)) expect((await t.api.del(`/v1/records/${id}`, root)).status).toBe(204);
  }, 300_000);

  afterAll(async () => {
    await t?.stop();
  }, 120_000);

  it(
    'switches while reads and writes go on through the router: no failed read, every write readable, listed ' +
      'once, searchable',
    async () => {
      const before = await listAllRecords(t.api, root, NOTE_SCHEMA.typeName, 50);
      expect(before.map((r) => r.id).sort()).toEqual([...ids].sort());
      const traffic = new Traffic(t.api, root, ids, { readers: 4, writers: 2, tag: 'split' }).start();
      try {
        await eventually(async () => traffic.acked.length > 5, 60_000);
        const atStart = traffic.acked.length;
        const done = await rebuildThrough(t.api);
        const atSwitch = traffic.acked.length;
        // Writes were acknowledged while the fresh read models were being built (they must be in them after the
        // switch).
        expect(atSwitch).toBeGreaterThan(atStart);
        await eventually(async () => traffic.acked.length > atSwitch + 5, 60_000);
        await traffic.stop();
        const p = (xs: number[]) =>
          `p50 ${percentile(xs, 50).toFixed(0)} / p99 ${percentile(xs, 99).toFixed(0)} / max ` +
          `${Math.max(...xs).toFixed(0)} ms`;
        console.log(
          `online rebuild (split deployment, router): ${JSON.stringify(done)}; ${traffic.reads} reads (by ` +
            `id ${p(traffic.latencies.byId)}, list ${p(traffic.latencies.list)}), ${traffic.acked.length} writes`,
        );
        expect(done.state, done.error).toBe('done');
        expect(traffic.failedReads).toEqual([]);
        expect(traffic.failedWrites).toEqual([]);
      } finally {
        await traffic.stop();
      }

      const after = await listAllRecords(t.api, root, NOTE_SCHEMA.typeName, 50);
      const listed = after.map((r) => r.id);
      expect(new Set(listed).size).toBe(listed.length);
      expect([...listed].sort()).toEqual([...ids, ...traffic.acked].sort());
      const byId = new Map(after.map((r) => [r.id, r]));
      // What was there before is as it was (the index status moves on its own: written before, indexed since).
      const stable = (r: any) => ({ ...r, indexStatus: undefined });
      for (const r of before) expect(stable(byId.get(r.id))).toEqual(stable(r));
      // Each query replica answers the same list.
      for (const name of t.queryNames()) {
        const own = await listAllRecords(t.role(name).api, root, NOTE_SCHEMA.typeName, 50);
        expect(own.map((r) => r.id).sort()).toEqual([...listed].sort());
      }
      for (const id of traffic.acked) expect((await t.api.get(`/v1/records/${id}`, root)).status).toBe(200);
      for (const id of traffic.acked) {
        const word = traffic.words.get(id)!;
        await eventually(
          async () => {
            const s = await t.api.post('/v1/search', root, { query: word, mode: 'TEXT' });
            return s.status === 200 && s.body.results.some((x: any) => x.documentId === id);
          },
          90_000,
          200,
        );
      }
    },
    600_000,
  );

  it('repairs a read model corrupted by hand: npm run rebuild -- --online through the router', async () => {
    const gone = ids[100];
    const db = new pg.Client({ connectionString: t.env.DATABASE_URL });
    await db.connect();
    try {
      await db.query('DELETE FROM rm_records WHERE record_id = $1', [gone]);
    } finally {
      await db.end();
    }
    // The query replicas keep no by-id cache: the damage shows at once.
    expect((await t.api.get(`/v1/records/${gone}`, root)).status).toBe(404);
    const out = await new Promise<{ code: number | null; text: string }>((resolve, reject) => {
      let text = '';
      const child = spawn(
        process.execPath,
        [...serviceCommand('rebuild'), '--online', 'read-models', '--url', t.api.baseUrl],
        { cwd: ROOT, env: { ...process.env, OPERATOR_TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      child.stdout!.on('data', (d) => (text += d));
      child.stderr!.on('data', (d) => (text += d));
      const timer = setTimeout(
        () => (child.kill('SIGKILL'), reject(new Error(`rebuild --online did not finish: ${text}`))),
        180_000,
      );
      child.once('exit', (code) => (clearTimeout(timer), resolve({ code, text })));
    });
    expect(out.code, out.text).toBe(0);
    expect(out.text).toMatch(/switched at position \d+/);
    const r = await t.api.get(`/v1/records/${gone}`, root);
    expect(r.status, r.text).toBe(200);
    expect(r.body.payload.title).toBe(`note ${r.body.payload.n}`);
  }, 300_000);
});
