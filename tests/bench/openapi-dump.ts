/**
 * `npx tsx tests/bench/openapi-dump.ts <file>`: writes the service's GET /openapi.json, byte for byte, built in this
 * process on a throw-away data directory (no port). Two builds' files compared with `cmp` show a structural change
 * left the described API alone.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildService, loadConfig } from '@svc/deploy';

const out = process.argv[2];
if (!out) throw new Error('usage: openapi-dump.ts <file>');
const dir = mkdtempSync(join(tmpdir(), 'svc-openapi-'));
try {
  const env = { DATA_DIR: dir, PORT: '0', ACTIVITY_LOG: '0' } as NodeJS.ProcessEnv;
  const service = await buildService(loadConfig(env), () => {});
  try {
    const r = await service.app.inject({ method: 'GET', url: '/openapi.json' });
    if (r.statusCode !== 200) throw new Error(`GET /openapi.json: ${r.statusCode}`);
    writeFileSync(out, r.rawPayload);
    console.log(`${out}: ${r.rawPayload.length} bytes`);
  } finally {
    await service.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
