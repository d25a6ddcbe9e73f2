import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/engines';
import { eventually, freePort, ROOT, spawnService, waitForExit, type Api, type Bootstrap } from '../support/service';

/**
 * `npm start` runs the compiled build (deploy/dist, built by `npm run build`, which `npm ci` runs):
 * the service starts from it, answers a write and a read, and its worker threads (document
 * extraction, the built-in embedding model) start from the .mjs files copied beside the compiled
 * modules. The other suites run the sources through tsx.
 */
const built = existsSync(join(ROOT, 'deploy/dist/start.js'));

describe.skipIf(!built)('compiled start (deploy/dist)', () => {
  const dir = tempDir('svc-compiled-');
  let api: Api;
  let root: string;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    const previous = process.env.SERVICE_RUNTIME;
    process.env.SERVICE_RUNTIME = 'compiled';
    try {
      const s = await spawnService(dir.dir, await freePort());
      api = s.api;
      stop = async () => {
        s.child.kill('SIGTERM');
        await waitForExit(s.child);
      };
    } finally {
      if (previous === undefined) delete process.env.SERVICE_RUNTIME;
      else process.env.SERVICE_RUNTIME = previous;
    }
    root = (JSON.parse(readFileSync(join(dir.dir, 'bootstrap.json'), 'utf8')) as Bootstrap).tenants.live.rootKey;
  });
  afterAll(async () => {
    await stop?.();
    dir.remove();
  });

  it('writes and reads a record', async () => {
    const schema = await api.post('/v1/schemas', root, {
      typeName: 'compiled',
      displayName: 'Compiled',
      allowedSurfaces: ['record'],
      fields: [{ fieldId: 'name', fieldType: 'string', required: true }],
    });
    expect(schema.status, schema.text).toBe(201);
    const created = await api.post('/v1/records', root, { typeName: 'compiled', payload: { name: 'Ada' } });
    expect(created.status, created.text).toBe(201);
    expect((await api.get(`/v1/records/${created.body.id}`, root)).body).toMatchObject({ payload: { name: 'Ada' } });
  });

  it('extracts an uploaded file in the extraction worker and indexes it with the built-in model', async () => {
    const up = await api.post('/v1/documents/upload', root, {
      title: 'Lighthouse',
      fileName: 'l.html',
      fileType: 'text/html',
      indexMode: 'HYBRID',
    });
    expect(up.status, up.text).toBe(201);
    const put = await fetch(up.body.uploadUrl, {
      method: 'PUT',
      headers: { 'content-type': 'text/html', [up.body.requiredHeaderName]: up.body.requiredHeaderValue },
      body: '<html><body><p>The lighthouse keeper climbs the stairs every evening.</p></body></html>',
    });
    expect(put.status, await put.text()).toBe(200);
    const doc = await eventually(
      async () => {
        const r = await api.get(`/v1/documents/${up.body.id}`, root);
        return ['INDEXED', 'FAILED', 'STORED', 'SKIPPED'].includes(r.body?.status) ? r.body : null;
      },
      120_000,
      250,
    );
    expect(doc.status, JSON.stringify(doc)).toBe('INDEXED');
    const found = await api.post('/v1/search', root, { query: 'lighthouse keeper', mode: 'SEMANTIC' });
    expect(found.status, found.text).toBe(200);
    expect(found.body.results.length).toBeGreaterThan(0);
  });
});
