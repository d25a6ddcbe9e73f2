import { describe, expect, it } from 'vitest';
import { given } from '../shared/given-when-then.test-support';
import { type NamespaceEvent, namespaceDecider, namespaceNames, namespaceView } from './namespace';

const created: NamespaceEvent = { type: 'NamespaceCreated', data: { name: 'team', description: null } };
const deleted: NamespaceEvent = { type: 'NamespaceDeleted', data: { name: 'team' } };

describe('CreateNamespace', () => {
  it('registers a name; the built-ins list first', () => {
    given(namespaceDecider).when({ type: 'CreateNamespace', name: 'team' }).then([created]);
    given(namespaceDecider)
      .when({ type: 'CreateNamespace', name: 'team', description: 'd' })
      .then([{ type: 'NamespaceCreated', data: { name: 'team', description: 'd' } }]);
    const s = given(namespaceDecider, [created]).state();
    expect(namespaceNames(s)).toEqual(['org', 'client', 'team']);
    expect(namespaceView(s.entries.team)).toEqual({ name: 'team', createdAt: '2026-01-01T00:00:00.000Z' });
  });

  it('refuses a built-in name and a registered one', () => {
    given(namespaceDecider).when({ type: 'CreateNamespace', name: 'org' }).thenThrows('VALIDATION_ERROR');
    given(namespaceDecider, [created]).when({ type: 'CreateNamespace', name: 'team' }).thenThrows('CONFLICT');
  });

  it('a deleted name may be registered again', () => {
    given(namespaceDecider, [created, deleted]).when({ type: 'CreateNamespace', name: 'team' }).then([created]);
  });
});

describe('DeleteNamespace', () => {
  it('deletes a registered namespace without entities', () => {
    given(namespaceDecider, [created]).when({ type: 'DeleteNamespace', name: 'team', entities: 0 }).then([deleted]);
    expect(namespaceNames(given(namespaceDecider, [created, deleted]).state())).toEqual(['org', 'client']);
  });

  it('refuses a built-in, an unknown name and one whose entities remain', () => {
    given(namespaceDecider, [created])
      .when({ type: 'DeleteNamespace', name: 'client', entities: 0 })
      .thenThrows('VALIDATION_ERROR');
    given(namespaceDecider, [created, deleted])
      .when({ type: 'DeleteNamespace', name: 'team', entities: 0 })
      .thenThrows('NOT_FOUND');
    given(namespaceDecider, [created])
      .when({ type: 'DeleteNamespace', name: 'team', entities: 1 })
      .thenThrows('VALIDATION_ERROR');
  });
});
