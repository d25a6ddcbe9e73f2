#!/usr/bin/env node
// The second half of `npm run build` (after `tsc -b tsconfig.build.json`): makes each workspace's
// dist/ runnable by Node as is.
//
// - Relative specifiers get their file: the sources import `./x` (bundler resolution, as tsx and
//   vitest read them); Node's ESM loader needs `./x.js` or `./x/index.js`. An import that matches
//   neither stops the build with its file and specifier.
// - Files beside the sources that are not TypeScript (the worker threads' .mjs entry points, which
//   are started by URL relative to the module that spawns them) are copied to the same place in dist/.
//
// Idempotent and cheap: files are written only when their content changes.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const WORKSPACES = ['contracts', 'domain', 'search', 'command-api', 'query-api', 'projectors', 'deploy', 'client'];
const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.\.?\/[^'"]*)\2/g;
const KNOWN_EXTENSION = /\.(m?js|cjs|json|node)$/;

const walk = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
  );

let rewritten = 0;
let copied = 0;
const problems = [];
for (const ws of WORKSPACES) {
  const src = join(root, ws, 'src');
  const dist = join(root, ws, 'dist');
  if (!existsSync(dist)) {
    problems.push(`${ws}/dist is missing: run tsc -b tsconfig.build.json first`);
    continue;
  }
  for (const file of walk(src)) {
    if (file.endsWith('.ts')) continue;
    const to = join(dist, relative(src, file));
    if (existsSync(to) && statSync(to).mtimeMs >= statSync(file).mtimeMs) continue;
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(file, to);
    copied++;
  }
  for (const file of walk(dist)) {
    if (!file.endsWith('.js')) continue;
    const text = readFileSync(file, 'utf8');
    const out = text.replace(SPECIFIER, (all, lead, quote, spec) => {
      if (KNOWN_EXTENSION.test(spec)) return all;
      const base = resolve(dirname(file), spec);
      if (existsSync(`${base}.js`)) return `${lead}${quote}${spec}.js${quote}`;
      if (existsSync(join(base, 'index.js'))) return `${lead}${quote}${spec}/index.js${quote}`;
      problems.push(`${relative(root, file)}: cannot resolve ${spec}`);
      return all;
    });
    if (out !== text) {
      writeFileSync(file, out);
      rewritten++;
    }
  }
}
if (problems.length) {
  console.error(`build: ${problems.length} problem(s)\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
if (rewritten || copied)
  console.log(`build: dist/ finished (${rewritten} modules' relative imports resolved, ${copied} assets copied)`);
