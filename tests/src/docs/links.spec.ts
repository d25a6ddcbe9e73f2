import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The README and the documentation stand alone: every relative link and every repository path they name exists,
 * and they cite no document a reader of the repository does not have (the project's private specification).
 */
const ROOT = resolve(import.meta.dirname, '../../..');

function markdownUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md') && !f.split('/').includes('node_modules'))
    .map((f) => join(dir, f));
}

const DOCS = [
  ...['README.md', 'CHANGELOG.md', 'client/README.md'].map((f) => join(ROOT, f)).filter((f) => existsSync(f)),
  ...markdownUnder(join(ROOT, 'docs')),
  ...markdownUnder(join(ROOT, 'examples')),
];

/** Top-level folders of the repository: a path in prose starting with one of them names a repository file. */
const TOP = readdirSync(ROOT).filter(
  (f) => !f.startsWith('.') && f !== 'node_modules' && statSync(join(ROOT, f)).isDirectory(),
);
const REPO_PATH = new RegExp(
  `(?<![\\w./-])(?:\\.ci|${TOP.map((t) => t.replace(/[-.]/g, '\\$&')).join('|')})/[\\w./@-]*[\\w/]`,
  'g',
);

/** The anchors of a Markdown file's headings, as GitHub makes them (lower case, punctuation dropped, spaces to `-`). */
function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let code = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) code = !code;
    const m = code ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n ? `${slug}-${n}` : slug);
  }
  return anchors;
}

/** What a document (`file`, its text `text`) cites or links that does not exist. */
function problemsOf(file: string, text = readFileSync(file, 'utf8')): string[] {
  const where = relative(ROOT, file);
  const problems: string[] = [];
  for (const m of text.matchAll(/service-spec|decisions\.md|decisions §|spec §/gi))
    problems.push(`${where}: cites "${m[0]}", which readers do not have`);
  // Markdown links and images, relative ones (a URL or an e-mail address is not a file) and anchors.
  for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    if (target.startsWith('#')) {
      if (!anchorsOf(file).has(decodeURIComponent(target.slice(1))))
        problems.push(`${where}: links to ${target}, a heading it does not have`);
      continue;
    }
    const path = decodeURIComponent(target.replace(/[#?].*$/, ''));
    const abs = path.startsWith('/') ? join(ROOT, path) : resolve(dirname(file), path);
    if (!existsSync(abs)) problems.push(`${where}: links to ${target}, which does not exist`);
    else if (
      target.includes('#') &&
      abs.endsWith('.md') &&
      !anchorsOf(abs).has(decodeURIComponent(target.split('#')[1]!))
    )
      problems.push(`${where}: links to ${target}, a heading that does not exist`);
  }
  // Repository paths named in prose or code (`deploy/src/http/edge.ts`); globs and placeholders are not paths.
  for (const m of text.matchAll(REPO_PATH)) {
    const path = m[0].replace(/[.]+$/, '');
    const after = text.slice(m.index! + m[0].length, m.index! + m[0].length + 1);
    if (/[*<{$]/.test(after)) continue;
    // A file (an extension) or a folder (a trailing slash); `deploy/command` in a kubectl line is no path.
    if (!/\.[A-Za-z0-9]+$|\/$/.test(path)) continue;
    // Build output (`deploy/dist/start.js`) exists once `npm ci` or `npm run build` ran.
    if (path.split('/').includes('dist')) continue;
    if (!existsSync(join(ROOT, path))) problems.push(`${where}: names ${path}, which does not exist`);
  }
  return problems;
}

describe('the README and the documentation', () => {
  it('are found (README.md and docs/ at least)', () => {
    expect(DOCS.map((f) => relative(ROOT, f))).toEqual(
      expect.arrayContaining(['README.md', 'docs/api.md', 'docs/limits.md']),
    );
  });

  it(
    'link only to files and headings that exist, name only repository paths that exist, and cite no ' +
      'document readers lack',
    () => {
      expect(DOCS.flatMap((f) => problemsOf(f))).toEqual([]);
    },
  );

  it('catch a missing link target, a missing path and a citation of the specification (the check itself)', () => {
    const probe = join(ROOT, 'docs', 'limits.md');
    const text = readFileSync(probe, 'utf8');
    // Run the same rules on a changed copy of a real document, in memory.
    const changed =
      `${text}\n[gone](gone.md), [no heading](api.md#no-such-heading), [a heading](api.md#errors) and ` +
      `\`deploy/src/http/no-such-file.ts\`, see decisions.md and service-spec.md\n`;
    const problems = problemsOf(probe, changed);
    expect(problems.some((p) => p.includes('links to gone.md'))).toBe(true);
    expect(problems.some((p) => p.includes('api.md#no-such-heading'))).toBe(true);
    expect(problems.some((p) => p.includes('api.md#errors'))).toBe(false);
    expect(problems.some((p) => p.includes('names deploy/src/http/no-such-file.ts'))).toBe(true);
    expect(problems.filter((p) => p.includes('readers do not have'))).toHaveLength(2);
  });
});
