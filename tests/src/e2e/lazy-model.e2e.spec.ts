import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/engines';
import { eventually, freePort, spawnService, waitForExit, type Api, type Bootstrap } from '../support/service';

/**
 * The built-in model's process (about 150 MB resident) is not started by an empty service (docs/operations.md
 * "Memory"): /readyz says `embeddings.loaded: false`, the first semantic query starts it and then /readyz says
 * `loaded: true`. A service whose search index already holds items loads it at start, so their first semantic
 * query does not wait for it.
 */
const dir = tempDir('svc-lazy-model-');
let child: ChildProcess | undefined;

/** Processes the service started (the model's), from /proc. */
const childProcesses = (pid: number): number[] =>
  readdirSync(`/proc/${pid}/task`).flatMap((t) =>
    readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8')
      .split(' ')
      .filter(Boolean)
      .map(Number),
  );
const isModel = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('embed-worker');

async function start(): Promise<{ api: Api; key: string; pid: number }> {
  const s = await spawnService(dir.dir, await freePort());
  child = s.child;
  const key = (JSON.parse(readFileSync(join(dir.dir, 'bootstrap.json'), 'utf8')) as Bootstrap).tenants.live.rootKey;
  return { api: s.api, key, pid: s.child.pid! };
}
async function stop() {
  child?.kill('SIGTERM');
  if (child) await waitForExit(child);
  child = undefined;
}

afterAll(async () => {
  await stop();
  dir.remove();
});

describe.skipIf(process.platform !== 'linux')('the built-in model starts on first need', () => {
  it('an empty service runs no model process until the first semantic query; a service with an index loads it at start', async () => {
    let { api, key, pid } = await start();
    const ready = await api.get('/readyz', '');
    expect(ready.status).toBe(200);
    expect(ready.body.embeddings).toMatchObject({ model: 'bge-small-en-v1.5-q', kind: 'builtin', loaded: false });
    // Some time after start: still no model process (nothing warmed it in the background).
    await new Promise((r) => setTimeout(r, 1500));
    expect(childProcesses(pid).filter(isModel)).toEqual([]);

    const doc = await api.post('/v1/documents', key, { title: 'Whales', text: 'Humpback whales sing long songs while they migrate.', indexMode: 'HYBRID' });
    expect(doc.status, doc.text).toBe(201);
    await eventually(async () => ((await api.get(`/v1/documents/${doc.body.id}`, key)).body.status === 'INDEXED' ? true : null), 90_000, 100);
    const s = await api.post('/v1/search', key, { query: 'songs of whales', mode: 'SEMANTIC' });
    expect(s.status, s.text).toBe(200);
    expect(s.body.results.map((r: { documentId: string }) => r.documentId)).toContain(doc.body.id);
    expect((await api.get('/readyz', '')).body.embeddings.loaded).toBe(true);
    expect(childProcesses(pid).filter(isModel).length).toBeGreaterThan(0);
    await stop();

    // Restarted on the same data: the index holds an item, so the model is loaded at start without a query.
    ({ api, key, pid } = await start());
    await eventually(async () => ((await api.get('/readyz', '')).body.embeddings?.loaded === true ? true : null), 60_000, 100);
    expect(childProcesses(pid).filter(isModel).length).toBeGreaterThan(0);
  }, 240_000);
});
