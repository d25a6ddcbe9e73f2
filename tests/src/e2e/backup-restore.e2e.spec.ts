import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync, gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freshPostgresSchema, SERVER_ENGINES, serverUrl, tempDir } from '../support/engines';
import {
  eventually,
  inProcessOnly,
  OPERATOR_TOKEN,
  ROOT,
  startService,
  type Api,
  type TestService,
} from '../support/service';

/**
 * Backup and restore (docs/operations.md "Backup and restore"): a service with records (a sensitive field, updates, a
 * delete), folders, documents (a text and an uploaded file), TEXT and SEMANTIC search, a webhook, a script and usage is
 * backed up with `npm run backup`, restored with `npm run restore` into an empty data directory (and an empty schema
 * on PostgreSQL), and every read of the restored service is compared with the original's.
 */

const ENGINES = ['embedded', ...(serverUrl('postgres') ? ['postgres'] : [])] as const as readonly (
  'embedded' | 'postgres'
)[];
/** Children inherit this environment: server engines are blanked unless the variant passes its own. */
const NO_SERVER_ENGINES: Record<string, string> = Object.fromEntries(
  Object.values(SERVER_ENGINES).map((e) => [e.env, '']),
);

function run(
  script: 'backup' | 'restore',
  file: string,
  env: Record<string, string>,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    let out = '';
    const child = spawn(process.execPath, ['--import', 'tsx', `deploy/src/${script}.ts`, file], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...NO_SERVER_ENGINES,
        SERVICE_SECRET: '',
        OBJECT_STORE_URL: '',
        LOG_LEVEL: 'warn',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const t = setTimeout(() => child.kill('SIGKILL'), 300_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(t);
      resolve({ code, out });
    });
  });
}

async function ok(p: Promise<{ status: number; text: string; body: any }>, status = 200) {
  const r = await p;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

interface World {
  root: string;
  developer: string;
  tenantId: string;
  recordIds: string[];
  docIds: string[];
  fileDocId: string;
  folderIds: string[];
  typeName: string;
}

async function populate(svc: TestService): Promise<World> {
  const api = svc.api;
  const root = svc.bootstrap.tenants.live.rootKey;
  const typeName = 'patient';
  await ok(
    api.post('/v1/schemas', root, {
      typeName,
      displayName: 'Patient',
      allowedSurfaces: ['record', 'document'],
      fields: [
        { fieldId: 'name', fieldType: 'string', required: true },
        { fieldId: 'ssn', fieldType: 'string', sensitive: true },
        { fieldId: 'code', fieldType: 'string' },
      ],
      lookupFields: [{ fieldName: 'code', unique: true }, 'ssn'],
    }),
    201,
  );
  const recordIds: string[] = [];
  for (let i = 0; i < 8; i++)
    recordIds.push(
      (
        await ok(
          api.post('/v1/records', root, {
            typeName,
            payload: { name: `Patient ${i}`, ssn: `123-45-${1000 + i}`, code: `P-${i}` },
          }),
          201,
        )
      ).id,
    );
  await ok(
    api.put(`/v1/records/${recordIds[1]}`, root, {
      payload: { name: 'Renamed 1', ssn: '999-99-0001', code: 'P-1' },
      status: 'reviewed',
    }),
  );
  await ok(api.patch(`/v1/records/${recordIds[2]}`, root, { payload: { name: 'Patched 2' } }));
  await ok(api.del(`/v1/records/${recordIds[3]}`, root), 204);

  const folderIds = [
    (await ok(api.post('/v1/folders', root, { name: 'Geology' }), 201)).id,
    (await ok(api.post('/v1/folders', root, { name: 'Sea' }), 201)).id,
  ];
  const texts = [
    ['Volcanoes', 'Basalt flows from shield volcanoes; lava cools into dark rock.', 'HYBRID', folderIds[0]],
    ['Glaciers', 'Ice sheets carve valleys and leave moraines behind them.', 'TEXT', folderIds[0]],
    ['Tides', 'The moon pulls the oceans, raising tides twice a day along the coast.', 'HYBRID', folderIds[1]],
  ];
  const docIds: string[] = [];
  for (const [title, text, indexMode, folderId] of texts)
    docIds.push((await ok(api.post('/v1/documents', root, { title, text, indexMode, folderId }), 201)).id);
  const up = await ok(
    api.post('/v1/documents/upload', root, {
      title: 'Lighthouse',
      fileName: 'l.txt',
      fileType: 'text/plain',
      indexMode: 'HYBRID',
      storeText: true,
    }),
    201,
  );
  const put = await fetch(up.uploadUrl, {
    method: 'PUT',
    headers: { 'content-type': 'text/plain', [up.requiredHeaderName]: up.requiredHeaderValue },
    body: 'The lighthouse keeper climbs the stairs every evening to light the lamp.',
  });
  expect(put.status, await put.text()).toBe(200);
  docIds.push(up.id);

  await ok(api.post('/v1/scripts', root, { name: 'double', source: 'export default () => 42' }), 201);
  await ok(api.post('/v1/scripts', root, { name: 'double', source: 'export default () => 84' }), 201);
  expect(
    (
      await ok(
        api.post('/v1/scripts/execute', root, { scriptRef: { name: 'double', version: 'latest' }, input: { x: 21 } }),
      )
    ).result,
  ).toBe(84);

  // Every document indexed (the file extracted, vectors written) before anything is read for the comparison.
  for (const id of docIds)
    await eventually(
      async () => ((await api.get(`/v1/documents/${id}`, root)).body?.status === 'INDEXED' ? true : null),
      120_000,
      200,
    );
  await eventually(
    async () =>
      (await api.post('/v1/search', root, { query: 'lighthouse keeper', mode: 'SEMANTIC' })).body?.results?.length
        ? true
        : null,
    60_000,
    200,
  );
  // Registered after the indexing: nothing is delivered (its host resolves through the test resolver only).
  const developer = svc.bootstrap.developerToken;
  const tenantId = svc.bootstrap.tenants.live.tenantId;
  // A webhook's host must be under a verified domain of the account.
  await ok(api.post('/developer/domains', developer, { domain: 'example.test' }), 201);
  await ok(
    api.post('/operator/domains/verify', OPERATOR_TOKEN, {
      accountId: svc.bootstrap.accountId,
      domain: 'example.test',
    }),
  );
  await ok(
    api.post('/developer/webhooks', developer, {
      tenantId,
      url: 'https://hooks.example.test/backup',
      events: ['document.indexed'],
    }),
    201,
  );
  return { root, developer, tenantId, recordIds, docIds, fileDocId: up.id, folderIds, typeName };
}

/** Every page of a list; cursors carry a random nonce, so pages are compared by their data. */
async function pages(api: Api, path: string, token: string): Promise<unknown[]> {
  const out: unknown[] = [];
  let cursor: string | null = null;
  for (let n = 0; n < 100; n++) {
    const body = await ok(
      api.get(cursor ? `${path}${path.includes('?') ? '&' : '?'}startFrom=${encodeURIComponent(cursor)}` : path, token),
    );
    out.push(body.data);
    cursor = body.nextCursor;
    if (cursor === null) return out;
  }
  throw new Error(`too many pages for ${path}`);
}

/** The reads compared: lists, lookups, versions, a document's text and file, search hits, scripts and webhooks. */
async function snapshot(api: Api, w: World): Promise<Record<string, unknown>> {
  const s: Record<string, unknown> = {};
  const { root } = w;
  s.schemas = await pages(api, '/v1/schemas', root);
  s.records = await pages(api, `/v1/records?type=${w.typeName}&includePayload=true&limit=3`, root);
  for (const id of w.recordIds) {
    const r = await api.get(`/v1/records/${id}`, root);
    s[`record ${id}`] = [r.status, r.body?.requestId ? r.body.code : r.body];
    s[`versions ${id}`] = r.status === 200 ? await pages(api, `/v1/records/${id}/versions?limit=2`, root) : null;
  }
  // The sensitive field is found by its clear value (blind index keyed by the service secret).
  s.lookupSensitive = await ok(
    api.post('/v1/records/lookup', root, { type: w.typeName, field: 'ssn', value: '999-99-0001' }),
  );
  s.lookupCode = await ok(api.post('/v1/records/lookup', root, { type: w.typeName, field: 'code', value: 'P-4' }));
  s.folders = await pages(api, '/v1/folders', root);
  s.documents = await pages(api, '/v1/documents?limit=2', root);
  for (const id of w.docIds) {
    s[`document ${id}`] = await ok(api.get(`/v1/documents/${id}`, root));
    s[`document versions ${id}`] = await pages(api, `/v1/documents/${id}/versions`, root);
    s[`text ${id}`] = (await api.get(`/v1/documents/${id}/text`, root)).text;
  }
  const dl = await ok(api.get(`/v1/documents/${w.fileDocId}/download-url`, root));
  s.download = await (await fetch(dl.downloadUrl)).text();
  for (const [query, mode] of [
    ['lava rock', 'TEXT'],
    ['moraines', 'TEXT'],
    ['ocean tides and the moon', 'SEMANTIC'],
    ['someone climbing to a light at night', 'SEMANTIC'],
    ['volcanic basalt', 'HYBRID'],
  ]) {
    const r = await ok(api.post('/v1/search', root, { query, mode }));
    expect(r.results.length, `${mode} ${query}`).toBeGreaterThan(0);
    // The hits in order, with their scores and snippets.
    s[`search ${mode} ${query}`] = r.results;
  }
  s.scripts = await pages(api, '/v1/scripts', root);
  s.scriptVersions = await pages(api, '/v1/scripts?name=double', root);
  s.webhooks = await pages(api, `/developer/webhooks?tenantId=${w.tenantId}`, w.developer);
  s.domains = await pages(api, '/developer/domains', w.developer);
  return s;
}

/** The usage report once every metered read so far is in the log and projected; this read itself is not metered. */
async function usage(svc: TestService, w: World): Promise<unknown> {
  await svc.service.meter.flush();
  const head = await svc.service.store.headPosition();
  await eventually(async () => (svc.service.runner.stats.position >= head ? true : null), 30_000, 50);
  svc.service.meter.enabled = false;
  return ok(svc.api.get('/v1/usage', w.root));
}

describe.skipIf(!!inProcessOnly).each(ENGINES)('backup and restore (%s)', (engine) => {
  const cleanups: Array<() => unknown> = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it(
    'restores into an empty data directory a service whose every read equals the original',
    { timeout: 600_000 },
    async () => {
      const base = serverUrl('postgres');
      const work = tempDir('svc-backup-');
      cleanups.push(work.remove);
      const origDir = join(work.dir, 'original');
      const origDb = engine === 'postgres' ? await freshPostgresSchema(base!) : undefined;
      if (origDb) cleanups.push(origDb.drop);
      const dnsFile = join(work.dir, 'dns.json');
      writeFileSync(dnsFile, JSON.stringify({ 'hooks.example.test': ['93.184.215.14'] }));
      const env = { WEBHOOK_TEST_DNS_FILE: dnsFile, ...(origDb ? { DATABASE_URL: origDb.url } : {}) };
      const original = await startService({ dataDir: origDir, env });
      cleanups.push(() => original.stop().catch(() => undefined)); // embedded: closed once already
      const w = await populate(original);
      const before = await snapshot(original.api, w);
      const usageBefore = await usage(original, w);

      const file = join(work.dir, 'svc.backup');
      // PostgreSQL: online, beside the running service. Embedded: the database is single-process, so the service stops
      // first.
      if (engine === 'embedded') await original.service.close();
      // Online (PostgreSQL): another tenant keeps writing during the backup; the file is still a whole prefix of the
      // log (checked by the restore against its trailer), and the compared tenant's reads are untouched either way.
      let writing = engine === 'postgres';
      let written = 0;
      const writer = (async () => {
        while (writing) {
          await ok(
            original.api.post('/v1/folders', original.bootstrap.tenants.test.rootKey, {
              name: `during backup ${written}`,
            }),
            201,
          );
          written++;
        }
      })();
      const backup = await run('backup', file, { DATA_DIR: origDir, ...env });
      writing = false;
      await writer;
      expect(backup.code, backup.out).toBe(0);
      if (engine === 'postgres') expect(written).toBeGreaterThan(0);
      expect(backup.out).toMatch(/backed up \d+ events \(up to position \d+\) and [1-9]\d* blobs/);

      // A data directory that holds anything is refused, untouched.
      const busy = join(work.dir, 'busy');
      mkdirSync(busy);
      writeFileSync(join(busy, 'keep.txt'), 'x');
      const busyRun = await run('restore', file, { DATA_DIR: busy });
      expect(busyRun.code, busyRun.out).toBe(2);
      expect(busyRun.out).toContain('is not empty');

      // A backup cut short (its trailer lost) is refused before anything is written.
      const lines = gunzipSync(readFileSync(file)).toString('utf8').trimEnd().split('\n');
      const cut = join(work.dir, 'cut.backup');
      writeFileSync(cut, gzipSync(lines.slice(0, -1).join('\n') + '\n'));
      const cutRun = await run('restore', cut, { DATA_DIR: join(work.dir, 'cut') });
      expect(cutRun.code, cutRun.out).toBe(2);
      expect(cutRun.out).toContain('truncated');
      expect(existsSync(join(work.dir, 'cut'))).toBe(false);

      const restoredDir = join(work.dir, 'restored');
      const restoredDb = engine === 'postgres' ? await freshPostgresSchema(base!) : undefined;
      if (restoredDb) cleanups.push(restoredDb.drop);
      const renv = { WEBHOOK_TEST_DNS_FILE: dnsFile, ...(restoredDb ? { DATABASE_URL: restoredDb.url } : {}) };
      const restore = await run('restore', file, { DATA_DIR: restoredDir, ...renv });
      expect(restore.code, restore.out).toBe(0);
      expect(restore.out).toMatch(/rebuilt read-models/);
      expect(existsSync(join(restoredDir, 'service-secret.key'))).toBe(true);

      const restored = await startService({ dataDir: restoredDir, env: renv });
      cleanups.push(() => restored.stop());
      restored.service.meter.enabled = false;
      // The restored service is not metered from here on, so its usage is the backup's.
      expect(await ok(restored.api.get('/v1/usage', w.root))).toEqual(usageBefore);
      // Vectors are recomputed by the restored search projector: wait until it has caught up with the log.
      const head = await restored.service.store.headPosition();
      await eventually(
        async () => ((restored.service.searchIndexer?.stats.position ?? head) >= head ? true : null),
        120_000,
        200,
      );
      const after = await snapshot(restored.api, w);
      expect(after).toEqual(before);
      // A write to the restored service goes on from the restored log.
      await ok(
        restored.api.post('/v1/records', w.root, {
          typeName: w.typeName,
          payload: { name: 'After restore', ssn: '000-00-0000', code: 'P-new' },
        }),
        201,
      );
    },
  );
});
