import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
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
  waitForExit,
} from '../support/service';

/**
 * SERVICE_PROCESSES: the command and the query role, each run as two processes on one port under a supervisor, with
 * a projector beside them, on PostgreSQL. Both processes of a role answer requests (each one's CPU grows under a
 * burst), writes made through one role's processes are read through the other's, /metrics from any process counts
 * the requests of both, a process killed is replaced while the role keeps answering, and SIGTERM closes them all.
 */
const pidsUnder = (pid: number): number[] => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
};
/** CPU time (clock ticks) a process has used. */
const cpuTicks = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
};
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
/** Whether a process still runs (a zombie has closed its sockets). */
const runs = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return false;
  }
};
/** The sum of a Prometheus counter's samples whose labels contain every `want`. */
const counted = (text: string, name: string, want: string[]) =>
  text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && want.every((w) => l.includes(w)))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);

describe.skipIf(!serverUrl('postgres'))('SERVICE_PROCESSES=2 for the command and query roles (PostgreSQL)', () => {
  const children: ChildProcess[] = [];
  const cleanup: Array<() => Promise<void> | void> = [];
  let command: { child: ChildProcess; api: Api; output: () => string };
  let query: { child: ChildProcess; api: Api; output: () => string };
  let projector: { child: ChildProcess; api: Api; output: () => string };
  let root: string;
  let typeName: string;
  const ids: string[] = [];
  const outputs = () => `--- command\n${command?.output().slice(-3000)}\n--- query\n${query?.output().slice(-3000)}`;

  beforeAll(async () => {
    const schema = await freshPostgresSchema(serverUrl('postgres')!);
    cleanup.push(() => schema.drop());
    const dir = tempDir('svc-processes-');
    cleanup.push(() => dir.remove());
    const env = { ...splitRolesEnv(schema.url), BUILTIN_EMBEDDINGS_MODEL: 'none' };
    projector = await spawnService(dir.dir, await freePort(), { ...env, SERVICE_ROLE: 'projector' });
    children.push(projector.child);
    command = await spawnService(dir.dir, await freePort(), {
      ...env,
      SERVICE_ROLE: 'command',
      SERVICE_PROCESSES: '2',
    });
    children.push(command.child);
    query = await spawnService(dir.dir, await freePort(), { ...env, SERVICE_ROLE: 'query', SERVICE_PROCESSES: '2' });
    children.push(query.child);
    root = (JSON.parse(readFileSync(join(dir.dir, 'bootstrap.json'), 'utf8')) as Bootstrap).tenants.live.rootKey;
    // Both processes of each role are up (the supervisor starts the second once the first listens).
    for (const s of [command, query])
      await eventually(
        async () => pidsUnder(s.child.pid!).length === 2 && /2 processes serve/.test(s.output()),
        30_000,
      );
  }, 180_000);

  afterAll(async () => {
    await stopChildren(children);
    for (const c of cleanup.reverse()) await Promise.resolve(c()).catch(() => {});
  }, 60_000);

  it('writes through the command processes are read back through the query processes', async () => {
    typeName = `P${randomUUID().slice(0, 8)}`;
    const s = await command.api.post('/v1/schemas', root, {
      typeName,
      displayName: 'Processes',
      allowedSurfaces: ['record'],
      fields: [{ fieldId: 'n', fieldType: 'number' }],
    });
    expect(s.status, s.text + outputs()).toBe(201);
    for (let i = 0; i < 20; i++) {
      const r = await command.api.post('/v1/records', root, { typeName, payload: { n: i } });
      expect(r.status, r.text).toBe(201);
      ids.push(r.body.id);
    }
    for (const id of ids) {
      const r = await query.api.get(`/v1/records/${id}`, root);
      expect(r.status, r.text).toBe(200);
      expect(r.body.payload.n).toBe(ids.indexOf(id));
    }
  });

  it('both query processes answer a burst of reads, and /metrics from either counts them all', async () => {
    const pids = pidsUnder(query.child.pid!);
    const before = pids.map(cpuTicks);
    const route = 'route="/v1/records/:id"';
    const metricsBefore = counted((await query.api.get('/metrics')).text, 'svc_http_requests_total', [route]);
    // Eight clients at a time, a new connection for each read: whichever process is free takes it.
    let done = 0;
    await Promise.all(
      Array.from({ length: 8 }, async (_, c) => {
        for (let i = 0; i < 100; i++) {
          const r = await fetch(`${query.api.baseUrl}/v1/records/${ids[(c + i) % ids.length]}`, {
            headers: { authorization: `Bearer ${root}`, connection: 'close' },
            signal: AbortSignal.timeout(10_000),
          });
          expect(r.status).toBe(200);
          await r.arrayBuffer();
          done++;
        }
      }),
    );
    const grew = pids.map((p, i) => cpuTicks(p) - before[i]);
    // Each process did a share of the work (a tick is 10 ms; 800 reads take far more than 20 ms of CPU each).
    for (const g of grew) expect(g, `CPU ticks per process: ${grew}`).toBeGreaterThan(2);
    const head = (text: string) => /^svc_event_store_head_position\{[^}]*\} (\d+)$/m.exec(text)?.[1];
    // The log may grow meanwhile (the burst's read counts are appended within a second): the projector's head read
    // before and after bounds what the query processes gather.
    const headBefore = Number(head((await projector.api.get('/metrics')).text));
    const gathered = (await query.api.get('/metrics')).text;
    const headAfter = Number(head((await projector.api.get('/metrics')).text));
    expect(counted(gathered, 'svc_http_requests_total', [route]) - metricsBefore).toBeGreaterThanOrEqual(done);
    // A position is the same log seen by each process: gathered as it is, not summed over the processes.
    expect(head(gathered), gathered.slice(0, 2000)).toMatch(/^[1-9]\d*$/);
    expect(Number(head(gathered))).toBeGreaterThanOrEqual(headBefore);
    expect(Number(head(gathered))).toBeLessThanOrEqual(headAfter);
  });

  it('the supervisor does not load the service: it holds well under what one of its processes holds', () => {
    // Node, its configuration and prom-client only (it held more than a process did while it loaded the service).
    // Measured once both processes have served (the burst above).
    const rssMb = (pid: number) =>
      Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
    const rss = { supervisor: rssMb(query.child.pid!), processes: pidsUnder(query.child.pid!).map(rssMb) };
    expect(rss.processes).toHaveLength(2);
    expect(rss.supervisor, JSON.stringify(rss)).toBeLessThan(0.6 * Math.min(...rss.processes));
  });

  it('a query process killed is replaced, and the role keeps answering meanwhile', async () => {
    const [victim, other] = pidsUnder(query.child.pid!);
    process.kill(victim, 'SIGKILL');
    // What the victim held dies with it: the connections it had accepted, this test's kept-alive ones included (the
    // earlier tests' client pool reused one and got "other side closed"). Once it is gone, every read on a new
    // connection is answered (it goes to a live process) while its replacement starts.
    await eventually(async () => !runs(victim), 10_000);
    for (let i = 0; i < 20; i++) {
      const dispatcher = new Agent({ pipelining: 0 });
      const r = await fetch(`${query.api.baseUrl}/v1/records/${ids[i % ids.length]}`, {
        headers: { authorization: `Bearer ${root}` },
        signal: AbortSignal.timeout(10_000),
        dispatcher,
      });
      expect(r.status).toBe(200);
      await r.arrayBuffer();
      await dispatcher.close();
    }
    await eventually(async () => {
      const now = pidsUnder(query.child.pid!);
      return now.length === 2 && now.includes(other) && !now.includes(victim);
    }, 20_000);
    expect(query.output()).toMatch(new RegExp(`process ${victim} exited \\(SIGKILL\\)`));
  });

  it('SIGTERM to the supervisor closes every process and exits 0', async () => {
    const pids = pidsUnder(command.child.pid!);
    expect(pids).toHaveLength(2);
    command.child.kill('SIGTERM');
    await waitForExit(command.child, 30_000);
    expect(command.child.exitCode, command.output()).toBe(0);
    for (const p of pids) expect(alive(p)).toBe(false);
  });
});
