import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgresSchema, serverUrl } from '../support/engines';
import { startService, type TestService } from '../support/service';

/**
 * On PostgreSQL a create resolves its schema by typeName from the event store's stream cache, which another process's
 * writes leave behind; the append checks what was read. Here a second process (role `command`, same database and data
 * directory) deactivates the schema the first one has cached: the first one's next create must see it.
 */
describe.skipIf(!serverUrl('postgres'))('a schema changed by another process (PostgreSQL stream cache)', () => {
  let schema: Awaited<ReturnType<typeof freshPostgresSchema>>;
  let a: TestService;
  let b: TestService | undefined;
  beforeAll(async () => {
    schema = await freshPostgresSchema(serverUrl('postgres')!);
    a = await startService({ env: { DATABASE_URL: schema.url } });
    b = await startService({ dataDir: a.dataDir, env: { DATABASE_URL: schema.url, SERVICE_ROLE: 'command' } });
  }, 120_000);
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
    await schema?.drop();
  });

  it('a create after the schema was deactivated elsewhere is refused, not written on the cached schema', async () => {
    const key = a.bootstrap.tenants.live.rootKey;
    const typeName = 'StaleProbe';
    const definition = {
      typeName,
      displayName: 'Stale probe',
      fields: [{ fieldId: 'name', fieldType: 'string' }],
      allowedSurfaces: ['record'],
    };
    const s = await a.api.post('/v1/schemas', key, definition);
    expect(s.status, s.text).toBe(201);
    // Cached in process a: the typeName's reservation and the schema stream.
    const first = await a.api.post('/v1/records', key, { typeName, payload: { name: 'one' } });
    expect(first.status, first.text).toBe(201);
    const off = await b!.api.put(`/v1/schemas/${s.body.id}`, key, { ...definition, active: false });
    expect(off.status, off.text).toBe(200);
    const second = await a.api.post('/v1/records', key, { typeName, payload: { name: 'two' } });
    expect(second.status, second.text).toBe(400);
    expect(second.text).toMatch(/inactive/);
  });
});
