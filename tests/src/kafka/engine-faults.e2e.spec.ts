import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chownSync, existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverUrl, tempDir } from '../support/engines';
import { NGINX } from '../support/router';
import { eventually, freePort, ROOT, type Answer, type Api } from '../support/service';
import { brokers, listAllRecords, SKIP_REASON } from './kafka-support';
import { Topology } from './topology';

/**
 * Restarts of the storage engines under the split deployment (relay, projector, two query replicas, command, behind
 * the shipped router), with writes and reads going on through the router. The engines restarted are private
 * instances of this suite (other suites use the shared ones meanwhile): a PostgreSQL cluster of its own (initdb,
 * pg_ctl on a free port) and an Elasticsearch node of its own (deploy/engines/elasticsearch.sh on free ports). Kafka
 * is the shared broker (a topic of the topology's own; it is not restarted here).
 *
 * - Elasticsearch stopped and started again on the same port and data: every acknowledged write is readable, listed
 *   once, INDEXED and found by a TEXT search; writes during the outage succeed (they do not touch Elasticsearch) or
 *   answer 503 with Retry-After, never 500 or a hang.
 * - Elasticsearch stopped, its data deleted, started again empty: the search projector notices its index is gone and
 *   rebuilds the keyword index from the log by itself; every write of the topology so far is found again.
 * - PostgreSQL stopped (fast) and started again: writes during the restart answer 201 or 503 with Retry-After, never
 *   500 or a hang; afterwards every acknowledged write is readable, listed once, INDEXED and searchable, and every
 *   process recovered without a restart (same pids).
 *
 * The convergence times (engine back -> everything readable and searchable) are printed.
 */

/** PostgreSQL's server binaries: PG_BIN, else the newest /usr/lib/postgresql/<v>/bin with initdb. */
function pgBin(): string | undefined {
  if (process.env.PG_BIN) return existsSync(join(process.env.PG_BIN, 'initdb')) ? process.env.PG_BIN : undefined;
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base).filter(
    (v) => existsSync(join(base, v, 'bin', 'initdb')) && existsSync(join(base, v, 'bin', 'pg_ctl')),
  );
  versions.sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(base, versions[0], 'bin') : undefined;
}

/** What deploy/engines/elasticsearch.sh needs: a JDK, and the cached distribution or Maven to fetch it. */
function esMissing(): string | undefined {
  const jdks = [
    process.env.ES_JAVA_HOME,
    process.env.JAVA_HOME,
    ...(existsSync('/usr/lib/jvm') ? readdirSync('/usr/lib/jvm').map((d) => join('/usr/lib/jvm', d)) : []),
  ];
  if (!jdks.some((d) => d && existsSync(join(d, 'bin', 'java'))))
    return 'no JDK for Elasticsearch (deploy/engines/elasticsearch.sh)';
  const cache =
    process.env.ENGINES_CACHE ??
    (process.getuid?.() === 0 ? '/var/cache/svc-engines' : join(homedir(), '.cache/svc-engines'));
  const cached = existsSync(join(cache, `elasticsearch-${process.env.ES_VERSION ?? '9.5.0'}`, '.complete'));
  const mvn = (process.env.PATH ?? '').split(':').some((d) => existsSync(join(d, 'mvn')));
  return cached || mvn ? undefined : 'no Elasticsearch distribution cached and no mvn to fetch it';
}

const PG_BIN = pgBin();
const skip = !brokers
  ? SKIP_REASON
  : !serverUrl('postgres')
    ? 'DATABASE_URL not set (the split topology is started with it)'
    : !serverUrl('elasticsearch')
      ? 'ELASTICSEARCH_URL not set (the Elasticsearch suites are off)'
      : !PG_BIN
        ? 'no PostgreSQL server binaries (initdb, pg_ctl; set PG_BIN)'
        : !NGINX
          ? 'nginx is not installed (the split topology runs the shipped router)'
          : esMissing();

const AS_POSTGRES = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];

function run(
  cmd: string[],
  env: Record<string, string> = {},
  timeoutMs = 300_000,
): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      cmd[0],
      cmd.slice(1),
      { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

async function must(what: string, p: Promise<{ code: number; out: string }>): Promise<void> {
  const r = await p;
  if (r.code !== 0) throw new Error(`${what} failed (${r.code}): ${r.out.slice(-3000)}`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

interface Acked {
  id: string;
  n: number;
  group: string;
  updates: number;
  /**
   * The write answered only after the read models' wait gave up (10 s: the projector could not apply it, the database
   * being down): acknowledged because it is durable in the log, readable once the read models catch up
   * (docs/deployment.md, "Read your writes across roles"), so a read right after it may not find it yet.
   */
  late?: boolean;
  /** When the create was sent. */
  sent?: number;
}

/** The command role's wait for the read models (RemoteBarrier.waitFor's default), less some slack. */
const READ_MODEL_WAIT_MS = 9_500;

/** What the traffic saw while an engine was restarted. */
interface Traffic {
  acked: Acked[];
  /** Writes answered 503 with Retry-After (refused, retryable). */
  refused: number;
  /** Writes acknowledged while the engine was down. */
  ackedDuring: number;
  /**
   * Answers that are neither success nor 503 + Retry-After (a 500, a 503 without Retry-After, a hang), writes and
   * reads.
   */
  bad: string[];
  /** Answers by kind and status (503s by who answered: the router or a process). */
  answers: Record<string, number>;
  slowestMs: number;
}

describe.skipIf(!!skip)(
  `engine restarts under the split roles (private PostgreSQL and Elasticsearch)${skip ? ` (skipped: ${skip})` : ''}`,
  () => {
    let t: Topology;
    let api: Api;
    let root: string;
    let pgDir: ReturnType<typeof tempDir>;
    let esDir: ReturnType<typeof tempDir>;
    let pgPort: number;
    let pgUrl: string;
    let esEnv: Record<string, string>;
    let esUrl: string;
    let esIndexPrefix: string;
    const word = `zq${randomUUID().replace(/-/g, '').slice(0, 8)}`;
    /** Every acknowledged write of the suite (the empty restart must bring all of them back). */
    const everything: Array<Acked & { typeName: string }> = [];
    /** What the processes said about the keyword index (its rebuild and how long it took). */
    const keywordLines: string[] = [];

    const pgCtl = (...args: string[]) =>
      run([...AS_POSTGRES, join(PG_BIN!, 'pg_ctl'), '-D', join(pgDir.dir, 'data'), ...args], {}, 120_000);
    const pgStart = () =>
      must(
        'pg_ctl start',
        pgCtl(
          '-l',
          join(pgDir.dir, 'postgres.log'),
          '-w',
          '-t',
          '60',
          '-o',
          `-k ${pgDir.dir} -p ${pgPort} -c listen_addresses=127.0.0.1`,
          'start',
        ),
      );
    const pgStop = () => must('pg_ctl stop', pgCtl('-m', 'fast', '-w', '-t', '60', 'stop'));
    const es = (cmd: 'start' | 'stop' | 'clean', env: Record<string, string> = {}) =>
      run(['bash', join(ROOT, 'deploy/engines/elasticsearch.sh'), cmd], { ...esEnv, ...env }, 400_000);

    beforeAll(async () => {
      pgDir = tempDir('svc-engine-fault-pg-');
      esDir = tempDir('svc-engine-fault-es-');
      // PostgreSQL of our own (as the postgres user when we are root: initdb refuses root).
      if (AS_POSTGRES.length) chownSync(pgDir.dir, ...(await uidGid('postgres')));
      pgPort = await freePort();
      await must(
        'initdb',
        run(
          [
            ...AS_POSTGRES,
            join(PG_BIN!, 'initdb'),
            '-D',
            join(pgDir.dir, 'data'),
            '-A',
            'trust',
            '-U',
            'postgres',
            '--no-sync',
          ],
          {},
          120_000,
        ),
      );
      await pgStart();
      pgUrl = `postgres://postgres@127.0.0.1:${pgPort}/postgres`;
      // Elasticsearch of our own. C1 only (TieredStopAtLevel=1): the JVM started faster on a loaded machine (67 s
      // against 94-108 s at load average 20), and the suite starts it three times.
      const httpPort = await freePort();
      let transportPort = await freePort();
      while (transportPort === httpPort || transportPort === pgPort) transportPort = await freePort();
      esEnv = {
        ES_PORT: String(httpPort),
        ES_TRANSPORT_PORT: String(transportPort),
        ES_STATE_DIR: esDir.dir,
        ES_HEAP_MIN: '256m',
        ES_HEAP_MAX: '512m',
        ES_JAVA_OPTS: '-XX:TieredStopAtLevel=1',
        ES_START_TIMEOUT: '300',
      };
      const started = Date.now();
      const s = await es('start');
      if (s.code !== 0) throw new Error(`elasticsearch.sh start failed: ${s.out.slice(-3000)}`);
      esUrl = s.out
        .split('\n')
        .find((l) => l.startsWith('http://'))!
        .trim();
      console.log(
        `[engine-faults] private PostgreSQL on ${pgPort}, Elasticsearch on ${httpPort} (started in ` +
          `${secs(Date.now() - started)})`,
      );
      esIndexPrefix = `engine-faults-${randomUUID().slice(0, 8)}-`;
      t = await Topology.start({
        kafkaBrokers: brokers!,
        env: { DATABASE_URL: pgUrl, ELASTICSEARCH_URL: esUrl, ELASTICSEARCH_INDEX_PREFIX: esIndexPrefix },
        log: (line) => void (/keyword index/.test(line) && keywordLines.push(line)),
      });
      api = t.api;
      const acct = await api.newAccount({
        plan: 'enterprise',
        rateLimitPerMinute: 1_000_000,
        creditLimit: 1_000_000_000,
      });
      root = acct.tenants.live.rootKey;
    }, 600_000);

    afterAll(async () => {
      await t?.stop();
      if (esEnv) await es('clean');
      if (pgPort) await pgCtl('-m', 'immediate', '-w', 'stop');
      pgDir?.remove();
      esDir?.remove();
    }, 180_000);

    async function newType(label: string): Promise<string> {
      const s = await api.post('/v1/schemas', root, {
        typeName: `${label}_${randomUUID().slice(0, 8)}`,
        displayName: label,
        allowedSurfaces: ['record'],
        fields: [
          { fieldId: 'title', fieldType: 'string', searchable: true },
          { fieldId: 'n', fieldType: 'number' },
        ],
      });
      expect(s.status, s.text).toBe(201);
      return s.body.typeName;
    }

    /** Every record of the type, following the cursor. */
    const listAll = (typeName: string) => listAllRecords(api, root, typeName, 500);

    /** Acknowledged writes that are not (yet) listed once, at their version, INDEXED: empty when all are. */
    async function notSettled(typeName: string, acked: Acked[]): Promise<string[]> {
      const listed = await listAll(typeName);
      const byId = new Map<string, any[]>();
      for (const r of listed) byId.set(r.id, [...(byId.get(r.id) ?? []), r]);
      const out: string[] = [];
      for (const a of acked) {
        const rows = byId.get(a.id) ?? [];
        if (rows.length !== 1) out.push(`${a.id} listed ${rows.length} times`);
        else if (rows[0].version !== 1 + a.updates) out.push(`${a.id} at version ${rows[0].version}`);
        else if (rows[0].indexStatus !== 'INDEXED')
          out.push(`${a.id} ${rows[0].indexStatus} ${JSON.stringify(rows[0].indexFailure ?? null)}`);
      }
      return out;
    }

    /**
     * Acknowledged writes a TEXT search for their group's keyword does not find (each group has at most 50 records).
     */
    async function notFound(typeName: string, acked: Acked[]): Promise<string[]> {
      const groups = new Map<string, Set<string>>();
      for (const a of acked) groups.set(a.group, (groups.get(a.group) ?? new Set()).add(a.id));
      const out: string[] = [];
      for (const [group, ids] of groups) {
        const r = await api.post('/v1/search', root, {
          query: `${word} ${group}`,
          mode: 'TEXT',
          textMode: 'AND',
          typeName,
          limit: 100,
        });
        if (r.status !== 200) return [`search ${group}: ${r.status} ${r.text.slice(0, 300)}`];
        const found = r.body.results.map((x: any) => x.documentId) as string[];
        // One passage per record: a record found twice would be a duplicate in the index.
        if (new Set(found).size !== found.length) out.push(`group ${group}: a record found twice`);
        for (const id of ids) if (!found.includes(id)) out.push(`${id} (group ${group}) not found`);
      }
      return out;
    }

    /**
     * Waits until every acknowledged write is listed once, INDEXED, and found by keyword; returns how long that took.
     */
    async function converge(typeName: string, acked: Acked[], timeoutMs: number): Promise<number> {
      const from = Date.now();
      let last: string[] = [];
      try {
        await eventually(
          async () => {
            last = await notSettled(typeName, acked);
            if (last.length) return false;
            last = await notFound(typeName, acked);
            return last.length === 0;
          },
          timeoutMs,
          500,
        );
      } catch (e) {
        throw new Error(
          `not converged in ${secs(timeoutMs)}: ${last.length} left, e.g. ` +
            `${last.slice(0, 5).join('; ')}\n${t.output().slice(-6000)}`,
          { cause: e },
        );
      }
      return Date.now() - from;
    }

    /** The history of updated records (and a sample of the others) is exact. */
    async function verifyHistory(acked: Acked[]): Promise<void> {
      for (const a of acked.filter((x, i) => x.updates || i % 10 === 0)) {
        const g = await api.get(`/v1/records/${a.id}`, root);
        expect(g.status, g.text).toBe(200);
        expect(g.body.payload.n).toBe(a.updates ? a.n * 10 : a.n);
        const v = await api.get(`/v1/records/${a.id}/versions?limit=100`, root);
        expect(v.body.data.map((x: any) => x.version).sort(), `history of ${a.id}`).toEqual(
          Array.from({ length: 1 + a.updates }, (_, i) => i + 1),
        );
      }
    }

    /**
     * Writes (creates, every fourth one also patched) and reads (a record, a TEXT search) through the router until
     * `stop` holds. Requests go through the unchecked helper: the description does not list 503 for these routes, and
     * what they answer during the fault is asserted here (success, or 503 UNAVAILABLE with Retry-After; a 500, a 503
     * without Retry-After or no answer within 30 s is `bad`).
     */
    function traffic(
      typeName: string,
      engineDown: () => boolean,
      stop: () => boolean,
    ): { done: Promise<void>; seen: Traffic } {
      const seen: Traffic = { acked: [], refused: 0, ackedDuring: 0, bad: [], answers: {}, slowestMs: 0 };
      const raw = api.unchecked;
      let next = 0;
      const timed = async (what: string, f: (signal: AbortSignal) => Promise<Answer>): Promise<Answer | null> => {
        const started = Date.now();
        try {
          const r = await f(AbortSignal.timeout(30_000));
          seen.slowestMs = Math.max(seen.slowestMs, Date.now() - started);
          return r;
        } catch (e) {
          seen.bad.push(
            `${what}: no answer (${(e as Error).name}: ${(e as Error).message}) after ${Date.now() - started} ms`,
          );
          return null;
        }
      };
      /** True for a success; counts a proper refusal; records anything else. */
      const judge = (what: string, r: Answer | null, ok: number[]): boolean => {
        if (!r) return false;
        if (ok.includes(r.status)) return true;
        if (r.status === 503 && r.headers.get('retry-after') && r.body?.errorCode === 'UNAVAILABLE') {
          if (what.startsWith('write')) {
            seen.refused += 1;
            count(`write 503${by(r)}`);
          }
          return false;
        }
        seen.bad.push(`${what}: ${r.status} retry-after=${r.headers.get('retry-after')} ${r.text.slice(0, 200)}`);
        return false;
      };
      const count = (key: string) => void (seen.answers[key] = (seen.answers[key] ?? 0) + 1);
      /**
       * Who answered a 503: the router itself (no process of the role answered; its request ids are 32 hex digits) or a
       * process.
       */
      const by = (r: Answer) =>
        r.status !== 503 ? '' : /^[0-9a-f]{32}$/.test(r.body?.requestId ?? '') ? ' (router)' : ' (process)';
      const writer = async () => {
        while (!stop()) {
          const n = next++;
          const group = `g${Math.floor(n / 40)}x`;
          const down = engineDown();
          const sent = Date.now();
          const c = await timed(`write create ${n}`, (signal) =>
            raw.call('POST', '/v1/records', {
              token: root,
              body: { typeName, indexMode: 'TEXT', payload: { title: `${word} ${group} item ${n}`, n } },
              signal,
            }),
          );
          let late = Date.now() - sent >= READ_MODEL_WAIT_MS;
          if (judge(`write create ${n}`, c, [201])) {
            let updates = 0;
            if (n % 4 === 0) {
              const patched = Date.now();
              const u = await timed(`write patch ${n}`, (signal) =>
                raw.call('PATCH', `/v1/records/${c!.body.id}`, {
                  token: root,
                  body: { payload: { n: n * 10 } },
                  signal,
                }),
              );
              late ||= Date.now() - patched >= READ_MODEL_WAIT_MS;
              if (judge(`write patch ${n}`, u, [200])) updates = 1;
              else if (u?.status === 503) {
                // Refused: the record stays at version 1 unless the patch did land (its outcome is unknown to the
                // client).
                const g = await raw.call('GET', `/v1/records/${c!.body.id}`, { token: root }).catch(() => null);
                updates = g?.status === 200 && g.body.version === 2 ? 1 : -1;
              }
            }
            if (updates >= 0) {
              seen.acked.push({ id: c!.body.id, n, group, updates, late, sent });
              if (down || engineDown()) seen.ackedDuring += 1;
            }
          }
          await sleep(150);
        }
      };
      const reader = async () => {
        while (!stop()) {
          const a = seen.acked[Math.floor(Math.random() * seen.acked.length)];
          if (a) {
            const g = await timed('read record', (signal) =>
              raw.call('GET', `/v1/records/${a.id}`, { token: root, signal }),
            );
            if (g?.status === 404 && a.late)
              count("get 404 (a write acknowledged after the read models' wait gave up)");
            else {
              if (g) count(`get ${g.status}${by(g)}`);
              judge('read record', g, [200]);
            }
            const s = await timed('read search', (signal) =>
              raw.call('POST', '/v1/search', {
                token: root,
                body: { query: `${word} ${a.group}`, mode: 'TEXT', typeName, limit: 5 },
                signal,
              }),
            );
            if (s) count(`search ${s.status}${by(s)}`);
            judge('read search', s, [200]);
          }
          await sleep(250);
        }
      };
      const done = Promise.all([writer(), writer(), writer(), reader()]).then(() => {});
      return { done, seen };
    }

    function report(name: string, seen: Traffic, figures: Record<string, string | number>) {
      const line = Object.entries({
        ...figures,
        acked: seen.acked.length,
        'acked while down': seen.ackedDuring,
        "acked after the read models' wait gave up": seen.acked.filter((a) => a.late).length,
        'writes refused (503 + Retry-After)': seen.refused,
        'slowest answer': `${seen.slowestMs} ms`,
        answers: JSON.stringify(seen.answers),
      })
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ');
      console.log(`[engine-faults] ${name}: ${line}`);
    }

    const pids = () => Object.fromEntries([...t.procs.values()].map((p) => [p.name, p.child.pid]));
    const allRunning = () =>
      [...t.procs.values()]
        .filter((p) => p.child.exitCode !== null || p.child.signalCode !== null)
        .map((p) => `${p.name} exited (${p.child.exitCode ?? p.child.signalCode})`);

    it(
      'Elasticsearch stopped and started again on its data: every acknowledged write is readable, listed ' +
        'once and found by keyword',
      async () => {
        const typeName = await newType('EsRestart');
        const before = pids();
        let down = false;
        let stop = false;
        const { done, seen } = traffic(
          typeName,
          () => down,
          () => stop,
        );
        await sleep(3000);
        const stopped = Date.now();
        await must('elasticsearch.sh stop (keeping its data)', es('stop', { ES_KEEP_DATA: '1' }));
        down = true;
        await sleep(2000);
        await must('elasticsearch.sh start (on the same data)', es('start', { ES_KEEP_DATA: '1' }));
        down = false;
        const back = Date.now();
        await sleep(3000);
        stop = true;
        await done;
        const convergedMs = await converge(typeName, seen.acked, 120_000);
        report('Elasticsearch restart', seen, {
          'outage (stop -> answering again)': secs(back - stopped),
          'back -> all listed, INDEXED and found by TEXT': secs(convergedMs),
        });
        expect(seen.bad).toEqual([]);
        expect(seen.ackedDuring).toBeGreaterThan(0);
        await verifyHistory(seen.acked);
        expect(allRunning()).toEqual([]);
        expect(pids()).toEqual(before);
        everything.push(...seen.acked.map((a) => ({ ...a, typeName })));
      },
      420_000,
    );

    it('Elasticsearch started again EMPTY: the keyword index is rebuilt from the log without an operator', async () => {
      const typeName = await newType('EsEmpty');
      // Changes the rebuild must replay in order: a title replaced (only its new words are found) and a record deleted.
      const tag = randomUUID().slice(0, 6);
      const found = async (query: string) => {
        const r = await api.post('/v1/search', root, { query, mode: 'TEXT', typeName, limit: 10 });
        expect(r.status, r.text).toBe(200);
        return r.body.results.map((x: any) => x.documentId) as string[];
      };
      const changed = await api.post('/v1/records', root, {
        typeName,
        indexMode: 'TEXT',
        payload: { title: `${word} old${tag}`, n: 1 },
      });
      expect(changed.status, changed.text).toBe(201);
      expect(
        (await api.patch(`/v1/records/${changed.body.id}`, root, { payload: { title: `${word} new${tag}` } })).status,
      ).toBe(200);
      const gone = await api.post('/v1/records', root, {
        typeName,
        indexMode: 'TEXT',
        payload: { title: `${word} gone${tag}`, n: 2 },
      });
      expect(gone.status, gone.text).toBe(201);
      await eventually(
        async () => (await found(`gone${tag}`)).length === 1 && (await found(`new${tag}`)).length === 1,
        60_000,
        250,
      );
      expect((await api.del(`/v1/records/${gone.body.id}`, root)).status).toBe(204);
      let down = false;
      let stop = false;
      const { done, seen } = traffic(
        typeName,
        () => down,
        () => stop,
      );
      await sleep(3000);
      const stopped = Date.now();
      await must('elasticsearch.sh stop (deleting its data)', es('stop'));
      down = true;
      await sleep(2000);
      await must('elasticsearch.sh start (empty)', es('start'));
      down = false;
      const back = Date.now();
      await sleep(3000);
      stop = true;
      await done;
      const convergedMs = await converge(typeName, seen.acked, 150_000);
      // Every earlier write of the suite is found again too (they were only in the lost index).
      const byType = new Map<string, Acked[]>();
      for (const a of everything) byType.set(a.typeName, [...(byType.get(a.typeName) ?? []), a]);
      for (const [tn, acked] of byType) expect(await notFound(tn, acked), `earlier writes of ${tn}`).toEqual([]);
      expect(await found(`new${tag}`)).toEqual([changed.body.id]);
      expect(await found(`old${tag}`)).toEqual([]);
      expect(await found(`gone${tag}`)).toEqual([]);
      const allMs = Date.now() - back;
      const index = await (await fetch(`${esUrl}/${esIndexPrefix}passages/_mapping`)).json();
      console.log(`[engine-faults] the projector said:\n  ${keywordLines.join('\n  ')}`);
      report('Elasticsearch restarted empty', seen, {
        'outage (stop -> answering again)': secs(back - stopped),
        "back -> this test's writes listed, INDEXED and found": secs(convergedMs),
        'back -> every write of the suite found': secs(allMs),
        'records of the suite so far': everything.length + seen.acked.length,
      });
      // The index was made by the service (its mapping and marker), not auto-created by a stray write.
      expect(Object.values(index as Record<string, any>)[0]?.mappings?._meta?.version).toBeGreaterThan(0);
      expect(seen.bad).toEqual([]);
      await verifyHistory(seen.acked);
      expect(allRunning()).toEqual([]);
      everything.push(...seen.acked.map((a) => ({ ...a, typeName })));
    }, 420_000);

    it(
      'PostgreSQL stopped and started again: writes answer 201 or 503 with Retry-After, everything ' +
        'acknowledged is there once, the processes recover without a restart',
      async () => {
        const typeName = await newType('PgRestart');
        const before = pids();
        let down = false;
        let stop = false;
        const { done, seen } = traffic(
          typeName,
          () => down,
          () => stop,
        );
        await sleep(3000);
        const stopped = Date.now();
        await pgStop();
        down = true;
        await sleep(8000);
        await pgStart();
        down = false;
        const back = Date.now();
        // Writes go on until one sent after the start is acknowledged (the service is usable without a restart), and a
        // little longer.
        const firstAckAfter = await eventually(
          async () => (seen.acked.some((a) => a.sent! >= back) ? Date.now() : 0),
          60_000,
          100,
        ).catch(() => 0);
        await sleep(3000);
        stop = true;
        await done;
        const convergedMs = await converge(typeName, seen.acked, 120_000);
        report('PostgreSQL restart', seen, {
          'outage (stop -> started)': secs(back - stopped),
          'started -> writes acknowledged again': firstAckAfter ? secs(firstAckAfter - back) : 'never',
          'started -> all listed, INDEXED and found by TEXT': secs(Date.now() - back),
          'converge after the traffic stopped': secs(convergedMs),
        });
        expect(seen.bad).toEqual([]);
        expect(firstAckAfter).toBeGreaterThan(0);
        await verifyHistory(seen.acked);
        expect(allRunning()).toEqual([]);
        expect(pids()).toEqual(before);
        // Every earlier write is still readable and found.
        for (const tn of new Set(everything.map((a) => a.typeName)))
          expect(
            await notFound(
              tn,
              everything.filter((a) => a.typeName === tn),
            ),
          ).toEqual([]);
      },
      420_000,
    );
  },
);

/** uid and gid of a user (from /etc/passwd). */
async function uidGid(user: string): Promise<[number, number]> {
  const r = await run(['id', '-u', user]);
  const g = await run(['id', '-g', user]);
  return [Number(r.out.trim()), Number(g.out.trim())];
}
