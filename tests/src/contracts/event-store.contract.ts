import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type EventStore,
  type NewEvent,
  readTenantEvents,
  type RecordedEvent,
  WrongExpectedRevisionError,
} from '@svc/domain';
import { catchUp } from '@svc/projectors';

/**
 * The one contract every event-store adapter passes. Each adapter's spec file
 * calls this with a factory; nothing here knows which engine is below.
 */
export function eventStoreContract(name: string, open: () => Promise<EventStore & { dispose?: () => Promise<void> }>) {
  describe(`event store contract: ${name}`, () => {
    let store: EventStore & { dispose?: () => Promise<void> };
    beforeAll(async () => {
      store = await open();
    }, 60_000);
    afterAll(async () => {
      await store?.close();
      await store?.dispose?.();
    });

    const ev = (type: string, data: Record<string, unknown> = {}): NewEvent => ({
      id: randomUUID(),
      type,
      data,
      metadata: {
        tenantId: 't',
        contextId: 'c',
        accountId: null,
        actorKeyId: null,
        userId: null,
        requestId: randomUUID(),
        occurredAt: new Date().toISOString(),
        schemaVersion: 1,
      },
    });
    const stream = () => `test-${randomUUID()}`;

    it('an append the engine refuses fails alone: appends batched with it still commit', async () => {
      // A NUL character is valid JSON but PostgreSQL's jsonb refuses it: the group commit must not fail its neighbours.
      const good = Array.from({ length: 30 }, () => stream());
      const bad = stream();
      const results = await Promise.allSettled([
        ...good.slice(0, 15).map((s) => store.append(s, [ev('Good', { n: 1 })], 'no_stream')),
        store.append(bad, [ev('Bad', { text: 'nul\u0000here', lone: '\ud800' })], 'no_stream'),
        ...good.slice(15).map((s) => store.append(s, [ev('Good', { n: 2 })], 'no_stream')),
      ]);
      const failedGood = results.filter((r, i) => i !== 15 && r.status === 'rejected');
      expect(failedGood).toEqual([]);
      for (const s of good) expect((await store.readStream(s)).map((e) => e.type)).toEqual(['Good']);
    });

    it('appends to a new stream and reads it forwards and backwards', async () => {
      const s = stream();
      const r = await store.append(s, [ev('A', { n: 1 }), ev('B', { n: 2 }), ev('C', { n: 3 })], 'no_stream');
      expect(r.nextExpectedRevision).toBe(2);
      const fwd = await store.readStream(s);
      expect(fwd.map((e: RecordedEvent) => [e.type, e.revision, e.data.n])).toEqual([
        ['A', 0, 1],
        ['B', 1, 2],
        ['C', 2, 3],
      ]);
      expect(fwd[2].position).toBe(r.position);
      expect(fwd[0].metadata.tenantId).toBe('t');
      const back = await store.readStream(s, { direction: 'backwards', maxCount: 2 });
      expect(back.map((e) => e.type)).toEqual(['C', 'B']);
      const from1 = await store.readStream(s, { fromRevision: 1 });
      expect(from1.map((e) => e.type)).toEqual(['B', 'C']);
    });

    it('reads a missing stream as empty', async () => {
      expect(await store.readStream(stream())).toEqual([]);
    });

    it('enforces each expected-revision state', async () => {
      const s = stream();
      await expect(store.append(s, [ev('A')], 'stream_exists')).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await expect(store.append(s, [ev('A')], 0)).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await store.append(s, [ev('A')], 'no_stream');
      await expect(store.append(s, [ev('B')], 'no_stream')).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await expect(store.append(s, [ev('B')], 5)).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      const r = await store.append(s, [ev('B')], 0);
      expect(r.nextExpectedRevision).toBe(1);
      await store.append(s, [ev('C')], 'stream_exists');
      await store.append(s, [ev('D')], 'any');
      expect((await store.readStream(s)).map((e) => e.type)).toEqual(['A', 'B', 'C', 'D']);
    });

    it('lets exactly one of 100 concurrent appends at the same expected revision succeed', async () => {
      const s = stream();
      await store.append(s, [ev('Start')], 'no_stream');
      const results = await Promise.allSettled(
        Array.from({ length: 100 }, (_, i) => store.append(s, [ev('Race', { i })], 0)),
      );
      const ok = results.filter((r) => r.status === 'fulfilled');
      const conflicts = results.filter(
        (r) => r.status === 'rejected' && r.reason instanceof WrongExpectedRevisionError,
      );
      expect(ok).toHaveLength(1);
      expect(conflicts).toHaveLength(99);
      expect(await store.readStream(s)).toHaveLength(2);
    });

    it(
      'in one group commit, a no_stream append to a stream that exists fails alone with ' +
        'WrongExpectedRevisionError',
      async () => {
        const taken = stream();
        await store.append(taken, [ev('First')], 'no_stream');
        const fresh = Array.from({ length: 20 }, () => stream());
        const results = await Promise.allSettled([
          ...fresh.slice(0, 10).map((s) => store.append(s, [ev('New')], 'no_stream')),
          store.append(taken, [ev('Again')], 'no_stream'),
          ...fresh.slice(10).map((s) => store.append(s, [ev('New')], 'no_stream')),
        ]);
        expect(results[10].status === 'rejected' && results[10].reason).toBeInstanceOf(WrongExpectedRevisionError);
        expect(results.filter((r, i) => i !== 10 && r.status === 'rejected')).toEqual([]);
        expect((await store.readStream(taken)).map((e) => e.type)).toEqual(['First']);
        for (const s of fresh)
          expect((await store.readStream(s)).map((e) => [e.type, e.revision])).toEqual([['New', 0]]);
      },
    );

    it('appends to several streams atomically', async () => {
      const a = stream();
      const b = stream();
      const res = await store.appendMulti([
        { streamId: a, events: [ev('A1'), ev('A2')], expectedRevision: 'no_stream' },
        { streamId: b, events: [ev('B1')], expectedRevision: 'no_stream' },
      ]);
      expect(res.map((r) => r.nextExpectedRevision)).toEqual([1, 0]);
      expect(await store.readStream(a)).toHaveLength(2);
      expect(await store.readStream(b)).toHaveLength(1);
    });

    it('writes nothing to any stream when one expectation of a multi-stream append fails', async () => {
      const a = stream();
      const b = stream();
      await store.append(b, [ev('B0')], 'no_stream');
      const headBefore = await store.headPosition();
      await expect(
        store.appendMulti([
          { streamId: a, events: [ev('A1')], expectedRevision: 'no_stream' },
          { streamId: b, events: [ev('B1')], expectedRevision: 'no_stream' },
        ]),
      ).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      expect(await store.readStream(a)).toEqual([]);
      expect((await store.readStream(b)).map((e) => e.type)).toEqual(['B0']);
      expect(await store.headPosition()).toBe(headBefore);
    });

    it('reads the global log in commit order from a position', async () => {
      const before = await store.headPosition();
      const s1 = stream();
      const s2 = stream();
      await store.append(s1, [ev('X1')], 'no_stream');
      await store.append(s2, [ev('Y1')], 'no_stream');
      await store.append(s1, [ev('X2')], 0);
      const all = await store.readAll(before, 100);
      const mine = all.filter((e) => e.streamId === s1 || e.streamId === s2);
      expect(mine.map((e) => e.type)).toEqual(['X1', 'Y1', 'X2']);
      for (let i = 1; i < all.length; i++) expect(all[i].position).toBeGreaterThan(all[i - 1].position);
      expect(await store.headPosition()).toBe(all[all.length - 1].position);
      const limited = await store.readAll(before, 2);
      expect(limited).toHaveLength(2);
    });

    it('delivers each event once, in order, to a catch-up subscription starting behind, then live', async () => {
      const s = stream();
      await store.append(s, [ev('E', { i: 0 }), ev('E', { i: 1 })], 'no_stream');
      const start = (await store.readStream(s))[0].position - 1;
      const seen: number[] = [];
      const ac = new AbortController();
      const done = catchUp(store, {
        from: start,
        batchSize: 3,
        signal: ac.signal,
        handle: async (events) => {
          for (const e of events as RecordedEvent[]) if (e.streamId === s) seen.push(e.data.i as number);
          return events[events.length - 1].position;
        },
      });
      for (let i = 2; i < 10; i++) await store.append(s, [ev('E', { i })], 'any');
      const deadline = Date.now() + 10_000;
      while (seen.length < 10 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      ac.abort();
      await done;
      expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });

    it(
      "readTenantEvents (the adapter's readTenant, or readAll filtered) pages one tenant's events in log " + 'order',
      async () => {
        const [t1, t2] = [`t-${randomUUID()}`, `t-${randomUUID()}`];
        const tev = (tenantId: string, i: number): NewEvent => ({
          ...ev('T', { i }),
          metadata: { ...ev('T').metadata, tenantId },
        });
        const before = await store.headPosition();
        for (let i = 0; i < 7; i++)
          await store.append(stream(), [tev(i % 3 === 0 ? t2 : t1, i), tev(t2, 100 + i)], 'no_stream');
        const expected = (await store.readAll(before, 1000))
          .filter((e) => e.metadata.tenantId === t1)
          .map((e) => e.position);
        expect(expected).toHaveLength(4);
        const collect = async (s: EventStore, until?: number) => {
          const got: number[] = [];
          for (let after = before, n = 0; n < 100; n++) {
            const page = await readTenantEvents(s, t1, after, 2, until);
            expect(page.events.length).toBeLessThanOrEqual(2);
            got.push(...page.events.map((e) => e.position));
            after = page.next;
            if (page.done) break;
          }
          return got;
        };
        // Without readTenant (the generic fallback over readAll), then with the adapter's own where it has one.
        const generic = Object.create(store, { readTenant: { value: undefined } }) as EventStore;
        expect(await collect(generic)).toEqual(expected);
        expect(await collect(store)).toEqual(expected);
        expect(await collect(store, expected[2])).toEqual(expected.slice(0, 3));
        expect(await collect(generic, expected[2])).toEqual(expected.slice(0, 3));
        if (store.readTenant)
          expect((await store.readTenant(t1, expected[0], 10)).map((e) => e.position)).toEqual(expected.slice(1));
      },
    );
  });
}
