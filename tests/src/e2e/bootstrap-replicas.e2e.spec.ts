import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgresSchema, serverUrl, tempDir } from '../support/engines';
import {
  type Api,
  type Bootstrap,
  eventually,
  freePort,
  spawnService,
  splitRolesEnv,
  stopChildren,
} from '../support/service';

/**
 * The first-account bootstrap with several command replicas (the Kubernetes manifest runs two): command
 * processes started at once on the same empty PostgreSQL log, sharing one DATA_DIR (the shared volume) and
 * one SERVICE_SECRET, open exactly one account; the one that opened it writes DATA_DIR/bootstrap.json, whose
 * root key works on every replica; the others start normally and leave the file alone. A projector process
 * runs beside them (the command role's writes wait for the read models), started first as in the CI topology.
 *
 * Started at once, the processes still reach the check tens of milliseconds apart, and the race (between
 * reading the empty log and appending the account) is a few milliseconds wide: left alone it hardly ever
 * shows. So the test gates them with table locks in their own schema (nothing else waits on them): first on
 * proj_checkpoints, which a process reads once it has opened the event store; then, while they wait there, on
 * es_events, whose next read is the bootstrap's look at the head of the log. Released when every command
 * process waits on it, they all read the empty log together, as replicas starting at once may. Before the
 * fix each of them opened an account and wrote bootstrap.json over the other's. BOOTSTRAP_COMMANDS=3 runs three.
 */
const COMMANDS = Number(process.env.BOOTSTRAP_COMMANDS || 2);

describe.skipIf(!serverUrl('postgres'))(
  `first-account bootstrap with ${COMMANDS} command processes starting at once (PostgreSQL)`,
  () => {
    const children: ChildProcess[] = [];
    const cleanup: Array<() => Promise<void> | void> = [];
    let dataDir: string;
    let schemaUrl: string;
    let commands: Array<{ api: Api; output: () => string }> = [];
    let projector: { api: Api; output: () => string };
    /**
     * Whether the gates held every command process at once (at the checkpoint read, then at the bootstrap's head read).
     */
    const aligned = { first: false, head: false };
    const client = async () => {
      const c = new pg.Client({ connectionString: schemaUrl });
      await c.connect();
      return c;
    };
    /** An ACCESS EXCLUSIVE lock on one of this schema's tables, held until `release` (idempotent). */
    const lockTable = async (table: string) => {
      const c = await client();
      await c.query('BEGIN');
      await c.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
      let held = true;
      return {
        release: async () => {
          if (!held) return;
          held = false;
          await c.query('COMMIT').finally(() => c.end());
        },
      };
    };
    const until = async (ok: () => Promise<boolean>, timeoutMs: number) => {
      for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20)))
        if (await ok()) return true;
      return false;
    };
    const outputs = () =>
      [projector, ...commands]
        .filter(Boolean)
        .map((p, i) => `--- ${i ? `command ${i}` : 'projector'}\n${p.output().slice(-3000)}`)
        .join('\n');

    beforeAll(async () => {
      const schema = await freshPostgresSchema(serverUrl('postgres')!);
      cleanup.push(() => schema.drop());
      schemaUrl = schema.url;
      const dir = tempDir('svc-bootstrap-');
      cleanup.push(() => dir.remove());
      dataDir = dir.dir;
      const env = splitRolesEnv(schema.url);
      const p = await spawnService(dataDir, await freePort(), { ...env, SERVICE_ROLE: 'projector' });
      children.push(p.child);
      projector = p;
      const ports = await Promise.all(Array.from({ length: COMMANDS }, () => freePort()));
      const admin = await client();
      cleanup.push(() => admin.end());
      // Backends that exist now (the projector's, other suites') are not the command processes'.
      const before = new Set(
        (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity')).rows.map((r) => r.pid),
      );
      const waiting = async (table: string, like: string) =>
        (
          await admin.query<{ pid: number }>(
            `SELECT DISTINCT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT ` +
              `l.granted AND l.relation = $1::regclass AND a.query ILIKE $2`,
            [table, like],
          )
        ).rows.filter((r) => !before.has(r.pid)).length;
      // Within spawnService's own minute to start: a gate that times out lets the processes go (and the first test says
      // so).
      const gate1 = await lockTable('proj_checkpoints');
      const spawning = ports.map((port) => spawnService(dataDir, port, { ...env, SERVICE_ROLE: 'command' }));
      for (const s of spawning)
        s.then(
          (x) => children.push(x.child),
          () => {},
        );
      try {
        aligned.first = await until(
          async () => (await waiting('proj_checkpoints', '%proj_checkpoints%')) >= COMMANDS,
          45_000,
        );
        const gate2 = await lockTable('es_events');
        await gate1.release();
        try {
          aligned.head = await until(async () => (await waiting('es_events', '%max(position)%')) >= COMMANDS, 10_000);
        } finally {
          await gate2.release();
        }
      } finally {
        await gate1.release();
      }
      const started = await Promise.allSettled(spawning);
      const failed = started.find((s) => s.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
      commands = started.map((s) => (s as PromiseFulfilledResult<Awaited<ReturnType<typeof spawnService>>>).value);
    }, 180_000);

    afterAll(async () => {
      await stopChildren(children);
      for (const c of cleanup.reverse()) await Promise.resolve(c()).catch(() => {});
    }, 60_000);

    const query = async <T>(text: string): Promise<T[]> => {
      const c = await client();
      try {
        return (await c.query(text)).rows as T[];
      } finally {
        await c.end();
      }
    };

    it(
      'the gates held every command process at the first-account check together (else this test no longer ' +
        'provokes the race: adjust the gates)',
      () => {
        expect(aligned, outputs()).toEqual({ first: true, head: true });
      },
    );

    it('the log holds exactly one AccountOpened, and the read models exactly one account', async () => {
      const opened = await query<{ account_id: string }>(
        `SELECT data->>'accountId' AS account_id FROM es_events WHERE event_type = 'AccountOpened'`,
      );
      expect(opened, outputs()).toHaveLength(1);
      // The read models (the projector process) have applied everything the log holds.
      const head = Math.max(
        ...(await query<{ p: string }>('SELECT max(position) AS p FROM es_events')).map((r) => Number(r.p)),
      );
      await eventually(
        async () =>
          Number(
            (await query<{ position: string }>(`SELECT position FROM proj_checkpoints WHERE name = 'read-models'`))[0]
              ?.position ?? 0,
          ) >= head,
        30_000,
      );
      const accounts = await query<{ account_id: string }>('SELECT account_id FROM rm_accounts');
      expect(accounts.map((a) => a.account_id)).toEqual([opened[0].account_id]);
    });

    it('exactly one process says it wrote bootstrap.json; the others started normally without writing it', async () => {
      const wrote = commands.filter((c) => /first start: account keys written/.test(c.output()));
      expect(wrote, outputs()).toHaveLength(1);
      // Every other one read the empty log too (the gates), tried, and lost the append to the winner.
      const lost = commands.filter((c) => /was opened by another process starting at the same time/.test(c.output()));
      expect(lost, outputs()).toHaveLength(COMMANDS - 1);
      for (const c of commands) {
        expect((await c.api.get('/healthz')).body).toEqual({ status: 'ok', role: 'command' });
        const r = await c.api.get('/readyz');
        expect(r.status, r.text).toBe(200);
      }
    });

    it('bootstrap.json names that account, and its root keys work on every command process', async () => {
      const file = join(dataDir, 'bootstrap.json');
      expect(existsSync(file)).toBe(true);
      const b = JSON.parse(readFileSync(file, 'utf8')) as Bootstrap;
      const opened = await query<{ account_id: string }>(
        `SELECT data->>'accountId' AS account_id FROM es_events WHERE event_type = 'AccountOpened'`,
      );
      expect(opened.map((o) => o.account_id)).toEqual([b.accountId]);
      for (const c of commands)
        for (const key of [b.tenants.live.rootKey, b.tenants.test.rootKey]) {
          // Minting a token needs nothing but a live credential (a write: the command role serves it).
          const r = await c.api.post('/v1/tokens', key, { scope: { allowedActions: ['records:r'] } });
          expect(r.status, r.text).toBe(201);
        }
    });
  },
);
