/**
 * The client's `changes()` (client/src/changes.ts) against a started service: the change stream as an async
 * iterator that survives a dropped connection. The connection is dropped by a TCP relay between the client and
 * the service (every socket destroyed mid-stream); the iterator must open the stream again with Last-Event-ID
 * and go on with no gap and no duplicate. Also: the token may be a function (asked again on each reconnection),
 * including one handing out JWTs of a local identity provider registered for the tenant; a refusal is thrown and
 * not retried; an AbortSignal ends the loop and closes the connection.
 */
import { randomUUID } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { ApiError, createClient, unwrap, type Answer, type ChangeEvent, type ServiceClient } from '@svc/client';
import { LocalIssuer } from '../support/oidc-issuer';
import { OPERATOR_TOKEN, startService, type TestService } from '../support/service';

let svc: TestService;
let rootKey: string;
let admin: ServiceClient;

/** A TCP relay to the service whose open connections can be cut at once. */
class Relay {
  /** The client-side sockets of the open connections, and whether a request went through each. */
  private readonly sockets = new Map<Socket, { up: Socket; used: boolean }>();
  private server!: Server;
  url = '';
  /** Connections that carried a request so far. */
  accepted = 0;

  async start(target: URL): Promise<this> {
    this.server = createServer((down) => {
      const up = connect(Number(target.port), target.hostname);
      const entry = { up, used: false };
      this.sockets.set(down, entry);
      down.once('data', () => {
        entry.used = true;
        this.accepted++;
      });
      // One leg closing closes the other (pipe() alone leaves the service's leg open after an abort).
      down.on('close', () => {
        this.sockets.delete(down);
        up.destroy();
      });
      up.on('close', () => down.destroy());
      for (const s of [down, up]) s.on('error', () => {});
      down.pipe(up).pipe(down);
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    const a = this.server.address();
    this.url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
    return this;
  }

  /** Destroys every open connection (both legs), as a network failure would; answers how many carried a request. */
  cut(): number {
    const used = this.open();
    for (const [down, { up }] of this.sockets) {
      down.destroy();
      up.destroy();
    }
    return used;
  }

  /** Open connections that carried a request (undici may open a spare one that never does). */
  open(): number {
    return [...this.sockets.values()].filter((e) => e.used).length;
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** A fetch that records the Last-Event-ID and Authorization of each request to /v1/changes. */
function recordingFetch() {
  const opened: Array<{ lastEventId: string | null; authorization: string | null; status?: number }> = [];
  const f: typeof fetch = async (input, init) => {
    const req = input instanceof Request ? input : new Request(input, init);
    const entry =
      new URL(req.url).pathname === '/v1/changes'
        ? { lastEventId: req.headers.get('last-event-id'), authorization: req.headers.get('authorization') }
        : undefined;
    if (entry) opened.push(entry);
    const res = await fetch(req);
    if (entry) (entry as { status?: number }).status = res.status;
    return res;
  };
  return { fetch: f, opened };
}

const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;

async function newType(): Promise<string> {
  const typeName = uniq('Change');
  await unwrap(
    admin.POST('/v1/schemas', {
      body: {
        typeName,
        displayName: 'Change',
        allowedSurfaces: ['record'],
        fields: [{ fieldId: 'n', fieldType: 'number' }],
      },
    }),
  );
  return typeName;
}

const create = async (typeName: string, n: number) =>
  unwrap(admin.POST('/v1/records', { body: { typeName, payload: { n } } }));

/** Collects events from `it` until `done(events)` holds (or the time runs out). */
async function take(
  it: AsyncIterator<ChangeEvent>,
  done: (seen: ChangeEvent[]) => boolean,
  timeoutMs = 30_000,
  seen: ChangeEvent[] = [],
): Promise<ChangeEvent[]> {
  const deadline = Date.now() + timeoutMs;
  while (!done(seen)) {
    const left = deadline - Date.now();
    if (left <= 0)
      throw new Error(
        `only ${seen.length} events in ${timeoutMs} ms: ${seen.map((e) => `${e.position} ${e.type}`).join(', ')}`,
      );
    const next = await Promise.race([it.next(), new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), left))]);
    if (next === 'timeout') continue;
    if (next.done) throw new Error('the change stream ended');
    seen.push(next.value);
  }
  return seen;
}

/** Every change once (position and event name), positions never going back. */
function expectInOrderOnce(seen: ChangeEvent[]): void {
  expect(new Set(seen.map((c) => `${c.position} ${c.type}`)).size).toBe(seen.length);
  const positions = seen.map((c) => c.position);
  expect([...positions].sort((a, b) => a - b)).toEqual(positions);
}

const created = (events: ChangeEvent[]) => events.filter((e) => e.type === 'record.created').map((e) => e.entityId);

beforeAll(async () => {
  svc = await startService();
  rootKey = svc.bootstrap.tenants.test.rootKey;
  admin = createClient({ baseUrl: svc.url, token: rootKey });
}, 120_000);

afterAll(async () => {
  await svc?.stop();
});

describe('changes()', () => {
  it('yields typed changes; a dropped connection reopens with Last-Event-ID: no gap, no duplicate', async () => {
    const typeName = await newType();
    const relay = await new Relay().start(new URL(svc.url));
    const rec = recordingFetch();
    const api = createClient({ baseUrl: relay.url, token: rootKey, fetch: rec.fetch });
    const ctl = new AbortController();
    const it = api
      .changes({ types: [typeName], entities: ['records'], retryMs: 100, signal: ctl.signal })
      [Symbol.asyncIterator]();
    try {
      // The stream starts at the head: open it (first next() call) and see it answered before writing.
      const first = it.next();
      await expectEventually(() => rec.opened[0]?.status === 200);
      const before: string[] = [];
      for (let i = 0; i < 5; i++) before.push((await create(typeName, i)).id);
      const head = await first;
      const seen = await take(it, (s) => created(s).length >= 5, 30_000, head.done ? [] : [head.value]);
      expect(created(seen)).toEqual(before);

      const e = seen[0];
      expect(e).toMatchObject({ type: 'record.created', typeName, version: 1, entityId: before[0] });
      expect(typeof e.position).toBe('number');
      if (e.type === 'record.created') expectTypeOf(e.entity).toEqualTypeOf<Answer<'getRecord'> | null>();
      expect(e.entity).toMatchObject({ id: before[0], typeName, payload: { n: 0 } });
      const lastBeforeCut = seen[seen.length - 1].position;

      // The connection drops while nothing is in flight, then writes go on while the client reconnects.
      expect(relay.cut()).toBeGreaterThan(0);
      const after: string[] = [];
      for (let i = 5; i < 10; i++) after.push((await create(typeName, i)).id);
      await take(it, (s) => created(s).length >= 10, 30_000, seen);

      expect(created(seen)).toEqual([...before, ...after]);
      expectInOrderOnce(seen);
      // The second request resumed after the last event the loop had seen.
      expect(rec.opened.length).toBeGreaterThanOrEqual(2);
      expect(rec.opened[0].lastEventId).toBeNull();
      expect(rec.opened[1].lastEventId).toBe(String(lastBeforeCut));
    } finally {
      // Aborting first settles a pending next(), which return() would otherwise wait for.
      ctl.abort();
      await it.return?.(undefined);
      await relay.stop();
    }
  });

  it('resumes mid-burst: cut while events are being written and read', async () => {
    const typeName = await newType();
    const relay = await new Relay().start(new URL(svc.url));
    const api = createClient({ baseUrl: relay.url, token: rootKey });
    const ctl = new AbortController();
    const it = api
      .changes({ types: [typeName], entities: ['records'], startFrom: 0, retryMs: 50, signal: ctl.signal })
      [Symbol.asyncIterator]();
    const ids: string[] = [];
    let cuts = 0;
    const writer = (async () => {
      for (let i = 0; i < 40; i++) {
        ids.push((await create(typeName, i)).id);
        // Cut every 8 writes, whatever the reader is reading, while writes remain (after the last write the reader may
        // hold every event, and its reconnection come after the checks below: CI saw it). A cut drops a live stream:
        // the reader is back within retryMs of the previous cut, and a cut between its connections would cut nothing.
        if (i % 8 === 7 && i < 39) {
          await expectEventually(() => relay.open() > 0);
          cuts += relay.cut() > 0 ? 1 : 0;
        }
      }
    })();
    try {
      const seen = await take(it, (s) => created(s).length >= 40, 60_000);
      await writer;
      expect(cuts).toBe(4);
      expect(relay.accepted).toBeGreaterThan(cuts);
      expect(created(seen)).toEqual(ids);
      expectInOrderOnce(seen);
    } finally {
      // Aborting first settles a pending next(), which return() would otherwise wait for.
      ctl.abort();
      await it.return?.(undefined);
      await relay.stop();
    }
  });

  it('asks a token function again on each reconnection; startFrom resumes a stream opened later', async () => {
    const typeName = await newType();
    const minted = await unwrap(
      admin.POST('/v1/tokens', { body: { scope: { allowedActions: ['records:r'] }, expiresInSeconds: 600 } }),
    );
    const relay = await new Relay().start(new URL(svc.url));
    const rec = recordingFetch();
    let asked = 0;
    const api = createClient({ baseUrl: relay.url, token: async () => (asked++, minted.token), fetch: rec.fetch });
    const a = await create(typeName, 1);
    const ctl = new AbortController();
    const it = api
      .changes({ types: [typeName], startFrom: 0, retryMs: 50, signal: ctl.signal })
      [Symbol.asyncIterator]();
    try {
      const seen = await take(it, (s) => created(s).includes(a.id));
      const askedBefore = asked;
      relay.cut();
      const b = await create(typeName, 2);
      await take(it, (s) => created(s).includes(b.id), 30_000, seen);
      expect(created(seen)).toEqual([a.id, b.id]);
      expect(asked).toBeGreaterThan(askedBefore);
      expect(rec.opened.every((o) => o.authorization === `Bearer ${minted.token}`)).toBe(true);

      // A later stream from the position of the first change sees only what came after it.
      const from = seen.find((e) => e.entityId === a.id && e.type === 'record.created')!.position;
      const ctl2 = new AbortController();
      const again = createClient({ baseUrl: svc.url, token: minted.token })
        .changes({ types: [typeName], startFrom: from, signal: ctl2.signal })
        [Symbol.asyncIterator]();
      try {
        const later = await take(again, (s) => created(s).includes(b.id));
        expect(created(later)).toEqual([b.id]);
        expect(later.every((e) => e.position > from)).toBe(true);
      } finally {
        ctl2.abort();
        await again.return?.(undefined);
      }
    } finally {
      // Aborting first settles a pending next(), which return() would otherwise wait for.
      ctl.abort();
      await it.return?.(undefined);
      await relay.stop();
    }
  });

  it(
    "takes the app's own identity provider's JWTs: a fresh one from the token function for each request and " +
      'reconnection',
    async () => {
      const idp = await LocalIssuer.start();
      const relay = await new Relay().start(new URL(svc.url));
      const ctl = new AbortController();
      try {
        const kid = await idp.addKey('ES256');
        const operator = createClient({ baseUrl: svc.url, token: OPERATOR_TOKEN });
        await unwrap(
          operator.PUT('/operator/tenants/{tenantId}/jwt-issuers', {
            params: { path: { tenantId: svc.bootstrap.tenants.test.tenantId } },
            body: { issuers: [{ issuer: idp.url, audience: 'client-e2e', jwksUrl: idp.jwksUrl }] },
          }),
        );
        const typeName = await newType();
        const signed: string[] = [];
        const api = createClient({
          baseUrl: relay.url,
          token: async () => (
            signed.push(
              await idp.sign(kid, { aud: 'client-e2e', sub: 'user-1', svc_permissions: ['records:r', 'records:c'] }),
            ),
            signed[signed.length - 1]
          ),
        });
        const it = api
          .changes({ types: [typeName], startFrom: 0, retryMs: 50, signal: ctl.signal })
          [Symbol.asyncIterator]();
        // Written with the JWT: the record is the JWT's user's, and the user's stream shows it.
        const a = await unwrap(api.POST('/v1/records', { body: { typeName, payload: { n: 1 } } }));
        expect(a.userId).toBe('user-1');
        const seen = await take(it, (s) => created(s).includes(a.id));
        const before = signed.length;
        relay.cut();
        const b = await unwrap(api.POST('/v1/records', { body: { typeName, payload: { n: 2 } } }));
        await take(it, (s) => created(s).includes(b.id), 30_000, seen);
        expect(created(seen)).toEqual([a.id, b.id]);
        // The write and the reconnection each asked for a token.
        expect(signed.length).toBeGreaterThanOrEqual(before + 2);
        await it.return?.(undefined);
      } finally {
        ctl.abort();
        await relay.stop();
        await idp.close();
      }
    },
  );

  it('throws a refusal (401, 400) as an ApiError without retrying it', async () => {
    const rec = recordingFetch();
    const bad = createClient({ baseUrl: svc.url, token: 'sk_test_not_a_key', fetch: rec.fetch });
    const refused = await consume(bad.changes({ retryMs: 10 }));
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 401, requestId: expect.any(String) });
    expect(rec.opened).toHaveLength(1);

    const invalid = await consume(
      createClient({ baseUrl: svc.url, token: rootKey }).changes({ startFrom: 'not-a-position' }),
    );
    expect(invalid).toMatchObject({ status: 400, errorCode: 'VALIDATION_ERROR' });
  });

  it('ends quietly when its AbortSignal aborts, and closes the connection', async () => {
    const typeName = await newType();
    const relay = await new Relay().start(new URL(svc.url));
    const ctl = new AbortController();
    const rec = recordingFetch();
    const api = createClient({ baseUrl: relay.url, token: rootKey, fetch: rec.fetch });
    const seen: ChangeEvent[] = [];
    const loop = (async () => {
      for await (const e of api.changes({ types: [typeName], signal: ctl.signal })) seen.push(e);
    })();
    try {
      await expectEventually(() => rec.opened[0]?.status === 200);
      const r = await create(typeName, 1);
      await expectEventually(() => created(seen).includes(r.id));
      ctl.abort();
      await expect(loop).resolves.toBeUndefined();
      await expectEventually(() => relay.open() === 0);
      // Breaking out of a loop closes it too.
      for await (const e of api.changes({ types: [typeName], startFrom: 0 })) {
        expect(e.entityId).toBe(r.id);
        break;
      }
      await expectEventually(() => relay.open() === 0);
    } finally {
      await relay.stop();
    }
  });
});

/** What iterating `stream` throws (undefined when it ends without). */
async function consume(stream: AsyncIterable<unknown>): Promise<unknown> {
  try {
    for await (const _ of stream) void _;
  } catch (e) {
    return e;
  }
  return undefined;
}

async function expectEventually(cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
