import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freshPostgresSchema, serverUrl, tempDir } from '../support/engines';
import { Router } from '../support/router';
import { Api, freePort, spawnService, waitForExit, type Bootstrap } from '../support/service';

export type SplitRole = 'command' | 'query' | 'projector' | 'relay';
/**
 * Start order: the relay and the projector first, so the command role's first write (the bootstrap account) is
 * projected.
 */
export const ROLES: SplitRole[] = ['relay', 'projector', 'query', 'command'];

export interface RoleProcess {
  role: SplitRole;
  /** `relay`, `projector`, `command`, or `query-1`, `query-2`, ... */
  name: string;
  child: ChildProcess;
  port: number;
  api: Api;
  output: () => string;
}

/**
 * The distributed deployment as processes (deploy/compose.yaml): one relay, one
 * projector, `queryReplicas` query processes (2 by default) and one command
 * process, each `SERVICE_ROLE=<role> npm start`, on a fresh PostgreSQL schema,
 * Kafka (a topic of their own), LanceDB and blobs in one shared directory (the
 * volume the compose file mounts), Elasticsearch when ELASTICSEARCH_URL is set,
 * Redis when REDIS_URL is set. In front of them the shipped router
 * (deploy/k8s/router.nginx.conf in nginx, only its upstream addresses changed),
 * so black-box tests use its one URL. Each process keeps its port across
 * restarts, so the router needs no change when one is killed and started again.
 */
export class Topology {
  readonly procs = new Map<string, RoleProcess>();
  private readonly ports = new Map<string, number>();
  api!: Api;
  bootstrap!: Bootstrap;
  router!: Router;

  private constructor(
    readonly env: Record<string, string>,
    readonly dataDir: string,
    readonly queryReplicas: number,
    private readonly log: ((line: string) => void) | undefined,
    private readonly cleanup: Array<() => Promise<void> | void>,
  ) {}

  static async start(o: {
    kafkaBrokers: string;
    env?: Record<string, string>;
    queryReplicas?: number;
    log?: (line: string) => void;
  }): Promise<Topology> {
    const base = serverUrl('postgres');
    if (!base) throw new Error('DATABASE_URL is not set');
    const schema = await freshPostgresSchema(base);
    const dir = tempDir('svc-split-');
    const id = randomUUID().slice(0, 8);
    const env: Record<string, string> = {
      DATABASE_URL: schema.url,
      KAFKA_BROKERS: o.kafkaBrokers,
      KAFKA_TOPIC: `split.${id}.events`,
      SERVICE_SECRET: `secret-${randomUUID()}`,
      // Behind the router: one proxy hop is trusted for the client's address.
      TRUST_PROXY_HOPS: '1',
      ...(serverUrl('elasticsearch')
        ? { ELASTICSEARCH_URL: serverUrl('elasticsearch')!, ELASTICSEARCH_INDEX_PREFIX: `split-${id}-` }
        : {}),
      ...(serverUrl('redis') ? { REDIS_URL: serverUrl('redis')! } : {}),
      ...(o.env ?? {}),
    };
    const dropIndexes = async () => {
      // The Elasticsearch indexes of this topology (by name: wildcard deletes are refused by default).
      const es = env.ELASTICSEARCH_URL;
      if (!es) return;
      const r = await fetch(`${es}/_cat/indices/${env.ELASTICSEARCH_INDEX_PREFIX}*?h=index`);
      if (!r.ok) return;
      for (const name of (await r.text())
        .split('\n')
        .map((x) => x.trim())
        .filter(Boolean))
        await fetch(`${es}/${name}`, { method: 'DELETE' });
    };
    const t = new Topology(env, dir.dir, o.queryReplicas ?? 2, o.log, [
      () => schema.drop(),
      () => dir.remove(),
      dropIndexes,
    ]);
    try {
      await t.startRole('relay');
      await t.startRole('projector');
      await Promise.all(t.queryNames().map((name) => t.startRole('query', name)));
      await t.startRole('command');
      // The command role writes it on an empty log; when it did not, its output says why (CI saw it missing once).
      const keys = join(dir.dir, 'bootstrap.json');
      if (!existsSync(keys))
        throw new Error(`no bootstrap.json after the roles started; command output:\n${t.role('command').output()}`);
      t.bootstrap = JSON.parse(readFileSync(keys, 'utf8'));
      t.router = await Router.start(t.upstreams());
      t.api = new Api(t.router.url);
    } catch (e) {
      await t.stop();
      throw e;
    }
    return t;
  }

  /** The query replicas' names: query-1, query-2, ... */
  queryNames(): string[] {
    return Array.from({ length: this.queryReplicas }, (_, i) => `query-${i + 1}`);
  }

  private upstreams() {
    const at = (name: string) => `127.0.0.1:${this.ports.get(name)}`;
    return { command: [at('command')], query: this.queryNames().map(at), projector: [at('projector')] };
  }

  /** A process by name; `query` is the first query replica. */
  role(name: string): RoleProcess {
    const p = this.procs.get(name === 'query' ? 'query-1' : name);
    if (!p) throw new Error(`${name} is not running`);
    return p;
  }

  /** Starts (or starts again, on the port it had) a process of `role`, named `name` (default: the role). */
  async startRole(role: SplitRole, name: string = role === 'query' ? 'query-1' : role): Promise<RoleProcess> {
    const p = this.ports.get(name) ?? (await freePort());
    this.ports.set(name, p);
    const s = await spawnService(this.dataDir, p, { ...this.env, SERVICE_ROLE: role }, this.log);
    const proc = { role, name, child: s.child, port: p, api: s.api, output: s.output };
    this.procs.set(name, proc);
    return proc;
  }

  /** SIGKILL (no shutdown hook runs) or SIGTERM, and waits for the exit. */
  async kill(name: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const key = name === 'query' ? 'query-1' : name;
    const p = this.procs.get(key);
    if (!p) return;
    this.procs.delete(key);
    if (p.child.exitCode === null && p.child.signalCode === null) {
      p.child.kill(signal);
      await waitForExit(p.child, 30_000).catch(() => p.child.kill('SIGKILL'));
    }
  }

  async readyz(name: string): Promise<any> {
    const r = await this.role(name).api.get('/readyz');
    return r.body;
  }

  async stop(): Promise<void> {
    await this.router?.stop();
    for (const name of ['command', ...this.queryNames(), 'projector', 'relay']) await this.kill(name, 'SIGTERM');
    for (const c of this.cleanup) await Promise.resolve(c()).catch(() => {});
  }

  /** What every process and the router printed (for a failing test's message). */
  output(): string {
    return [
      ...[...this.procs.values()].map((p) => `--- ${p.name}\n${p.output().slice(-4000)}`),
      `--- router\n${this.router?.log() ?? ''}`,
    ].join('\n');
  }
}
