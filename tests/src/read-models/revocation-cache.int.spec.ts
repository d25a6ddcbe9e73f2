import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '@svc/contracts';
import type { Sql, SqlQueryable, StoredEvent } from '@svc/domain';
import { openCaches, openPglite, ROLES } from '@svc/deploy';
import { tenancyProjection } from '@svc/projectors';
import { CredentialResolver } from '@svc/query-api';
import { tempDir } from '../support/engines';
import { eventMetadata } from '../support/events';

/**
 * The credential cache of the process whose projector applies a revocation. Another process (a command-only
 * one) answers the revoke as soon as the projection's commit is visible in the database, which can be before
 * this process has run its after-commit hook. A request reaching this process in that window must not be
 * served from the cache: the regression behind a flaky two-process test (a token revoked through B answered
 * 200 on A). Real projection, real resolver, real PGlite; the window is held open by calling the hook late.
 */
const SECRET = 'st_revocation_window_test_secret';
const meta = eventMetadata({ accountId: 'a1', requestId: null, occurredAt: '2026-11-27T10:00:00.000Z' });
const event = (position: number, type: string, data: Record<string, unknown>): StoredEvent =>
  ({
    id: `e${position}`,
    type,
    streamId: 'credential-k1',
    revision: position - 1,
    position,
    data,
    metadata: meta,
  }) as unknown as StoredEvent;
const issued = event(1, 'CredentialIssued', {
  credentialId: 'k1',
  secretHash: hashSecret(SECRET),
  prefix: 'st_',
  accountId: 'a1',
  kind: 'token',
  tenantId: 't1',
  environment: 'live',
  contextId: 'c1',
  crossContext: false,
  allowedActions: ['records:r'],
  dataScope: null,
  userId: null,
  expiresAt: null,
  wireVersionPin: null,
  parentCredentialId: null,
});
const revoked = event(2, 'CredentialRevoked', { credentialId: 'k1' });

/** One embedded database for the file; each test starts from fresh tables. */
let dir: ReturnType<typeof tempDir>;
let sql: Sql;
beforeAll(async () => {
  dir = tempDir('svc-revocation-');
  sql = await openPglite(dir.dir);
});
afterAll(async () => {
  await sql.close();
  dir.remove();
});

describe('credential cache while this process applies a revocation', () => {
  const lookups = { n: 0 };

  /** A fresh projection and resolver wired as deploy wires them (caches.ts), over fresh tables. */
  async function setup() {
    await sql.exec('DROP TABLE IF EXISTS rm_accounts, rm_tenants, rm_contexts, rm_credentials');
    const counted = { ...sql, query: (t: string, p?: unknown[]) => (lookups.n++, sql.query(t, p)) } as Sql;
    const resolver = new CredentialResolver(counted, { ttlMs: 60_000 });
    const projection = tenancyProjection({ revoking: () => resolver.hold(), revoked: () => resolver.release() });
    await sql.exec(projection.ddl!);
    await sql.tx((q: SqlQueryable) => projection.apply!(q, issued));
    projection.afterCommit?.([issued]);
    return { resolver, projection };
  }

  it(
    'after the commit and before the hook, a cached credential is read from the database (401), never ' +
      'served from the cache',
    async () => {
      const { resolver, projection } = await setup();
      expect((await resolver.resolve(SECRET))?.credentialId).toBe('k1');
      const before = lookups.n;
      expect((await resolver.resolve(SECRET))?.credentialId).toBe('k1');
      expect(lookups.n, 'the second request is a cache hit').toBe(before);

      await sql.tx((q: SqlQueryable) => projection.apply!(q, revoked));
      // Committed: another process can now answer the revoke. This process has not run its hook yet.
      expect(await resolver.resolve(SECRET)).toBeNull();
      expect(await resolver.resolve(SECRET)).toBeNull();

      projection.afterCommit?.([revoked]);
      expect(await resolver.resolve(SECRET)).toBeNull();
      const settled = lookups.n;
      expect(await resolver.resolve(SECRET)).toBeNull();
      expect(lookups.n, 'after the hook the cache serves again (the miss is remembered)').toBe(settled);
    },
  );

  it('a lookup that began before the revocation was applied and ends after it is not kept', async () => {
    const { resolver, projection } = await setup();
    // The lookup reads the row before the revocation commits...
    const pending = resolver.resolve(SECRET);
    await sql.tx((q: SqlQueryable) => projection.apply!(q, revoked));
    expect((await pending)?.credentialId).toBe('k1');
    // ...and its answer must not be remembered past the revocation.
    expect(await resolver.resolve(SECRET)).toBeNull();
    projection.afterCommit?.([revoked]);
    expect(await resolver.resolve(SECRET)).toBeNull();
  });

  it(
    'a revocation whose transaction rolled back leaves the credential working, cached again after the next ' + 'commit',
    async () => {
      const { resolver, projection } = await setup();
      expect((await resolver.resolve(SECRET))?.credentialId).toBe('k1');
      await expect(
        sql.tx(async (q: SqlQueryable) => {
          await projection.apply!(q, revoked);
          throw new Error('batch failed');
        }),
      ).rejects.toThrow('batch failed');
      expect((await resolver.resolve(SECRET))?.credentialId, 'rolled back: still a live credential').toBe('k1');
      // The runner retries the batch; its commit ends the window.
      await sql.tx((q: SqlQueryable) => projection.apply!(q, issued));
      projection.afterCommit?.([issued]);
      expect((await resolver.resolve(SECRET))?.credentialId).toBe('k1');
      const settled = lookups.n;
      expect((await resolver.resolve(SECRET))?.credentialId).toBe('k1');
      expect(lookups.n, 'served from the cache again').toBe(settled);
    },
  );
});

/**
 * The credential cache as each role wires it (deploy openCaches), when a revocation is applied by a projector of
 * ANOTHER process (no hook of this process runs, no NOTIFY reaches it). A process without a projector must read
 * it on its next request: the regression behind "a token revoked through A answers 401 on B at once" failing in
 * CI, where B (role command) served its cached credential until the NOTIFY arrived.
 */
describe('credential cache per role, revocation applied by another process', () => {
  /** Fresh tables with a live credential, applied by a projection whose hooks belong to no cache here. */
  async function fresh() {
    await sql.exec('DROP TABLE IF EXISTS rm_accounts, rm_tenants, rm_contexts, rm_credentials');
    const elsewhere = tenancyProjection({ revoking: () => {}, revoked: () => {} });
    await sql.exec(elsewhere.ddl!);
    await sql.tx((q: SqlQueryable) => elsewhere.apply!(q, issued));
    return elsewhere;
  }

  it('role command (no projector): the request after the revocation commits answers 401, no notification', async () => {
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
