import { describe, expect, it } from 'vitest';
import { conflict, type DomainEvent, type EventMetadata, ServiceError } from '@svc/contracts';
import {
  asStoredEvent,
  type AppendRequest,
  type EventStore,
  expectationHolds,
  type NewEvent,
  type StoredEvent,
  WrongExpectedRevisionError,
} from '../ports/event-store';
import type { PayloadSealing } from '../shared/sealing';
import { type Aggregate, type CommandDeps, commitStaged, handleCommand } from './handle-command';

/** A log in memory: enough of the event store for the handler (per-stream revisions, atomic multi-stream appends). */
class MemoryStore {
  readonly streams = new Map<string, StoredEvent[]>();
  position = 0;
  reads: string[] = [];
  appends = 0;
  /** Called before each appendMulti: a test writes "another writer's" event here. */
  interleave?: () => void;

  readStream = async (id: string) => {
    this.reads.push(id);
    return [...(this.streams.get(id) ?? [])];
  };

  write(streamId: string, events: NewEvent[]) {
    const list = this.streams.get(streamId) ?? [];
    for (const e of events)
      list.push(asStoredEvent({ ...e, streamId, revision: list.length, position: ++this.position }));
    this.streams.set(streamId, list);
  }

  appendMulti = async (requests: AppendRequest[]) => {
    this.appends += 1;
    const interleave = this.interleave;
    this.interleave = undefined;
    interleave?.();
    for (const r of requests) {
      const actual = (this.streams.get(r.streamId)?.length ?? 0) - 1;
      if (!expectationHolds(r.expectedRevision, actual))
        throw new WrongExpectedRevisionError(r.streamId, r.expectedRevision, actual < 0 ? 'no_stream' : actual);
    }
    for (const r of requests) this.write(r.streamId, r.events);
    return requests.map((r) => ({
      nextExpectedRevision: this.streams.get(r.streamId)!.length - 1,
      position: this.position,
    }));
  };
}

const md: EventMetadata = {
  tenantId: 't',
  contextId: 'c',
  accountId: 'a',
  actorKeyId: 'k',
  userId: null,
  requestId: 'r',
  occurredAt: '2026-01-01T00:00:00.000Z',
  schemaVersion: 1,
};

function setup() {
  const store = new MemoryStore();
  const waits: number[] = [];
  let n = 0;
  const deps = {
    store: store as unknown as EventStore,
    barrier: { waitFor: async (p: number) => (waits.push(p), true) },
    ids: { newId: () => `id-${++n}` },
    sealer: {} as PayloadSealing,
  } satisfies CommandDeps;
  return { store, deps, waits };
}

/** A counter: its state is the number of NamespaceCreated events seen (any catalogue event would do). */
const counter: Aggregate<number> = {
  initialState: () => 0,
  evolve: (s, e) => (e.type === 'NamespaceCreated' ? s + 1 : s),
};
const ev = (name: string): DomainEvent => ({ type: 'NamespaceCreated', data: { name, description: null } });
const claimOf = (streamId: string, expectedRevision: 'no_stream' | number) => ({
  streamId,
  events: [{ type: 'ReservationClaimed', data: { key: 'k', ownerId: 'o' } } as DomainEvent],
  expectedRevision,
});

describe('handleCommand', () => {
  it('load -> decide -> append at the revision read; waits for the read models; returns the state after', async () => {
    const { store, deps, waits } = setup();
    const out = await handleCommand(deps, {
      streamId: 's',
      aggregate: counter,
      metadata: md,
      decide: () => ({ events: [ev('a'), ev('b')] }),
    });
    expect(out.state).toBe(2);
    expect(store.streams.get('s')).toHaveLength(2);
    expect(waits).toEqual([2]);
    expect(out.position).toBe(2);
  });

  it(
    "a write that revokes credentials empties this process's credential cache once the read models have it, " +
      'before it is answered',
    async () => {
      const { deps, waits } = setup();
      const heard: string[] = [];
      const withHook = {
        ...deps,
        barrier: { waitFor: async (p: number) => (heard.push(`barrier ${p}`), waits.push(p), true) },
        onRevoked: () => heard.push('revoked'),
      };
      await handleCommand(withHook, {
        streamId: 's',
        aggregate: counter,
        metadata: md,
        decide: () => ({ events: [ev('a')] }),
      });
      expect(heard, 'not a revocation: the cache is kept').toEqual(['barrier 1']);
      await handleCommand(withHook, {
        streamId: 'credential-k',
        aggregate: counter,
        metadata: md,
        decide: () => ({ events: [{ type: 'CredentialRevoked', data: { credentialId: 'k' } } as DomainEvent] }),
      });
      expect(heard).toEqual(['barrier 1', 'barrier 2', 'revoked']);
    },
  );

  it('a writer that got in between: the command is loaded, prepared and decided again', async () => {
    const { store, deps } = setup();
    store.write('s', [{ id: 'x', type: 'NamespaceCreated', data: { name: 'x', description: null }, metadata: md }]);
    store.interleave = () =>
      store.write('s', [{ id: 'y', type: 'NamespaceCreated', data: { name: 'y', description: null }, metadata: md }]);
    const prepared: number[] = [];
    const out = await handleCommand(deps, {
      streamId: 's',
      aggregate: counter,
      metadata: md,
      prepare: async (state, attempt) => (prepared.push(attempt), state),
      decide: (state, seen) => ({ events: [ev(`after-${seen}`)] }),
    });
    expect(prepared).toEqual([0, 1]);
    expect(out.state).toBe(3);
    expect(out.prepared).toBe(2);
  });

  it('fresh: the new stream is not read and is appended with expected no_stream', async () => {
    const { store, deps } = setup();
    await handleCommand(deps, {
      streamId: 'new',
      aggregate: counter,
      metadata: md,
      fresh: true,
      decide: () => ({ events: [ev('a')] }),
    });
    expect(store.reads).toEqual([]);
    store.write('taken', [{ id: 'x', type: 'NamespaceCreated', data: { name: 'x', description: null }, metadata: md }]);
    await expect(
      handleCommand(deps, {
        streamId: 'taken',
        aggregate: counter,
        metadata: md,
        fresh: true,
        decide: () => ({ events: [ev('a')] }),
      }),
    ).rejects.toBeInstanceOf(WrongExpectedRevisionError);
  });

  it('fresh with onTaken: a stream another writer created first answers onTaken and appends nothing', async () => {
    const { store, deps } = setup();
    store.write('taken', [{ id: 'x', type: 'NamespaceCreated', data: { name: 'x', description: null }, metadata: md }]);
    const out = await handleCommand(deps, {
      streamId: 'taken',
      aggregate: counter,
      metadata: md,
      fresh: true,
      onTaken: () => 'taken' as const,
      decide: () => ({ events: [ev('a')], also: [claimOf('res', 'no_stream')] }),
    });
    expect(out.answer).toBe('taken');
    expect(out.position).toBe(0);
    expect(store.streams.get('taken')).toHaveLength(1);
    expect(store.streams.has('res')).toBe(false);
  });

  it("also: other streams are appended atomically; a charge rides in the first event's metadata", async () => {
    const { store, deps } = setup();
    const charge = [{ category: 'recordWrite', count: 1, units: 0, milli: 1000 }] as NonNullable<
      EventMetadata['charge']
    >;
    await handleCommand(deps, {
      streamId: 's',
      aggregate: counter,
      metadata: md,
      decide: () => ({
        events: [ev('a')],
        also: [claimOf('res', 'no_stream'), { streamId: 'usage', events: [], expectedRevision: 'any', charge }],
      }),
    });
    expect(store.appends).toBe(1);
    expect(store.streams.get('res')).toHaveLength(1);
    expect(store.streams.get('s')![0].metadata.chargeCode).toBe('recordWrite 1 0 1000');
    expect(store.streams.get('s')![0].metadata.charge).toBeUndefined();
    expect(store.streams.has('usage')).toBe(false);
  });

  it('dryRun: prepare, decide and beforeAppend run (a refusal throws), nothing is appended or waited for', async () => {
    const { store, deps, waits } = setup();
    const log: string[] = [];
    const out = await handleCommand(deps, {
      streamId: 's',
      aggregate: counter,
      metadata: md,
      dryRun: true,
      decide: () => ({ events: [ev('a')] }),
      beforeAppend: async ({ state, next }) => (log.push(`before ${state}->${next}`), [claimOf('res', 'no_stream')]),
      undo: async () => void log.push('undo'),
    });
    expect(out).toMatchObject({ state: 1, position: 0 });
    expect(log).toEqual(['before 0->1', 'undo']);
    expect(store.appends).toBe(0);
    expect(waits).toEqual([]);
    const refused = handleCommand(deps, {
      streamId: 's',
      aggregate: counter,
      metadata: md,
      dryRun: true,
      decide: () => ({ events: [ev('a')] }),
      beforeAppend: async () => {
        throw conflict('held');
      },
    });
    await expect(refused).rejects.toBeInstanceOf(ServiceError);
    expect(store.appends).toBe(0);
  });

  it('an answer with nothing to append writes nothing and does not wait', async () => {
    const { store, deps, waits } = setup();
    const out = await handleCommand(deps, {
      streamId: 's',
      aggregate: counter,
      metadata: md,
      decide: () => ({ events: [], answer: 'existing' }),
    });
    expect(out.answer).toBe('existing');
    expect(store.appends).toBe(0);
    expect(waits).toEqual([]);
  });

  it('beforeAppend runs when the decision has events, adds appends; undo runs when that append fails', async () => {
    const { store, deps } = setup();
    const log: string[] = [];
    store.interleave = () =>
      store.write('s', [{ id: 'y', type: 'NamespaceCreated', data: { name: 'y', description: null }, metadata: md }]);
    await handleCommand(deps, {
      streamId: 's',
      aggregate: counter,
      metadata: md,
      decide: () => ({ events: [ev('a')] }),
      beforeAppend: async ({ state, next }) => (
        log.push(`before ${state}->${next}`),
        [claimOf(`res-${state}`, 'no_stream')]
      ),
      undo: async () => void log.push('undo'),
    });
    expect(log).toEqual(['before 0->1', 'undo', 'before 1->2']);
    expect(store.streams.has('res-0')).toBe(false);
    expect(store.streams.get('res-1')).toHaveLength(1);
  });

  describe('a conflict on another stream', () => {
    const race = (store: MemoryStore) =>
      (store.interleave = () =>
        store.write('res', [
          { id: 'z', type: 'ReservationClaimed', data: { key: 'k', ownerId: 'other' }, metadata: md },
        ]));
    const cmd = (
      onConflict?: Parameters<typeof handleCommand<number, { holder: boolean }, string>>[1]['onConflict'],
    ) => ({
      streamId: 's',
      aggregate: counter,
      metadata: md,
      prepare: async () => ({ holder: false }),
      decide: () => ({ events: [ev('a')], also: [claimOf('res', 'no_stream')] }),
      onConflict,
    });

    it('without onConflict: rethrown', async () => {
      const { store, deps } = setup();
      race(store);
      await expect(handleCommand(deps, cmd())).rejects.toBeInstanceOf(WrongExpectedRevisionError);
    });

    it("'retry': the next attempt reads again (and may answer with the holder)", async () => {
      const { store, deps } = setup();
      race(store);
      let attempts = 0;
      const out = await handleCommand(deps, {
        streamId: 's',
        aggregate: counter,
        metadata: md,
        prepare: async () => ({ held: store.streams.has('res') }),
        decide: (_, { held }) => (
          attempts++,
          held ? { events: [], answer: 'holder' } : { events: [ev('a')], also: [claimOf('res', 'no_stream')] }
        ),
        onConflict: () => 'retry',
      });
      expect(attempts).toBe(2);
      expect(out.answer).toBe('holder');
      expect(store.streams.has('s')).toBe(false);
    });

    it('{ answer }: handed back at once, nothing written', async () => {
      const { store, deps } = setup();
      race(store);
      const out = await handleCommand(
        deps,
        cmd(() => ({ answer: 'taken' })),
      );
      expect(out.answer).toBe('taken');
      expect(store.streams.has('s')).toBe(false);
    });

    it('a throw: the caller gets it (409)', async () => {
      const { store, deps } = setup();
      race(store);
      const err = await handleCommand(
        deps,
        cmd((on) => {
          throw conflict(`lost ${on.streamId}`);
        }),
      ).catch((e) => e);
      expect(err).toBeInstanceOf(ServiceError);
      expect((err as ServiceError).message).toBe('lost res');
    });
  });

  it('the positional form (single stream) still works', async () => {
    const { deps } = setup();
    const out = await handleCommand(deps, 's', counter, (s) => ({ events: [ev(String(s))] }), md);
    expect(out.state).toBe(1);
  });

  it(
    'an append-only stream is not read and is appended with expected revision any, however many writers got ' +
      'there first',
    async () => {
      const { store, deps } = setup();
      store.write('log', [{ id: 'x', type: 'NamespaceCreated', data: { name: 'x', description: null }, metadata: md }]);
      store.interleave = () =>
        store.write('log', [
          { id: 'y', type: 'NamespaceCreated', data: { name: 'y', description: null }, metadata: md },
        ]);
      const out = await handleCommand(deps, {
        streamId: 'log',
        aggregate: counter,
        appendOnly: true,
        metadata: md,
        decide: (s) => ({ events: [ev(String(s))] }),
      });
      expect(store.reads).toEqual([]);
      expect(store.appends).toBe(1);
      expect(store.streams.get('log')!.map((e) => (e.data as { name: string }).name)).toEqual(['x', 'y', '0']);
      expect(out.position).toBe(3);
    },
  );

  it(
    'metadata given as a function of the state read stamps the events (a worker writes in the document ' + 'tenant)',
    async () => {
      const { store, deps } = setup();
      await handleCommand(deps, {
        streamId: 's',
        aggregate: counter,
        metadata: md,
        decide: () => ({ events: [ev('a')] }),
      });
      await handleCommand(deps, {
        streamId: 's',
        aggregate: counter,
        metadata: (s) => ({ ...md, tenantId: `t${s}` }),
        decide: () => ({ events: [ev('b')] }),
      });
      expect(store.streams.get('s')!.map((e) => e.metadata.tenantId)).toEqual(['t', 't1']);
    },
  );

  it(
    'commitStaged: a staged transaction is appended at once and awaited; a stream that moved is answered by ' +
      'name, nothing written',
    async () => {
      const { store, deps, waits } = setup();
      const staged = (streamId: string, expectedRevision: 'no_stream' | number) => ({
        streamId,
        expectedRevision,
        events: [{ id: streamId, type: 'NamespaceCreated', data: { name: streamId, description: null }, metadata: md }],
      });
      expect(await commitStaged(deps, [staged('a', 'no_stream'), staged('b', 'no_stream')])).toEqual({ position: 2 });
      expect(waits).toEqual([2]);
      expect(await commitStaged(deps, [staged('c', 'no_stream'), staged('a', 'no_stream')])).toEqual({ conflict: 'a' });
      expect(store.streams.has('c')).toBe(false);
    },
  );
});
