// The shipped router (deploy/k8s/router.nginx.conf, nginx from Debian's packages) run as a process of the test:
// the file as shipped, with only its upstream addresses and its listen address changed, as an operator would.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, freePort, waitForExit } from './service';
import { tempDir } from './engines';

export type RouterUpstreams = Record<'command' | 'query' | 'projector', string[]>;

/** The nginx binary, or undefined when it is not installed (the router suites are then skipped, saying so). */
export const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => spawnSync(p, ['-v']).status === 0);

/** The shipped configuration with `upstreams` in place of its upstream servers and loopback `port` to listen on. */
export function routerConfigFor(upstreams: RouterUpstreams, port: number): string {
  let conf = readFileSync(join(ROOT, 'deploy/k8s/router.nginx.conf'), 'utf8');
  for (const [role, addrs] of Object.entries(upstreams)) {
    const shipped = new RegExp(`server ${role}:8080;`);
    if (!shipped.test(conf)) throw new Error(`the shipped router has no upstream server ${role}:8080`);
    // No address (a role not started): a closed port, so the router answers its own 503.
    conf = conf.replace(shipped, (addrs.length ? addrs : ['127.0.0.1:1']).map((a) => `server ${a};`).join(' '));
  }
  if (!/listen 8080;/.test(conf)) throw new Error('the shipped router does not listen on 8080');
  return conf.replace('listen 8080;', `listen 127.0.0.1:${port};`);
}

export class Router {
  private constructor(
    readonly url: string,
    private readonly dir: string,
    private child: ChildProcess,
    private readonly removeDir: () => void,
  ) {}

  static async start(upstreams: RouterUpstreams): Promise<Router> {
    if (!NGINX) throw new Error('nginx is not installed');
    const tmp = tempDir('svc-router-');
    const port = await freePort();
    writeFileSync(join(tmp.dir, 'router.conf'), routerConfigFor(upstreams, port));
    for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(tmp.dir, d));
    writeFileSync(
      join(tmp.dir, 'nginx.conf'),
      [
        'daemon off;',
        'user root;',
        'worker_processes 1;',
        `pid ${tmp.dir}/nginx.pid;`,
        `error_log ${tmp.dir}/error.log warn;`,
        'events { worker_connections 4096; }',
        'http {',
        '  access_log off;',
        ...['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
          (d) => `  ${d === 'body' ? 'client_body' : d}_temp_path ${tmp.dir}/${d};`,
        ),
        `  include ${tmp.dir}/router.conf;`,
        '}',
        '',
      ].join('\n'),
    );
    const child = spawnNginx(tmp.dir);
    const r = new Router(`http://127.0.0.1:${port}`, tmp.dir, child, tmp.remove);
    await r.ready();
    return r;
  }

  private async ready(): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (this.child.exitCode !== null) throw new Error(`nginx exited: ${this.log()}`);
      try {
        await fetch(`${this.url}/metrics`);
        return;
      } catch {
        if (Date.now() > deadline) throw new Error(`nginx did not start: ${this.log()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /** Points the upstreams elsewhere (a graceful reload: requests under way finish on the old workers). */
  async reconfigure(upstreams: RouterUpstreams): Promise<void> {
    const port = Number(new URL(this.url).port);
    writeFileSync(join(this.dir, 'router.conf'), routerConfigFor(upstreams, port));
    const r = spawnSync(NGINX!, ['-p', this.dir, '-c', join(this.dir, 'nginx.conf'), '-s', 'reload'], {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`nginx reload failed: ${r.stderr}`);
    await new Promise((r) => setTimeout(r, 300));
  }

  log(): string {
    try {
      return readFileSync(join(this.dir, 'error.log'), 'utf8').slice(-4000);
    } catch {
      return '';
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      this.child.kill('SIGQUIT');
      await waitForExit(this.child, 10_000).catch(() => this.child.kill('SIGKILL'));
    }
    this.removeDir();
  }
}

function spawnNginx(dir: string): ChildProcess {
  const child = spawn(NGINX!, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.on('data', () => {});
  return child;
}
