// Empty embedded databases start as a copy of one PGlite has already initialised. Plain JavaScript: the
// install step (deploy/scripts/make-pglite-template.mjs, the root package's `postinstall`) runs it with node
// before any TypeScript loader exists; sql.ts and sql-thread.ts call it before PGlite opens a directory.
import { PGlite } from '@electric-sql/pglite';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { cp, mkdir, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// deploy/{src,dist}/engines/ is three levels below the repository (or the image's /app).
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** Where the initialised cluster is kept: PGLITE_TEMPLATE_DIR, else <repository>/.cache/pglite. */
export const pgliteTemplateRoot = (env = process.env) =>
  resolve(env.PGLITE_TEMPLATE_DIR || join(ROOT, '.cache', 'pglite'));

/** PGlite's version: a cluster initialised by one version is only copied for that version. */
function pgliteVersion() {
  // The package's entry is in dist/; its package.json is one level up (not in its `exports`).
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  return JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')).version;
}

const initialised = (dir) => existsSync(join(dir, 'PG_VERSION'));
const emptyOrMissing = (dir) => !existsSync(dir) || readdirSync(dir).length === 0;

/** The template of each root, made at most once per process. */
const templates = new Map();

/**
 * The directory of an initialised cluster under `root` (made when missing), or undefined when it cannot be made
 * there. PGlite runs initdb inside its WASM when it opens an empty directory: about 7 s of CPU here, and the first
 * start's resident peak 1.19 GB against 0.81 GB, against under 1 s to copy and open an initialised one. Made in a
 * directory of its own and renamed into place, so processes starting together either see the finished template or
 * make their own and keep whichever landed first. `wasm`: PostgreSQL's compiled WASM module, when the caller has it.
 */
export function pgliteTemplate(root = pgliteTemplateRoot(), wasm = undefined) {
  let made = templates.get(root);
  if (made) return made;
  made = (async () => {
    const dir = join(root, `cluster-${pgliteVersion()}`);
    if (initialised(dir)) return dir;
    const tmp = `${dir}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
    try {
      await mkdir(root, { recursive: true });
      const db = await PGlite.create({ dataDir: tmp, ...(wasm ? { pgliteWasmModule: wasm } : {}) });
      await db.close();
      await rename(tmp, dir).catch((e) => {
        // Another process's template landed first: the same cluster, so keep that one.
        if (!initialised(dir)) throw e;
      });
      return dir;
    } catch {
      return undefined; // not writable here: each database initialises itself, as before
    } finally {
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    }
  })();
  templates.set(root, made);
  return made;
}

/**
 * Before PGlite opens `dataDir`: when it holds no database yet, a copy of the template is put there, so that PGlite
 * skips initdb. The copy is the cluster initdb would have made (same version, same settings); anything that goes
 * wrong leaves the directory empty, and PGlite initialises it itself.
 */
export async function seedPgliteDataDir(dataDir, wasm = undefined) {
  if (!emptyOrMissing(dataDir)) return;
  const from = await pgliteTemplate(pgliteTemplateRoot(), wasm);
  if (!from || !emptyOrMissing(dataDir)) return;
  try {
    await cp(from, dataDir, { recursive: true });
  } catch {
    await rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
  }
}
