import { describe, expect, it } from 'vitest';
import type { EventMetadata } from '@svc/contracts';
import { decideCreateRoot, folderAggregate, implicitRootFolder, rootCreatedAt, rootFolderId, type FolderState } from './folder';

const md = (at: string): EventMetadata => ({ tenantId: 't', contextId: 'c', accountId: 'a', actorKeyId: 'k', userId: null, requestId: 'r', occurredAt: at, schemaVersion: 1 });

describe('the context root, before it is recorded', () => {
  it('is created a millisecond before its context, so it lists first', () => {
    expect(rootCreatedAt('2026-03-01T10:00:00.000Z')).toBe('2026-03-01T09:59:59.999Z');
  });

  it('reads exactly as the root decideCreateRoot records as of its context (nothing changes when it is materialised)', () => {
    const contextCreatedAt = '2026-03-01T10:00:00.000Z';
    const id = rootFolderId('t', 'c');
    const recorded = decideCreateRoot(id, { exists: false }).reduce<FolderState>((s, e) => folderAggregate.evolve(s, e, md(rootCreatedAt(contextCreatedAt))), folderAggregate.initialState());
    expect(implicitRootFolder('t', 'c', contextCreatedAt)).toEqual(recorded);
  });
});
