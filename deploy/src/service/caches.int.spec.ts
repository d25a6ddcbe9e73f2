import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '@svc/contracts';
import type { Sql, SqlQueryable, StoredEvent } from '@svc/domain';
import { tenancyProjection } from '@svc/projectors';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPglite } from '../engines/sql';
import { openCaches } from './caches';
import { ROLES } from './roles';

/**
 * The credential cache as each role wires it, when a revocation is applied by a projector of ANOTHER process
 * (no hook of this process runs, no NOTIFY reaches it). A process without a projector must read it on its
 * next request: the regression behind "a token revoked through A answers 401 on B at once" failing in CI,
 * where B (role command) served its cached credential until the NOTIFY arrived.
 */
const SECRET = 'st_caches_role_test_secret';
const meta = { tenantId: 't1', contextId: 'c1', accountId: 'a1', actorKeyId: null, userId: null, requestId: null, occurredAt: '2026-11-27T10:00:00.000Z', schemaVersion: 1 };
const event = (position: number, type: string, data: Record<string, unknown>): StoredEvent =>
  ({ id: `e${position}`, type, streamId: 'credential-k1', revision: position - 1, position, data, metadata: meta }) as unknown as StoredEvent;
const issued = event(1, 'CredentialIssued', {
  credentialId: 'k1', secretHash: hashSecret(SECRET), prefix: 'st_', accountId: 'a1', kind: 'token', tenantId: 't1', environment: 'live', contextId: 'c1',
  crossContext: false, allowedActions: ['records:r'], dataScope: null, userId: null, expiresAt: null, wireVersionPin: null, parentCredentialId: null,
});
const revoked = event(2, 'CredentialRevoked', { credentialId: 'k1' });

describe('credential cache per role, revocation applied elsewhere', () => {
  let dir: string;
  let sql: Sql;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-caches-'));
    sql = await openPglite(dir);
  });
  afterAll(async () => {
    await sql.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Fresh tables with a live credential, applied by a projection whose hooks belong to no cache here. */
  async function fresh() {
    await sql.exec('DROP TABLE IF EXISTS rm_accounts, rm_tenants, rm_contexts, rm_credentials');
    const elsewhere = tenancyProjection({ revoking: () => {}, revoked: () => {} });
    await sql.exec(elsewhere.ddl!);
    await sql.tx((q: SqlQueryable) => elsewhere.apply!(q, issued));
    return elsewhere;
  }

  it('role command (no projector): the request after the revocation commits answers 401, with no notification', async () => {
    const elsewhere = await fresh();
    const caches = await openCaches(sql, ROLES.command);
    expect((await caches.credentials.resolve(SECRET))?.credentialId).toBe('k1');
    expect((await caches.credentials.resolve(SECRET))?.credentialId).toBe('k1');
    await sql.tx((q: SqlQueryable) => elsewhere.apply!(q, revoked));
    expect(await caches.credentials.resolve(SECRET)).toBeNull();
    expect(caches.credentials.size.entries, 'known credentials are never kept').toBe(0);
  });

  it('role query (no projector): the same', async () => {
    const elsewhere = await fresh();
    const caches = await openCaches(sql, ROLES.query);
    expect((await caches.credentials.resolve(SECRET))?.credentialId).toBe('k1');
    await sql.tx((q: SqlQueryable) => elsewhere.apply!(q, revoked));
    expect(await caches.credentials.resolve(SECRET)).toBeNull();
  });

  it('role all keeps known credentials (its own projector tells it of revocations)', async () => {
    await fresh();
    const caches = await openCaches(sql, ROLES.all);
    expect((await caches.credentials.resolve(SECRET))?.credentialId).toBe('k1');
    expect(caches.credentials.size.entries).toBe(1);
  });
});
