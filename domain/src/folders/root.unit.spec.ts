import { describe, expect, it } from 'vitest';
import { given, TEST_METADATA } from '../shared/given-when-then.test-support';
import { folderDecider, implicitRootFolder, rootCreatedAt, rootFolderId } from './folder';

describe('the context root, before it is recorded', () => {
  it('is created a millisecond before its context, so it lists first', () => {
    expect(rootCreatedAt('2026-03-01T10:00:00.000Z')).toBe('2026-03-01T09:59:59.999Z');
  });

  it(
    'reads exactly as the root CreateRootFolder records as of its context (nothing changes when it is ' +
      'materialised)',
    () => {
      const contextCreatedAt = '2026-03-01T10:00:00.000Z';
      const id = rootFolderId('t', 'c');
      const metadata = { ...TEST_METADATA, tenantId: 't', contextId: 'c', occurredAt: rootCreatedAt(contextCreatedAt) };
      const recorded = given(folderDecider, [], { metadata }).when({ type: 'CreateRootFolder', folderId: id }).state();
      expect(implicitRootFolder('t', 'c', contextCreatedAt)).toEqual(recorded);
    },
  );
});
