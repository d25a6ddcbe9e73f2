/**
 * `npm run generate -w client [-- --check] [-- --url <base>/openapi.json | --file openapi.json]`:
 * writes client/src/generated/openapi.ts from the service's description. Without `--url` or `--file`
 * the service is built in this process on a throw-away data directory (embedded
 * engines, no network) and asked for GET /openapi.json without listening on a
 * port; so it works offline and in CI. `--check` writes nothing and exits 1 when
 * the file differs from what the description generates.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderTypes, TYPES_FILE } from './render';

async function description(url: string | undefined, file: string | undefined): Promise<object> {
  if (file) return JSON.parse(readFileSync(file, 'utf8')) as object;
  if (url) {
    const r = await fetch(url);
    if (!r.ok) throw new Error(`GET ${url}: ${r.status}`);
    return (await r.json()) as object;
  }
  // The generator (not the client) builds the service: the client itself imports no workspace.
  const { buildService, loadConfig } = await import('@svc/deploy');
  const dir = mkdtempSync(join(tmpdir(), 'svc-client-gen-'));
  try {
    const service = await buildService(
      loadConfig({ DATA_DIR: dir, PORT: '0', ACTIVITY_LOG: '0' } as NodeJS.ProcessEnv),
      () => {},
    );
    try {
      const r = await service.app.inject({ method: 'GET', url: '/openapi.json' });
      if (r.statusCode !== 200) throw new Error(`GET /openapi.json: ${r.statusCode}`);
      return r.json() as object;
    } finally {
      await service.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const args = process.argv.slice(2);
const check = args.includes('--check');
const urlAt = args.indexOf('--url');
const fileAt = args.indexOf('--file');
const text = await renderTypes(
  await description(urlAt >= 0 ? args[urlAt + 1] : process.env.OPENAPI_URL, fileAt >= 0 ? args[fileAt + 1] : undefined),
);
const file = fileURLToPath(TYPES_FILE);
let current = '';
try {
  current = readFileSync(file, 'utf8');
} catch {
  /* not generated yet */
}
if (check) {
  if (current !== text) {
    console.error(`${file} is out of date with /openapi.json: run npm run generate -w client`);
    process.exit(1);
  }
  console.log(`${file} is up to date`);
} else if (current !== text) {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  console.log(`wrote ${file}`);
} else console.log(`${file} is up to date`);
process.exit(0);
