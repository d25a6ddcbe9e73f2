/**
 * The JSON log (pino, on by default; docs/operations.md "Logs"): one line per request with its requestId, route,
 * path, status, duration and tenant; an unhandled error's stack under the requestId the client got; LOG_LEVEL; the
 * process's own messages in the same stream. And no secret in it: a started service is driven with every kind of
 * key and token it hands out or takes (root keys, the developer token, the operator token, a minted token, a revoked
 * one, a wrong one, a webhook secret, a presigned upload's signature, the service secret), and its whole output is
 * searched for each.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/engines';
import {
  freePort,
  inProcessOnly,
  OPERATOR_TOKEN,
  spawnService,
  startService,
  type TestService,
} from '../support/service';

type Line = {
  level: number;
  msg: string;
  requestId?: string;
  route?: string | null;
  path?: string;
  status?: number;
  durationMs?: number;
  tenantId?: string;
  contextId?: string;
  role?: string;
  err?: { message: string; stack: string };
};

/** A log destination that keeps every line (parsed). */
function collector() {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Line);
      done();
    },
  });
  return { lines, stream };
}

describe.skipIf(!!inProcessOnly)('the request log (in process)', () => {
  let svc: TestService;
  const log = collector();

  beforeAll(async () => {
    svc = await startService({ env: { LOG_LEVEL: 'info' }, hooks: { logDestination: log.stream } });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  const settle = () => new Promise((r) => setTimeout(r, 100));

  it.skipIf(!!inProcessOnly)(
    'one JSON line per request: requestId (the one answered), route, path without the query, status, duration, tenant',
    async () => {
      const root = svc.bootstrap.tenants.test.rootKey;
      const r = await fetch(`${svc.url}/v1/records/00000000-0000-4000-8000-000000000001?token=${'q'.repeat(12)}`, {
        headers: { authorization: `Bearer ${root}`, 'x-request-id': 'log-test-1' },
      });
      expect(r.status).toBe(404);
      await settle();
      const mine = log.lines.filter((l) => l.requestId === 'log-test-1');
      expect(mine).toHaveLength(1);
      expect(mine[0]).toMatchObject({
        msg: 'request',
        route: '/v1/records/:id',
        path: '/v1/records/00000000-0000-4000-8000-000000000001',
        status: 404,
        tenantId: svc.bootstrap.tenants.test.tenantId,
        role: 'all',
      });
      expect(mine[0].durationMs).toBeGreaterThan(0);
      expect(JSON.stringify(log.lines)).not.toContain('q'.repeat(12));
    },
  );

  it.skipIf(!!inProcessOnly)(
    'an unhandled error is logged with its stack under the requestId the client got in the 500',
    async () => {
      const root = svc.bootstrap.tenants.test.rootKey;
      const store = svc.service.store;
      const original = { append: store.append, appendMulti: store.appendMulti };
      const fire = () => Promise.reject(new Error('disk on fire (logging test)'));
      store.append = fire;
      store.appendMulti = fire;
      let r: Response;
      try {
        r = await fetch(`${svc.url}/v1/documents`, {
          method: 'POST',
          headers: { authorization: `Bearer ${root}`, 'content-type': 'application/json' },
          body: JSON.stringify({ title: 't', text: 'x', indexMode: 'NONE' }),
        });
      } finally {
        Object.assign(store, original);
      }
      expect(r.status).toBe(500);
      const body = (await r.json()) as { errorCode: string; requestId: string; message: string };
      expect(body.errorCode).toBe('INTERNAL');
      expect(body.message).not.toMatch(/disk on fire/);
      await settle();
      const lines = log.lines.filter((l) => l.requestId === body.requestId);
      const error = lines.find((l) => l.err);
      expect(error, JSON.stringify(lines)).toBeDefined();
      expect(error!.level).toBe(50);
      expect(error!.err!.message).toBe('disk on fire (logging test)');
      expect(error!.err!.stack).toMatch(/disk on fire \(logging test\)\n\s+at /);
      expect(lines.find((l) => l.msg === 'request')).toMatchObject({ status: 500, level: 50 });
    },
  );
});

describe('LOG_LEVEL', () => {
  it.skipIf(!!inProcessOnly)(
    'warn keeps request lines out; an unknown level stops the start naming the variable',
    async () => {
      const log = collector();
      const svc = await startService({ env: { LOG_LEVEL: 'warn' }, hooks: { logDestination: log.stream } });
      try {
        expect((await fetch(`${svc.url}/healthz`)).status).toBe(200);
        await new Promise((r) => setTimeout(r, 100));
        expect(log.lines.filter((l) => l.msg === 'request')).toEqual([]);
      } finally {
        await svc.stop();
      }
      await expect(startService({ env: { LOG_LEVEL: 'loud' } })).rejects.toThrow(
        /LOG_LEVEL must be fatal or error or warn or info or debug or trace or silent, not loud/,
      );
    },
  );
});

describe.skipIf(!!inProcessOnly)('no secret in the log of a started service', () => {
  const dir = tempDir('svc-log-');
  let stop: () => Promise<void>;
  let output: () => string;
  let base: string;
  let exitCode: () => number | null;

  beforeAll(async () => {
    const port = await freePort();
    // Webhook targets resolve from a file (a public address: nothing is delivered during the test).
    const dns = join(dir.dir, 'dns.json');
    writeFileSync(dns, JSON.stringify({ 'hooks.example.com': ['93.184.215.14'] }));
    // The defaults a user gets (info, request lines on), plus debug for the most the service would ever say.
    const s = await spawnService(dir.dir, port, { LOG_LEVEL: 'debug', WEBHOOK_TEST_DNS_FILE: dns });
    output = s.output;
    base = s.api.baseUrl;
    exitCode = () => s.child.exitCode;
    stop = async () => {
      s.child.kill('SIGTERM');
      await new Promise((r) => (s.child.exitCode === null ? s.child.once('exit', r) : r(undefined)));
    };
  }, 120_000);
  afterAll(async () => {
    await stop?.();
    dir.remove();
  });

  it('every key, token and signature used in a session of requests is absent from the whole output', async () => {
    const boot = JSON.parse(readFileSync(join(dir.dir, 'bootstrap.json'), 'utf8')) as {
      developerToken: string;
      tenants: Record<'live' | 'test', { tenantId: string; rootKey: string }>;
    };
    const secrets: string[] = [
      boot.developerToken,
      boot.tenants.live.rootKey,
      boot.tenants.test.rootKey,
      OPERATOR_TOKEN,
    ];
    const root = boot.tenants.test.rootKey;
    const call = async (method: string, path: string, token: string | undefined, body?: unknown) => {
      let r: Response;
      try {
        r = await fetch(`${base}${path}`, {
          method,
          headers: {
            ...(token ? { authorization: `Bearer ${token}` } : {}),
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (e) {
        // A connection that fails says whether the service is still running and what it printed last.
        const cause = (e as { cause?: Error }).cause;
        // The secrets known so far are blanked: a failure must not print one to the CI log.
        const tail = secrets.reduce((t, s) => t.split(s).join('<secret>'), output().slice(-4000));
        throw new Error(
          `${method} ${path}: ${String(e)} (${String(cause)}); service exit code ${exitCode()}; ` +
            `its output ends:\n${tail}`,
        );
      }
      const text = await r.text();
      return { status: r.status, body: text ? (JSON.parse(text) as Record<string, any>) : {} };
    };

    const schema = await call('POST', '/v1/schemas', root, {
      typeName: 'LogSecret',
      displayName: 'Log',
      allowedSurfaces: ['record'],
      fields: [{ fieldId: 'name', fieldType: 'string' }],
    });
    expect(schema.status).toBe(201);
    expect((await call('POST', '/v1/records', root, { typeName: 'LogSecret', payload: { name: 'a' } })).status).toBe(
      201,
    );
    const minted = await call('POST', '/v1/tokens', root, { scope: { allowedActions: ['records:r'] } });
    expect(minted.status).toBe(201);
    const token = String(minted.body.token);
    secrets.push(token);
    expect((await call('GET', '/v1/records?typeName=LogSecret', token)).status).toBe(200);
    expect((await call('DELETE', `/v1/tokens/${minted.body.id}`, root)).status).toBeLessThan(300);
    expect((await call('GET', '/v1/records?typeName=LogSecret', token)).status).toBe(401);
    const wrong = `sk_test_${'x'.repeat(40)}`;
    secrets.push(wrong);
    expect((await call('GET', '/v1/records?typeName=LogSecret', wrong)).status).toBe(401);
    const acct = await call('POST', '/operator/accounts', OPERATOR_TOKEN, { plan: 'enterprise' });
    expect(acct.status, JSON.stringify(acct.body)).toBe(201);
    secrets.push(acct.body.developerToken, acct.body.tenants.live.rootKey, acct.body.tenants.test.rootKey);
    expect(
      (
        await call('POST', '/operator/domains/verify', OPERATOR_TOKEN, {
          accountId: acct.body.accountId,
          domain: 'example.com',
        })
      ).status,
    ).toBe(200);
    const hook = await call('POST', '/developer/webhooks', acct.body.developerToken, {
      tenantId: acct.body.tenants.live.tenantId,
      url: 'https://hooks.example.com/in',
      events: ['record.indexed'],
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    secrets.push(String(hook.body.secret));
    const up = await call('POST', '/v1/documents/upload', root, {
      title: 'f',
      fileName: 'a.txt',
      fileType: 'text/plain',
      indexMode: 'NONE',
    });
    expect(up.status).toBe(201);
    const signature = new URL(String(up.body.uploadUrl)).search.slice(1);
    expect(signature.length).toBeGreaterThan(20);
    secrets.push(signature);
    const put = await fetch(String(up.body.uploadUrl), {
      method: 'PUT',
      headers: {
        [String(up.body.requiredHeaderName)]: String(up.body.requiredHeaderValue),
        'content-type': 'text/plain',
      },
      body: 'hello',
    });
    expect(put.status).toBeLessThan(300);
    secrets.push(readFileSync(join(dir.dir, 'service-secret.key'), 'utf8').trim());

    await new Promise((r) => setTimeout(r, 300));
    const out = output();
    // The log is there and says something of each request (JSON lines with requestId)...
    expect(out.split('\n').filter((l) => l.includes('"msg":"request"')).length).toBeGreaterThanOrEqual(12);
    // ...and none of the secrets, whole or as a long prefix.
    for (const s of secrets) {
      expect(s.length, 'a secret worth looking for').toBeGreaterThanOrEqual(16);
      expect(out.includes(s), `a secret (${s.slice(0, 6)}...) is in the log`).toBe(false);
      expect(out.includes(s.slice(0, 16)), `the start of a secret (${s.slice(0, 6)}...) is in the log`).toBe(false);
    }
  });
});
