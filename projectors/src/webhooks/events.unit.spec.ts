import { describe, expect, it } from 'vitest';
import { EVENT_SCHEMA_VERSION } from '@svc/contracts';
import type { EventStore, StoredEvent } from '@svc/domain';
import { webhookSources } from './events';

const md = (tenantId: string | null) => ({
  tenantId,
  contextId: 'c1',
  accountId: 'a1',
  actorKeyId: null,
  userId: null,
  requestId: null,
  occurredAt: '2026-01-01T00:00:00Z',
  schemaVersion: EVENT_SCHEMA_VERSION,
});
const ev = (type: string, data: Record<string, unknown>, tenantId: string | null = 't1'): StoredEvent =>
  ({ id: 'e1', type, data, metadata: md(tenantId), streamId: 's', revision: 0, position: 1 }) as unknown as StoredEvent;

const recordStream = [
  ev('RecordCreated', { recordId: 'r1', typeName: 'invoice', userId: 'u1', scopes: ['org:acme'] }),
  { ...ev('RecordUpdated', { recordId: 'r1', userId: null, scopes: [] }), revision: 1 },
];
const store = { readStream: async (id: string) => (id === 'record-r1' ? recordStream : []) } as unknown as EventStore;

describe('webhook event sources', () => {
  it('record.indexed and record.failed carry the record data; failures their indexFailure', async () => {
    const ok = webhookSources(ev('RecordIndexed', { recordId: 'r1', status: 'INDEXED', forRevision: 1 }), store)[0];
    expect(ok).toMatchObject({ type: 'record.indexed', sourceId: 'r1', sourceType: 'record', tenantId: 't1' });
    expect(await ok.data()).toEqual({ id: 'r1', typeName: 'invoice', indexStatus: 'INDEXED' });
    const failed = webhookSources(
      ev('RecordIndexFailed', { recordId: 'r1', code: 'EMBEDDING_FAILED', message: 'no model', forRevision: 1 }),
      store,
    )[0];
    expect(failed.type).toBe('record.failed');
    expect(await failed.data()).toEqual({
      id: 'r1',
      typeName: 'invoice',
      indexStatus: 'FAILED',
      indexFailure: { code: 'EMBEDDING_FAILED', message: 'no model' },
    });
  });

  it(
    'a batch of outcomes: one webhook event per INDEXED or FAILED record, keyed by record, revision and ' +
      'result (the same outcome again is the same key); an outcome of a replaced revision sends nothing',
    async () => {
      const batch = ev('RecordsIndexed', {
        outcomes: [
          { recordId: 'r1', forRevision: 1, status: 'INDEXED', code: null, message: null },
          { recordId: 'r2', forRevision: 0, status: 'SKIPPED', code: null, message: null },
          { recordId: 'r1', forRevision: 0, status: 'FAILED', code: 'TEXT_INDEX_FAILED', message: 'disk full' },
        ],
      });
      const sources = webhookSources(batch, store);
      expect(sources.map((s) => [s.type, s.key, s.sourceId])).toEqual([
        ['record.indexed', 'record:r1@1:INDEXED:', 'r1'],
        ['record.failed', 'record:r1@0:FAILED:TEXT_INDEX_FAILED', 'r1'],
      ]);
      expect(await sources[0].data()).toEqual({ id: 'r1', typeName: 'invoice', indexStatus: 'INDEXED' });
      // r1 is at revision 1 now: the outcome for revision 0 is stale.
      expect(await sources[1].data()).toBeNull();
      await expect(
        webhookSources(
          ev('RecordsIndexed', {
            outcomes: [
              { recordId: 'r1', forRevision: 1, status: 'FAILED', code: 'EMBEDDING_FAILED', message: 'no model' },
            ],
          }),
          store,
        )[0].data(),
      ).resolves.toEqual({
        id: 'r1',
        typeName: 'invoice',
        indexStatus: 'FAILED',
        indexFailure: { code: 'EMBEDDING_FAILED', message: 'no model' },
      });
      expect(
        webhookSources(
          ev(
            'RecordsIndexed',
            { outcomes: [{ recordId: 'r1', forRevision: 1, status: 'INDEXED', code: null, message: null }] },
            null,
          ),
          store,
        ),
      ).toEqual([]);
      const again = {
        ...ev('RecordsIndexed', {
          outcomes: [{ recordId: 'r1', forRevision: 1, status: 'INDEXED', code: null, message: null }],
        }),
        id: 'e2',
      } as StoredEvent;
      expect(webhookSources(again, store)[0].key).toBe(sources[0].key);
    },
  );

  it('SKIPPED records, events without a tenant and other events are not webhook events', () => {
    expect(webhookSources(ev('RecordIndexed', { recordId: 'r1', status: 'SKIPPED', forRevision: 1 }), store)).toEqual(
      [],
    );
    expect(
      webhookSources(ev('DocumentIndexed', { documentId: 'd1', status: 'INDEXED', textRevision: 1 }, null), store),
    ).toEqual([]);
    expect(webhookSources(ev('RecordCreated', { recordId: 'r1' }), store)).toEqual([]);
  });

  it('document events never carry the title; trigger.failed mirrors the trigger-failure record', async () => {
    const d = webhookSources(
      ev('DocumentFailed', { documentId: 'd1', code: 'SOURCE_UNAVAILABLE', message: 'gone' }),
      store,
    )[0];
    expect(d.type).toBe('document.failed');
    expect(await d.data()).toEqual({
      id: 'd1',
      status: 'FAILED',
      indexMode: 'NONE',
      indexFailure: { code: 'SOURCE_UNAVAILABLE', message: 'gone' },
    });
    const failure = {
      failureId: 'f1',
      ruleId: 'r',
      eventId: 'e',
      scriptRef: { name: 's', version: 1 },
      recordId: 'r1',
      event: 'CREATE',
      reason: 'SCRIPT_ERROR',
      message: 'boom',
      attempts: 1,
      firstFailedAt: 'x',
      lastFailedAt: 'y',
    };
    const t = webhookSources(ev('TriggerFailed', failure), store)[0];
    expect(t).toMatchObject({ type: 'trigger.failed', sourceId: 'f1', sourceType: 'trigger' });
    const { failureId: _, eventId: __, ...rest } = failure;
    expect(await t.data()).toEqual({ id: 'f1', ...rest });
  });
});
