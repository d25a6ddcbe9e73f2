import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import * as prettier from 'prettier';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * Hand-written JavaScript and TypeScript are formatted with Prettier (`.prettierrc.json`, printWidth 120) and have no
 * line over 120 characters: Prettier leaves long strings, regexes, comments and test titles as they are.
 */
const ROOT = resolve(import.meta.dirname, '../../..');
const MAX = 120;
const PATTERNS = ['*.ts', '*.tsx', '*.mts', '*.cts', '*.js', '*.jsx', '*.mjs', '*.cjs'];

/** Tracked files and new ones git does not ignore, less what `.prettierignore` leaves out (the generated client). */
async function handWritten(): Promise<string[]> {
  const ls = ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', ...PATTERNS];
  const listed = [...new Set(execFileSync('git', ls, { cwd: ROOT, encoding: 'utf8' }).split('\0'))].filter(
    (f) => f && existsSync(join(ROOT, f)),
  );
  const ignorePath = join(ROOT, '.prettierignore');
  const info = await Promise.all(listed.map((f) => prettier.getFileInfo(join(ROOT, f), { ignorePath })));
  return listed.filter((_, i) => !info[i]!.ignored).sort();
}

const PRETTIER = join(ROOT, 'node_modules/prettier/bin/prettier.cjs');

/** Prettier's CLI on `files`: the ones it would change, and the ones it cannot parse. */
function prettierCheck(files: string[], cacheLocation: string) {
  return new Promise<{ status: number | null; output: string; notFormatted: string[]; errors: string[] }>(
    (done, fail) => {
      // The content cache skips a file unchanged since it last passed: seconds instead of half a minute.
      const args = ['--check', '--cache', '--cache-strategy', 'content', '--cache-location', cacheLocation];
      const child = spawn(process.execPath, [PRETTIER, ...args, '--log-level', 'warn', ...files], { cwd: ROOT });
      let output = '';
      child.stdout.on('data', (d) => (output += d));
      child.stderr.on('data', (d) => (output += d));
      child.on('error', fail);
      child.on('close', (status) =>
        done({
          status,
          output,
          notFormatted: [...output.matchAll(/^\[warn\] (?!Code style issues)(.+)$/gm)].map((m) => m[1]!),
          errors: [...output.matchAll(/^\[error\] (.+)$/gm)].map((m) => m[1]!),
        }),
      );
    },
  );
}

/** The check over every core, each process with its own cache; a file stays with one process (its path's hash). */
function unformatted(files: string[]) {
  const n = Math.min(availableParallelism(), 4);
  const shares = Array.from({ length: n }, () => [] as string[]);
  for (const f of files) shares[createHash('sha1').update(f).digest()[0]! % n]!.push(f);
  return Promise.all(
    shares
      .map((share, i) => ({ share, cache: join(ROOT, `node_modules/.cache/prettier/format-spec-${i}-of-${n}`) }))
      .filter((s) => s.share.length)
      .map((s) => prettierCheck(s.share, s.cache)),
  );
}

/** `file:line (n characters)` for each line over MAX characters (code points: `…` and `→` count as one). */
function longLines(file: string, text: string): string[] {
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    const n = [...line].length;
    if (n > MAX) out.push(`${file}:${i + 1} (${n} characters)`);
  });
  return out;
}

describe('source formatting', () => {
  let files: string[] = [];
  beforeAll(async () => {
    files = await handWritten();
  });

  it('finds the hand-written sources (and not the generated client)', () => {
    expect(files).toEqual(expect.arrayContaining(['deploy/src/start.ts', 'tests/run.mjs', 'console/src/main.tsx']));
    expect(files.some((f) => f.startsWith('client/src/generated/'))).toBe(false);
  });

  it('every file is as Prettier formats it (fix: npm run format)', { timeout: 240_000 }, async () => {
    const results = await unformatted(files);
    expect(results.flatMap((r) => r.errors)).toEqual([]);
    expect(results.flatMap((r) => r.notFormatted)).toEqual([]);
    for (const r of results) expect(r.status, r.output).toBe(0);
  });

  it(`no line is over ${MAX} characters`, () => {
    expect(files.flatMap((f) => longLines(f, readFileSync(join(ROOT, f), 'utf8')))).toEqual([]);
  });

  it('catches an unformatted file and a long line (the check itself)', async () => {
    const options = { ...(await prettier.resolveConfig(join(ROOT, 'deploy/src/start.ts'))), filepath: 'x.ts' };
    expect(await prettier.check('const a = {b:1}\n', options)).toBe(false);
    expect(await prettier.check('const a = { b: 1 };\n', options)).toBe(true);
    const long = `// ${'→'.repeat(MAX - 3)}\n// ${'→'.repeat(MAX - 2)}\n`;
    expect(longLines('x.ts', long)).toEqual([`x.ts:2 (${MAX + 1} characters)`]);
  });
});
