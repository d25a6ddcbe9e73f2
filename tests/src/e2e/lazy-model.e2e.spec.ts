import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/engines';
import {
  type Api,
  type Bootstrap,
  eventually,
  freePort,
  inProcessOnly,
  spawnService,
  stopChildren,
} from '../support/service';

/**
 * The built-in model's process (about 150 MB resident) is not started by an empty service (docs/operations.md
 * "Memory"): /readyz says `embeddings.loaded: false`, the first semantic query starts it and then /readyz says
 * `loaded: true`. A service whose search index already holds items loads it at start, so their first semantic
 * query does not wait for it. The service runs as a process of its own, as deployed: a test process runs file after
 * file, and a model pool another file left there would be counted as this service's.
 */
const dir = tempDir('svc-lazy-model-');
let svc: { child: ChildProcess; api: Api } | undefined;

/** Processes the service started running the built-in model, from /proc. */
const modelProcesses = (pid = svc?.child.pid): number[] =>
  (pid === undefined ? [] : readdirSync(`/proc/${pid}/task`))
    .flatMap((t) => {
      try {
        return readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
      } catch {
        return []; // the thread (or the service) ended meanwhile
      }
    })
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('embed-worker');
      } catch {
        return false; // exited meanwhile
      }
    });

afterAll(async () => {
  if (svc) await stopChildren([svc.child]);
  dir.remove();
});
const start = async () => (svc = await spawnService(dir.dir, await freePort()));

describe.skipIf(process.platform !== 'linux' || !!inProcessOnly)('the built-in model starts on first need', () => {
  it(
    'an empty service runs no model process until the first semantic query; a service with an index loads ' +
      'it at start',
    async () => {
      let { api } = await start();
      const key = (JSON.parse(readFileSync(join(dir.dir, 'bootstrap.json'), 'utf8')) as Bootstrap).tenants.live.rootKey;
      const ready = await api.get('/readyz', '');
      expect(ready.status).toBe(200);
      expect(ready.body.embeddings).toMatchObject({ model: 'bge-small-en-v1.5-q', kind: 'builtin', loaded: false });
      // Some time after start: still no model process (nothing warmed it in the background).
      await new Promise((r) => setTimeout(r, 1500));
      expect(modelProcesses()).toEqual([]);

      const doc = await api.post('/v1/documents', key, {
        title: 'Whales',
        text: 'Humpback whales sing long songs while they migrate.',
        indexMode: 'HYBRID',
      });
      expect(doc.status, doc.text).toBe(201);
      await eventually(
        async () => ((await api.get(`/v1/documents/${doc.body.id}`, key)).body.status === 'INDEXED' ? true : null),
        90_000,
        100,
      );
      const s = await api.post('/v1/search', key, { query: 'songs of whales', mode: 'SEMANTIC' });
      expect(s.status, s.text).toBe(200);
      expect(s.body.results.map((r: { documentId: string }) => r.documentId)).toContain(doc.body.id);
      expect((await api.get('/readyz', '')).body.embeddings.loaded).toBe(true);
      const models = modelProcesses();
      expect(models.length).toBeGreaterThan(0);
      await stopChildren([svc!.child]);
      svc = undefined;
      // The model processes end with the service.
      await eventually(
        async () => (models.every((pid) => !readdirSync('/proc').includes(String(pid))) ? true : null),
        20_000,
        100,
      );

      // Restarted on the same data: the index holds an item, so the model is loaded at start without a query.
      ({ api } = await start());
      await eventually(
        async () => ((await api.get('/readyz', '')).body.embeddings?.loaded === true ? true : null),
        60_000,
        100,
      );
      expect(modelProcesses().length).toBeGreaterThan(0);
    },
    240_000,
  );
});
