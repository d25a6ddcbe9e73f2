#!/usr/bin/env node
// The image's last step after `npm prune --omit=dev`: removes the installed packages the service never loads.
//
// LanceDB declares optional dependencies for its own embedding registry (@huggingface/transformers, which brings
// onnxruntime-web and sharp, and openai): about 335 MB the service never imports (it embeds with its own model
// process), which npm installs because optional dependencies cannot be declined one by one. This walks the
// production dependency graph from the root and every workspace, as Node resolves it (nested node_modules first,
// then each parent's), skipping those names, and deletes every installed package the walk did not reach. The API
// reference page's package (@scalar/api-reference) is kept for its prebuilt bundle, a file the service reads, but
// its own dependencies (Vue and the rest of its sources' build, about 220 MB) are not walked.
// `--dry-run` lists them. tests/src/e2e/image-tree.e2e.spec.ts replays the Dockerfile's steps with it and starts
// the service from the result.
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Optional dependencies of our dependencies that no code path of the service loads. */
const NEVER_LOADED = new Set(['@huggingface/transformers', 'openai']);
/** Packages of which the service only reads a file (the API page's prebuilt bundle), never importing their code. */
const FILES_ONLY = new Set(['@scalar/api-reference']);

const root = resolve(
  process.argv.find((a) => !a.startsWith('-') && a !== process.argv[0] && a !== process.argv[1]) ??
    join(dirname(fileURLToPath(import.meta.url)), '../..'),
);
const dryRun = process.argv.includes('--dry-run');
const modules = join(root, 'node_modules');
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

/** Where Node finds `name` from `fromDir`: the nearest node_modules/<name> up to the root. */
function resolvePackage(name, fromDir) {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === root || dir === dirname(dir)) return undefined;
  }
}

const reached = new Set();
function visit(dir) {
  const real = realpathSync(dir);
  if (reached.has(real)) return;
  reached.add(real);
  const pkg = readJson(join(dir, 'package.json'));
  if (FILES_ONLY.has(pkg.name)) return;
  const names = [
    ...Object.keys(pkg.dependencies ?? {}),
    ...Object.keys(pkg.optionalDependencies ?? {}),
    ...Object.keys(pkg.peerDependencies ?? {}),
  ];
  for (const name of names) {
    if (NEVER_LOADED.has(name)) continue;
    const found = resolvePackage(name, dir);
    // An optional or peer dependency that is not installed (another platform's binary) is fine.
    if (found) visit(found);
  }
}

const rootPkg = readJson(join(root, 'package.json'));
for (const name of [...Object.keys(rootPkg.dependencies ?? {}), ...Object.keys(rootPkg.optionalDependencies ?? {})]) {
  if (NEVER_LOADED.has(name)) continue;
  const found = resolvePackage(name, root);
  if (found) visit(found);
}
for (const ws of rootPkg.workspaces ?? []) if (existsSync(join(root, ws, 'package.json'))) visit(join(root, ws));

/** Every installed package directory: node_modules/<name>, node_modules/@scope/<name>, and nested ones. */
function installed(dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const entry of readdirSync(dir)) {
    if (entry.startsWith('.')) continue;
    const path = join(dir, entry);
    if (entry.startsWith('@')) {
      for (const sub of readdirSync(path)) collect(join(path, sub), out);
    } else collect(path, out);
  }
  return out;
}
function collect(path, out) {
  if (lstatSync(path).isSymbolicLink() || !existsSync(join(path, 'package.json'))) return;
  out.push(path);
  installed(join(path, 'node_modules'), out);
}

let removed = 0;
for (const path of installed(modules)) {
  // A package under one already removed went with it.
  if (!existsSync(path) || reached.has(realpathSync(path))) continue;
  if (dryRun) console.log(path.slice(root.length + 1));
  else rmSync(path, { recursive: true, force: true });
  removed++;
}
console.log(
  `prune-image: ${dryRun ? 'would remove' : 'removed'} ${removed} packages the service never loads (kept ` +
    `${reached.size})`,
);
