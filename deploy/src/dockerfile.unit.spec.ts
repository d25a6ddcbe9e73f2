import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * deploy/Dockerfile copies what `npm ci` (and so `npm run build`, its `prepare`) needs: read from its
 * build stage's COPY lines and deploy/Dockerfile.dockerignore, checked against package.json `workspaces`,
 * tsconfig.build.json, deploy/scripts/finish-build.mjs and the postinstall (deploy/scripts/fetch-model.mjs).
 * The image was once built without client/ (which the build compiles): npm ci failed at tsc -b.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const read = (rel: string) => readFileSync(join(ROOT, rel), 'utf8');
const json = (rel: string) => JSON.parse(read(rel).replace(/^\s*\/\/.*$/gm, ''));

/** Sources of the build stage's COPY lines (before the second FROM), relative to the context (the repository root). */
function buildStageCopies(dockerfile: string): string[] {
  const out: string[] = [];
  let froms = 0;
  for (const raw of dockerfile.split('\n')) {
    const line = raw.trim();
    if (/^FROM\s/i.test(line)) froms++;
    if (froms !== 1) continue;
    const m = /^COPY\s+(.+)$/i.exec(line);
    if (!m || /--from/.test(m[1])) continue;
    const args = m[1].split(/\s+/).filter((a) => !a.startsWith('--'));
    out.push(...args.slice(0, -1).map((s) => posix.normalize(s).replace(/\/$/, '')));
  }
  return out;
}

/** Docker's .dockerignore matching: a pattern excludes a path or anything under a directory it matches. */
function ignoreMatcher(text: string): (rel: string) => boolean {
  const res = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((p) => {
      if (p.startsWith('!')) throw new Error(`exceptions are not modelled here: ${p}`);
      const body = p
        .replace(/^\/+|\/+$/g, '')
        .split(/(\*\*\/|\*\*|\*|\?)/)
        .map((t) =>
          t === '**/'
            ? '(?:.*/)?'
            : t === '**'
              ? '.*'
              : t === '*'
                ? '[^/]*'
                : t === '?'
                  ? '[^/]'
                  : t.replace(/[.+^${}()|[\]\\]/g, '\\$&'),
        )
        .join('');
      return new RegExp(`^${body}$`);
    });
  return (rel) => {
    const parts = rel.split('/');
    return parts.some((_, i) => res.some((r) => r.test(parts.slice(0, i + 1).join('/'))));
  };
}

const copies = buildStageCopies(read('deploy/Dockerfile'));
const ignored = ignoreMatcher(
  existsSync(join(ROOT, 'deploy/Dockerfile.dockerignore')) ? read('deploy/Dockerfile.dockerignore') : '',
);
/** The file is in the build stage's /app (copied, and not kept out of the context). */
const inImage = (rel: string) => !ignored(rel) && copies.some((c) => c === '.' || rel === c || rel.startsWith(`${c}/`));

/** The files of a workspace's sources (what tsc -b compiles and finish-build copies beside). */
const sources = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(`${dir}/${e.name}`) : [`${dir}/${e.name}`],
  );

const workspaces: string[] = json('package.json').workspaces;
const built: string[] = json('tsconfig.build.json').references.map((r: { path: string }) =>
  posix.normalize(dirname(r.path)),
);
const finished = JSON.parse(
  /const WORKSPACES = (\[[^\]]*\])/.exec(read('deploy/scripts/finish-build.mjs'))![1].replace(/'/g, '"'),
) as string[];

describe('deploy/Dockerfile: the build stage copies what npm ci builds', () => {
  it('parses: the build stage has COPY lines', () => {
    expect(copies.length).toBeGreaterThan(0);
  });

  it('copies the package.json of every workspace in package.json `workspaces` (npm ci installs them all)', () => {
    expect(workspaces.filter((w) => !inImage(`${w}/package.json`))).toEqual([]);
  });

  it(
    'copies every workspace the compiled build compiles, whole (tsconfig.build.json references, ' + 'finish-build.mjs)',
    () => {
      expect(
        finished.filter((w) => !built.includes(w)),
        'finish-build.mjs finishes a workspace tsc -b does not build',
      ).toEqual([]);
      for (const w of built) {
        expect(workspaces, `${w} is built but not a workspace`).toContain(w);
        const needed = [`${w}/package.json`, `${w}/tsconfig.build.json`, ...sources(`${w}/src`)];
        expect(
          needed.filter((f) => !inImage(f)),
          `${w}: files the build needs that the image lacks`,
        ).toEqual([]);
      }
    },
  );

  it('copies the root files and scripts npm ci runs (build, postinstall) and what they import', () => {
    const pkg = json('package.json');
    expect(pkg.scripts.build).toContain('tsconfig.build.json');
    expect(pkg.scripts.build).toContain('deploy/scripts/finish-build.mjs');
    expect(pkg.scripts.postinstall).toContain('deploy/scripts/fetch-model.mjs');
    expect(pkg.scripts.postinstall).toContain('deploy/scripts/make-pglite-template.mjs');
    const importsOf = (script: string) =>
      [...read(script).matchAll(/from '(\.\.?\/[^']+)'/g)].map((m) => posix.join('deploy/scripts', m[1]));
    const fetchModelImports = importsOf('deploy/scripts/fetch-model.mjs');
    const templateImports = importsOf('deploy/scripts/make-pglite-template.mjs');
    expect(fetchModelImports.length).toBeGreaterThan(0);
    expect(templateImports.length).toBeGreaterThan(0);
    const extended = posix.normalize(json('contracts/tsconfig.build.json').extends.replace(/^\.\.\//, ''));
    const needed = [
      'package.json',
      'package-lock.json',
      'tsconfig.build.json',
      extended,
      'deploy/scripts/finish-build.mjs',
      'deploy/scripts/fetch-model.mjs',
      'deploy/scripts/make-pglite-template.mjs',
      ...fetchModelImports,
      ...templateImports,
    ];
    expect(needed.filter((f) => !inImage(f))).toEqual([]);
  });

  it(
    'copies the web console whole: `npm run build` bundles it (console/scripts/build.mjs) into the ' +
      'console/dist the service serves',
    () => {
      expect(json('package.json').scripts.build).toContain('console/scripts/build.mjs');
      const needed = [
        'console/package.json',
        'console/scripts/build.mjs',
        'console/tsconfig.json',
        ...sources('console/src'),
      ];
      expect(needed.filter((f) => !inImage(f))).toEqual([]);
      expect(ignored('console/dist/index.html'), 'console/dist: the image builds its own').toBe(true);
    },
  );

  it('keeps installed and compiled output out of the context (the image builds its own)', () => {
    for (const w of built) {
      expect(ignored(`${w}/dist/index.js`), `${w}/dist`).toBe(true);
      expect(ignored(`${w}/node_modules/x/index.js`), `${w}/node_modules`).toBe(true);
    }
    expect(ignored('node_modules/x/index.js')).toBe(true);
  });
});
