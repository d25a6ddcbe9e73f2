import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVER_ENGINES, tempDir } from '../support/engines';
import {
  eventually,
  ROOT,
  serviceCommand,
  spawnService,
  type Api,
  type Bootstrap,
  freePort,
  waitForExit,
} from '../support/service';

/**
 * Exactly once across a crash (issue 18 acceptance): two rules fire on every
 * record of a storm of writes; the service is SIGKILLed while the trigger
 * runner is part-way through, then restarted on the same data directory. Every
 * rule has fired exactly once per record event: one side effect (an audit
 * record) per (rule, record), none missing, none doubled.
 */
const RECORDS = 120;
const EMBEDDED: Record<string, string> = Object.fromEntries(Object.values(SERVER_ENGINES).map((e) => [e.env, '']));

async function listAll(api: Api, key: string, type: string): Promise<Array<Record<string, any>>> {
  const out: Array<Record<string, any>> = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const r = await api.get(
      `/v1/records?type=${type}&limit=100&includePayload=true` +
        (cursor ? `&startFrom=${encodeURIComponent(cursor)}` : ''),
      key,
    );
    if (r.status !== 200) throw new Error(`list failed: ${r.status} ${r.text}`);
    out.push(...r.body.data);
    cursor = r.body.nextCursor;
    if (cursor === null) return out;
  }
  throw new Error('too many pages');
}

describe('triggers: SIGKILL during a trigger storm, then restart', () => {
  const dir = tempDir('svc-trigger-crash-');
  const children: ChildProcess[] = [];
  let api: Api;
  let root: string;
  let port = 0;
  let atKill = -1;
  let records: Array<Record<string, any>> = [];
  let audits: Array<Record<string, any>> = [];

  beforeAll(async () => {
    port = await freePort();
    const first = await spawnService(dir.dir, port, EMBEDDED);
    children.push(first.child);
    api = first.api;
    root = (JSON.parse(readFileSync(join(dir.dir, 'bootstrap.json'), 'utf8')) as Bootstrap).tenants.live.rootKey;
    const inv = await api.post('/v1/schemas', root, {
      typeName: 'storm_item',
      displayName: 'Storm item',
      allowedSurfaces: ['record'],
      capabilities: { triggersEnabled: true },
      fields: [{ fieldId: 'n', fieldType: 'number', inline: true }],
    });
    expect(inv.status, inv.text).toBe(201);
    expect(
      (
        await api.post('/v1/schemas', root, {
          typeName: 'storm_audit',
          displayName: 'Audit',
          allowedSurfaces: ['record'],
        })
      ).status,
    ).toBe(201);
    for (const tag of ['a', 'b']) {
      const s = await api.post('/v1/scripts', root, {
        name: `audit-${tag}`,
        source:
          `export default async (input) => { await records.create({ typeName: 'storm_audit', payload: { ` +
          `tag: '${tag}', recordId: input.recordId, n: input.record.n } }); }`,
      });
      expect(s.status, s.text).toBe(201);
      const r = await api.post('/v1/triggers', root, {
        name: `storm-${tag}`,
        schemaId: inv.body.id,
        events: ['CREATE'],
        scriptRef: { name: `audit-${tag}`, version: 1 },
        fields: ['n'],
        grant: { allowedActions: ['records:r', 'records:c'] },
      });
      expect(r.status, r.text).toBe(201);
    }
    // The storm: every record event fires both rules.
    for (let i = 0; i < RECORDS; i += 40) {
      const items = Array.from({ length: Math.min(40, RECORDS - i) }, (_, k) => ({
        typeName: 'storm_item',
        payload: { n: i + k },
      }));
      const b = await api.post('/v1/records/batch', root, { records: items });
      expect(b.status, b.text).toBe(200);
    }
    // Kill once the runner is part-way through.
    await eventually(async () => (await listAll(api, root, 'storm_audit')).length >= 20, 60_000, 20);
    atKill = (await listAll(api, root, 'storm_audit')).length;
    first.child.kill('SIGKILL');
    await waitForExit(first.child);

    const second = await spawnService(dir.dir, port, EMBEDDED);
    children.push(second.child);
    api = second.api;
    records = await listAll(api, root, 'storm_item');
    audits = (await eventually(
      async () => {
        const all = await listAll(api, root, 'storm_audit');
        return all.length >= 2 * records.length ? all : null;
      },
      120_000,
      250,
    ))!;
    // Give a doubled firing the time to show up.
    await new Promise((r) => setTimeout(r, 3_000));
    audits = await listAll(api, root, 'storm_audit');
  }, 300_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    for (const c of children) await waitForExit(c).catch(() => c.kill('SIGKILL'));
    dir.remove();
  }, 60_000);

  it('was killed mid-storm', () => {
    expect(records).toHaveLength(RECORDS);
    expect(atKill).toBeGreaterThan(0);
    expect(atKill).toBeLessThan(2 * RECORDS);
  });

  it('fired every rule exactly once per record event', () => {
    const pairs = audits.map((a) => `${a.payload.tag}:${a.payload.recordId}`);
    expect(new Set(pairs).size).toBe(pairs.length);
    expect(pairs).toHaveLength(2 * RECORDS);
    for (const r of records) for (const tag of ['a', 'b']) expect(pairs).toContain(`${tag}:${r.id}`);
  });

  it('lists no failures', async () => {
    const f = await api.get('/v1/trigger-failures', root);
    expect(f.body).toEqual({ data: [], nextCursor: null });
  });

  it('a rebuild of the read models, and even a replay of the log from position 0, runs no script again', async () => {
    const running = children[children.length - 1];
    running.kill('SIGTERM');
    await waitForExit(running);
    const rebuild = spawn(process.execPath, serviceCommand('rebuild').concat('all'), {
      cwd: ROOT,
      env: { ...process.env, ...EMBEDDED, DATA_DIR: dir.dir },
      stdio: 'ignore',
    });
    await waitForExit(rebuild, 120_000);
    expect(rebuild.exitCode).toBe(0);
    // Worst case: the runner's checkpoint lost, so it reads the whole log again.
    const db = await PGlite.create({ dataDir: join(dir.dir, 'pg') });
    const { rows } = await db.query<{ position: number }>(
      `SELECT position FROM proj_checkpoints WHERE name = 'trigger-runner'`,
    );
    expect(Number(rows[0]?.position)).toBeGreaterThan(0);
    await db.query(`DELETE FROM proj_checkpoints WHERE name = 'trigger-runner'`);
    await db.close();
    const third = await spawnService(dir.dir, port, EMBEDDED);
    children.push(third.child);
    api = third.api;
    // The runner has read the whole log again (its position at the head), settling every firing from its marker.
    await eventually(
      async () => {
        const r = await api.get('/readyz');
        const t = (r.body?.projections ?? []).find((p: { name: string }) => p.name === 'trigger-runner');
        return r.status === 200 && t && t.position === r.body.headPosition;
      },
      60_000,
      200,
    );
    await new Promise((r) => setTimeout(r, 1_000));
    const again = await listAll(api, root, 'storm_audit');
    expect(again).toHaveLength(2 * RECORDS);
  }, 240_000);
});
