import { describe, expect, it } from 'vitest';
import {
  type AppendRequest,
  type EventStore,
  expectationHolds,
  type NewEvent,
  type StoredEvent,
  WrongExpectedRevisionError,
} from '@svc/domain';
import { StagingEventStore } from './staging-store';

/** A minimal store: streams in memory, appends checked like the adapters'. */
function memoryStore(): EventStore & { streams: Map<string, StoredEvent[]> } {
  const streams = new Map<string, StoredEvent[]>();
  let position = 0;
  const store = {
    streams,
    async append(streamId: string, events: NewEvent[], expectedRevision: AppendRequest['expectedRevision']) {
      return (await store.appendMulti([{ streamId, events, expectedRevision }]))[0];
    },
    async appendMulti(requests: AppendRequest[]) {
      for (const r of requests) {
        const last = (streams.get(r.streamId)?.length ?? 0) - 1;
        if (!expectationHolds(r.expectedRevision, last))
          throw new WrongExpectedRevisionError(r.streamId, r.expectedRevision, last < 0 ? 'no_stream' : last);
      }
      return requests.map((r) => {
        const list = streams.get(r.streamId) ?? [];
        for (const e of r.events)
          list.push({
            ...e,
            streamId: r.streamId,
            revision: list.length,
            position: ++position,
          } as unknown as StoredEvent);
        streams.set(r.streamId, list);
        return { nextExpectedRevision: list.length - 1, position };
      });
    },
    async readStream(streamId: string) {
      return [...(streams.get(streamId) ?? [])];
    },
    readAll: async () => [],
    headPosition: async () => position,
    onAppended: () => () => {},
    close: async () => {},
  };
  return store;
}

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
const ev = (n: number): NewEvent => ({
  id: `e${n}`,
  type: 'NamespaceCreated',
  data: { name: `n${n}`, description: null },
  metadata: md,
});

describe('the staging event store', () => {
  it('reads the real stream plus its own staged events, and checks expectations against that view', async () => {
    const real = memoryStore();
    await real.append('a', [ev(1)], 'no_stream');
    const staging = new StagingEventStore(real);
    expect((await staging.readStream('a')).map((e) => e.revision)).toEqual([0]);
    await staging.append('a', [ev(2)], 0);
    expect((await staging.readStream('a')).map((e) => e.revision)).toEqual([0, 1]);
    expect((await staging.readStream('a', { direction: 'backwards', maxCount: 1 }))[0].id).toBe('e2');
    await expect(staging.append('a', [ev(3)], 0)).rejects.toBeInstanceOf(WrongExpectedRevisionError);
    expect(real.streams.get('a')).toHaveLength(1); // nothing written yet
  });

  it('commits written streams at the revision first read, and expects streams only read where they were', async () => {
    const real = memoryStore();
    await real.append('a', [ev(1)], 'no_stream');
    await real.append('read', [ev(9)], 'no_stream');
    const staging = new StagingEventStore(real);
    await staging.readStream('read');
    await staging.readStream('a');
    await staging.append('a', [ev(2)], 0);
    await staging.append('a', [ev(3)], 1);
    await staging.append('new', [ev(4)], 'no_stream');
    await staging.append('usage', [ev(5)], 'any');
    expect(staging.commitRequests().map((r) => [r.streamId, r.events.length, r.expectedRevision])).toEqual([
      ['a', 2, 0],
      ['new', 1, 'no_stream'],
      ['usage', 1, 'any'],
      ['read', 0, 0],
    ]);
    expect(staging.commitRequests(false).map((r) => r.streamId)).toEqual(['a', 'new', 'usage']);
    // Another writer in between: the one commit fails as a whole.
    await real.append('read', [ev(10)], 0);
    await expect(real.appendMulti(staging.commitRequests())).rejects.toMatchObject({ streamId: 'read' });
    expect(real.streams.get('a')).toHaveLength(1);
    expect(real.streams.has('new')).toBe(false);
  });

  it('does not read a stream it only appends to with any (a long usage stream), until something reads it', async () => {
    const real = memoryStore();
    await real.append('usage', [ev(1), ev(2)], 'no_stream');
    let reads = 0;
    const readStream = real.readStream;
    real.readStream = (id, o) => ((reads += 1), readStream(id, o));
    const staging = new StagingEventStore(real);
    await staging.append('usage', [ev(3)], 'any');
    expect(reads).toBe(0);
    expect(staging.commitRequests()).toEqual([{ streamId: 'usage', events: [ev(3)], expectedRevision: 'any' }]);
    expect((await staging.readStream('usage')).map((e) => [e.id, e.revision])).toEqual([
      ['e1', 0],
      ['e2', 1],
      ['e3', 2],
    ]);
    expect(reads).toBe(1);
  });

  it('commits nothing (not even read checks) when nothing was staged', async () => {
    const staging = new StagingEventStore(memoryStore());
    await staging.readStream('x');
    expect(staging.commitRequests()).toEqual([]);
  });
});
