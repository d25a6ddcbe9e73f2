import { describe, expect, it } from 'vitest';
import { exportQuery, parseIsoTime } from '@svc/contracts';
import { EXPORT_STREAM_KINDS, maskEventData, parseKinds, selectionOf, streamKind } from './export';

describe('export parameters', () => {
  it('ISO-8601 times: a date, or a date-time with a zone; nothing else', () => {
    expect(parseIsoTime('2026-03-01')).toBe(Date.UTC(2026, 2, 1));
    expect(parseIsoTime('2026-03-01T10:20Z')).toBe(Date.UTC(2026, 2, 1, 10, 20));
    expect(parseIsoTime('2026-03-01T10:20:30.123+02:00')).toBe(Date.UTC(2026, 2, 1, 8, 20, 30, 123));
    for (const bad of [
      '2026-03-01T10:20',
      '2026-02-29',
      '2026-13-01',
      '2026-03-01T24:00Z',
      '2026-03-01T10:20+2',
      'yesterday',
      '1700000000',
      '2026-03-01 10:20Z',
      '',
    ])
      expect(parseIsoTime(bad), bad).toBeNull();
    expect(parseIsoTime('2028-02-29')).not.toBeNull();
  });

  it('kinds are the stream kinds of the log (no account streams); an unknown or empty entry is refused', () => {
    expect(EXPORT_STREAM_KINDS).toEqual(
      expect.arrayContaining([
        'record',
        'document',
        'folder',
        'schema',
        'namespace',
        'tenant',
        'context',
        'credential',
      ]),
    );
    expect(EXPORT_STREAM_KINDS).not.toContain('account');
    expect(streamKind('namespaces-t1')).toBe('namespace');
    expect(streamKind('record-3f2a-77')).toBe('record');
    expect([...parseKinds(' record,folder')!]).toEqual(['record', 'folder']);
    for (const bad of ['', 'records', 'record,', 'account']) expect(() => parseKinds(bad), bad).toThrow(/streams/);
  });

  it('an inverted window is refused; startFrom is a position', () => {
    expect(exportQuery.safeParse({ from: '2026-03-02', to: '2026-03-01' }).success).toBe(false);
    expect(exportQuery.safeParse({ from: '2026-03-01', to: '2026-03-01' }).success).toBe(true);
    expect(exportQuery.safeParse({ startFrom: 'abc' }).success).toBe(false);
    const s = selectionOf(exportQuery.parse({ startFrom: '42', streams: 'record' }), { tenantId: 't' }, 100);
    expect(s).toMatchObject({ tenantId: 't', after: 42, until: 100 });
  });
});

describe('masking', () => {
  it(
    'sealed values, blind indexes, blind reservation keys and secret hashes read as the mask; the rest as ' + 'stored',
    () => {
      const sealed = { $sealed: 'QUJD' };
      expect(
        maskEventData('RecordCreated', {
          payload: { pin: sealed, name: 'Ada', nested: { deep: [sealed, 1] } },
          blindIndex: { pin: 'ab12' },
        }),
      ).toEqual({
        payload: { pin: '********', name: 'Ada', nested: { deep: ['********', 1] } },
        blindIndex: { pin: '********' },
      });
      expect(
        maskEventData('ReservationClaimed', { key: 't/c/record-unique/T/pin/blind:0a1b2c', ownerId: 'r' }),
      ).toEqual({
        key: 't/c/record-unique/T/pin/blind:********',
        ownerId: 'r',
      });
      // Only reservation keys are rewritten: the same text in a payload is the tenant's own data.
      expect(maskEventData('RecordCreated', { payload: { note: 'blind:0a1b' } })).toEqual({
        payload: { note: 'blind:0a1b' },
      });
      expect(maskEventData('CredentialIssued', { secretHash: 'f'.repeat(64), prefix: 'sk_live_' })).toEqual({
        secretHash: '********',
        prefix: 'sk_live_',
      });
    },
  );
});
