import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgresSchema, SERVER_ENGINES, serverUrl, tempDir } from '../support/engines';
import { ROOT, spawnService, type Api, type Bootstrap, freePort, waitForExit } from '../support/service';

/**
 * Rebuild: dropping all read models and running `npm run rebuild -- all`
 * reproduces the same API responses (captured before and after, compared deeply).
 */

type Engine = 'pglite' | 'postgres';

/**
 * Child processes inherit this process's environment: the embedded variant
 * blanks every server-engine variable (an empty value counts as unset), so a
 * DATABASE_URL set for the PostgreSQL variant never leaks into it.
 */
const NO_SERVER_ENGINES: Record<string, string> = Object.fromEntries(
  Object.values(SERVER_ENGINES).map((e) => [e.env, '']),
);
type Resp = { status: number; body: unknown };
type Snapshot = Record<string, unknown>;

/** Runs `deploy/src/rebuild.ts <target>` as a child process; resolves with its exit code and output. */
function runRebuild(
  env: Record<string, string>,
  target: string,
  timeoutMs = 120_000,
): Promise<{ code: number | null; signal: string | null; out: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    let out = '';
    const child = spawn(process.execPath, ['--import', 'tsx', 'deploy/src/rebuild.ts', target], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`rebuild ${target} did not finish in ${timeoutMs} ms: ${out}`));
    }, timeoutMs);
    child.once('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(t);
      resolve({ code, signal, out, ms: Date.now() - started });
    });
  });
}

/** The response with what differs on every call taken out: the requestId of an error body. */
const norm = (r: { status: number; body: any }): Resp => {
  if (r.status >= 400 && r.body && typeof r.body === 'object') {
    const { requestId: _drop, ...rest } = r.body;
    return { status: r.status, body: rest };
  }
  return { status: r.status, body: r.body };
};

/**
 * Every page of a list, following nextCursor. Cursors are encrypted with a
 * random nonce, so the pages are compared as their data and whether another
 * page followed, never by the cursor text.
 */
async function pages(api: Api, path: string, token: string, headers?: Record<string, string>): Promise<Resp[]> {
  const out: Resp[] = [];
  let cursor: string | null = null;
  for (let n = 0; ; n++) {
    if (n > 200) throw new Error(`too many pages for ${path}`);
    const sep = path.includes('?') ? '&' : '?';
    const url: string = cursor ? `${path}${sep}startFrom=${encodeURIComponent(cursor)}` : path;
    const r = await api.get(url, token, headers);
    if (r.status !== 200) {
      out.push(norm(r));
      return out;
    }
    expect(Object.keys(r.body).sort()).toEqual(['data', 'nextCursor']);
    cursor = r.body.nextCursor;
    out.push({ status: 200, body: { data: r.body.data, nextCursor: cursor === null ? null : '<more>' } });
    if (cursor === null) return out;
  }
}

interface World {
  root: string;
  ctx2: string;
  tokens: Record<string, string>;
  schemaIds: string[];
  ctx2SchemaIds: string[];
  liveIds: string[];
  deletedIds: string[];
  ctx2RecordIds: string[];
}

async function ok(p: Promise<{ status: number; text: string; body: any }>, status: number) {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

/** Schemas, ~50 records with creates/updates/patches/deletes, a second context and tokens. */
async function populate(api: Api, root: string): Promise<World> {
  const contact = await ok(
    api.post('/v1/schemas', root, {
      typeName: 'contact',
      displayName: 'Contact',
      allowedSurfaces: ['record'],
      fields: [
        { fieldId: 'name', fieldType: 'string', required: true },
        { fieldId: 'email', fieldType: 'string', sensitive: true },
        { fieldId: 'code', fieldType: 'string' },
        { fieldId: 'age', fieldType: 'number' },
        { fieldId: 'notes', fieldType: 'string' },
        { fieldId: 'tags', fieldType: 'array' },
      ],
      lookupFields: [{ fieldName: 'code', unique: true }, 'age'],
    }),
    201,
  );
  const note = await ok(
    api.post('/v1/schemas', root, {
      typeName: 'note',
      displayName: 'Note',
      allowedSurfaces: ['record'],
      fields: [
        { fieldId: 'title', fieldType: 'string', required: true },
        { fieldId: 'body', fieldType: 'string' },
        { fieldId: 'secret', fieldType: 'string', sensitive: true },
      ],
    }),
    201,
  );
  // A third schema, changed and then deleted (a schema with history but no longer listed).
  const scratch = await ok(
    api.post('/v1/schemas', root, {
      typeName: 'scratch',
      displayName: 'Scratch',
      allowedSurfaces: ['record'],
      fields: [{ fieldId: 'x', fieldType: 'number' }],
    }),
    201,
  );
  await ok(
    api.put(`/v1/schemas/${scratch.id}`, root, {
      displayName: 'Scratch v2',
      fields: [
        { fieldId: 'x', fieldType: 'number' },
        { fieldId: 'y', fieldType: 'string' },
      ],
    }),
    200,
  );
  await ok(api.del(`/v1/schemas/${scratch.id}`, root), 204);

  const liveIds: string[] = [];
  const deletedIds: string[] = [];
  const created: string[] = [];
  // Scopes name org, client or a registered namespace.
  await ok(api.post('/v1/namespaces', root, { name: 'team' }), 201);
  for (let i = 0; i < 30; i++) {
    const body: Record<string, unknown> = {
      typeName: 'contact',
      payload: {
        name: `Contact ${i}`,
        email: `c${i}@example.com`,
        code: `C-${i}`,
        age: 20 + i,
        ...(i % 5 === 0 ? { notes: 'n'.repeat(5000) } : {}),
        ...(i % 3 === 0 ? { tags: ['a', `t${i}`] } : {}),
      },
    };
    if (i % 2 === 0) body.externalId = `contact-ext-${i}`;
    if (i % 7 === 0) body.userId = 'alice';
    if (i % 4 === 1) body.scopes = ['team:a'];
    if (i % 6 === 5) body.status = 'archived';
    created.push((await ok(api.post('/v1/records', root, body), 201)).id);
  }
  // An idempotent re-create must not add a record.
  await api.post('/v1/records', root, {
    typeName: 'contact',
    externalId: 'contact-ext-0',
    payload: { name: 'Contact 0', email: 'c0@example.com', code: 'C-0', age: 20 },
  });

  // The note schema changes (schemaVersion 2) between its records.
  for (let i = 0; i < 10; i++) {
    const body: Record<string, unknown> = {
      typeName: 'note',
      payload: { title: `Note ${i}`, body: `body ${i}`, secret: `s3cret-${i}` },
    };
    if (i % 3 === 0) body.externalId = `note-ext-${i}`;
    created.push((await ok(api.post('/v1/records', root, body), 201)).id);
  }
  await ok(
    api.put(`/v1/schemas/${note.id}`, root, {
      displayName: 'Note (v2)',
      allowedSurfaces: ['record'],
      fields: [
        { fieldId: 'title', fieldType: 'string', required: true },
        { fieldId: 'body', fieldType: 'string' },
        { fieldId: 'secret', fieldType: 'string', sensitive: true },
        { fieldId: 'priority', fieldType: 'number' },
      ],
    }),
    200,
  );
  for (let i = 10; i < 20; i++) {
    const body: Record<string, unknown> = {
      typeName: 'note',
      payload: {
        title: `Note ${i}`,
        body: i === 15 ? 'b'.repeat(6000) : `body ${i}`,
        secret: `s3cret-${i}`,
        priority: i,
      },
    };
    if (i % 3 === 0) body.externalId = `note-ext-${i}`;
    created.push((await ok(api.post('/v1/records', root, body), 201)).id);
  }

  // Updates (PUT), patches (PATCH) and deletes.
  for (let k = 0; k < 10; k++) {
    const id = created[k * 3];
    const cur = await ok(api.get(`/v1/records/${id}`, root), 200);
    const payload =
      cur.typeName === 'contact'
        ? { name: `Renamed ${k}`, email: `renamed${k}@example.com`, code: `R-${k}`, age: 50 + k }
        : { title: `Retitled ${k}`, secret: `new-secret-${k}` };
    await ok(api.put(`/v1/records/${id}`, root, { payload, status: 'reviewed' }), 200);
  }
  for (let k = 0; k < 12; k++) {
    const id = created[k * 3 + 1];
    const cur = await ok(api.get(`/v1/records/${id}`, root), 200);
    const patch =
      cur.typeName === 'contact'
        ? { payload: { age: 99, notes: null, tags: ['patched'] } }
        : { payload: { body: null, secret: 'patched-secret' }, status: 'patched' };
    await ok(api.patch(`/v1/records/${id}`, root, patch), 200);
    if (k % 4 === 0)
      await ok(
        api.patch(`/v1/records/${id}`, root, {
          payload: {
            name: cur.typeName === 'contact' ? `Twice ${k}` : undefined,
            title: cur.typeName === 'note' ? `Twice ${k}` : undefined,
          },
        }),
        200,
      );
  }
  // Delete 8 records: some with externalIds, some updated or patched first.
  for (const k of [0, 2, 3, 4, 8, 31, 35, 44]) {
    await ok(api.del(`/v1/records/${created[k]}`, root), 204);
    deletedIds.push(created[k]);
  }
  // The externalId of a deleted record may be used again.
  created.push(
    (
      await ok(
        api.post('/v1/records', root, {
          typeName: 'contact',
          externalId: 'contact-ext-0',
          payload: { name: 'Reborn', email: 'reborn@example.com', code: 'C-0', age: 1 },
        }),
        201,
      )
    ).id,
  );
  for (const id of created) if (!deletedIds.includes(id)) liveIds.push(id);

  // A second context with its own schema and records; a third context that is deleted.
  const ctx2 = (await ok(api.post('/v1/contexts', root, { name: 'second' }), 201)).id as string;
  const h2 = { 'x-context-id': ctx2 };
  const s2 = await ok(
    api.call('POST', '/v1/schemas', {
      token: root,
      headers: h2,
      body: {
        typeName: 'contact',
        displayName: 'Contact (ctx 2)',
        allowedSurfaces: ['record'],
        fields: [
          { fieldId: 'name', fieldType: 'string' },
          { fieldId: 'pin', fieldType: 'string', sensitive: true },
        ],
      },
    }),
    201,
  );
  const ctx2RecordIds: string[] = [];
  for (let i = 0; i < 4; i++)
    ctx2RecordIds.push(
      (
        await ok(
          api.call('POST', '/v1/records', {
            token: root,
            headers: h2,
            body: {
              typeName: 'contact',
              externalId: `contact-ext-${i}`,
              payload: { name: `Other ${i}`, pin: `${1000 + i}` },
            },
          }),
          201,
        )
      ).id,
    );
  await ok(api.call('DELETE', `/v1/records/${ctx2RecordIds[3]}`, { token: root, headers: h2 }), 204);

  // Tokens: a reader, one bound to a user, one bound to a scope, one for the second context, one for a deleted context.
  const mint = async (body: Record<string, unknown>) =>
    (await ok(api.post('/v1/tokens', root, body), 201)).token as string;
  const tokens: Record<string, string> = {
    reader: await mint({ scope: { allowedActions: ['records:r', 'schemas:r'] } }),
    alice: await mint({ scope: { allowedActions: ['records:r', 'records:c'] }, userId: 'alice' }),
    teamA: await mint({ scope: { allowedActions: ['records:r'], dataScope: { scopes: ['team:a'] } } }),
    ctx2: await mint({ scope: { allowedActions: ['*'] }, contextId: ctx2 }),
  };
  // alice writes a record of her own (stamped with her userId).
  liveIds.push(
    (
      await ok(
        api.post('/v1/records', tokens.alice, { typeName: 'note', payload: { title: 'by alice', secret: 'hers' } }),
        201,
      )
    ).id,
  );
  const doomed = (await ok(api.post('/v1/contexts', root, { name: 'doomed' }), 201)).id as string;
  tokens.doomed = await mint({ scope: { allowedActions: ['records:r'] }, contextId: doomed });
  await ok(api.del(`/v1/contexts/${doomed}`, root), 204);

  expect(liveIds.length + deletedIds.length).toBeGreaterThanOrEqual(50);
  return {
    root,
    ctx2,
    tokens,
    schemaIds: [contact.id, note.id, scratch.id],
    ctx2SchemaIds: [s2.id],
    liveIds,
    deletedIds,
    ctx2RecordIds,
  };
}

/** The responses a rebuild must reproduce. */
async function capture(api: Api, w: World): Promise<Snapshot> {
  const root = w.root;
  const h2 = { 'x-context-id': w.ctx2 };
  const snap: Snapshot = {};
  snap['GET /v1/schemas'] = await pages(api, '/v1/schemas?limit=2', root);
  snap['GET /v1/schemas default limit'] = await pages(api, '/v1/schemas', root);
  snap['GET /v1/schemas ctx2'] = await pages(api, '/v1/schemas', root, h2);
  for (const id of w.schemaIds) {
    snap[`GET /v1/schemas/${id}`] = norm(await api.get(`/v1/schemas/${id}`, root));
    snap[`GET /v1/schemas/${id}/versions`] = await pages(api, `/v1/schemas/${id}/versions`, root);
  }
  for (const id of w.ctx2SchemaIds)
    snap[`GET /v1/schemas/${id} ctx2`] = norm(await api.get(`/v1/schemas/${id}`, root, h2));

  snap['GET /v1/records'] = await pages(api, '/v1/records?limit=7', root);
  snap['GET /v1/records includePayload'] = await pages(api, '/v1/records?limit=7&includePayload=true', root);
  snap['GET /v1/records limit=100 includePayload'] = await pages(
    api,
    '/v1/records?limit=100&includePayload=true',
    root,
  );
  snap['GET /v1/records type=contact'] = await pages(api, '/v1/records?type=contact&limit=5&includePayload=true', root);
  snap['GET /v1/records type=note'] = await pages(api, '/v1/records?type=note&limit=5', root);
  snap['GET /v1/records userId=alice'] = await pages(api, '/v1/records?userId=alice&includePayload=true', root);
  snap['GET /v1/records scope=team:a'] = await pages(api, '/v1/records?scope=team:a', root);
  snap['GET /v1/records ctx2'] = await pages(api, '/v1/records?includePayload=true', root, h2);
  snap['GET /v1/records (reader token)'] = await pages(
    api,
    '/v1/records?limit=10&includePayload=true',
    w.tokens.reader,
  );
  snap['GET /v1/records (alice token)'] = await pages(api, '/v1/records?includePayload=true', w.tokens.alice);
  snap['GET /v1/records (team-a token)'] = await pages(api, '/v1/records?includePayload=true', w.tokens.teamA);
  snap['GET /v1/records (ctx2 token)'] = await pages(api, '/v1/records?includePayload=true', w.tokens.ctx2);
  snap['GET /v1/records (deleted context token)'] = await pages(api, '/v1/records', w.tokens.doomed);

  for (const id of w.liveIds) {
    snap[`GET /v1/records/${id}`] = norm(await api.get(`/v1/records/${id}`, root));
    snap[`GET /v1/records/${id}/versions`] = await pages(api, `/v1/records/${id}/versions?limit=2`, root);
    snap[`GET /v1/records/${id}/tombstone`] = norm(await api.get(`/v1/records/${id}/tombstone`, root));
  }
  for (const id of w.deletedIds) {
    snap[`GET /v1/records/${id}`] = norm(await api.get(`/v1/records/${id}`, root));
    snap[`GET /v1/records/${id}/versions`] = await pages(api, `/v1/records/${id}/versions`, root);
    snap[`GET /v1/records/${id}/tombstone`] = norm(await api.get(`/v1/records/${id}/tombstone`, root));
  }
  for (const id of w.ctx2RecordIds) {
    snap[`GET /v1/records/${id} ctx2`] = norm(await api.get(`/v1/records/${id}`, root, h2));
    snap[`GET /v1/records/${id}/versions ctx2`] = await pages(api, `/v1/records/${id}/versions`, root, h2);
    snap[`GET /v1/records/${id}/tombstone ctx2`] = norm(await api.get(`/v1/records/${id}/tombstone`, root, h2));
    snap[`GET /v1/records/${id} from default context`] = norm(await api.get(`/v1/records/${id}`, root));
  }

  snap['GET /v1/contexts'] = await pages(api, '/v1/contexts?limit=1', root);
  snap['GET /v1/contexts (ctx2 token)'] = await pages(api, '/v1/contexts', w.tokens.ctx2);
  snap['GET /v1/contexts (reader token)'] = await pages(api, '/v1/contexts', w.tokens.reader);
  snap['GET /v1/contexts (deleted context token)'] = norm(await api.get('/v1/contexts', w.tokens.doomed));
  return snap;
}

/** Sanity checks on a snapshot, so that "equal" cannot mean "equally empty". */
function checkSnapshot(snap: Snapshot, w: World) {
  const list = (k: string) => (snap[k] as Resp[]).flatMap((p) => (p.body as { data: any[] }).data);
  const all = list('GET /v1/records limit=100 includePayload');
  expect(all.map((r) => r.id).sort()).toEqual([...w.liveIds].sort());
  expect(list('GET /v1/records').map((r) => r.id)).toEqual(all.map((r) => r.id));
  expect(
    list('GET /v1/schemas')
      .map((s) => s.typeName)
      .sort(),
  ).toEqual(['contact', 'note']);
  expect(list('GET /v1/records ctx2')).toHaveLength(3);
  expect(list('GET /v1/records (alice token)').every((r) => r.userId === 'alice')).toBe(true);
  expect(list('GET /v1/records (alice token)').length).toBeGreaterThan(0);
  expect(list('GET /v1/records (team-a token)').every((r) => r.scopes.includes('team:a'))).toBe(true);
  expect(list('GET /v1/records (team-a token)').length).toBeGreaterThan(0);
  expect((snap['GET /v1/contexts (deleted context token)'] as Resp).status).toBe(401);
  expect(list('GET /v1/contexts').length).toBe(2);
  // sensitive values are masked everywhere
  const text = JSON.stringify(snap);
  expect(text).not.toMatch(/@example\.com|s3cret|new-secret|patched-secret|"hers"/);
  for (const id of w.liveIds) {
    expect((snap[`GET /v1/records/${id}`] as Resp).status).toBe(200);
    expect((snap[`GET /v1/records/${id}/tombstone`] as Resp).status).toBe(404);
  }
  for (const id of w.deletedIds) {
    expect((snap[`GET /v1/records/${id}`] as Resp).status).toBe(404);
    const t = snap[`GET /v1/records/${id}/tombstone`] as Resp;
    expect(t.status).toBe(200);
    expect(t.body).toMatchObject({ id, entityKind: 'record' });
    const rows = (snap[`GET /v1/records/${id}/versions`] as Resp[]).flatMap((p) => (p.body as { data: any[] }).data);
    expect(rows.at(-1)).toMatchObject({ eventType: 'RecordDeleted', state: null });
  }
  const updated = (
    snap[`GET /v1/records/${w.liveIds.find((id) => (snap[`GET /v1/records/${id}`] as any).body.version > 1)}`] as
      Resp | undefined
  )?.body;
  expect(updated).toBeDefined();
}

/** Drops every read-model table while the service is stopped (keeps the event log and the checkpoint). */
async function dropReadModels(engine: Engine, dataDir: string, databaseUrl: string | undefined): Promise<string[]> {
  const listSql =
    `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'rm\\_%' ORDER ` +
    `BY tablename`;
  if (engine === 'pglite') {
    const db = await PGlite.create({ dataDir: join(dataDir, 'pg') });
    try {
      const names = (await db.query<{ tablename: string }>(listSql)).rows.map((r) => r.tablename);
      for (const t of names) await db.exec(`DROP TABLE ${t} CASCADE`);
      return names;
    } finally {
      await db.close();
    }
  }
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const names = (await c.query<{ tablename: string }>(listSql)).rows.map((r) => r.tablename);
    for (const t of names) await c.query(`DROP TABLE ${t} CASCADE`);
    return names;
  } finally {
    await c.end();
  }
}

function rebuildSuite(engine: Engine) {
  const dir = tempDir(`svc-rebuild-${engine}-`);
  const children: ChildProcess[] = [];
  let dropSchema: (() => Promise<void>) | undefined;
  let env: Record<string, string> = { ...NO_SERVER_ENGINES };
  let port: number;
  let api: Api;
  let world: World;
  let before: Snapshot;
  const timings: Record<string, number> = {};

  const start = async () => {
    const s = await spawnService(dir.dir, port, env);
    children.push(s.child);
    api = s.api;
    return s;
  };
  const stop = async () => {
    const c = children[children.length - 1];
    if (c.exitCode !== null || c.signalCode !== null) return;
    c.kill('SIGTERM');
    await waitForExit(c);
    expect(c.exitCode).toBe(0);
  };

  beforeAll(async () => {
    if (engine === 'postgres') {
      const s = await freshPostgresSchema(serverUrl('postgres')!);
      dropSchema = s.drop;
      env = { ...NO_SERVER_ENGINES, DATABASE_URL: s.url };
    }
    port = await freePort();
    let t = Date.now();
    await start();
    const boot = JSON.parse(readFileSync(join(dir.dir, 'bootstrap.json'), 'utf8')) as Bootstrap;
    world = await populate(api, boot.tenants.live.rootKey);
    timings.populate = Date.now() - t;
    t = Date.now();
    before = await capture(api, world);
    timings.capture = Date.now() - t;
    checkSnapshot(before, world);
    // The same responses twice in a row: the comparison is meaningful.
    expect(await capture(api, world)).toEqual(before);
    await stop();
  }, 240_000);

  afterAll(async () => {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill('SIGKILL');
        await waitForExit(c).catch(() => {});
      }
    }
    await dropSchema?.().catch(() => {});
    dir.remove();
    // eslint-disable-next-line no-console
    console.log(`rebuild (${engine}) timings ms: ${JSON.stringify(timings)}`);
  }, 60_000);

  it('an unknown projection name makes rebuild exit non-zero and names the known ones', async () => {
    const r = await runRebuild({ DATA_DIR: dir.dir, ...env }, 'no-such-projection');
    expect(r.code, r.out).not.toBe(0);
    expect(r.code).not.toBeNull();
    expect(r.out).toContain("unknown projection 'no-such-projection'");
    expect(r.out).not.toContain('rebuilt');
  }, 150_000);

  it('`rebuild all` exits 0, prints "rebuilt", and the restarted service answers exactly as before', async () => {
    const r = await runRebuild({ DATA_DIR: dir.dir, ...env }, 'all');
    timings.rebuild = r.ms;
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('rebuilt');
    await start();
    const after = await capture(api, world);
    checkSnapshot(after, world);
    expect(after).toEqual(before);
    await stop();
  }, 240_000);

  it('after every read-model table is dropped by hand, `rebuild all` restores the same responses', async () => {
    const dropped = await dropReadModels(engine, dir.dir, env.DATABASE_URL);
    expect(dropped).toEqual(
      expect.arrayContaining([
        'rm_records',
        'rm_record_payloads',
        'rm_schemas',
        'rm_versions',
        'rm_tombstones',
        'rm_contexts',
        'rm_credentials',
      ]),
    );
    const r = await runRebuild({ DATA_DIR: dir.dir, ...env }, 'all');
    timings.rebuildAfterDrop = r.ms;
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('rebuilt');
    await start();
    const after = await capture(api, world);
    checkSnapshot(after, world);
    expect(after).toEqual(before);
    // and the service still takes writes after the rebuild, with read-your-writes
    const w = await api.post('/v1/records', world.root, { typeName: 'note', payload: { title: 'after rebuild' } });
    expect(w.status, w.text).toBe(201);
    const g = await api.get(`/v1/records/${w.body.id}`, world.root);
    expect(g.status).toBe(200);
    expect(g.body.payload).toEqual({ title: 'after rebuild' });
    await stop();
  }, 240_000);
}

describe('rebuild on the embedded engine (PGlite)', () => {
  rebuildSuite('pglite');
});

if (serverUrl('postgres')) {
  describe('rebuild on PostgreSQL (DATABASE_URL)', () => {
    rebuildSuite('postgres');
  });
} else {
  describe.skip('rebuild on PostgreSQL: skipped because DATABASE_URL is not set', () => {
    it('needs a PostgreSQL server', () => {});
  });
}
