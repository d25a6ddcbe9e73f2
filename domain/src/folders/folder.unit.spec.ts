import { describe, expect, it } from 'vitest';
import { type DomainEvent, type EventMetadata, FOLDER_SLUG_RE } from '@svc/contracts';
import { decideChangeFolder, decideCreateFolder, decideCreateRoot, decideDeleteFolder, deriveSlug, folderAggregate, rootFolderId, slugCandidate, type FolderState, type LiveFolder } from './folder';

const md = (at: string): EventMetadata => ({ tenantId: 't', contextId: 'c', accountId: 'a', actorKeyId: 'k', userId: null, requestId: 'r', occurredAt: at, schemaVersion: 1 });
const given = (events: DomainEvent[]): FolderState => events.reduce<FolderState>((s, e, i) => folderAggregate.evolve(s, e, md(`2026-01-01T00:00:0${i}.000Z`)), folderAggregate.initialState());

const root = given(decideCreateRoot('root-id', { exists: false })) as LiveFolder;
const child = given([
  ...decideCreateFolder({ folderId: 'f1', name: 'Reports', description: 'd', parent: root, slug: 'reports', userId: 'u', scopes: ['org:a'] }, { exists: false }),
]) as LiveFolder;

describe('slugs', () => {
  it.each([
    ['Quarterly Reports 2026!', 'quarterly-reports-2026'],
    ['  --a__b  ', 'a-b'],
    ['Zürich Café', 'zurich-cafe'],
    ['ÅNGSTRÖM', 'angstrom'],
    ['!!!', 'folder'],
    ['日本語', 'folder'],
  ])('%s -> %s', (name, slug) => {
    expect(deriveSlug(name)).toBe(slug);
    expect(slug).toMatch(FOLDER_SLUG_RE);
  });

  it('a long name leaves room for a suffix within 64 characters, without a trailing hyphen', () => {
    const s = deriveSlug(`${'a'.repeat(55)} bbbbbbbbbbbb`);
    expect(s.length).toBeLessThanOrEqual(56);
    expect(s.endsWith('-')).toBe(false);
    expect(slugCandidate(s, 9999)).toMatch(FOLDER_SLUG_RE);
  });

  it('candidates: base, base-2, base-3', () => {
    expect([1, 2, 3].map((n) => slugCandidate('x', n))).toEqual(['x', 'x-2', 'x-3']);
  });
});

describe('the root folder', () => {
  it('has a stable id per tenant and context, in UUID layout', () => {
    expect(rootFolderId('t', 'c')).toBe(rootFolderId('t', 'c'));
    expect(rootFolderId('t', 'c')).not.toBe(rootFolderId('t', 'c2'));
    expect(rootFolderId('t', 'c')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('is protected, unparented, at depth 0, and created once', () => {
    expect(root).toMatchObject({ isProtected: true, parentFolderId: null, depth: 0, slug: 'root', version: 1 });
    expect(decideCreateRoot('root-id', root)).toEqual([]);
  });

  it('cannot be changed or deleted', () => {
    expect(() => decideChangeFolder({ kind: 'patch', body: { name: 'x' } }, root)).toThrow(/root/);
    expect(() => decideDeleteFolder(root, undefined, 0)).toThrow(/root/);
  });
});

describe('folder decisions', () => {
  it('a child sits one level below its parent', () => {
    expect(child).toMatchObject({ parentFolderId: 'root-id', depth: 1, isProtected: false, tenantId: 't', contextId: 'c', createdAt: '2026-01-01T00:00:00.000Z' });
  });

  it('PUT replaces name and description; PATCH only what it names', () => {
    const [put] = decideChangeFolder({ kind: 'put', body: { name: 'New' } }, child);
    expect(put.data).toMatchObject({ name: 'New', description: null, userId: 'u', scopes: ['org:a'], change: 'put' });
    const [patch] = decideChangeFolder({ kind: 'patch', body: { description: 'e' } }, child);
    expect(patch.data).toMatchObject({ name: 'Reports', description: 'e', change: 'patch' });
  });

  it.each([
    [{ slug: 'x' }, /slug/],
    [{ parentFolderId: 'p' }, /parentFolderId/],
    [{ name: null }, /null/],
    [{ other: 1 }, /patchable/],
    [{ name: 3 }, /Invalid/],
  ])('PATCH %j is refused', (body, msg) => {
    expect(() => decideChangeFolder({ kind: 'patch', body }, child)).toThrow(msg);
  });

  it('expectedVersion must match', () => {
    expect(() => decideChangeFolder({ kind: 'patch', body: { name: 'x', expectedVersion: 2 } }, child)).toThrow(expect.objectContaining({ code: 'VERSION_CONFLICT' }));
    expect(() => decideDeleteFolder(child, 2, 0)).toThrow(expect.objectContaining({ code: 'VERSION_CONFLICT' }));
  });

  it('a non-empty folder is not deleted; an empty one is', () => {
    expect(() => decideDeleteFolder(child, undefined, 1)).toThrow(expect.objectContaining({ code: 'VALIDATION_ERROR' }));
    expect(decideDeleteFolder(child, 1, 0)).toEqual([{ type: 'FolderDeleted', data: { folderId: 'f1', parentFolderId: 'root-id', slug: 'reports' } }]);
  });

  it('after a delete the folder is gone and its id is never reused', () => {
    const gone = folderAggregate.evolve(child, decideDeleteFolder(child, undefined, 0)[0]);
    expect(gone).toEqual({ exists: false, deleted: true });
    expect(() => decideChangeFolder({ kind: 'put', body: { name: 'x' } }, gone)).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
  });
});
