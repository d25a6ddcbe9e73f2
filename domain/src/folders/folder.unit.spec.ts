import { describe, expect, it } from 'vitest';
import { FOLDER_SLUG_RE, InternalError, type Principal } from '@svc/contracts';
import { given, TEST_METADATA } from '../shared/given-when-then.test-support';
import {
  deriveSlug,
  type FolderCommand,
  type FolderEvent,
  folderDecider,
  type LiveFolder,
  rootFolderId,
  slugCandidate,
} from './folder';

const actor = (over: Partial<Principal> = {}): Principal => ({
  credentialId: 'k1',
  kind: 'root',
  accountId: 'a1',
  tenantId: TEST_METADATA.tenantId,
  environment: 'live',
  contextId: TEST_METADATA.contextId,
  crossContext: true,
  allowedActions: ['*'],
  dataScope: null,
  userId: null,
  wireVersionPin: null,
  ...over,
});

const rootCreated: FolderEvent = {
  type: 'FolderCreated',
  data: {
    folderId: 'root-id',
    name: 'Root',
    description: null,
    parentFolderId: null,
    slug: 'root',
    depth: 0,
    isProtected: true,
    userId: null,
    scopes: [],
  },
};
const root = given(folderDecider, [rootCreated]).state() as LiveFolder;
const created: FolderEvent = {
  type: 'FolderCreated',
  data: {
    folderId: 'f1',
    name: 'Reports',
    description: 'd',
    parentFolderId: 'root-id',
    slug: 'reports',
    depth: 1,
    isProtected: false,
    userId: 'u',
    scopes: ['org:a'],
  },
};
const deleted: FolderEvent = {
  type: 'FolderDeleted',
  data: { folderId: 'f1', parentFolderId: 'root-id', slug: 'reports' },
};
const updated = (over: Partial<Extract<FolderEvent, { type: 'FolderUpdated' }>['data']> = {}): FolderEvent => ({
  type: 'FolderUpdated',
  data: { folderId: 'f1', name: 'Reports', description: 'd', userId: 'u', scopes: ['org:a'], change: 'patch', ...over },
});
const change = (kind: 'put' | 'patch', body: Record<string, unknown>, by = actor()) =>
  ({ type: 'ChangeFolder', actor: by, kind, body }) as const;
const remove = (over: { expectedVersion?: number; items?: number; actor?: Principal } = {}) =>
  ({ type: 'DeleteFolder', actor: actor(), items: 0, ...over }) as const;

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

describe('CreateRootFolder', () => {
  it('has a stable id per tenant and context, in UUID layout', () => {
    expect(rootFolderId('t', 'c')).toBe(rootFolderId('t', 'c'));
    expect(rootFolderId('t', 'c')).not.toBe(rootFolderId('t', 'c2'));
    expect(rootFolderId('t', 'c')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('records a protected, unparented root at depth 0', () => {
    given(folderDecider).when({ type: 'CreateRootFolder', folderId: 'root-id' }).then([rootCreated]);
    expect(root).toMatchObject({
      isProtected: true,
      parentFolderId: null,
      depth: 0,
      slug: 'root',
      version: 1,
      tenantId: 't1',
      contextId: 'c1',
    });
  });

  it('does nothing when the root is recorded already (or was deleted with its context)', () => {
    given(folderDecider, [rootCreated]).when({ type: 'CreateRootFolder', folderId: 'root-id' }).then([]);
    given(folderDecider, [created, deleted]).when({ type: 'CreateRootFolder', folderId: 'f1' }).then([]);
  });
});

describe('CreateFolder', () => {
  const create: FolderCommand = {
    type: 'CreateFolder',
    folderId: 'f1',
    name: 'Reports',
    description: 'd',
    parent: root,
    slug: 'reports',
    userId: 'u',
    scopes: ['org:a'],
  };

  it('sits one level below its parent', () => {
    given(folderDecider).when(create).then([created]);
    expect(given(folderDecider).when(create).state()).toMatchObject({
      parentFolderId: 'root-id',
      depth: 1,
      isProtected: false,
      createdAt: TEST_METADATA.occurredAt,
      version: 1,
    });
  });

  it('never reuses an id (a programming error, not a refusal)', () => {
    expect(() => given(folderDecider, [created]).when(create).events()).toThrow(InternalError);
    expect(() => given(folderDecider, [created, deleted]).when(create).events()).toThrow(InternalError);
  });
});

describe('ChangeFolder', () => {
  it('PUT replaces name and description', () => {
    given(folderDecider, [created])
      .when(change('put', { name: 'New' }))
      .then([updated({ name: 'New', description: null, change: 'put' })]);
  });

  it('PATCH changes only what it names, ownership included', () => {
    given(folderDecider, [created])
      .when(change('patch', { description: 'e' }))
      .then([updated({ description: 'e' })]);
    given(folderDecider, [created])
      .when(change('patch', { userId: 'v', scopes: ['org:b'] }))
      .then([updated({ userId: 'v', scopes: ['org:b'] })]);
  });

  it('a credential bound to a user stamps that user', () => {
    given(folderDecider, [created])
      .when(change('patch', { userId: 'u', name: 'x' }, actor({ userId: 'u' })))
      .then([updated({ name: 'x' })]);
  });

  it('counts versions', () => {
    expect(
      given(folderDecider, [created, updated()])
        .when(change('patch', { name: 'x', expectedVersion: 2 }))
        .state(),
    ).toMatchObject({ version: 3, name: 'x' });
  });

  it('a missing, deleted or hidden folder is not found', () => {
    given(folderDecider)
      .when(change('put', { name: 'x' }))
      .thenThrows('NOT_FOUND');
    given(folderDecider, [created, deleted])
      .when(change('put', { name: 'x' }))
      .thenThrows('NOT_FOUND');
    given(folderDecider, [created])
      .when(change('put', { name: 'x' }, actor({ userId: 'someone-else' })))
      .thenThrows('NOT_FOUND');
    given(folderDecider, [created])
      .when(change('put', { name: 'x' }, actor({ contextId: 'c2' })))
      .thenThrows('NOT_FOUND');
  });

  it('the root cannot be changed', () => {
    given(folderDecider, [rootCreated])
      .when(change('patch', { name: 'x' }))
      .thenThrows('VALIDATION_ERROR');
    given(folderDecider, [rootCreated])
      .when(change('put', { name: 'x' }))
      .thenThrows('VALIDATION_ERROR');
  });

  it.each([[{ slug: 'x' }], [{ parentFolderId: 'p' }], [{ name: null }], [{ other: 1 }], [{ name: 3 }]])(
    'PATCH %j is refused',
    (body) => {
      given(folderDecider, [created]).when(change('patch', body)).thenThrows('VALIDATION_ERROR');
    },
  );

  it('PUT may repeat slug and parent, not change them', () => {
    given(folderDecider, [created])
      .when(change('put', { name: 'x', slug: 'reports', parentFolderId: 'root-id' }))
      .then([updated({ name: 'x', description: null, change: 'put' })]);
    given(folderDecider, [created])
      .when(change('put', { name: 'x', slug: 'other' }))
      .thenThrows('VALIDATION_ERROR');
    given(folderDecider, [created])
      .when(change('put', { name: 'x', parentFolderId: 'p' }))
      .thenThrows('VALIDATION_ERROR');
  });

  it('naming another user than the bound one is a 403, after the body checks', () => {
    given(folderDecider, [created])
      .when(change('patch', { userId: 'v' }, actor({ userId: 'u' })))
      .thenThrows('FORBIDDEN');
    given(folderDecider, [created])
      .when(change('patch', { userId: 'v', other: 1 }, actor({ userId: 'u' })))
      .thenThrows('VALIDATION_ERROR');
  });

  it('expectedVersion must match', () => {
    given(folderDecider, [created])
      .when(change('patch', { name: 'x', expectedVersion: 2 }))
      .thenThrows('VERSION_CONFLICT');
  });
});

describe('DeleteFolder', () => {
  it('deletes an empty folder; after that it is gone', () => {
    given(folderDecider, [created])
      .when(remove({ expectedVersion: 1 }))
      .then([deleted]);
    expect(given(folderDecider, [created]).when(remove()).state()).toEqual({ exists: false, deleted: true });
  });

  it('a missing or hidden folder is not found', () => {
    given(folderDecider).when(remove()).thenThrows('NOT_FOUND');
    given(folderDecider, [created, deleted]).when(remove()).thenThrows('NOT_FOUND');
    given(folderDecider, [created])
      .when(remove({ actor: actor({ dataScope: { scopes: ['org:z'] } }) }))
      .thenThrows('NOT_FOUND');
  });

  it('refuses the root, a stale version and a folder that is not empty', () => {
    given(folderDecider, [rootCreated]).when(remove()).thenThrows('VALIDATION_ERROR');
    given(folderDecider, [created])
      .when(remove({ expectedVersion: 2 }))
      .thenThrows('VERSION_CONFLICT');
    given(folderDecider, [created])
      .when(remove({ items: 1 }))
      .thenThrows('VALIDATION_ERROR');
  });
});
