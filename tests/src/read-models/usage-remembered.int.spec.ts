import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCharge, type Sql, type SqlQueryable, type StoredEvent, type UsageItem } from '@svc/domain';
import { openPglite } from '@svc/deploy';
import { usageProjection } from '@svc/projectors';
import { tempDir } from '../support/engines';
import { eventMetadata } from '../support/events';

/**
 * The usage projection remembers the marks and account totals it last wrote, so a batch costs one statement;
 * the write checks them in that statement. Whatever moved the tables behind its back (a rolled-back batch, a
 * rebuild, a batch delivered again), the figures must be those of a projection that reads before each write.
 */
const TERMS = { includedCalls: 3, callsPerCredit: 2, includedBytes: 100, bytesPerCredit: 50 };
const meta = (tenantId: string, contextId: string | null, charge?: unknown[]) => ({
  ...eventMetadata({ tenantId, contextId, accountId: null, requestId: null, occurredAt: '2026-11-20T10:00:00.000Z' }),
  ...(charge ? { charge } : {}),
});

/**
 * A mixed log: record writes carrying charges, UsageMetered and ReadsMetered on each tenant's usage stream, and
 * unbilled events.
 */
function log(n: number): StoredEvent[] {
  const out: StoredEvent[] = [];
  const revisions = new Map<string, number>();
  for (let i = 1; i <= n; i++) {
    const tenantId = ['t1', 't2', 't3'][i % 3];
    const contextId = i % 4 === 0 ? null : `c${i % 2}`;
    const usage = (type: string, data: Record<string, unknown>) => {
      const streamId = `usage-${tenantId}`;
      const revision = (revisions.get(streamId) ?? -1) + 1;
      revisions.set(streamId, revision);
      return {
        id: `e${i}`,
        type,
        streamId,
        revision,
        position: i,
        data: { tenantId, contextId, period: '2026-11', ...data },
        metadata: meta(tenantId, contextId),
      };
    };
    const e =
      i % 5 === 0
        ? usage('ReadsMetered', { calls: 2, bytes: 40 + i, terms: TERMS })
        : i % 5 === 1
          ? usage('UsageMetered', {
              items: [
                { category: 'searchText', count: 1, units: 0, milli: 250 },
                { category: 'inferenceChat', count: 1, units: 3, milli: 0 },
              ],
            })
          : i % 5 === 2
            ? {
                id: `e${i}`,
                type: 'SchemaCreated',
                streamId: `schema-${i}`,
                revision: 0,
                position: i,
                data: {},
                metadata: meta(tenantId, contextId),
              }
            : {
                id: `e${i}`,
                type: 'RecordCreated',
                streamId: `record-${i}`,
                revision: 0,
                position: i,
                data: {},
                metadata: meta(tenantId, contextId, [
                  { category: 'recordWrite', count: 1, units: 0, milli: 1000 + i },
                  { category: 'recordIndex', count: 0, units: 2, milli: 20 },
                ]),
              };
    out.push(e as unknown as StoredEvent);
  }
  return out;
}

const TABLES = ['rm_usage', 'rm_usage_accounts', 'rm_usage_streams', 'rm_inference_spend'];
async function dump(sql: Sql) {
  const out: Record<string, unknown[]> = {};
  for (const t of TABLES)
    out[t] = (await sql.query(`SELECT * FROM ${t} ORDER BY 1, 2`)).rows.map((r) => JSON.stringify(r)).sort();
  return out;
}

async function open(dir: string) {
  const sql = await openPglite(dir);
  await sql.exec(
    `CREATE TABLE IF NOT EXISTS rm_tenants (tenant_id text PRIMARY KEY, account_id text NOT NULL, ` +
      `environment text NOT NULL);
    INSERT INTO rm_tenants VALUES ('t1', 'a1', 'live'), ('t2', 'a1', ` +
      `'test'), ('t3', 'a2', 'live') ON CONFLICT DO NOTHING;`,
  );
  await sql.exec(usageProjection().ddl);
  return sql;
}

/** Counts the statements a batch makes. */
const counting = (q: SqlQueryable, n: { statements: number }): SqlQueryable =>
  ({ ...q, query: (t: string, p?: unknown[]) => (n.statements++, q.query(t, p)) }) as SqlQueryable;

describe('usage projection: remembered state, checked in the write', () => {
  const tmp = tempDir('svc-usage-mem-');
  let remembering: Sql;
  let reading: Sql;
  const events = log(400);
  const batches = Array.from({ length: 20 }, (_, i) => events.slice(i * 20, i * 20 + 20));
  const projection = usageProjection();
  /** The reference: a new projection per batch remembers nothing, so it reads before every write. */
  const applyFresh = (sql: Sql, batch: StoredEvent[]) => sql.tx((q) => usageProjection().applyBatch!(q, batch));

  beforeAll(async () => {
    remembering = await open(`${tmp.dir}/a`);
    reading = await open(`${tmp.dir}/b`);
  });
  afterAll(async () => {
    await remembering?.close();
    await reading?.close();
    tmp.remove();
  });

  it('one statement per billable batch once warm, and the same figures as reading before each write', async () => {
    const n = { statements: 0 };
    for (const [i, b] of batches.slice(0, 8).entries()) {
      n.statements = 0;
      await remembering.tx((q) => projection.applyBatch!(counting(q, n), b));
      if (i >= 2) expect(n.statements).toBe(1);
      await applyFresh(reading, b);
    }
    expect(await dump(remembering)).toEqual(await dump(reading));
    // Nothing billable: no statement at all.
    n.statements = 0;
    const unbilled = events.filter((e) => e.type === 'SchemaCreated').slice(0, 5);
    await remembering.tx((q) => projection.applyBatch!(counting(q, n), unbilled));
    expect(n.statements).toBe(0);
  });

  it('a batch whose transaction rolled back, then delivered again, is counted once', async () => {
    await expect(
      remembering.tx(async (q) => {
        await projection.applyBatch!(q, batches[8]);
        throw new Error('checkpoint write failed');
      }),
    ).rejects.toThrow('checkpoint write failed');
    // Delivered again with the next one (the memory took the first as applied, the tables do not have it).
    await remembering.tx((q) => projection.applyBatch!(q, [...batches[8], ...batches[9]]));
    for (const b of [batches[8], batches[9]]) await applyFresh(reading, b);
    expect(await dump(remembering)).toEqual(await dump(reading));
    // Delivered once more after the commit: nothing twice.
    await remembering.tx((q) => projection.applyBatch!(q, [...batches[7], ...batches[8]]));
    expect(await dump(remembering)).toEqual(await dump(reading));
  });

  it(
    'another writer moved the totals (another process, a replay by a second instance): the check refuses, ' +
      'the batch is applied from what the tables hold',
    async () => {
      // A second instance applies two batches the first one never sees.
      const other = usageProjection();
      await remembering.tx((q) => other.applyBatch!(q, batches[10]));
      await remembering.tx((q) => other.applyBatch!(q, batches[11]));
      for (const b of [batches[10], batches[11]]) await applyFresh(reading, b);
      // The first instance's memory is stale; it is given 11 (already counted) and 12 (new).
      await remembering.tx((q) => projection.applyBatch!(q, [...batches[11], ...batches[12]]));
      await applyFresh(reading, batches[12]);
      expect(await dump(remembering)).toEqual(await dump(reading));
    },
  );

  it('a rebuild (tables dropped) replayed by the same instance gives the same figures', async () => {
    for (const t of TABLES) await remembering.exec(`DROP TABLE IF EXISTS ${t} CASCADE`);
    await remembering.exec(projection.ddl);
    // Replayed in a page that straddles what the memory took as applied (it remembers batch 12).
    await remembering.tx((q) => projection.applyBatch!(q, events.slice(0, 280)));
    for (const b of batches.slice(13, 14)) await applyFresh(reading, b);
    expect(await dump(remembering)).toEqual(await dump(reading));
    for (const b of batches.slice(14)) {
      await remembering.tx((q) => projection.applyBatch!(q, b));
      await applyFresh(reading, b);
    }
    expect(await dump(remembering)).toEqual(await dump(reading));
    const used = await remembering.query<{ account_id: string; used_milli: string }>(
      'SELECT account_id, used_milli FROM rm_usage_accounts ORDER BY account_id',
    );
    expect(used.rows.length).toBe(2);
  });

  it('charges written compactly (chargeCode) count exactly as the same charges written as items', async () => {
    // The log with every write charge as `chargeCode`, applied to a third database, against `reading` (items).
    const compact = events.map((e) =>
      e.metadata.charge
        ? {
            ...e,
            metadata: { ...e.metadata, charge: undefined, chargeCode: encodeCharge(e.metadata.charge as UsageItem[]) },
          }
        : e,
    );
    expect(compact.filter((e) => e.metadata.chargeCode).length).toBeGreaterThan(100);
    const third = await open(`${tmp.dir}/c`);
    try {
      const p = usageProjection();
      for (let i = 0; i < compact.length; i += 20) await third.tx((q) => p.applyBatch!(q, compact.slice(i, i + 20)));
      expect(await dump(third)).toEqual(await dump(reading));
    } finally {
      await third.close();
    }
  });
});
