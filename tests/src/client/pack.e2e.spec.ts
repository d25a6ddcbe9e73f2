/**
 * The client as its users get it: `npm pack` of client/ (its prepack builds dist/), the tarball installed into an
 * empty project outside the repository (its dependencies from the npm registry), then
 *   - a script run by plain `node` (no tsx, no loader) creates a record in a started service and reads it back,
 *     and verifies a webhook signature with the `/node` entry;
 *   - a TypeScript file importing it type-checks under `module: nodenext` (with a misuse that must fail), and the
 *     main entry's declarations type-check for a browser (DOM lib, no Node types);
 *   - esbuild bundles a browser entry (platform browser) of the main entry with no Node built-in in it, while the
 *     same bundle of the `/node` entry fails (the check would see one);
 *   - that bundle, in a page of another origin in Chromium, creates and reads a record with a minted token and
 *     follows the change stream (skipped without chromium).
 * Needs the npm registry (or npm's cache: --prefer-offline).
 */
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_SKIP_REASON, launchChromium } from '../support/browser';
import { ROOT, startService, type TestService } from '../support/service';

const run = promisify(execFile);
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

let svc: TestService;
let project: string;
let tarball: string;
let packed: { name: string; files: Array<{ path: string }> };

beforeAll(async () => {
  // Outside the repository: nothing of the workspace (node_modules, tsconfig) can leak into the resolution.
  project = mkdtempSync(join(tmpdir(), 'svc-client-pack-'));
  expect(project.startsWith(ROOT)).toBe(false);
  const [started, pack] = await Promise.all([
    // Any origin may call it: the browser test's page is served from another port.
    startService({ env: { CORS_ORIGINS: '*' } }),
    run(NPM, ['pack', '--json', '--pack-destination', project], { cwd: join(ROOT, 'client'), maxBuffer: 16 << 20 }),
  ]);
  svc = started;
  [packed] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('['))) as [typeof packed & { filename: string }];
  tarball = join(project, (packed as typeof packed & { filename: string }).filename);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'client-pack-check', private: true, type: 'module' }),
  );
  await run(NPM, ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], {
    cwd: project,
    maxBuffer: 16 << 20,
  });
}, 300_000);

afterAll(async () => {
  await svc?.stop();
  if (project) rmSync(project, { recursive: true, force: true });
});

describe('the packed client', () => {
  it('holds the built package only: dist/, README, LICENSE and package.json', () => {
    const paths = packed.files.map((f) => f.path).sort();
    expect(paths).toEqual(
      expect.arrayContaining([
        'LICENSE',
        'README.md',
        'package.json',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/node.js',
        'dist/node.d.ts',
      ]),
    );
    expect(paths.filter((p) => !/^(dist\/.+\.(js|d\.ts)|README\.md|LICENSE|package\.json)$/.test(p))).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(project, 'node_modules', packed.name, 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({ name: '@svc/client', license: 'Apache-2.0', type: 'module' });
    expect(manifest.private).toBeUndefined();
    // Only the registry's packages came with it.
    expect(readdirSync(join(project, 'node_modules')).sort()).toEqual(
      expect.arrayContaining(['eventsource-parser', 'openapi-fetch']),
    );
  });

  it('runs under plain node: creates a record, reads it back, refuses as ApiError, verifies a webhook', async () => {
    const key = svc.bootstrap.tenants.test.rootKey;
    writeFileSync(
      join(project, 'app.mjs'),
      `import { ApiError, createClient, result, unwrap } from '@svc/client';
import { verifySignature } ` +
        `from '@svc/client/node';
const api = createClient({ baseUrl: process.env.SVC_URL, token: () => ` +
        `process.env.SVC_KEY });
const typeName = 'Packed_' + Date.now();
await ` +
        `unwrap(api.POST('/v1/schemas', { body: { typeName, displayName: 'Packed', allowedSurfaces: ` +
        `['record'], fields: [{ fieldId: 'title', fieldType: 'string', required: true }] } }));
const ` +
        `created = await unwrap(api.POST('/v1/records', { body: { typeName, payload: { title: 'from the ` +
        `tarball' } } }));
const read = await unwrap(api.GET('/v1/records/{id}', { params: { path: { id: ` +
        `created.id } } }));
const missing = await result(api.GET('/v1/records/{id}', { params: { path: { ` +
        `id: '00000000-0000-4000-8000-000000000000' } } }));
const secret = 'ab'.repeat(32);
const body = ` +
        `'{"id":"dlv_1"}';
const headers = { 'x-service-timestamp': process.env.TS, 'x-service-signature': ` +
        `process.env.SIGNATURE };
console.log(JSON.stringify({ created, read, missing: { isApiError: ` +
        `!missing.ok && missing.error instanceof ApiError, status: missing.error?.status, errorCode: ` +
        `missing.error?.errorCode }, signed: verifySignature(body, headers, secret), forged: ` +
        `verifySignature(body + ' ', headers, secret) }));
`,
    );
    const ts = Math.floor(Date.now() / 1000);
    const signature = `sha256=${createHmac('sha256', Buffer.from('ab'.repeat(32), 'hex'))
      .update(`${ts}.{"id":"dlv_1"}`)
      .digest('hex')}`;
    // A clean environment: no NODE_OPTIONS (a tsx or vitest loader) from this process.
    const { stdout } = await run(process.execPath, ['app.mjs'], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', SVC_URL: svc.url, SVC_KEY: key, SIGNATURE: signature, TS: String(ts) },
    });
    const out = JSON.parse(stdout);
    expect(out.created).toMatchObject({ version: 1, payload: { title: 'from the tarball' } });
    expect(out.read).toMatchObject({ id: out.created.id, version: 1, payload: { title: 'from the tarball' } });
    expect(out.missing).toEqual({ isApiError: true, status: 404, errorCode: 'NOT_FOUND' });
    expect(out.signed).toBe(true);
    expect(out.forged).toBe(false);
    // The record is in the service, not only in the script's answer.
    const stored = await svc.api.get(`/v1/records/${out.created.id}`, key);
    expect(stored.status).toBe(200);
    expect(stored.body.payload).toEqual({ title: 'from the tarball' });
  });

  it(
    'type-checks under nodenext (and a misuse fails), and its main entry under a browser lib without Node ' + 'types',
    async () => {
      const tsc = join(ROOT, 'node_modules/.bin/tsc');
      writeFileSync(
        join(project, 'app.ts'),
        `import { createClient, unwrap, type ChangeEvent } from '@svc/client';
import { verifySignature } from '@svc/client/node';
const api = createClient({ baseUrl: 'http://127.0.0.1:8080', token: async () => 'a-jwt' });
export async function main(): Promise<string> {
  const record = await unwrap(api.GET('/v1/records/{id}', { params: { path: { id: 'x' } } }));
  const version: number = record.version;
  for await (const change of api.changes({ types: ['Ticket'], startFrom: 0 })) {
    if (change.type === 'record.updated') return String(change.entity?.version ?? version);
  }
  const ok: boolean = verifySignature('{}', {}, 'ab'.repeat(32));
  return record.id + String(ok);
}
export type Seen = ChangeEvent['position'];
`,
      );
      writeFileSync(
        join(project, 'misuse.ts'),
        `import { createClient, unwrap } from '@svc/client';
const api = createClient({ baseUrl: 'http://127.0.0.1:8080' });
export const a = unwrap(api.GET('/v1/recordz/{id}', { params: { path: { id: 'x' } } }));
export const b = api.changes({ entities: ['tickets'] });
`,
      );
      writeFileSync(
        join(project, 'browser.ts'),
        `import { createClient, collectAnswer } from '@svc/client';
const api = createClient({ baseUrl: location.origin, token: () => sessionStorage.getItem('token') ?? undefined });
export const answer = collectAnswer(api.rag({ query: 'hello' }));
export const changes = api.changes({ signal: new AbortController().signal });
`,
      );
      const tsconfig = (name: string, options: Record<string, unknown>, files: string[]) =>
        writeFileSync(
          join(project, name),
          JSON.stringify({
            compilerOptions: { target: 'es2022', strict: true, noEmit: true, skipLibCheck: false, ...options },
            files,
          }),
        );
      const tscFails = (config: string) =>
        run(process.execPath, [tsc, '-p', config], { cwd: project }).then(
          () => '',
          (e: { stdout: string }) => e.stdout || 'failed',
        );
      // A Node project (Node's types from the repository's @types/node).
      const nodenext = {
        module: 'nodenext',
        moduleResolution: 'nodenext',
        typeRoots: [join(ROOT, 'node_modules/@types')],
        types: ['node'],
        skipLibCheck: true,
      };
      tsconfig('tsconfig.node.json', nodenext, ['app.ts']);
      tsconfig('tsconfig.misuse.json', nodenext, ['misuse.ts']);
      const [ok, misuse] = await Promise.all([tscFails('tsconfig.node.json'), tscFails('tsconfig.misuse.json')]);
      expect(ok).toBe('');
      expect(misuse).toMatch(/misuse\.ts\(3,.*\/v1\/recordz/);
      expect(misuse).toMatch(/misuse\.ts\(4,.*tickets/);

      // A browser project: the DOM's types and none of Node's, bundler resolution; the package's declarations are
      // checked too (skipLibCheck false), so one naming a Node type (Buffer, NodeJS.*) fails here.
      tsconfig(
        'tsconfig.browser.json',
        { module: 'esnext', moduleResolution: 'bundler', lib: ['es2023', 'dom', 'dom.iterable'], types: [] },
        ['browser.ts'],
      );
      expect(await tscFails('tsconfig.browser.json')).toBe('');
    },
    120_000,
  );

  it('bundles for the browser with esbuild without any Node built-in; the /node entry does not', async () => {
    writeFileSync(
      join(project, 'web.js'),
      `import { createClient, unwrap } from '@svc/client';
const api = createClient({ baseUrl: location.origin, token: () => sessionStorage.getItem('token') });
export const list = () => unwrap(api.GET('/v1/records', { params: { query: { type: 'Ticket' } } }));
export async function* follow(signal) { yield* api.changes({ signal }); }
`,
    );
    const bundle = await build({
      absWorkingDir: project,
      entryPoints: ['web.js'],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    expect(bundle.errors).toEqual([]);
    const inputs = Object.keys(bundle.metafile.inputs);
    expect(inputs.some((p) => p.includes('node_modules/@svc/client/dist/changes.js'))).toBe(true);
    const builtins = [
      ...inputs.filter((p) => p.startsWith('node:')),
      ...Object.values(bundle.metafile.inputs).flatMap((i) =>
        i.imports.filter((m) => m.path.startsWith('node:') || m.external).map((m) => m.path),
      ),
    ];
    expect(builtins).toEqual([]);
    const code = bundle.outputFiles[0].text;
    expect(code).not.toMatch(/["']node:[a-z_/]+["']/);
    expect(code).not.toMatch(/\b(require\(|Buffer\.|process\.env)/);

    // The check sees a Node built-in when there is one: the /node entry needs node:crypto.
    writeFileSync(join(project, 'web-node.js'), `export { verifySignature } from '@svc/client/node';\n`);
    const failed = await build({
      absWorkingDir: project,
      entryPoints: ['web-node.js'],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      logLevel: 'silent',
    }).then(
      () => [],
      (e: { errors: Array<{ text: string }> }) => e.errors.map((x) => x.text),
    );
    expect(failed.join('\n')).toMatch(/node:crypto/);
  });

  it.skipIf(!!CHROMIUM_SKIP_REASON)(
    `runs in Chromium from another origin: create, read, changes() (${CHROMIUM_SKIP_REASON ?? 'chromium'})`,
    async () => {
      writeFileSync(
        join(project, 'page.js'),
        `import { ApiError, createClient, result, unwrap } from '@svc/client';
window.runClient = async ` +
          `(baseUrl, token, typeName) => {
  const api = createClient({ baseUrl, token: () => token });
  ` +
          `const stop = new AbortController();
  const changes = api.changes({ types: [typeName], startFrom: ` +
          `0, signal: stop.signal })[Symbol.asyncIterator]();
  const first = changes.next();
  const ` +
          `created = await unwrap(api.POST('/v1/records', { body: { typeName, payload: { title: 'from a ` +
          `page' } } }));
  const read = await unwrap(api.GET('/v1/records/{id}', { params: { path: { id: ` +
          `created.id } } }));
  const change = (await first).value;
  stop.abort();
  const ended = await ` +
          `changes.next();
  const missing = await result(api.GET('/v1/records/{id}', { params: { path: { ` +
          `id: '00000000-0000-4000-8000-000000000000' } } }));
  return { created, read, change, ended: ` +
          `ended.done, missing: { isApiError: !missing.ok && missing.error instanceof ApiError, status: ` +
          `missing.response.status, requestId: missing.ok ? null : missing.error.requestId } };
};
`,
      );
      const bundle = await build({
        absWorkingDir: project,
        entryPoints: ['page.js'],
        bundle: true,
        platform: 'browser',
        format: 'esm',
        write: false,
        logLevel: 'silent',
      });
      const files: Record<string, [string, string]> = {
        '/': [
          'text/html',
          '<!doctype html><meta charset="utf-8"><title>client</title><script type="module" src="/page.js"></script>',
        ],
        '/page.js': ['text/javascript', bundle.outputFiles[0].text],
      };
      const page = createServer((req, res) => {
        const f = files[req.url ?? ''];
        if (!f) return void res.writeHead(404).end();
        res.writeHead(200, { 'content-type': f[0] }).end(f[1]);
      });
      await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
      const origin = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
      expect(origin).not.toBe(new URL(svc.url).origin);
      const browser = await launchChromium();
      try {
        const key = svc.bootstrap.tenants.test.rootKey;
        const typeName = `Paged_${Date.now()}`;
        expect(
          (
            await svc.api.post('/v1/schemas', key, {
              typeName,
              displayName: 'Paged',
              allowedSurfaces: ['record'],
              fields: [{ fieldId: 'title', fieldType: 'string' }],
            })
          ).status,
        ).toBe(201);
        // The page holds a narrow minted token, never the key.
        const minted = await svc.api.post('/v1/tokens', key, {
          scope: { allowedActions: ['records:r', 'records:c'] },
          expiresInSeconds: 600,
        });
        expect(minted.status).toBe(201);
        const tab = await browser.newPage();
        const errors: string[] = [];
        tab.on('pageerror', (e) => errors.push(String(e)));
        await tab.goto(origin);
        await tab.waitForFunction(
          () => typeof (globalThis as unknown as { runClient?: unknown }).runClient === 'function',
        );
        const out = await tab.evaluate(
          ([url, token, t]) =>
            (globalThis as unknown as { runClient: (u: string, k: string, t: string) => Promise<any> }).runClient(
              url,
              token,
              t,
            ),
          [svc.url, minted.body.token as string, typeName] as const,
        );
        expect(errors).toEqual([]);
        expect(out.created).toMatchObject({ typeName, version: 1, payload: { title: 'from a page' } });
        expect(out.read).toMatchObject({ id: out.created.id, payload: { title: 'from a page' } });
        expect(out.change).toMatchObject({
          type: 'record.created',
          entityId: out.created.id,
          typeName,
          entity: { id: out.created.id },
        });
        expect(out.ended).toBe(true);
        expect(out.missing).toEqual({ isApiError: true, status: 404, requestId: expect.any(String) });
        const stored = await svc.api.get(`/v1/records/${out.created.id}`, key);
        expect(stored.body.payload).toEqual({ title: 'from a page' });
      } finally {
        await browser.close();
        await new Promise<void>((r) => page.close(() => r()));
      }
    },
  );
});
