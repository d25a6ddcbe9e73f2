#!/usr/bin/env node
// Builds the console ahead of time into console/dist/ (part of `npm run build`, so `npm ci`, `npm start` and the image
// ship it): esbuild bundles src/main.tsx with Preact and @svc/client (read from its source, the `svc-source`
// condition, so the console is a browser build of the client as it is), minified, split into one chunk per screen
// (each screen is a dynamic import: the first screen loads only what it uses). Writes index.html naming the hashed
// entry, the stylesheet, and build.json: the files of the first screen (the entry and what it imports statically),
// which the bench weighs. Skipped when dist/ is newer than its sources; a build takes well under a second.
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
export const CONSOLE_ROOT = join(here, '..');
export const CONSOLE_DIST = join(CONSOLE_ROOT, 'dist');

/** The newest modification time of a file under `dir`. */
const newest = (dir) =>
  readdirSync(dir, { withFileTypes: true }).reduce(
    (m, e) => Math.max(m, e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs),
    0,
  );

/** Whether dist/ is newer than every source it is built from (the console's, the client's it bundles, this script). */
export function consoleUpToDate() {
  if (!existsSync(join(CONSOLE_DIST, 'build.json'))) return false;
  const built = statSync(join(CONSOLE_DIST, 'build.json')).mtimeMs;
  return (
    built >=
    Math.max(
      newest(join(CONSOLE_ROOT, 'src')),
      newest(join(CONSOLE_ROOT, '../client/src')),
      statSync(fileURLToPath(import.meta.url)).mtimeMs,
    )
  );
}

/** Builds the console into dist/; answers what build.json holds. */
export async function buildConsole({ quiet = false } = {}) {
  // Built beside dist/ and swapped in, so a running service never serves half a build.
  const out = `${CONSOLE_DIST}.${process.pid}.tmp`;
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const result = await build({
    entryPoints: { app: join(CONSOLE_ROOT, 'src/main.tsx') },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022'],
    conditions: ['svc-source'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    entryNames: '[name]-[hash]',
    chunkNames: 'chunk-[hash]',
    outdir: out,
    metafile: true,
    logLevel: quiet ? 'silent' : 'warning',
  });
  const outputs = result.metafile.outputs;
  // The app's own entry: a screen imported dynamically is an entry point of the metafile too (its own chunk).
  const entry = Object.keys(outputs).find((k) => outputs[k].entryPoint?.endsWith('src/main.tsx'));
  // The first screen: the entry and its static imports, transitively (dynamic imports are the other screens).
  const first = new Set();
  const visit = (file) => {
    if (first.has(file)) return;
    first.add(file);
    for (const i of outputs[file].imports) if (i.kind === 'import-statement') visit(i.path);
  };
  visit(entry);
  const css = readFileSync(join(CONSOLE_ROOT, 'src/console.css'));
  writeFileSync(join(out, 'console.css'), css);
  const html = readFileSync(join(CONSOLE_ROOT, 'src/index.html'), 'utf8').replace(
    '%APP%',
    `console/${basename(entry)}`,
  );
  writeFileSync(join(out, 'index.html'), html);
  copyFileSync(join(CONSOLE_ROOT, 'src/favicon.svg'), join(out, 'favicon.svg'));
  const manifest = {
    entry: basename(entry),
    firstScreen: [...first].map((f) => basename(f)).concat('console.css'),
    files: Object.keys(outputs).map((f) => basename(f)),
  };
  writeFileSync(join(out, 'build.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const old = `${CONSOLE_DIST}.${process.pid}.old`;
  rmSync(old, { recursive: true, force: true });
  if (existsSync(CONSOLE_DIST)) renameSync(CONSOLE_DIST, old);
  renameSync(out, CONSOLE_DIST);
  rmSync(old, { recursive: true, force: true });
  return manifest;
}

// `node console/scripts/build.mjs` (the last step of `npm run build`): a no-op when dist/ is up to date; --force builds
// anyway.
if (
  process.argv[1] &&
  fileURLToPath(import.meta.url) === process.argv[1] &&
  (process.argv.includes('--force') || !consoleUpToDate())
) {
  const m = await buildConsole();
  console.log(`build: console/dist/ built (${m.files.length} scripts; first screen: ${m.firstScreen.join(', ')})`);
}
