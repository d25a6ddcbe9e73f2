import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';

/** A test CA and a server certificate it signed for `*.example.test`, `localhost` and 127.0.0.1 (openssl). */
export function makeCertificates(dir: string): { caFile: string; key: string; cert: string; ca: string } {
  const f = (n: string) => join(dir, n);
  const run = (args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  run([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=svc webhook test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  run([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    f('srv.key'),
    '-out',
    f('srv.csr'),
    '-subj',
    '/CN=hooks.example.test',
  ]);
  writeFileSync(
    f('ext.cnf'),
    'subjectAltName=DNS:*.example.test,DNS:*.other.test,DNS:localhost,IP:127.0.0.1\n' +
      'basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n',
  );
  run([
    'x509',
    '-req',
    '-in',
    f('srv.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('srv.pem'),
    '-days',
    '2',
    '-extfile',
    f('ext.cnf'),
  ]);
  const read = (n: string) => execFileSync('cat', [f(n)]).toString();
  return { caFile: f('ca.pem'), key: read('srv.key'), cert: read('srv.pem'), ca: read('ca.pem') };
}

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  json: any;
  at: number;
  /** The status answered. */
  status: number;
}

/**
 * An HTTPS receiver on loopback. Each path answers by its mode: `ok` (200),
 * `fail` (500), `flaky` (500 the first time a delivery id is seen, then 200),
 * `slow:<ms>` (200 after a delay). Everything received is kept, answered or not.
 */
export class Receiver {
  readonly received: Received[] = [];
  /** Delivery ids as requests arrive (answered or not: an attempt cut short by a kill is here too). */
  readonly arrivals: string[] = [];
  private readonly modes = new Map<string, string>();
  private readonly seen = new Set<string>();
  private server!: Server;
  port = 0;
  defaultMode = 'ok';

  constructor(private readonly tls: { key: string; cert: string }) {}

  async start(port = 0): Promise<this> {
    this.server = createServer({ key: this.tls.key, cert: this.tls.cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', async () => {
        const path = (req.url ?? '/').split('?')[0];
        const mode = this.modes.get(path) ?? this.defaultMode;
        const body = Buffer.concat(chunks).toString('utf8');
        const id = String(req.headers['x-service-delivery'] ?? '');
        this.arrivals.push(id);
        let status = 200;
        if (mode === 'fail') status = 500;
        else if (mode === 'flaky') status = this.seen.has(id) ? 200 : 500;
        else if (mode.startsWith('slow:')) await new Promise((r) => setTimeout(r, Number(mode.slice(5))));
        this.seen.add(id);
        let json: any;
        try {
          json = JSON.parse(body);
        } catch {
          json = undefined;
        }
        res.statusCode = status;
        res.end('ok', () =>
          this.received.push({
            path,
            headers: req.headers as Record<string, string>,
            body,
            json,
            at: Date.now(),
            status,
          }),
        );
      });
    });
    await new Promise<void>((r) => this.server.listen(port, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  mode(path: string, mode: string) {
    this.modes.set(path, mode);
  }

  at(path: string) {
    return this.received.filter((r) => r.path === path);
  }

  async stop() {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
