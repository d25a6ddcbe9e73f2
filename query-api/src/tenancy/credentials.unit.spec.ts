import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { hashSecret } from '@svc/contracts';
import { readModelVersionOf, type Sql } from '@svc/domain';
import { CredentialResolver } from './credentials';

/**
 * The credential cache in front of the read model: known credentials in an
 * LRU evicting one entry at a time, unknown secrets in their own small LRU.
 * The read model is a stand-in that counts the lookups it answers, so the
 * assertions count database round trips, never time.
 */
function readModel(known: string[]) {
  const rows = new Map(
    known.map((secret, i) => [
      hashSecret(secret),
      {
        credential_id: `cred-${i}`,
        account_id: 'acct',
        kind: 'token',
        tenant_id: 'tenant',
        environment: 'live',
        context_id: 'ctx',
        cross_context: false,
        allowed_actions: ['records:r'],
        data_scope: null,
        user_id: null,
        expires_at: null,
        wire_version_pin: null,
        default_context_id: 'ctx',
        context_deleted: false,
      },
    ]),
  );
  const counter = {
    lookups: 0,
    hold: undefined as Promise<void> | undefined,
    versioned: undefined as string | undefined,
    version: 1,
  };
  const sql = {
    kind: 'pglite',
    async query(_text: string, params?: unknown[]) {
      counter.lookups += 1;
      const row = rows.get(params?.[0] as string);
      counter.versioned = params?.[1] as string | undefined;
      if (counter.hold) await counter.hold;
      return { rows: row ? [params?.[1] ? { ...row, read_version: `${counter.version}.1` } : row] : [] };
    },
    exec: async () => {},
    tx: async () => {
      throw new Error('not used');
    },
    listen: async () => async () => {},
    close: async () => {},
  } as unknown as Sql;
  return { sql, counter };
}

const random = () => `st_${randomBytes(20).toString('hex')}`;

afterEach(() => {
  vi.useRealTimers();
});

describe('CredentialResolver cache', () => {
  it(
    'a flood of 60,000 random tokens leaves a known credential cached (no new lookup) and the miss cache ' + 'bounded',
    async () => {
      const good = 'st_good';
      const { sql, counter } = readModel([good]);
      // A TTL longer than the flood takes on a loaded machine: this test is about eviction, not expiry.
      const resolver = new CredentialResolver(sql, { ttlMs: 3_600_000 });
      expect((await resolver.resolve(good))?.credentialId).toBe('cred-0');
      expect(counter.lookups).toBe(1);
      for (let i = 0; i < 60_000; i++) expect(await resolver.resolve(random())).toBeNull();
      expect(counter.lookups).toBe(60_001);
      const before = counter.lookups;
      expect((await resolver.resolve(good))?.credentialId).toBe('cred-0');
      expect(counter.lookups).toBe(before);
      expect(resolver.size.misses).toBeLessThanOrEqual(1_000);
      expect(resolver.size.entries).toBe(1);
    },
  );

  it('a repeated unknown token is looked up once while remembered; with no miss cache every time', async () => {
    const bad = random();
    const a = readModel([]);
    const cached = new CredentialResolver(a.sql);
    await cached.resolve(bad);
    await cached.resolve(bad);
    expect(a.counter.lookups).toBe(1);
    const b = readModel([]);
    const uncached = new CredentialResolver(b.sql, { maxMisses: 0 });
    await uncached.resolve(bad);
    await uncached.resolve(bad);
    expect(b.counter.lookups).toBe(2);
    expect(uncached.size.misses).toBe(0);
  });

  it('known credentials beyond maxEntries evict the least recently used one, not the whole cache', async () => {
    const [a, b, c, d] = ['st_a', 'st_b', 'st_c', 'st_d'];
    const { sql, counter } = readModel([a, b, c, d]);
    const resolver = new CredentialResolver(sql, { maxEntries: 3 });
    for (const s of [a, b, c]) await resolver.resolve(s);
    await resolver.resolve(a); // a is now the most recently used; b the least
    expect(counter.lookups).toBe(3);
    await resolver.resolve(d); // evicts b only
    expect(counter.lookups).toBe(4);
    expect(resolver.size.entries).toBe(3);
    for (const s of [a, c, d]) await resolver.resolve(s);
    expect(counter.lookups).toBe(4);
    await resolver.resolve(b);
    expect(counter.lookups).toBe(5);
  });

  it('misses never evict known credentials', async () => {
    const good = 'st_good';
    const { sql, counter } = readModel([good]);
    const resolver = new CredentialResolver(sql, { maxEntries: 2, maxMisses: 2 });
    await resolver.resolve(good);
    for (let i = 0; i < 50; i++) await resolver.resolve(random());
    const before = counter.lookups;
    await resolver.resolve(good);
    expect(counter.lookups).toBe(before);
    expect(resolver.size).toEqual({ entries: 1, misses: 2 });
  });

  it('invalidate() forgets everything: the next request asks the read model', async () => {
    const good = 'st_good';
    const { sql, counter } = readModel([good]);
    const resolver = new CredentialResolver(sql);
    await resolver.resolve(good);
    resolver.invalidate();
    expect(resolver.size).toEqual({ entries: 0, misses: 0 });
    await resolver.resolve(good);
    expect(counter.lookups).toBe(2);
  });

  it('a lookup in flight when invalidate() runs does not fill the cache with what it read before', async () => {
    const good = 'st_good';
    const { sql, counter } = readModel([good]);
    const resolver = new CredentialResolver(sql);
    let release!: () => void;
    counter.hold = new Promise((r) => (release = r));
    const pending = resolver.resolve(good);
    await Promise.resolve();
    resolver.invalidate();
    release();
    counter.hold = undefined;
    expect((await pending)?.credentialId).toBe('cred-0');
    expect(resolver.size.entries).toBe(0);
    await resolver.resolve(good);
    expect(counter.lookups).toBe(2);
  });

  it('an entry older than the TTL is looked up again', async () => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date('2026-01-01T00:00:00Z'));
    const good = 'st_good';
    const bad = random();
    const { sql, counter } = readModel([good]);
    const resolver = new CredentialResolver(sql, { ttlMs: 1000 });
    await resolver.resolve(good);
    await resolver.resolve(bad);
    vi.setSystemTime(new Date('2026-01-01T00:00:00.999Z'));
    await resolver.resolve(good);
    await resolver.resolve(bad);
    expect(counter.lookups).toBe(2);
    vi.setSystemTime(new Date('2026-01-01T00:00:01.000Z'));
    await resolver.resolve(good);
    await resolver.resolve(bad);
    expect(counter.lookups).toBe(4);
  });

  it(
    "with readModelVersion: every lookup reads the read models' version and stamps it on the principal, " +
      'kept by a spread, never cached',
    async () => {
      const good = 'st_good';
      const { sql, counter } = readModel([good]);
      const resolver = new CredentialResolver(sql, { ttlMs: 60_000, readModelVersion: 'read-models' });
      const p = await resolver.resolve(good);
      expect(counter.versioned).toBe('read-models');
      expect(readModelVersionOf(p)).toBe('1.1');
      expect(readModelVersionOf({ ...p!, contextId: 'other' })).toBe('1.1');
      expect(JSON.stringify(p)).not.toContain('1.1');
      counter.version = 2;
      expect(readModelVersionOf(await resolver.resolve(good))).toBe('2.1');
      expect(counter.lookups).toBe(2);
      expect(resolver.size.entries).toBe(0);
    },
  );
});
