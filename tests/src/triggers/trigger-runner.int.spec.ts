import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type DomainEvent, EVENT_SCHEMA_VERSION, type EventMetadata } from '@svc/contracts';
import { PostgresEventStore } from '@svc/deploy';
import { openPglite } from '@svc/deploy';
import {
  type EventStore,
  type ScriptExecutor,
  type ScriptRunOutcome,
  type ScriptRunRequest,
  type Sql,
  streams,
  triggerStreams,
  writeCheckpoint,
} from '@svc/domain';
import { ProjectionRunner, TriggerRunner, triggersProjection } from '@svc/projectors';

/**
 * The trigger runner's bookkeeping against a real event store and SQL (PGlite in
 * memory) and a stand-in executor: once per event per rule across restarts and
 * replays, terminal and retried failures, the depth limit, INPUT_TOO_LARGE.
 */
const T = 'tenant-1';
const C = 'ctx-1';
const md = (over: Partial<EventMetadata> = {}): EventMetadata => ({
  tenantId: T,
  contextId: C,
  accountId: 'acc',
  actorKeyId: 'key',
  userId: null,
  requestId: randomUUID(),
  occurredAt: new Date().toISOString(),
  schemaVersion: EVENT_SCHEMA_VERSION,
  ...over,
});
const ev = (e: DomainEvent, over: Partial<EventMetadata> = {}) => ({
  id: randomUUID(),
  type: e.type,
  data: e.data as Record<string, unknown>,
  metadata: md(over),
});

async function eventually(fn: () => Promise<boolean>, timeoutMs = 10_000) {
  for (const deadline = Date.now() + timeoutMs; !(await fn());) {
    if (Date.now() > deadline) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Commits a side effect (one record per run) with the firing's marker, as the sandbox executor does; `fail` scripts a
 * failure.
 */
class FakeExecutor implements ScriptExecutor {
  calls: ScriptRunRequest[] = [];
  fail:
    | ((
        req: ScriptRunRequest,
        n: number,
      ) => Omit<Extract<ScriptRunOutcome, { ok: false }>, 'executionId' | 'durationMs'> | null)
    | null = null;
  constructor(private readonly store: EventStore) {}
  async run(req: ScriptRunRequest): Promise<ScriptRunOutcome> {
    this.calls.push(req);
    const f = this.fail?.(req, this.calls.length);
    if (f) return { ...f, executionId: 'x', durationMs: 1 };
    const id = randomUUID();
    await this.store.appendMulti([
      {
        streamId: `effect-${id}`,
        events: [
          ev(
            { type: 'ContextDeleted', data: { contextId: 'effect', tenantId: 'effect' } },
            { tenantId: null, contextId: null, triggerDepth: req.depth },
          ),
        ],
        expectedRevision: 'no_stream',
      },
      ...(req.alsoAppend ?? []),
    ]);
    return { ok: true, executionId: 'x', result: null, durationMs: 1, hostCalls: 0, rowsWritten: 1 };
  }
}

describe('trigger runner', () => {
  let sql: Sql;
  let store: PostgresEventStore;
  let models: ProjectionRunner;
  let exec: FakeExecutor;
  let runner: TriggerRunner;

  const newRunner = async (retryScale = 0.0001) => {
    const r = new TriggerRunner({
      store,
      sql,
      executor: exec,
      rulesReady: (p) => models.waitFor(p, 10_000),
      retryScale,
      retryPollMs: 20,
    });
    await r.init();
    r.start();
    return r;
  };
  const settle = async () => {
    const head = await store.headPosition();
    for (let i = 0; i < 400 && (runner.current < head || (await runner.pending()) > 0); i++)
      await new Promise((r) => setTimeout(r, 25));
  };
  const declare = async (over: Record<string, unknown> = {}) => {
    const ruleId = randomUUID();
    await store.append(
      triggerStreams.rule(ruleId),
      [
        ev({
          type: 'TriggerRuleCreated',
          data: {
            ruleId,
            name: 'r',
            schemaId: 's1',
            typeName: 'invoice',
            events: ['CREATE', 'UPDATE', 'DELETE'],
            scriptRef: { name: 'audit', version: 1 },
            fields: ['amount', 'status'],
            grant: { allowedActions: ['records:r', 'records:c'], dataScope: null },
            enabled: true,
            ...over,
          } as never,
        }),
      ],
      'no_stream',
    );
    return ruleId;
  };
  const create = async (recordId: string, payload: Record<string, unknown>, over: Partial<EventMetadata> = {}) =>
    store.append(
      streams.record(recordId),
      [
        ev(
          {
            type: 'RecordCreated',
            data: {
              recordId,
              schemaId: 's1',
              schemaVersion: 1,
              typeName: 'invoice',
              payload,
              status: 'ACTIVE',
              folderId: null,
              userId: null,
              scopes: [],
              externalId: null,
              indexMode: null,
            },
          },
          over,
        ),
      ],
      'no_stream',
    );
  const update = async (recordId: string, payload: Record<string, unknown>, revision: number) =>
    store.append(
      streams.record(recordId),
      [
        ev({
          type: 'RecordUpdated',
          data: {
            recordId,
            schemaVersion: 1,
            payload,
            status: 'ACTIVE',
            folderId: null,
            userId: null,
            scopes: [],
            change: 'put',
          },
        }),
      ],
      revision,
    );
  const firing = async (ruleId: string, eventId: string) => store.readStream(triggerStreams.firing(ruleId, eventId));

  beforeEach(async () => {
    sql = await openPglite(undefined);
    store = await PostgresEventStore.open(sql);
    models = new ProjectionRunner('read-models', sql, store, [triggersProjection()]);
    await models.init();
    models.start();
    exec = new FakeExecutor(store);
    runner = await newRunner();
  });
  afterEach(async () => {
    await runner.stop();
    await models.stop();
    await store.close();
    await sql.close();
  });

  it('fires each live rule once per record event with only the declared fields', async () => {
    const ruleId = await declare();
    await create('rec-1', { amount: 1, other: 'x' });
    await update('rec-1', { amount: 2, status: 'paid', other: 'y' }, 0);
    await settle();
    expect(exec.calls.map((c) => c.input)).toEqual([
      { event: 'CREATE', schemaId: 's1', recordId: 'rec-1', userId: null, scope: {}, record: { amount: 1 } },
      {
        event: 'UPDATE',
        schemaId: 's1',
        recordId: 'rec-1',
        userId: null,
        scope: {},
        record: { amount: 2, status: 'paid' },
        previous: { amount: 1 },
      },
    ]);
    expect(exec.calls[0]).toMatchObject({
      depth: 1,
      cause: { ruleId },
      meta: {
        principal: {
          tenantId: T,
          contextId: C,
          allowedActions: ['records:r', 'records:c'],
          credentialId: `trigger:${ruleId}`,
        },
      },
    });
  });

  it('never runs a firing twice: a restart from an old checkpoint (crash before it moved) reruns nothing', async () => {
    await declare();
    await declare();
    for (let i = 0; i < 10; i++) await create(`rec-${i}`, { amount: i });
    await settle();
    expect(exec.calls).toHaveLength(20);
    await runner.stop();
    await writeCheckpoint(sql, 'trigger-runner', 0); // as if the process died before the checkpoint moved
    runner = await newRunner();
    await settle();
    expect(exec.calls).toHaveLength(20);
    expect(runner.stats.skipped).toBe(20);
  });

  it('does not fire a rule for events before it was declared or after it was deleted, nor other tenants', async () => {
    await create('early', { amount: 1 });
    const ruleId = await declare();
    await create('other-tenant', { amount: 1 }, { tenantId: 'tenant-2' });
    await create('during', { amount: 1 });
    await store.append(
      triggerStreams.rule(ruleId),
      [ev({ type: 'TriggerRuleDeleted', data: { ruleId, schemaId: 's1' } })],
      0,
    );
    await create('late', { amount: 1 });
    await settle();
    expect(exec.calls.map((c) => (c.input as { recordId: string }).recordId)).toEqual(['during']);
  });

  it(
    'sees rules declared and deleted after it has matched the context (rule lifetimes are kept between ' + 'batches)',
    async () => {
      await create('before', { amount: 1 });
      await settle(); // the context is now known to have no rules
      const ruleId = await declare();
      await create('during', { amount: 1 });
      await settle();
      await store.append(
        triggerStreams.rule(ruleId),
        [ev({ type: 'TriggerRuleDeleted', data: { ruleId, schemaId: 's1' } })],
        0,
      );
      await create('after', { amount: 1 });
      await settle();
      expect(exec.calls.map((c) => (c.input as { recordId: string }).recordId)).toEqual(['during']);
    },
  );

  it('a batch with nothing to fire moves its position at once, its checkpoint row within 1 s and at stop', async () => {
    const row = async () =>
      Number(
        (await sql.query<{ position: number }>(`SELECT position FROM proj_checkpoints WHERE name = 'trigger-runner'`))
          .rows[0]?.position ?? 0,
      );
    await create('idle-1', { amount: 1 });
    await settle();
    await create('idle-2', { amount: 1 });
    const head = await store.headPosition();
    await settle();
    expect(runner.current).toBe(head);
    await eventually(async () => (await row()) === head, 3_000);
    const { position } = await create('idle-3', { amount: 1 });
    await settle();
    await runner.stop();
    expect(await row()).toBe(position);
    runner = await newRunner();
  });

  it('a deterministic failure is terminal at once: TriggerFailed, no retry', async () => {
    const ruleId = await declare();
    exec.fail = () => ({ ok: false, errorCode: 'SCRIPT_ERROR', message: 'boom', retryable: false });
    const { position } = await create('rec-f', { amount: 1 });
    await settle();
    const [created] = await store.readAll(position - 1, 1);
    const [failed] = await firing(ruleId, created.id);
    expect(failed).toMatchObject({
      type: 'TriggerFailed',
      data: { ruleId, recordId: 'rec-f', event: 'CREATE', reason: 'SCRIPT_ERROR', message: 'boom', attempts: 1 },
    });
    expect(exec.calls).toHaveLength(1);
    const { rows } = await sql.query('SELECT reason FROM rm_trigger_failures');
    expect(rows).toEqual([{ reason: 'SCRIPT_ERROR' }]);
  });

  it('retries a service-side failure on the schedule (durably), then succeeds', async () => {
    const ruleId = await declare();
    exec.fail = (_r, n) =>
      n <= 2 ? { ok: false, errorCode: 'CONCURRENT_MODIFICATION', message: 'changed', retryable: true } : null;
    const { position } = await create('rec-r', { amount: 1 });
    await settle();
    expect(exec.calls).toHaveLength(3);
    const [created] = await store.readAll(position - 1, 1);
    expect((await firing(ruleId, created.id)).map((e) => e.type)).toEqual(['TriggerFired']);
  });

  it('keeps a scheduled retry across a restart (due time in SQL), without running it early', async () => {
    await runner.stop();
    runner = await newRunner(1); // the real schedule: 30 s to the first retry
    const ruleId = await declare();
    exec.fail = (_r, n) => (n === 1 ? { ok: false, errorCode: 'INTERNAL', message: 'down', retryable: true } : null);
    const { position } = await create('rec-d', { amount: 1 });
    await eventually(async () => (await runner.pending()) === 1 && runner.current >= position);
    const { rows } = await sql.query<{ due_at: string; attempts: number }>('SELECT due_at, attempts FROM trg_retries');
    expect(Number(rows[0].due_at) - Date.now()).toBeGreaterThan(20_000);
    await runner.stop();
    await writeCheckpoint(sql, 'trigger-runner', 0);
    runner = await newRunner(1);
    await new Promise((r) => setTimeout(r, 500));
    expect(exec.calls).toHaveLength(1);
    expect(await runner.pending()).toBe(1);
    await sql.query('UPDATE trg_retries SET due_at = 0');
    await eventually(async () => (await runner.pending()) === 0);
    expect(exec.calls).toHaveLength(2);
    const [created] = await store.readAll(position - 1, 1);
    expect((await firing(ruleId, created.id)).map((e) => e.type)).toEqual(['TriggerFired']);
  });

  it('a service-side failure becomes terminal after the last step of the schedule', async () => {
    const ruleId = await declare();
    exec.fail = () => ({ ok: false, errorCode: 'INTERNAL', message: 'down', retryable: true });
    const { position } = await create('rec-t', { amount: 1 });
    await settle();
    expect(exec.calls).toHaveLength(6);
    const [created] = await store.readAll(position - 1, 1);
    expect((await firing(ruleId, created.id))[0]).toMatchObject({
      type: 'TriggerFailed',
      data: { reason: 'INTERNAL', attempts: 6 },
    });
  });

  it('stops chains at the depth limit and refuses oversized input without running', async () => {
    const ruleId = await declare();
    const deep = await create('rec-deep', { amount: 1 }, { triggerDepth: 8 });
    const big = await create('rec-big', { amount: 'x'.repeat(230 * 1024) });
    await settle();
    expect(exec.calls).toHaveLength(0);
    const [d] = await store.readAll(deep.position - 1, 1);
    const [b] = await store.readAll(big.position - 1, 1);
    expect((await firing(ruleId, d.id))[0]).toMatchObject({
      type: 'TriggerFailed',
      data: { reason: 'TRIGGER_DEPTH_EXCEEDED' },
    });
    expect((await firing(ruleId, b.id))[0]).toMatchObject({
      type: 'TriggerFailed',
      data: { reason: 'INPUT_TOO_LARGE' },
    });
  });
});
