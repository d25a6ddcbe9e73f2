/**
 * `tsx tests/eval/profile-ingest.ts --dataset <dir> [--docs 600] [--concurrency 8] [--index-mode HYBRID|TEXT]
 * [--per-item]`
 *
 * Where the time of a document ingest goes (issue 7): the whole service in this process on a
 * fresh temporary DATA_DIR, the first `--docs` corpus documents POSTed as inline HYBRID
 * documents (as tests/eval/search.ts does), then the search projector is timed stage by
 * stage (embedder, vector writes, text leg, catalogue, outcome appends, document loads)
 * until it has caught up with the log. ELASTICSEARCH_URL passes through (keyword leg on Elasticsearch);
 * --per-item takes the batched index writes away (the indexer's path before issue 7). Wall-clock figures; the stages
 * overlap nothing inside the projector (it is sequential), but the HTTP writes and the other projectors share the CPU
 * while the documents are being written.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { buildService, loadConfig } from '@svc/deploy';
import { documentText, loadBeir } from './dataset';

const { values: args } = parseArgs({
  options: {
    dataset: { type: 'string' },
    docs: { type: 'string', default: '600' },
    concurrency: { type: 'string', default: '8' },
    'per-item': { type: 'boolean', default: false },
    'index-mode': { type: 'string', default: 'HYBRID' },
  },
  strict: true,
});
const timings = new Map<string, { ms: number; calls: number; units: number }>();
function wrap(obj: any, method: string, label: string, units?: (args: any[]) => number) {
  const orig = obj[method];
  if (typeof orig !== 'function') return;
  obj[method] = async function (...a: any[]) {
    const t0 = performance.now();
    try {
      return await orig.apply(this, a);
    } finally {
      const t = timings.get(label) ?? { ms: 0, calls: 0, units: 0 };
      t.ms += performance.now() - t0;
      t.calls += 1;
      t.units += units ? units(a) : 0;
      timings.set(label, t);
    }
  };
}

async function main() {
  const data = loadBeir(resolve(args.dataset!));
  const docs = data.corpus.slice(0, Number(args.docs));
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-profile-ingest-'));
  const operatorToken = randomBytes(18).toString('base64url');
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    OPERATOR_TOKEN: operatorToken,
  };
  for (const k of ['ELASTICSEARCH_URL', 'ELASTICSEARCH_INDEX_PREFIX']) if (process.env[k]) env[k] = process.env[k]!;
  const service = await buildService(loadConfig(env as NodeJS.ProcessEnv), (m) =>
    process.stderr.write(`[service] ${m}\n`),
  );
  const ix = service.searchIndexer!;
  const e = ix.engines;
  // --per-item: the indexer's old path (a LanceDB delete + add, and a text-index write, per item), for before/after
  // figures.
  if (args['per-item']) {
    (e.vectors as { replaceItems?: unknown }).replaceItems = undefined;
    (e.text as { replaceItems?: unknown }).replaceItems = undefined;
  }
  wrap(e.embedder, 'embed', 'embedder.embed (texts)', (a) => a[0].length);
  wrap(e.vectors, 'replaceItem', 'vectors.replaceItem (items)', () => 1);
  wrap(e.vectors, 'replaceItems', 'vectors.replaceItems (items)', (a) => a[0].length);
  wrap(e.vectors, 'deleteItem', 'vectors.deleteItem', () => 1);
  wrap(e.text, 'replaceItem', 'text.replaceItem (items)', () => 1);
  wrap(e.text, 'replaceItems', 'text.replaceItems (items)', (a) => a[0].length);
  wrap(e.catalogue, 'put', 'catalogue.put', () => 1);
  wrap(e.catalogue, 'items', 'catalogue.items');
  wrap(e.catalogue, 'vectorCount', 'catalogue.vectorCount');
  wrap(ix, 'applyBatch', 'applyBatch (events)', (a) => a[0].length);
  wrap(ix, 'resolveDocuments', 'resolveDocuments (docs)', (a) => a[0].size);
  wrap(ix, 'flush', 'flush');
  wrap(ix, 'appendDocumentOutcomes', 'appendDocumentOutcomes (docs)', (a) => a[0].length);
  wrap(ix, 'appendOutcomes', 'appendOutcomes');
  wrap(e.vectors, 'maintain', 'vectors.maintain');

  await service.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = service.app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const pool = new Pool(url, { connections: Number(args.concurrency) });
  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await pool.request({
      method: method as 'GET',
      path,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.statusCode, body: (await res.body.json()) as any };
  };
  const acc = await call('POST', '/operator/accounts', operatorToken, { name: 'profile', plan: 'enterprise' });
  const key = acc.body.tenants.live.rootKey as string;
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Number(args.concurrency) }, async () => {
      while (next < docs.length) {
        const d = docs[next++];
        const r = await call('POST', '/v1/documents', key, {
          title: d.title.slice(0, 1024) || d._id,
          text: documentText(d),
          indexMode: args['index-mode']!.toUpperCase(),
          externalId: d._id,
        });
        if (r.status !== 201) throw new Error(`POST answered ${r.status}`);
      }
    }),
  );
  const written = (performance.now() - t0) / 1000;
  const head = await service.store.headPosition();
  while (!(await ix.waitFor(head, 5000)))
    process.stderr.write(`indexer at ${ix.current}/${head}, ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);
  const total = (performance.now() - t0) / 1000;
  console.log(
    `${docs.length} documents: written in ${written.toFixed(1)} s, indexed after ${total.toFixed(1)} s ` +
      `(${(docs.length / total).toFixed(1)} docs/s); batches ${ix.stats.batches}, events ${ix.stats.events}`,
  );
  for (const [k, v] of [...timings].sort((a, b) => b[1].ms - a[1].ms))
    console.log(
      `${k.padEnd(34)} ${(v.ms / 1000).toFixed(2).padStart(8)} s  ${String(v.calls).padStart(6)} ` +
        `calls${v.units ? `  ${v.units} units, ${(v.units / (v.ms / 1000)).toFixed(1)}/s` : ''}`,
    );
  await pool.close();
  await service.close();
  rmSync(dataDir, { recursive: true, force: true });
}
main().then(
  () => process.exit(0),
  (e) => (console.error(e), process.exit(1)),
);
