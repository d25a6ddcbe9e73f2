import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '@svc/contracts';

/**
 * One write path (docs/architecture.md "The write path"): every event is decided by a decider and appended by
 * the command handler (domain/src/write/handle-command.ts). Nothing else appends to the event store or catches
 * its WrongExpectedRevisionError (a lost race is the handler's: it re-reads and decides again, or answers).
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

/** Where appending is the code's own job, and why. */
const APPENDERS: Record<string, string> = {
  'domain/src/write/handle-command.ts': 'the command handler',
  'deploy/src/engines/event-store-postgres.ts': 'the PostgreSQL event-store adapter',
  'deploy/src/engines/event-store-kurrentdb.ts': 'the KurrentDB event-store adapter',
  'command-api/src/scripts/staging-store.ts':
    "an event-store adapter that stages a script's writes for the handler's commitStaged",
  'deploy/src/tracing.ts': 'the event store with traces: a decorator of the adapter',
  'deploy/src/backup/archive.ts':
    'a restore copies an archived log verbatim (its events were decided when first written)',
};
/** Catches of WrongExpectedRevisionError still outside the handler, each with why it is left (none may be added). */
const CATCHERS: Record<string, string> = {
  'domain/src/write/handle-command.ts': 'the command handler',
};

/** Event types only read: an older build wrote them; what replaced them is produced by a decider. */
const READ_ONLY: Record<string, string> = {
  RecordIndexed: "one record's index outcome, now one of the outcomes of a RecordsIndexed",
  RecordIndexFailed: "one record's failed indexing, now one of the outcomes of a RecordsIndexed",
};

/** The text of every spec under domain/src (the deciders' given/when/then specs). */
function specSources(): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.spec\.ts$/.test(e.name) && !p.endsWith('one-write-path.unit.spec.ts'))
        out.push(readFileSync(p, 'utf8'));
    }
  };
  walk(join(ROOT, 'domain/src'));
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

/** An append to an event store: appendMulti, KurrentDB's appendToStream, or append on something named a store. */
const APPEND = /\.appendMulti\s*\(|appendToStream\s*\(|[sS]tore\)?\.append\s*\(/;
const CATCH = /instanceof\s+WrongExpectedRevisionError|\.name\s*===\s*'WrongExpectedRevisionError'/;

describe('one write path', () => {
  const files = sources();

  it('reads the sources it checks', () => {
    expect(files.some((f) => f.path === 'domain/src/write/handle-command.ts')).toBe(true);
    expect(files.length).toBeGreaterThan(100);
  });

  it('nothing but the command handler and the event-store adapters appends to the event store', () => {
    const found = files.filter((f) => APPEND.test(f.text)).map((f) => f.path);
    expect(
      found.filter((p) => !(p in APPENDERS)),
      'append through handleCommand (domain/src/write)',
    ).toEqual([]);
  });

  it('nothing but the command handler catches WrongExpectedRevisionError', () => {
    const found = files.filter((f) => CATCH.test(f.text)).map((f) => f.path);
    expect(
      found.filter((p) => !(p in CATCHERS)),
      "a lost race is the handler's (onConflict, or a decision of nothing)",
    ).toEqual([]);
    // An entry of CATCHERS that no longer catches is removed here too, so the list only shrinks.
    expect(Object.keys(CATCHERS).filter((p) => !found.includes(p))).toEqual([]);
  });

  it('event metadata is built in one place: metadataFor (a request) or systemMetadata (any other writer)', () => {
    const found = files.filter((f) => /schemaVersion:\s*EVENT_SCHEMA_VERSION/.test(f.text)).map((f) => f.path);
    expect(found).toEqual(['domain/src/write/metadata.ts']);
  });

  it('every catalogue event type is produced by a decider in domain/src with a spec, or only read (legacy)', () => {
    const domain = files.filter((f) => f.path.startsWith('domain/src/'));
    const specs = specSources();
    const missing: string[] = [];
    for (const type of Object.keys(EVENT_TYPES)) {
      const produced = new RegExp(`type: '${type}'`);
      const producers = domain.filter((f) => produced.test(f.text));
      if (type in READ_ONLY) {
        // Written by earlier versions and still read from old logs: nothing may produce it again.
        expect(
          files.filter((f) => produced.test(f.text)).map((f) => f.path),
          type,
        ).toEqual([]);
        continue;
      }
      if (!producers.length) missing.push(`${type}: no decider produces it`);
      else if (!specs.some((s) => new RegExp(`\\b${type}\\b`).test(s))) missing.push(`${type}: no spec names it`);
    }
    expect(missing).toEqual([]);
  });

  it('the patterns find what they are for', () => {
    expect(APPEND.test('await this.o.store.appendMulti([r])')).toBe(true);
    expect(APPEND.test('await deps.store.append(streamId, events, "any")')).toBe(true);
    expect(APPEND.test('await this.outcomes.append(records)')).toBe(false);
    expect(CATCH.test('if (err instanceof WrongExpectedRevisionError) continue;')).toBe(true);
  });
});
