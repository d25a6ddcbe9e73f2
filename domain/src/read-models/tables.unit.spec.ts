import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as domain from '../index';

/**
 * Each read model's table and index names are owned by one module, its area's domain/src/<area>/tables.ts (the
 * checkpoints: domain/src/read-models/checkpoints.ts; docs/architecture.md "Projections"): the projectors that create
 * and write the tables and the query API that reads them interpolate its names. A name spelled in SQL anywhere else is
 * a second owner; comments may name tables.
 */
const ROOT = resolve(import.meta.dirname, '../../..');
const PACKAGES = [
  'contracts/src',
  'domain/src',
  'search/src',
  'command-api/src',
  'query-api/src',
  'projectors/src',
  'deploy/src',
];
const NAME = /\brm_[a-z0-9_]+/g;

/** The modules that own table names: each area's tables.ts, and the checkpoints beside this spec. */
const OWNER = /^domain\/src\/([a-z-]+\/tables|read-models\/[a-z-]+)\.ts$/;
const DOMAIN = resolve(import.meta.dirname, '..');

/** Every owned name and the module that owns it, from the modules' exported *_TABLES and *_INDEXES objects. */
function owners(): Map<string, string> {
  const out = new Map<string, string>();
  const files = readdirSync(DOMAIN, { recursive: true, encoding: 'utf8' })
    .map((f) => relative(ROOT, join(DOMAIN, f)))
    .filter((path) => OWNER.test(path));
  for (const path of files)
    for (const [, name] of readFileSync(join(ROOT, path), 'utf8').matchAll(/^ {2}\w+: '(rm_\w+)',$/gm))
      out.set(name, path);
  return out;
}

function sources(): Array<{ path: string; text: string }> {
  const out: Array<{ path: string; text: string }> = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|mjs)$/.test(e.name) && !/\.spec\.ts$|\.d\.ts$/.test(e.name))
        out.push({ path: relative(ROOT, p), text: readFileSync(p, 'utf8') });
    }
  };
  for (const p of PACKAGES) walk(join(ROOT, p));
  return out;
}

/** The rm_ names spelled in a source's string literals and template text (not its comments), with their lines. */
function spelled(path: string, text: string): Array<{ name: string; line: number }> {
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const out: Array<{ name: string; line: number }> = [];
  const visit = (node: ts.Node) => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node)
    ) {
      const start = node.getStart(sf);
      for (const m of text.slice(start, node.end).matchAll(NAME))
        out.push({ name: m[0], line: sf.getLineAndCharacterOfPosition(start + m.index).line + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

describe('read-model table names', () => {
  const owned = owners();

  it('reads every exported name with its owning module', () => {
    const exported = Object.entries(domain)
      .filter(([k]) => /_TABLES$/.test(k))
      .flatMap(([, v]) => Object.values(v as Record<string, string>));
    expect(exported.length).toBeGreaterThan(20);
    for (const name of exported) expect(owned.get(name), name).toMatch(OWNER);
  });

  it('no source spells an rm_ name outside the module that owns it', () => {
    const offences: string[] = [];
    for (const { path, text } of sources()) {
      for (const { name, line } of spelled(path, text)) {
        const owner = owned.get(name);
        if (owner === path) continue;
        offences.push(
          `${path}:${line}: ${name} ` +
            (owner ? `(import its name from ${owner})` : '(no module owns it: add it to domain/src/<area>/tables.ts)'),
        );
      }
    }
    expect(offences).toEqual([]);
  });
});
