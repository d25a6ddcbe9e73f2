import { afterAll, describe, expect, it } from 'vitest';
import { IdempotencyStore } from '@svc/command-api';
import { openPglite } from '@svc/deploy';
import { tempDir } from '../support/engines';

/** The Idempotency-Key store of POST /v1/scripts/execute, on the embedded database. */
describe('script idempotency store', () => {
  const tmp = tempDir('svc-idem-');
  const cleanup: Array<() => Promise<void> | void> = [() => tmp.remove()];
  afterAll(async () => {
    for (const f of cleanup.reverse()) await f();
  });

  it(
    'a claim left in flight past its time answers 500 EXECUTION_OUTCOME_UNKNOWN with the requestId of the ' +
      'request that found it, and keeps answering it',
    async () => {
      const sql = await openPglite(`${tmp.dir}/pg`);
      cleanup.push(() => sql.close());
      const store = new IdempotencyStore(sql, 1_000);
      const t0 = new Date('2026-11-29T00:00:00Z');
      expect(await store.claim('t', 'c', 'k1', 'h', 'exec-1', t0, 'req-1')).toEqual({
        kind: 'run',
        executionId: 'exec-1',
      });
      // Within staleMs the claim is in flight.
      await expect(
        store.claim('t', 'c', 'k1', 'h', 'exec-2', new Date(t0.getTime() + 500), 'req-2'),
      ).rejects.toMatchObject({ code: 'IDEMPOTENCY_IN_PROGRESS' });
      const stale = await store.claim('t', 'c', 'k1', 'h', 'exec-3', new Date(t0.getTime() + 5_000), 'req-3');
      expect(stale).toEqual({
        kind: 'replay',
        status: 500,
        body: {
          message: expect.any(String),
          errorCode: 'EXECUTION_OUTCOME_UNKNOWN',
          requestId: 'req-3',
          execution: { id: 'exec-1' },
        },
      });
      expect(await store.claim('t', 'c', 'k1', 'h', 'exec-4', new Date(t0.getTime() + 6_000), 'req-4')).toEqual(stale);
    },
  );
});
