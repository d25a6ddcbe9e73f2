import { describe, expect, it } from 'vitest';
import type { SchemaDefinition } from '@svc/contracts';
import { type EventStore, type NewEvent, type StoredEvent, streams } from '@svc/domain';
import { storageRows } from './storage-rows';

/**
 * The storage-row arithmetic of a script transaction (docs/limits.md "Script
 * transaction"): what each staged stream costs, read against the store the
 * execution sees (the committed streams plus what it staged).
 */
const md = {
  tenantId: 't',
  contextId: 'c',
  accountId: null,
  actorKeyId: null,
  userId: null,
  requestId: null,
  occurredAt: '2026-11-25T00:00:00.000Z',
  schemaVersion: 1,
};
const ev = (type: string, data: Record<string, unknown>): NewEvent => ({
  id: `${type}-${Math.random()}`,
  type,
  data,
  metadata: md,
});

/** Only what storageRows reads: streams by id. */
function storeWith(committed: Record<string, NewEvent[]>): EventStore {
  return {
    readStream: async (id: string) =>
      (committed[id] ?? []).map(
        (e, revision) => ({ ...e, streamId: id, revision, position: revision + 1 }) as unknown as StoredEvent,
      ),
  } as unknown as EventStore;
}

/** One range-indexed lookup field and one reference field: a write costs 1 + 2 rows. */
const definition = {
  typeName: 'invoice',
  displayName: 'Invoice',
  allowedSurfaces: ['record', 'document'],
  fields: [
    { fieldId: 'amount', fieldType: 'number' },
    { fieldId: 'customer', fieldType: 'reference' },
  ],
  lookupFields: [{ fieldName: 'amount', rangeEnabled: true }],
} as unknown as SchemaDefinition;
const schemaStream = {
  [streams.schema('s1')]: [ev('SchemaCreated', { schemaId: 's1', typeName: 'invoice', definition })],
};

const content = { folderId: 'root', payload: { amount: 1 }, userId: null, scopes: [], status: null };
const recordCreated = (id: string) =>
  ev('RecordCreated', {
    recordId: id,
    schemaId: 's1',
    schemaVersion: 1,
    typeName: 'invoice',
    ...content,
    externalId: null,
    indexMode: null,
  });
const recordUpdated = (id: string) =>
  ev('RecordUpdated', { recordId: id, schemaVersion: 1, ...content, change: 'patch' });
const textDocument = (id: string) =>
  ev('DocumentCreated', {
    documentId: id,
    title: 't',
    source: 'text',
    indexMode: 'TEXT',
    storeText: true,
    ...content,
    payload: {},
    schemaId: null,
    schemaVersion: null,
    typeName: null,
    externalId: null,
    fileName: null,
    fileType: null,
    uploadId: null,
  });
const rootFolder = (id: string) =>
  ev('FolderCreated', {
    folderId: id,
    name: 'Root',
    description: null,
    parentFolderId: null,
    slug: 'root',
    depth: 0,
    isProtected: true,
    userId: null,
    scopes: [],
  });
const folder = (id: string, parent: string) =>
  ev('FolderCreated', {
    folderId: id,
    name: 'F',
    description: null,
    parentFolderId: parent,
    slug: 'f',
    depth: 1,
    isProtected: false,
    userId: null,
    scopes: [],
  });

describe('storageRows', () => {
  it(
    'does not count the context root a folder or document write records on the way (98 text documents are ' +
      '98 rows)',
    async () => {
      const staged = [
        { streamId: streams.folder('root'), events: [rootFolder('root')] },
        ...Array.from({ length: 98 }, (_, i) => ({
          streamId: streams.document(`d${i}`),
          events: [textDocument(`d${i}`)],
        })),
      ];
      expect(await storageRows(storeWith({}), staged)).toBe(98);
    },
  );

  it('a folder the script creates or deletes still costs 3 rows', async () => {
    const staged = [
      { streamId: streams.folder('root'), events: [rootFolder('root')] },
      { streamId: streams.folder('f1'), events: [folder('f1', 'root')] },
    ];
    expect(await storageRows(storeWith({}), staged)).toBe(3);
  });

  it(
    'a record update (RecordUpdated names no schema) costs what its create does: the schema comes from the ' +
      'record as loaded',
    async () => {
      const committed = { ...schemaStream, [streams.record('r1')]: [recordCreated('r1')] };
      expect(
        await storageRows(storeWith(committed), [{ streamId: streams.record('r1'), events: [recordUpdated('r1')] }]),
      ).toBe(3);
      expect(
        await storageRows(storeWith(committed), [{ streamId: streams.record('r2'), events: [recordCreated('r2')] }]),
      ).toBe(3);
      expect(
        await storageRows(storeWith(committed), [
          {
            streamId: streams.record('r1'),
            events: [
              recordUpdated('r1'),
              ev('RecordDeleted', { recordId: 'r1', typeName: 'invoice', externalId: null }),
            ],
          },
        ]),
      ).toBe(1);
    },
  );
});
