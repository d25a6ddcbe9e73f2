import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverUrl, tempDir } from '../support/engines';
import { eventually, freePort, type Answer, type Api } from '../support/service';
import { brokers, kafkaScript, listAllRecords, SKIP_REASON } from './kafka-support';
import { Topology } from './topology';

/**
 * Faults of the distributed deployment (four processes, as in
 * split-roles.e2e.spec.ts) on a Kafka broker of this suite's own
 * (deploy/engines/kafka.sh on free ports), so it can be stopped:
 *
 * - the projector process is SIGKILLed while writes stream in and started
 *   again: every acknowledged write is in the read models exactly once (its
 *   version and its history rows are exact, lists hold each record once);
 * - Kafka is stopped for 10 s while writes continue: every write still
 *   succeeds (the event store is the source of truth; the response waits for
 *   the read models at most 10 s, then answers), and once Kafka is back the
 *   relay and the projector catch up with nothing lost or doubled;
 * - the relay is SIGKILLed mid-burst and started again: every write is
 *   acknowledged and reaches every read model (listed once, searchable);
 * - the command process is SIGKILLed mid-burst and started again: writes
 *   while it is down are the router's 503 UNAVAILABLE with Retry-After (never
 *   a hang, never a 500), every acknowledged write is there, and a write whose
 *   connection died with the process is counted apart and looked up;
 * - one of the two query replicas is SIGKILLed while several clients read
 *   (GET by id, list, POST /v1/search) through the router: no read fails;
 * - a rolling restart of the two query replicas (SIGTERM, exit, start,
 *   /healthz, the router's fail_timeout, then the other) while clients read:
 *   no request fails. (Without the fail_timeout step the router has no live
 *   query upstream for up to 10 s: see the comment in that test. A draining
 *   process must serve, not 503, what still reaches it: see the assertion.)
 *
 * Every request of those four goes through the router with a 30 s timeout of
 * its own, so a hang is a failure, not a stuck test. Each prints its figures
 * (convergence time, request counts) with console.log for the CI log.
 */
const skip = !brokers
  ? SKIP_REASON
  : !serverUrl('postgres')
    ? 'DATABASE_URL not set (the split roles share a PostgreSQL)'
    : undefined;

interface Acked {
  id: string;
  n: number;
  updates: number;
}

/** Each request of the fault tests gives up after this long: a hang fails the test instead of stalling it. */
const REQUEST_TIMEOUT_MS = 30_000;
/** The bound the projections must converge within after each fault (measured figures are printed). */
const CONVERGE_BOUND_MS = 90_000;
/**
 * nginx's fail_timeout, which the shipped router keeps (its default): how long a replica that failed stays out of the
 * rotation.
 */
const ROUTER_FAIL_TIMEOUT_MS = 10_000;

/** One request through the router with a timeout of its own: its answer, or why there is none, and when it ran. */
interface Sent {
  r?: Answer;
  error?: string;
  started: number;
  ended: number;
}

/** The router's (or the service's) refusal of an unavailable role: 503, Retry-After, the JSON error body. */
function isUnavailable(r: Answer): boolean {
  return (
    r.status === 503 &&
    !!r.headers.get('retry-after') &&
    typeof r.body?.errorCode === 'string' &&
    typeof r.body?.message === 'string'
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!!skip)(`faults of the split roles on Kafka${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let t: Topology;
  let api: Api;
  let root: string;
  let typeName: string;
  const state = tempDir('svc-kafka-fault-');
  let kenv: Record<string, string>;

  beforeAll(async () => {
    const port = await freePort();
    let cport = await freePort();
    while (cport === port) cport = await freePort();
    kenv = { KAFKA_PORT: String(port), KAFKA_CONTROLLER_PORT: String(cport), KAFKA_STATE_DIR: state.dir };
    const k = await kafkaScript('start', kenv);
    if (k.code !== 0) throw new Error(`kafka.sh start failed: ${k.out}`);
    t = await Topology.start({ kafkaBrokers: `127.0.0.1:${port}` });
    api = t.api;
    const acct = await api.newAccount({
      plan: 'enterprise',
      rateLimitPerMinute: 1_000_000,
      creditLimit: 1_000_000_000,
    });
    root = acct.tenants.live.rootKey;
    const s = await api.post('/v1/schemas', root, {
      typeName: `Fault_${randomUUID().slice(0, 8)}`,
      displayName: 'Faults',
      allowedSurfaces: ['record'],
      fields: [
        { fieldId: 'title', fieldType: 'string', searchable: true },
        { fieldId: 'n', fieldType: 'number' },
      ],
    });
    expect(s.status, s.text).toBe(201);
    typeName = s.body.typeName;
  }, 300_000);

  afterAll(async () => {
    await t?.stop();
    await kafkaScript('clean', kenv ?? {});
    state.remove();
  }, 120_000);

  /** Every record of the type, following the cursor. */
  const listAll = () => listAllRecords(api, root, typeName, 200);

  /** Waits until the relay has published the head and every projection of the projector has applied it. */
  async function caughtUp(timeoutMs = 180_000): Promise<void> {
    await eventually(
      async () => {
        const r = await t.readyz('relay');
        if (r.relay?.lag !== 0) return false;
        const p = await t.readyz('projector');
        // Every subscriber of the projector role (read models, search index, document worker, trigger runner, webhook
        // dispatcher).
        return p.projections?.length === 5 && p.projections.every((x: any) => x.position >= r.headPosition);
      },
      timeoutMs,
      250,
    );
    // The search projector appends outcomes (RecordsIndexed) that go round once more.
    await eventually(
      async () => {
        const r = await t.readyz('relay');
        const p = await t.readyz('projector');
        return r.relay.lag === 0 && p.projections.every((x: any) => x.position >= r.headPosition);
      },
      timeoutMs,
      250,
    );
  }

  /** Every acknowledged write is there exactly once: version, history rows and list membership are exact. */
  async function verify(acked: Acked[]): Promise<void> {
    for (const a of acked) {
      const g = await api.get(`/v1/records/${a.id}`, root);
      expect(g.status, `record ${a.id}: ${g.text}`).toBe(200);
      expect(g.body.version, `record ${a.id}`).toBe(1 + a.updates);
      expect(g.body.payload.n).toBe(a.updates ? a.n * 10 : a.n);
      const v = await api.get(`/v1/records/${a.id}/versions?limit=100`, root);
      expect(v.body.data.map((x: any) => x.version).sort(), `history of ${a.id}`).toEqual(
        Array.from({ length: 1 + a.updates }, (_, i) => i + 1),
      );
    }
    const listed = (await listAll()).map((r) => r.id);
    expect(new Set(listed).size).toBe(listed.length);
    const set = new Set(listed);
    expect(acked.filter((a) => !set.has(a.id)).map((a) => a.id)).toEqual([]);
  }

  async function write(n: number, update: boolean): Promise<Acked> {
    const c = await api.post('/v1/records', root, { typeName, payload: { title: `item ${n} ${word(n)}`, n } });
    if (c.status !== 201) throw new Error(`create ${n}: ${c.status} ${c.text}`);
    let updates = 0;
    if (update) {
      const u = await api.patch(`/v1/records/${c.body.id}`, root, { payload: { n: n * 10 } });
      if (u.status !== 200) throw new Error(`update ${n}: ${u.status} ${u.text}`);
      updates = 1;
    }
    return { id: c.body.id, n, updates };
  }

  /** A unique search word per write (the title is the schema's searchable field). */
  const run = randomUUID().replace(/-/g, '').slice(0, 6);
  const word = (n: number) => `f${run}n${n}`;

  /**
   * A request through the router with its own timeout. Not checked against /openapi.json: the router's 503
   * UNAVAILABLE (with Retry-After), which these tests provoke on purpose, is documented for none of the operations
   * (the checked client throws UndescribedAnswer on it); its shape is checked here instead (isUnavailable).
   */
  async function send(method: string, path: string, body?: unknown): Promise<Sent> {
    const started = Date.now();
    try {
      const r = await api.call(method, path, {
        token: root,
        body,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        unchecked: true,
      });
      return { r, started, ended: Date.now() };
    } catch (e) {
      return { error: `${(e as Error).name}: ${(e as Error).message}`, started, ended: Date.now() };
    }
  }

  /** One create through the router (payload n, title with its search word). */
  const create = (n: number) =>
    send('POST', '/v1/records', { typeName, payload: { title: `item ${n} ${word(n)}`, n } });

  /** Every acknowledged record is INDEXED and the TEXT search for its word finds it (8 at a time). */
  async function searchable(acked: Acked[], timeoutMs: number): Promise<void> {
    const queue = [...acked];
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let a = queue.shift(); a; a = queue.shift()) {
          const rec = a;
          await eventually(
            async () => (await api.get(`/v1/records/${rec.id}`, root)).body?.indexStatus === 'INDEXED',
            timeoutMs,
            100,
          );
          await eventually(
            async () => {
              const s = await api.post('/v1/search', root, { query: word(rec.n), mode: 'TEXT' });
              return s.status === 200 && s.body.results.some((x: any) => x.documentId === rec.id);
            },
            timeoutMs,
            100,
          );
        }
      }),
    );
  }

  /**
   * Time from now until the relay and every projection are at the head and every record of `acked` is INDEXED and
   * searchable.
   */
  async function converge(acked: Acked[]): Promise<number> {
    const t0 = Date.now();
    await caughtUp(CONVERGE_BOUND_MS + 30_000);
    await searchable(acked, CONVERGE_BOUND_MS + 30_000);
    return Date.now() - t0;
  }

  /** `count` fresh records (every other one updated once, for the read tests), each INDEXED and searchable. */
  let seedBase = 900_000;
  async function seed(count: number): Promise<Acked[]> {
    const base = seedBase;
    seedBase += count;
    const out: Acked[] = [];
    let i = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (i < count) {
          const n = base + i++;
          out.push(await write(n, n % 2 === 0));
        }
      }),
    );
    await searchable(out, 120_000);
    return out;
  }

  interface ReadStats {
    total: number;
    byKind: Record<'get' | 'list' | 'search', number>;
    failures: string[];
    /** Reads answered between `mark()` calls, by label. */
    windows: Record<string, number>;
    /** Failed reads by the same labels. */
    failedWindows: Record<string, number>;
  }

  /**
   * `clients` concurrent readers through the router until stopped: GET by id (the record, its version), a list page
   * of the type (non-empty, well-formed), and a TEXT search for a record's word (finds it). Anything else, an error or
   * a timeout, is a failure with its status, body and time.
   */
  function readers(records: Acked[], clients: number) {
    const stats: ReadStats = {
      total: 0,
      byKind: { get: 0, list: 0, search: 0 },
      failures: [],
      windows: {},
      failedWindows: {},
    };
    const t0 = Date.now();
    let label = 'before';
    let stop = false;
    const loops = Array.from({ length: clients }, async (_, c) => {
      for (let k = c; !stop; k++) {
        const rec = records[Math.floor(Math.random() * records.length)];
        const kind = (['get', 'list', 'search'] as const)[k % 3];
        const s =
          kind === 'get'
            ? await send('GET', `/v1/records/${rec.id}`)
            : kind === 'list'
              ? await send('GET', `/v1/records?type=${typeName}&limit=25`)
              : await send('POST', '/v1/search', { query: word(rec.n), mode: 'TEXT' });
        stats.total += 1;
        stats.byKind[kind] += 1;
        stats.windows[label] = (stats.windows[label] ?? 0) + 1;
        const r = s.r;
        const ok =
          !!r &&
          r.status === 200 &&
          (kind === 'get'
            ? r.body?.id === rec.id && r.body?.version === 1 + rec.updates
            : kind === 'list'
              ? Array.isArray(r.body?.data) && r.body.data.length > 0
              : Array.isArray(r.body?.results) && r.body.results.some((x: any) => x.documentId === rec.id));
        if (!ok) {
          stats.failedWindows[label] = (stats.failedWindows[label] ?? 0) + 1;
          const at = `+${s.started - t0} ms, took ${s.ended - s.started} ms, during '${label}'`;
          // Fastify's own answer while a process closes (return503OnClosing), which the router passes through (it
          // retries a replica only when it could not answer at all): no Retry-After, no X-Request-Id, not the service's
          // error body.
          const draining =
            r?.status === 503 && r.body?.error === 'Service Unavailable' && r.body?.statusCode === 503
              ? ' [a draining process answered 503 (return503OnClosing)]'
              : '';
          stats.failures.push(
            s.error
              ? `${kind} ${at}: ${s.error}`
              : `${kind} ${at}: ${r!.status} retry-after=${r!.headers.get('retry-after')} ` +
                  `x-request-id=${r!.headers.get('x-request-id')} ${r!.text.slice(0, 300)}${draining}`,
          );
        }
        await sleep(5);
      }
    });
    return {
      stats,
      mark(next: string) {
        label = next;
      },
      async stop(): Promise<ReadStats> {
        stop = true;
        await Promise.all(loops);
        return stats;
      },
    };
  }

  it('SIGKILL of the projector mid-stream, then a restart: nothing lost, nothing applied twice', async () => {
    const TOTAL = 200;
    const acked: Acked[] = [];
    let next = 0;
    let killed = false;
    const restart = (async () => {
      await eventually(async () => acked.length >= 40, 120_000, 20);
      await t.kill('projector', 'SIGKILL');
      killed = true;
      await new Promise((r) => setTimeout(r, 1000));
      await t.startRole('projector');
    })();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < TOTAL) {
          const n = next++;
          acked.push(await write(n, n % 3 === 0));
        }
      }),
    );
    await restart;
    expect(killed).toBe(true);
    await caughtUp();
    expect(acked).toHaveLength(TOTAL);
    await verify(acked);
    // The search projector survived too: every record reached a final index status.
    for (const a of acked.slice(0, 30))
      await eventually(
        async () => (await api.get(`/v1/records/${a.id}`, root)).body.indexStatus === 'INDEXED',
        60_000,
        100,
      );
    const p = await t.readyz('projector');
    for (const x of p.projections) expect(x.feed.transport).toBe('kafka');
  }, 600_000);

  it(
    'Kafka stopped for 10 s while writes continue: every write succeeds, the projections catch up after it ' +
      'returns',
    async () => {
      const acked: Acked[] = [];
      const failures: string[] = [];
      let stop = false;
      let during = 0;
      let kafkaDown = false;
      let n = 100_000;
      const writers = Array.from({ length: 6 }, async () => {
        while (!stop) {
          const i = n++;
          try {
            acked.push(await write(i, i % 4 === 0));
            if (kafkaDown) during += 1;
          } catch (e) {
            failures.push(String(e));
          }
        }
      });
      await new Promise((r) => setTimeout(r, 2000));
      const down = await kafkaScript('stop', kenv);
      expect(down.code, down.out).toBe(0);
      kafkaDown = true;
      await new Promise((r) => setTimeout(r, 10_000));
      const up = await kafkaScript('start', kenv);
      kafkaDown = false;
      expect(up.code, up.out).toBe(0);
      await new Promise((r) => setTimeout(r, 3000));
      stop = true;
      await Promise.all(writers);
      expect(failures).toEqual([]);
      expect(during).toBeGreaterThan(0);
      await caughtUp();
      await verify(acked);
    },
    600_000,
  );

  /**
   * A create (and, when `update`, a PATCH) through the router with its own timeout: the acknowledged record, or what
   * went wrong.
   */
  async function writeTimed(
    n: number,
    update: boolean,
  ): Promise<{ acked?: Acked; refused?: Answer; failure?: string; s: Sent }> {
    const c = await create(n);
    if (c.r?.status !== 201)
      return c.r && isUnavailable(c.r)
        ? { refused: c.r, s: c }
        : { failure: `create ${n}: ${c.error ?? `${c.r!.status} ${c.r!.text.slice(0, 300)}`}`, s: c };
    const acked: Acked = { id: c.r.body.id, n, updates: 0 };
    if (update) {
      const u = await send('PATCH', `/v1/records/${acked.id}`, { payload: { n: n * 10 } });
      if (u.r?.status !== 200)
        return { acked, failure: `update ${n}: ${u.error ?? `${u.r!.status} ${u.r!.text.slice(0, 300)}`}`, s: u };
      acked.updates = 1;
    }
    return { acked, s: c };
  }

  /**
   * `count` writers creating records until stopped (for the read tests): their acknowledged records and anything else.
   */
  function background(count: number, from: number) {
    const acked: Acked[] = [];
    const failures: string[] = [];
    let n = from;
    let stop = false;
    const loops = Array.from({ length: count }, async () => {
      while (!stop) {
        const w = await writeTimed(n++, false);
        if (w.acked) acked.push(w.acked);
        if (w.refused) failures.push(`refused: ${w.refused.status} ${w.refused.text}`);
        if (w.failure) failures.push(w.failure);
        await sleep(50);
      }
    });
    return {
      acked,
      failures,
      async stop() {
        stop = true;
        await Promise.all(loops);
      },
    };
  }

  it(
    'SIGKILL of the relay mid-burst, then a restart: every write is acknowledged, readable, listed once and ' +
      'searchable',
    async () => {
      const TOTAL = 200;
      const FIRST = 200_000;
      const acked: Acked[] = [];
      const failures: string[] = [];
      const refused: Answer[] = [];
      const spans: Array<{ started: number; ended: number }> = [];
      let next = FIRST;
      let killedAt = 0;
      let restartedAt = 0;
      const restart = (async () => {
        await eventually(async () => acked.length >= 40, 120_000, 20);
        killedAt = Date.now();
        await t.kill('relay', 'SIGKILL');
        await sleep(1000);
        await t.startRole('relay');
        restartedAt = Date.now();
      })();
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < FIRST + TOTAL) {
            const n = next++;
            const w = await writeTimed(n, n % 3 === 0);
            spans.push({ started: w.s.started, ended: w.s.ended });
            if (w.acked) acked.push(w.acked);
            if (w.refused) refused.push(w.refused);
            if (w.failure) failures.push(w.failure);
          }
        }),
      );
      await restart;
      expect(killedAt, 'the relay was killed during the burst').toBeGreaterThan(0);
      // Writes under way while the relay was down (sent before its restart, answered after its kill).
      const duringOutage = spans.filter((x) => x.started < restartedAt && x.ended > killedAt).length;
      expect(duringOutage, 'writes were under way while the relay was down').toBeGreaterThan(0);
      expect(failures).toEqual([]);
      // The relay is not on the write path: the event store acknowledges, the read-model wait gives up after 10 s at
      // most.
      expect(refused.map((r) => r.text)).toEqual([]);
      expect(acked).toHaveLength(TOTAL);
      const convergedMs = await converge(acked);
      console.log(
        `[faults] relay SIGKILL: ${acked.length}/${TOTAL} writes acknowledged ` +
          `(${acked.filter((a) => a.updates).length} updated; ${duringOutage} requests under way while the ` +
          `relay was down), 0 refused; ` +
          `relay down ${restartedAt - killedAt} ms (kill, 1 s, start); slowest request ` +
          `${Math.max(...spans.map((x) => x.ended - x.started))} ms; ` +
          `converged (relay and every projection at the head, every record INDEXED and found by TEXT ` +
          `search) ${convergedMs} ms after the last write (${Date.now() - restartedAt} ms after the restart)`,
      );
      expect(convergedMs).toBeLessThan(CONVERGE_BOUND_MS);
      await verify(acked);
    },
    240_000,
  );

  it(
    'SIGKILL of the command process mid-burst, then a restart: refusals are 503 with Retry-After, every ' +
      'acknowledged write is there',
    async () => {
      const outcomes: Array<{ n: number; s: Sent }> = [];
      let n = 300_000;
      let stop = false;
      const writers = Array.from({ length: 8 }, async () => {
        while (!stop) {
          const i = n++;
          const s = await create(i);
          outcomes.push({ n: i, s });
          // A refusal asks to come back later (Retry-After: 1); the writers come back sooner to see more of the outage.
          if (s.r?.status !== 201) await sleep(250);
        }
      });
      await eventually(async () => outcomes.filter((o) => o.s.r?.status === 201).length >= 40, 120_000, 20);
      const killAt = Date.now();
      await t.kill('command', 'SIGKILL');
      const exitedAt = Date.now();
      await sleep(3000);
      await t.startRole('command');
      const restartedAt = Date.now();
      await sleep(3000);
      stop = true;
      await Promise.all(writers);

      const acked: Acked[] = [];
      const ackedBeforeKill: Acked[] = [];
      const refused: number[] = [];
      const unknown: Array<{ n: number; s: Sent }> = [];
      const bad: string[] = [];
      for (const o of outcomes) {
        const { r } = o.s;
        if (r?.status === 201) {
          const a = { id: r.body.id, n: o.n, updates: 0 };
          acked.push(a);
          if (o.s.ended < killAt) ackedBeforeKill.push(a);
          continue;
        }
        const what =
          `write ${o.n} (+${o.s.started - killAt} ms from the kill, took ${o.s.ended - o.s.started} ms): ` +
          `${o.s.error ?? `${r!.status} retry-after=${r!.headers.get('retry-after')} ${r!.text.slice(0, 300)}`}`;
        // Never a hang nor a 500: every refusal is the 503 with Retry-After and the JSON error body.
        if (!r || !isUnavailable(r)) bad.push(what);
        // Sent before the process was gone and answered after the kill: its connection may have died with the process.
        if (o.s.started < exitedAt && o.s.ended >= killAt) unknown.push(o);
        else refused.push(o.n);
      }
      expect(bad).toEqual([]);
      expect(refused.length, 'writes were refused while the command process was down').toBeGreaterThan(0);
      expect(
        outcomes.filter((o) => o.s.r?.status === 201 && o.s.started >= restartedAt).length,
        'writes are acknowledged again after the restart',
      ).toBeGreaterThan(0);
      const convergedMs = await converge(acked);

      // Each write by its payload n: acknowledged ones exactly once with their id, refused ones not at all.
      const byN = new Map<number, string[]>();
      for (const r of await listAll()) byN.set(r.payload.n, [...(byN.get(r.payload.n) ?? []), r.id]);
      expect(
        [...byN].filter(([, ids]) => ids.length > 1),
        'no write is there twice',
      ).toEqual([]);
      expect(
        ackedBeforeKill.filter((a) => byN.get(a.n)?.[0] !== a.id).map((a) => a.n),
        'every write acknowledged before the kill is there',
      ).toEqual([]);
      expect(
        acked.filter((a) => byN.get(a.n)?.[0] !== a.id).map((a) => a.n),
        'every acknowledged write is there',
      ).toEqual([]);
      expect(
        refused.filter((i) => byN.has(i)),
        'no refused write was applied',
      ).toEqual([]);
      const unknownThere = unknown.filter((o) => byN.has(o.n));
      console.log(
        `[faults] command SIGKILL: ${outcomes.length} writes: ${acked.length} acknowledged ` +
          `(${ackedBeforeKill.length} before the kill), ${refused.length} refused with 503 + Retry-After, ` +
          `${unknown.length} in flight at the kill (answered 503 by the router; ${unknownThere.length} of ` +
          `them applied: ${unknownThere.map((o) => o.n).join(', ') || 'none'}); ` +
          `down ${restartedAt - killAt} ms; converged ${convergedMs} ms after the last write`,
      );
      expect(convergedMs).toBeLessThan(CONVERGE_BOUND_MS);
      await verify(acked);
    },
    240_000,
  );

  it('one of the two query replicas SIGKILLed while clients read through the router: zero failed reads', async () => {
    const records = await seed(30);
    const writes = background(1, 400_000);
    const rd = readers(records, 6);
    await sleep(3000);
    rd.mark('query-1 killed');
    const killAt = Date.now();
    await t.kill('query-1', 'SIGKILL');
    await sleep(8000);
    rd.mark('query-1 starting');
    await t.startRole('query', 'query-1');
    const upAt = Date.now();
    rd.mark('query-1 healthy');
    // Past the router's fail_timeout since query-1 last failed, so it is in the rotation again (see the rolling
    // restart).
    await sleep(ROUTER_FAIL_TIMEOUT_MS + 1_000);
    const stats = await rd.stop();
    await writes.stop();
    console.log(
      `[faults] query-1 SIGKILL: ${stats.total} reads from 6 clients (${JSON.stringify(stats.byKind)}; by ` +
        `phase ${JSON.stringify(stats.windows)}), ` +
        `${stats.failures.length} failed ${JSON.stringify(stats.failedWindows)}; query-1 down ` +
        `${upAt - killAt} ms; ${writes.acked.length} writes meanwhile, ${writes.failures.length} failed`,
    );
    expect(stats.failures, t.router.log()).toEqual([]);
    expect(stats.windows['query-1 killed']).toBeGreaterThan(50);
    expect(writes.failures).toEqual([]);
    const convergedMs = await converge(writes.acked);
    console.log(`[faults] query-1 SIGKILL: converged ${convergedMs} ms after the last write`);
    expect(convergedMs).toBeLessThan(CONVERGE_BOUND_MS);
    await verify([...records, ...writes.acked]);
  }, 240_000);

  it(
    "a rolling restart of the two query replicas (SIGTERM, exit, start, /healthz, the router's " +
      'fail_timeout, then the other) while clients read: zero failed requests',
    async () => {
      const records = await seed(30);
      const writes = background(1, 500_000);
      const rd = readers(records, 6);
      await sleep(2000);
      const figures: string[] = [];
      for (const name of t.queryNames()) {
        const old = t.role(name);
        rd.mark(`${name} SIGTERM`);
        const t0 = Date.now();
        await t.kill(name, 'SIGTERM');
        const exited = Date.now();
        rd.mark(`${name} starting`);
        await t.startRole('query', name);
        rd.mark(`${name} healthy`);
        figures.push(
          `${name}: exited ${exited - t0} ms after SIGTERM (code ${old.child.exitCode}), /healthz ` +
            `${Date.now() - exited} ms later`,
        );
        // The service's own 15 s shutdown watchdog (deploy/src/start.ts) ends a close that did not finish with code 1.
        if (old.child.exitCode !== 0)
          console.log(
            `[faults] rolling restart: ${name} did not shut down cleanly (code ${old.child.exitCode}, ` +
              `${exited - t0} ms): ${old.output().slice(-500)}`,
          );
        // The router takes a replica out of its rotation for fail_timeout after a failed attempt (nginx's passive
        // check, max_fails=1 fail_timeout=10s: the defaults, which the shipped file keeps), and the replica failed
        // attempts while it was down. /healthz alone is not enough: terminating the other replica before the router
        // has taken this one back leaves it no live upstream, and every read is a 503 for up to 10 s. So the next
        // step waits that long.
        if (name !== t.queryNames().at(-1)) await sleep(ROUTER_FAIL_TIMEOUT_MS + 1_000);
        else await sleep(3000);
        rd.mark(`${name} back in the router`);
      }
      const stats = await rd.stop();
      await writes.stop();
      console.log(
        `[faults] rolling restart: ${figures.join('; ')}; ${stats.total} reads from 6 clients ` +
          `(${JSON.stringify(stats.byKind)}; by phase ${JSON.stringify(stats.windows)}), ` +
          `${stats.failures.length} failed ` +
          JSON.stringify(stats.failedWindows) +
          (stats.failures.length
            ? `:\n  ${stats.failures.slice(0, 10).join('\n  ')}\nrouter log:\n${t.router.log()}`
            : '') +
          '; ' +
          `${writes.acked.length} writes meanwhile, ${writes.failures.length} failed`,
      );
      // A draining replica must not answer 503 itself: the router retries a replica only when it could not answer at
      // all (a 503 is an answer: requireComplete, a script that could not start), so fastify's return503OnClosing
      // answer to a request arriving on a kept-alive connection during the drain reaches the client as is (no
      // Retry-After, not the service's error body). Failures marked '[a draining process answered 503 ...]' are that.
      expect(stats.failures).toEqual([]);
      expect(writes.failures).toEqual([]);
      const convergedMs = await converge(writes.acked);
      console.log(`[faults] rolling restart: converged ${convergedMs} ms after the last write`);
      expect(convergedMs).toBeLessThan(CONVERGE_BOUND_MS);
      await verify([...records, ...writes.acked]);
    },
    240_000,
  );
});
