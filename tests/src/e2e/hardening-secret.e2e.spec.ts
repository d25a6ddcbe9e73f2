import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildService, loadConfig } from '@svc/deploy';
import { tempDir } from '../support/engines';
import { ROOT, startService } from '../support/service';

/**
 * Hardening, finding 7: the service secret is never silently replaced. A key is
 * generated only for an empty data directory; with data present, a missing,
 * empty, corrupt or non-file key stops the start with a message naming the file.
 */
const dir = tempDir('svc-secret-');
const keyFile = join(dir.dir, 'service-secret.key');
let original = '';
let sealedRecordId = '';
let rootKey = '';

const build = (env: Record<string, string> = {}) =>
  buildService(
    loadConfig({ DATA_DIR: dir.dir, PORT: '0', OPERATOR_TOKEN: 'x', LOG_LEVEL: 'silent', ...env } as NodeJS.ProcessEnv),
    () => {},
  );

beforeAll(async () => {
  // A data directory with a sealed (sensitive) field in it.
  const svc = await startService({ dataDir: dir.dir });
  rootKey = svc.bootstrap.tenants.live.rootKey;
  const s = await svc.api.post('/v1/schemas', rootKey, {
    typeName: 'SecretHolder',
    displayName: 'Secret holder',
    allowedSurfaces: ['record'],
    fields: [{ fieldId: 'ssn', fieldType: 'string', sensitive: true }],
    lookupFields: ['ssn'],
  });
  expect(s.status, s.text).toBe(201);
  const r = await svc.api.post('/v1/records', rootKey, { typeName: 'SecretHolder', payload: { ssn: '123-45-6789' } });
  expect(r.status, r.text).toBe(201);
  sealedRecordId = r.body.id;
  await svc.service.close();
  original = readFileSync(keyFile, 'utf8');
});

afterAll(() => dir.remove());

describe('service-secret.key with data present', () => {
  it('missing: the start is refused, naming the file; no new key is written', async () => {
    rmSync(keyFile);
    await expect(build()).rejects.toThrow(/service-secret\.key is missing/);
    expect(() => readFileSync(keyFile)).toThrow();
  });

  it('empty or corrupt: refused as corrupt', async () => {
    writeFileSync(keyFile, '');
    await expect(build()).rejects.toThrow(/service-secret\.key is corrupt/);
    writeFileSync(keyFile, 'not-hex-at-all');
    await expect(build()).rejects.toThrow(/service-secret\.key is corrupt/);
    writeFileSync(keyFile, original.slice(0, 40));
    await expect(build()).rejects.toThrow(/service-secret\.key is corrupt/);
  });

  it('a directory in its place: a clear message, not a stack trace from the launcher', async () => {
    rmSync(keyFile, { force: true });
    mkdirSync(keyFile);
    await expect(build()).rejects.toThrow(/service-secret\.key is not a file/);
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'deploy/src/start.ts')], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: '',
        EVENTSTORE_URL: '',
        KAFKA_BROKERS: '',
        ELASTICSEARCH_URL: '',
        REDIS_URL: '',
        DATA_DIR: dir.dir,
        PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code).toBe(1);
    expect(err).toMatch(/^cannot start: .*service-secret\.key is not a file/m);
    expect(err).not.toMatch(/\n\s+at /);
    rmSync(keyFile, { recursive: true });
  });

  it('a too short SERVICE_SECRET is refused', async () => {
    await expect(build({ SERVICE_SECRET: 'short' })).rejects.toThrow(/SERVICE_SECRET is too short/);
  });

  it('the restored key starts the service and the sealed field reads back', async () => {
    writeFileSync(keyFile, original);
    const svc = await startService({ dataDir: dir.dir });
    try {
      const r = await svc.api.post('/v1/records/lookup', rootKey, {
        type: 'SecretHolder',
        field: 'ssn',
        value: '123-45-6789',
      });
      expect(r.status, r.text).toBe(200);
      expect(r.body.data.map((x: { id: string }) => x.id)).toEqual([sealedRecordId]);
    } finally {
      await svc.service.close();
    }
  });
});

describe('an empty data directory', () => {
  it('gets a new 32-byte key, mode 0600', async () => {
    const empty = tempDir('svc-secret-new-');
    try {
      const svc = await startService({ dataDir: empty.dir });
      await svc.service.close();
      expect(readFileSync(join(empty.dir, 'service-secret.key'), 'utf8')).toMatch(/^[0-9a-f]{64}$/);
      expect(statSync(join(empty.dir, 'service-secret.key')).mode & 0o777).toBe(0o600);
    } finally {
      empty.remove();
    }
  });
});
