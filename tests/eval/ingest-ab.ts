/**
 * The built-in model's indexing rate on the first documents of a BEIR corpus, two settings alternating (A B A B …),
 * each round a fresh in-process service (embedded engines, fresh DATA_DIR), so a shared machine's load falls on both
 * alike. A: this environment; B: this environment plus `--b KEY=VALUE` (repeatable; e.g. EMBEDDING_BUSY_GAP_MS=0).
 * The documents go in as `npm run eval:search` sends them (HYBRID, title + blank line + abstract, 8 at a time); a
 * round ends when the last one left PENDING_INDEX. Each line: passages per second of the round, the share of
 * members × time the model processes spent in calls, and their rate while busy.
 *
 *   npx tsx --conditions=svc-source tests/eval/ingest-ab.ts --dataset <dir> [--docs 300] [--rounds 4] --b KEY=VALUE
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { buildService, loadConfig } from '@svc/deploy';
import { builtinModelStats } from '@svc/search';
import { documentText, loadBeir } from './dataset';

const { values: args } = parseArgs({
  options: {
    dataset: { type: 'string', default: process.env.BENCH_PEERS_DATASET ?? '/work/shared/datasets/scifact' },
    docs: { type: 'string', default: '300' },
    rounds: { type: 'string', default: '4' },
    b: { type: 'string', multiple: true, default: [] },
  },
});
const docs = loadBeir(args.dataset!).corpus.slice(0, Number(args.docs));
const base = { ...process.env };
const arms: Record<string, Record<string, string>> = {
  A: {},
  B: Object.fromEntries(args.b!.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])),
};
const PENDING = ['PENDING_INDEX', 'PENDING_UPLOAD', 'UPLOADED', 'EXTRACTING'];

for (let round = 0; round < Number(args.rounds); round++) {
  const arm = round % 2 ? 'B' : 'A';
  // The built-in embedder reads its settings from process.env when the service builds it.
  for (const k of Object.keys(process.env)) if (!(k in base)) delete process.env[k];
  Object.assign(process.env, base, arms[arm]);
  const dir = mkdtempSync(join(tmpdir(), 'ingest-ab-'));
  const operator = randomBytes(18).toString('base64url');
  const env = {
    ...process.env,
    DATA_DIR: dir,
    PORT: '0',
    HOST: '127.0.0.1',
    OPERATOR_TOKEN: operator,
    RATE_LIMITS: '0',
    LOG_LEVEL: 'warn', // no line per request
  };
  const service = await buildService(loadConfig(env as NodeJS.ProcessEnv), () => {});
  await service.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (service.app.server.address() as { port: number }).port;
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 8 });
  const call = async (method: 'GET' | 'POST', path: string, key: string, body?: unknown) => {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const r = await pool.request({
      method,
      path,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await r.body.json()) as any;
    if (r.statusCode >= 300) throw new Error(`${method} ${path} answered ${r.statusCode}: ${JSON.stringify(json)}`);
    return json;
  };
  try {
    const key = (await call('POST', '/operator/accounts', operator, { name: 'ingest-ab', plan: 'enterprise' })).tenants
      .live.rootKey as string;
    const m0 = { passages: 0, passageBusyMs: 0, ...builtinModelStats() };
    const t0 = performance.now();
    const ids: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < docs.length) {
          const d = docs[next++];
          const body = {
            title: d.title.trim() || d._id,
            text: documentText(d),
            indexMode: 'HYBRID',
            externalId: d._id,
          };
          ids.push((await call('POST', '/v1/documents', key, body)).id);
        }
      }),
    );
    const written = (performance.now() - t0) / 1000;
    for (const id of ids)
      while (PENDING.includes((await call('GET', `/v1/documents/${id}`, key)).status))
        await new Promise((r) => setTimeout(r, 500));
    const secs = (performance.now() - t0) / 1000;
    const m1 = builtinModelStats()!;
    const passages = m1.passages - m0.passages;
    const busy = (m1.passageBusyMs - m0.passageBusyMs) / 1000;
    console.log(
      `round ${round} ${arm} ${JSON.stringify(arms[arm])}: ${docs.length} documents written in ` +
        `${written.toFixed(1)} s, ` +
        `settled in ${secs.toFixed(1)} s; ${passages} passages, ${(passages / secs).toFixed(2)} passages/s; members ` +
        `busy ${((busy / (m1.threads * secs)) * 100).toFixed(0)}% (${((passages * m1.threads) / busy).toFixed(2)} ` +
        `passages/s while busy); load average ${loadavg()[0].toFixed(2)}`,
    );
  } finally {
    await pool.close();
    await service.close();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  }
}
