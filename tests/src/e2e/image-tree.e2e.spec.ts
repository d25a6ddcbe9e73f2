/**
 * deploy/Dockerfile, replayed without Docker (no container can start on our machines): its build stage's COPY lines
 * copy the repository into an empty directory (leaving out what deploy/Dockerfile.dockerignore leaves out), each
 * command of its RUN line runs there in order, and the runtime stage's ENV and CMD start the service from the
 * result. The tree must serve a write, a keyword search and a semantic search (LanceDB vectors of the built-in
 * model), so nothing the service loads was pruned. Prints the tree's size after `npm prune --omit=dev` and after
 * deploy/scripts/prune-image.mjs. The model is copied from this checkout's cache first, so the fetch step verifies
 * it instead of downloading it again.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, ROOT, waitForExit } from '../support/service';

const dockerfile = readFileSync(join(ROOT, 'deploy/Dockerfile'), 'utf8');
const stages = dockerfile.split(/^FROM\s.*$/m).slice(1);
const instructions = (stage: string, name: string) =>
  stage
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.toUpperCase().startsWith(`${name} `))
    .map((l) => l.slice(name.length + 1).trim());
/** Names the build context leaves out (the patterns of Dockerfile.dockerignore this tree has). */
const IGNORED = new Set(['node_modules', 'dist', '.cache', '.git', 'data', 'tmp']);
const ignored = (path: string) =>
  IGNORED.has(basename(path)) ||
  path.endsWith('.tsbuildinfo') ||
  path.endsWith('.log') ||
  /\/tests\/(src|bench|eval)$/.test(path);

/** Runs a shell command in `cwd` without blocking this worker (vitest's RPC times out on a blocked event loop). */
function sh(command: string, cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn('bash', ['-c', command], {
      cwd,
      env: { ...process.env, npm_config_loglevel: 'error' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('error', reject);
    p.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`\`${command}\` exited ${code}: ${err.slice(-2000)}`)),
    );
  });
}
const sizeMb = async (dir: string) => Number((await sh(`du -sm ${JSON.stringify(dir)}`, dir)).split('\t')[0]);

describe('the image, replayed from deploy/Dockerfile', () => {
  const app = mkdtempSync(join(tmpdir(), 'svc-image-'));
  const data = mkdtempSync(join(tmpdir(), 'svc-image-data-'));
  let child: ChildProcess | undefined;
  afterAll(async () => {
    if (child) {
      child.kill('SIGTERM');
      await waitForExit(child).catch(() => child?.kill('SIGKILL'));
    }
    await rm(app, { recursive: true, force: true });
    await rm(data, { recursive: true, force: true });
  }, 240_000);

  it('builds a tree that starts the service and serves writes and both kinds of search', async () => {
    const [build, runtime] = stages;
    for (const copy of instructions(build, 'COPY')) {
      const args = copy.split(/\s+/).filter((a) => !a.startsWith('--'));
      const dest = args.pop()!;
      for (const src of args) {
        const target =
          dest.endsWith('/') || args.length > 1
            ? join(app, dest, basename(src))
            : join(app, dest === '.' || dest === './' ? basename(src) : dest);
        cpSync(join(ROOT, src), target, { recursive: true, filter: (from) => !ignored(from) });
      }
    }
    if (existsSync(join(ROOT, '.cache/models')))
      cpSync(join(ROOT, '.cache/models'), join(app, '.cache/models'), { recursive: true });

    const sizes: Array<[string, number]> = [];
    for (const run of instructions(build, 'RUN'))
      for (const step of run.split('&&').map((s) => s.trim())) {
        await sh(step, app);
        if (/npm prune|prune-image/.test(step)) sizes.push([step, await sizeMb(join(app, 'node_modules'))]);
      }
    for (const [step, mb] of sizes) console.log(`[image] node_modules after \`${step}\`: ${mb} MB`);
    expect(sizes.at(-1)![1]).toBeLessThan(sizes[0][1]);
    expect(existsSync(join(app, 'node_modules/@huggingface/transformers'))).toBe(false);

    // The runtime stage: its ENV, with this test's port, address and data directory; its CMD.
    const env: Record<string, string> = {};
    for (const line of instructions(runtime, 'ENV')) for (const [, k, v] of line.matchAll(/(\w+)=(\S+)/g)) env[k] = v;
    const port = await freePort();
    const cmd = JSON.parse(instructions(runtime, 'CMD')[0]) as string[];
    let out = '';
    child = spawn(process.execPath, cmd.slice(1), {
      cwd: app,
      env: {
        PATH: process.env.PATH ?? '',
        ...env,
        HOST: '127.0.0.1',
        PORT: String(port),
        DATA_DIR: data,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const base = `http://127.0.0.1:${port}`;
    for (const deadline = Date.now() + 90_000; ;) {
      if (child.exitCode !== null) throw new Error(`the image's service exited: ${out}`);
      if (
        await fetch(`${base}/healthz`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      if (Date.now() > deadline) throw new Error(`the image's service did not start: ${out}`);
      await new Promise((r) => setTimeout(r, 250));
    }

    const key = (
      JSON.parse(readFileSync(join(data, 'bootstrap.json'), 'utf8')) as { tenants: { test: { rootKey: string } } }
    ).tenants.test.rootKey;
    const post = async (path: string, body: unknown) => {
      const r = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: (await r.json()) as Record<string, any> };
    };
    expect(
      (
        await post('/v1/schemas', {
          typeName: 'Note',
          displayName: 'Note',
          allowedSurfaces: ['record'],
          fields: [{ fieldId: 'body', fieldType: 'string', searchable: true }],
        })
      ).status,
    ).toBe(201);
    const rec = await post('/v1/records', {
      typeName: 'Note',
      payload: { body: 'The cat sat on the warm windowsill all afternoon.' },
    });
    expect(rec.status).toBe(201);
    for (const [mode, query] of [
      ['TEXT', 'windowsill'],
      ['SEMANTIC', 'a kitten resting by the window'],
    ] as const) {
      let ids: string[] = [];
      for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 500))) {
        const s = await post('/v1/search', { query, mode });
        expect(s.status, JSON.stringify(s.body)).toBe(200);
        ids = (s.body.results as Array<{ documentId: string }>).map((x) => x.documentId);
        if (ids.includes(rec.body.id)) break;
      }
      expect(ids, mode).toContain(rec.body.id);
    }
    expect(JSON.parse((await fetch(`${base}/readyz`).then((r) => r.text())) || '{}').embeddings).toMatchObject({
      model: 'bge-small-en-v1.5-q',
    });
    // The API page's bundle is a file of a package whose own dependencies were pruned: still served.
    const page = await fetch(`${base}/docs/api-reference.js`);
    expect(page.status).toBe(200);
    expect((await page.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
    // The web console was built in the build stage (npm ci's build) and is served once its build tools were pruned.
    const consolePage = await fetch(`${base}/console`);
    expect(consolePage.status).toBe(200);
    const entry = /src="(console\/app-[A-Z0-9]+\.js)"/.exec(await consolePage.text())?.[1];
    expect(entry).toBeDefined();
    expect((await fetch(`${base}/${entry}`)).status).toBe(200);
    expect(
      existsSync(join(app, 'node_modules/preact')),
      "the console's framework is bundled, not installed in the image",
    ).toBe(false);
  }, 900_000);
});
