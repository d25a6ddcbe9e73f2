/**
 * The dispatcher's delivery table on the embedded database (PGlite), without the HTTP service: the pick is fair
 * (per-registration and per-tenant limits, busy registrations skipped, disabled ones never picked), results are
 * counted on the registration in order, and the retention purge keeps what it must.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from '@svc/deploy';
import type { Sql } from '@svc/domain';
import {
  dueDeliveries,
  ensureDeliveries,
  insertDeliveries,
  purgeDeliveries,
  settleAttempts,
  webhooksProjection,
} from '@svc/projectors';

const DAY = 86_400_000;

describe('webhook delivery table', () => {
  let sql: Sql;
  const now = 10 * DAY;

  beforeAll(async () => {
    sql = await openPglite(undefined);
    await sql.exec(webhooksProjection().ddl);
    await ensureDeliveries(sql);
    const reg = (id: string, tenant: string, status = 'ACTIVE') =>
      sql.query(
        `INSERT INTO rm_webhooks (webhook_id, account_id, tenant_id, livemode, url, domain, events, ` +
          `api_version, status, consecutive_failures, sealed_secret, created_at, registered_position, ` +
          `revision)
         VALUES ` +
          `($1,'a',$2,true,'https://h.example/x','h.example','["document.indexed"]','2024-01',$3,0,'s',0,0,0)`,
        [id, tenant, status],
      );
    await reg('w-slow', 't1');
    await reg('w-other', 't1');
    await reg('w-b', 't2');
    await reg('w-off', 't3', 'DISABLED');
    const rows = [];
    for (let i = 0; i < 300; i++)
      rows.push({
        deliveryId: `slow-${String(i).padStart(3, '0')}`,
        webhookId: 'w-slow',
        tenantId: 't1',
        eventId: `e${i}`,
        eventType: 'document.indexed',
        sourceId: 'd',
        sourceType: 'document',
        createdAt: now - 1000 + i,
        body: '{}',
      });
    rows.push({
      deliveryId: 'other-1',
      webhookId: 'w-other',
      tenantId: 't1',
      eventId: 'e1',
      eventType: 'document.indexed',
      sourceId: 'd',
      sourceType: 'document',
      createdAt: now,
      body: '{}',
    });
    rows.push({
      deliveryId: 'b-1',
      webhookId: 'w-b',
      tenantId: 't2',
      eventId: 'e1',
      eventType: 'document.indexed',
      sourceId: 'd',
      sourceType: 'document',
      createdAt: now,
      body: '{}',
    });
    rows.push({
      deliveryId: 'off-1',
      webhookId: 'w-off',
      tenantId: 't3',
      eventId: 'e1',
      eventType: 'document.indexed',
      sourceId: 'd',
      sourceType: 'document',
      createdAt: now - 5000,
      body: '{}',
    });
    await insertDeliveries(sql, rows);
    // A replayed fan-out inserts nothing twice.
    await insertDeliveries(
      sql,
      rows.slice(0, 3).map((r) => ({ ...r, deliveryId: `${r.deliveryId}-again` })),
    );
  }, 60_000);

  afterAll(async () => {
    await sql?.close();
  });

  it('a backlog of one registration does not hide the others; busy ones and disabled ones are not picked', async () => {
    const base = {
      now: now + 1,
      busyWebhooks: [] as string[],
      busyTenants: [] as string[],
      skip: [] as string[],
      perWebhook: 4,
      limit: 10,
    };
    const first = await dueDeliveries(sql, base);
    expect(first.filter((d) => d.webhook_id === 'w-slow')).toHaveLength(4);
    expect(first.some((d) => d.webhook_id === 'w-off')).toBe(false);
    const busy = await dueDeliveries(sql, { ...base, busyWebhooks: ['w-slow'] });
    expect(busy.map((d) => d.delivery_id).sort()).toEqual(['b-1', 'other-1']);
    const busyTenant = await dueDeliveries(sql, { ...base, busyTenants: ['t1'] });
    expect(busyTenant.map((d) => d.delivery_id)).toEqual(['b-1']);
    const { rows } = await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries');
    expect(rows[0].n).toBe(303);
  });

  it('results are counted on the registration in order: a success resets, failures add', async () => {
    const r = (id: string, ok: boolean) => ({
      deliveryId: id,
      webhookId: 'w-slow',
      status: ok ? 'DELIVERED' : 'PENDING',
      attempts: 1,
      nextAttemptAt: ok ? null : now + 30_000,
      settledAt: ok ? now : null,
      error: ok ? null : 'HTTP 500',
      ok,
    });
    let counts = await settleAttempts(sql, [r('slow-000', false), r('slow-001', false), r('slow-002', false)]);
    expect(counts.get('w-slow')).toEqual({ consecutiveFailures: 3, active: true });
    counts = await settleAttempts(sql, [r('slow-003', false), r('slow-004', true), r('slow-005', false)]);
    expect(counts.get('w-slow')).toEqual({ consecutiveFailures: 1, active: true });
    const { rows } = await sql.query<{ status: string; next_attempt_at: string }>(
      'SELECT status, next_attempt_at FROM webhook_deliveries WHERE delivery_id = $1',
      ['slow-000'],
    );
    expect(rows[0]).toEqual({ status: 'PENDING', next_attempt_at: expect.anything() });
    expect(Number(rows[0].next_attempt_at)).toBe(now + 30_000);
  });

  it('retention: unresolved deliveries go after 7 days, delivered ones 30 days after delivery', async () => {
    await settleAttempts(sql, [
      {
        deliveryId: 'b-1',
        webhookId: 'w-b',
        status: 'DELIVERED',
        attempts: 1,
        nextAttemptAt: null,
        settledAt: now,
        error: null,
        ok: true,
      },
    ]);
    expect(await purgeDeliveries(sql, now + 6 * DAY, 7 * DAY, 30 * DAY)).toBe(0);
    const unresolved = await purgeDeliveries(sql, now + 8 * DAY, 7 * DAY, 30 * DAY);
    expect(unresolved).toBe(301); // all but the two DELIVERED (slow-004, b-1)
    expect(await purgeDeliveries(sql, now + 29 * DAY, 7 * DAY, 30 * DAY)).toBe(0);
    expect(await purgeDeliveries(sql, now + 31 * DAY, 7 * DAY, 30 * DAY)).toBe(2);
  });
});
