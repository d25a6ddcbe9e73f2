import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode, InternalError, ServiceError } from './errors';

/**
 * The error catalogue (docs/api.md "Errors"): every code has a status and is
 * documented; every code is thrown somewhere unless reserved for a feature the
 * spec names and we have not built; no request path throws a bare `Error`.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];
const entry = (c: ErrorCode): { status: number; message: string; reserved?: string } => ERROR_CATALOGUE[c];

/** Non-test TypeScript under `dir` (relative to the repository root). */
function sources(dir: string): Array<{ path: string; text: string }> {
  const out: Array<{ path: string; text: string }> = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') && !e.name.endsWith('.d.ts'))
        out.push({ path: relative(ROOT, p), text: readFileSync(p, 'utf8') });
    }
  };
  walk(join(ROOT, dir));
  return out;
}

/** The rows of the "Errors" table of docs/api.md: code -> status. */
function documentedCodes(): Map<string, number> {
  const doc = readFileSync(join(ROOT, 'docs/api.md'), 'utf8');
  const start = doc.indexOf('\n## Errors\n');
  expect(start, 'docs/api.md has an "## Errors" section').toBeGreaterThan(0);
  const section = doc.slice(start + 1).split(/\n## /)[0];
  const rows = new Map<string, number>();
  for (const m of section.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \|/gm)) {
    expect(rows.has(m[1]), `${m[1]} listed twice`).toBe(false);
    rows.set(m[1], Number(m[2]));
  }
  return rows;
}

describe('the error catalogue', () => {
  it('gives every code an error status (4xx or 5xx) and a message', () => {
    for (const c of CODES) {
      expect(Number.isInteger(entry(c).status) && entry(c).status >= 400 && entry(c).status <= 599, c).toBe(true);
      expect(entry(c).message.length, c).toBeGreaterThan(0);
      expect(new ServiceError(c).status).toBe(entry(c).status);
    }
  });

  it('is listed in docs/api.md "Errors", each code with its status, and nothing else', () => {
    const rows = documentedCodes();
    for (const c of CODES) expect(rows.get(c), `${c} in docs/api.md`).toBe(entry(c).status);
    expect([...rows.keys()].filter((c) => !(c in ERROR_CATALOGUE))).toEqual([]);
  });

  it('holds only codes in use, or reserved for a coming feature of the spec (and then not thrown yet)', () => {
    const all = [
      'contracts/src',
      'domain/src',
      'search/src',
      'command-api/src',
      'query-api/src',
      'projectors/src',
      'deploy/src',
    ].flatMap(sources);
    // The catalogue's own literal does not count as a use; the shorthands below it (invalid(), notFound() ...) do.
    const text = all
      .map((f) =>
        f.path === 'contracts/src/errors.ts' ? f.text.slice(f.text.indexOf('export type ErrorCode')) : f.text,
      )
      .join('\n');
    for (const c of CODES) {
      const used = text.includes(`'${c}'`);
      if (entry(c).reserved) expect(used, `${c} is thrown now: drop its reserved mark`).toBe(false);
      else expect(used, `${c} is neither thrown nor reserved: remove it from the catalogue`).toBe(true);
    }
  });
});

describe('typed errors on request paths', () => {
  /** Read at startup (configuration), never while serving a request. */
  const STARTUP_ONLY = new Set(['domain/src/usage/prices.ts']);

  it(
    'no handler, decision or adapter of the APIs throws a bare Error (ServiceError, InternalError, or a ' +
      'port error instead)',
    () => {
      const bare: string[] = [];
      for (const f of ['domain/src', 'command-api/src', 'query-api/src'].flatMap(sources)) {
        if (STARTUP_ONLY.has(f.path)) continue;
        f.text.split('\n').forEach((line, i) => {
          if (/\b(?:new|throw)\s+Error\s*\(/.test(line)) bare.push(`${f.path}:${i + 1}: ${line.trim()}`);
        });
      }
      expect(bare).toEqual([]);
    },
  );

  it('an InternalError is no ServiceError: the edge answers it as 500 INTERNAL without its message', () => {
    const e = new InternalError('record id reused');
    expect(e).toBeInstanceOf(Error);
    expect(e).not.toBeInstanceOf(ServiceError);
    expect(e.code).toBe('INTERNAL');
    expect(entry(e.code).status).toBe(500);
  });
});
