import { randomUUID } from 'node:crypto';
import type { EventMetadata, TriggerEventKind } from '@svc/contracts';
import {
  DEPTH_LIMIT_REASON,
  type EventStore,
  type FiringOutcomeCommand,
  firingOutcomeDecider,
  handleCommand,
  isRetryableTriggerFailure,
  type FiringRow,
  firingDepth,
  inputBytes,
  MAX_TRIGGER_DEPTH,
  nextFailureStep,
  NO_WAIT,
  recordAggregate,
  type RecordState,
  resolveDataScope,
  scopeMap,
  type ScriptExecutor,
  type ScriptRunOutcome,
  type ScriptRunRequest,
  type Sql,
  type StoredEvent,
  streams,
  systemMetadata,
  toNewEvents,
  TRIGGER_INPUT_LIMIT_BYTES,
  triggerEventKind,
  triggerInput,
  triggerPrincipal,
  type TriggerRule,
  triggerStreams,
} from '@svc/domain';
import { Reactor, type ReactorStats } from '../runtime/reactor';
import { ruleById, ruleLifetimes, rulesLiveAt } from './read-model';
import {
  clearRetry,
  dueRetries,
  ensureRetries,
  pendingRetries,
  retryOf,
  type RetryRow,
  scheduleRetry,
} from './retries';

export const TRIGGER_RUNNER = 'trigger-runner';
/**
 * Outcomes that mean the script never started (no slot, busy container): waited out in place, not counted as attempts.
 */
const NOT_STARTED = new Set(['RATE_LIMITED', 'EXECUTION_CONTAINER_BUSY', 'EXECUTION_NOT_STARTED']);
const NOT_STARTED_WAIT_MS = 2_000;
const NOT_STARTED_TRIES = 30;
/** Events that change which rules a context has (read-model.ts). */
const CHANGES_RULES = new Set(['TriggerRuleCreated', 'TriggerRuleDeleted', 'ContextDeleted', 'TenantTornDown']);
const MAX_CACHED_CONTEXTS = 10_000;

export interface TriggerRunnerStats extends ReactorStats {
  /** Scripts run (every attempt), firings settled as fired, terminal failures, retries scheduled. */
  runs: number;
  fired: number;
  failed: number;
  retries: number;
  /** Firings found already settled (a replay, or a batch delivered again): skipped. */
  skipped: number;
}

export interface TriggerRunnerOptions {
  store: EventStore;
  sql: Sql;
  executor: ScriptExecutor;
  /** Resolves once the read models (the rules) have applied the log up to `position`: the read-your-writes barrier. */
  rulesReady: (position: number) => Promise<boolean>;
  log?: (msg: string) => void;
  name?: string;
  now?: () => Date;
  /** Multiplies the retry schedule (tests: 1/1000, like WEBHOOK_RETRY_SCALE). */
  retryScale?: number;
  /** How often due retries are looked for when the log is quiet. */
  retryPollMs?: number;
}

type Rule = TriggerRule & { accountId: string | null };

/**
 * The trigger runner (docs/triggers.md): a subscriber of the log with its own
 * checkpoint ('trigger-runner'), off the request path. For every RecordCreated /
 * RecordUpdated / RecordDeleted it runs each enabled rule of the record's schema
 * that was live at that position, through the ScriptExecutor port, as the rule's
 * grant.
 *
 * Exactly once per event per rule: each firing has a marker stream
 * (`trigger-firing-<hash(rule, event)>`) claimed with `no_stream` by its outcome,
 * TriggerFired committed atomically with the script's writes (ScriptRunRequest
 * `alsoAppend`), or TriggerFailed. A firing whose marker exists is skipped, so a
 * batch delivered again after a crash, or a replay, never runs a script twice.
 * Service-side failures wait in `trg_retries` (durable due times) for the
 * webhook schedule; deterministic ones are terminal at once.
 */
export class TriggerRunner extends Reactor<TriggerRunnerStats> {
  private timer: NodeJS.Timeout | undefined;
  /**
   * Rule lifetimes (log positions) by context, kept between batches: they change only with the events of CHANGES_RULES,
   * which all pass through this runner in log order and clear the cache before the batch that holds them is matched.
   */
  private readonly lifetimes = new Map<string, Array<{ created: number; deleted: number | null }>>();
  private turn: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: TriggerRunnerOptions) {
    super(
      {
        name: o.name ?? TRIGGER_RUNNER,
        position: 0,
        runs: 0,
        fired: 0,
        failed: 0,
        retries: 0,
        skipped: 0,
        errors: 0,
        lastError: null,
      },
      { store: o.store, sql: o.sql, log: o.log, batchSize: 100, label: 'trigger runner' },
    );
  }

  private now = () => this.o.now?.() ?? new Date();

  protected override async prepare(): Promise<void> {
    await ensureRetries(this.o.sql);
  }

  protected override started(): void {
    this.timer = setInterval(
      () => void this.exclusive(() => this.runDueRetries()).catch((e) => this.failed('retries failed', e)),
      this.o.retryPollMs ?? 1_000,
    );
    this.timer.unref?.();
  }

  protected override stopping(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  protected override async drained(): Promise<void> {
    await this.turn;
  }

  /** Firings waiting for a retry. */
  pending(): Promise<number> {
    return pendingRetries(this.o.sql);
  }

  /** Batches and retries take turns. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.turn.then(fn, fn);
    this.turn = run.catch(() => {});
    return run;
  }

  /** Batches and due retries take turns. */
  protected handle(events: StoredEvent[]): Promise<number> {
    return this.exclusive(() => this.handleInTurn(events));
  }

  private async handleInTurn(events: StoredEvent[]): Promise<number> {
    const last = events[events.length - 1].position;
    const fresh = events.filter((e) => e.position > this.position && triggerEventKind(e.type) !== null);
    // The rules come from the read model: wait until it has applied this batch, so "live at the event's position" is
    // decidable.
    if (fresh.length && !(await this.o.rulesReady(last)))
      throw new Error(`read models did not reach position ${last}; retrying the batch`);
    // Which contexts have rules at all: one query for the contexts not seen yet, not one per record event (most
    // contexts have none).
    if (events.some((e) => CHANGES_RULES.has(e.type)) || this.lifetimes.size > MAX_CACHED_CONTEXTS)
      this.lifetimes.clear();
    const missing = new Map<string, { tenantId: string; contextId: string }>();
    for (const e of fresh) {
      const { tenantId, contextId } = e.metadata;
      if (!tenantId || !contextId) continue;
      const key = `${tenantId}\u0000${contextId}`;
      if (!this.lifetimes.has(key)) missing.set(key, { tenantId, contextId });
    }
    if (missing.size) {
      const found = await ruleLifetimes(this.o.sql, [...missing.values()]);
      for (const key of missing.keys()) this.lifetimes.set(key, found.get(key) ?? []);
    }
    const liveAt = (e: StoredEvent) =>
      (this.lifetimes.get(`${e.metadata.tenantId}\u0000${e.metadata.contextId}`) ?? []).some(
        (r) => r.created < e.position && (r.deleted === null || r.deleted > e.position),
      );
    let reacted = false;
    for (const e of fresh) {
      if (this.abort.signal.aborted) return this.position;
      if (!liveAt(e)) continue;
      await this.react(e);
      reacted = true;
    }
    // Due retries run on their own timer, taking turns with the batches: not one more query per batch.
    if (this.abort.signal.aborted) return this.position;
    if (!reacted) return this.passed(last);
    if (last > this.position) {
      await this.checkpoint(this.o.sql, last);
      this.moved(last);
    }
    return this.position;
  }

  private async react(e: StoredEvent): Promise<void> {
    const kind = triggerEventKind(e.type)!;
    const { tenantId, contextId } = e.metadata;
    if (!tenantId || !contextId) return;
    const row = await firingRowOf(this.o.store, e, kind);
    if (!row) return;
    for (const rule of await rulesLiveAt(this.o.sql, row.schemaId, e.position)) {
      if (!rule.events.includes(kind) || rule.tenantId !== tenantId || rule.contextId !== contextId) continue;
      // Already waiting for a retry (the batch is delivered again after a crash): the schedule owns it.
      if (await retryOf(this.o.sql, rule.id, e.id)) continue;
      await this.fire(rule as Rule, e, row, null);
    }
  }

  /** Retries whose due time has come: the event is read again from the log, the rule from the read model. */
  private async runDueRetries(): Promise<void> {
    for (const r of await dueRetries(this.o.sql, this.now().getTime())) {
      if (this.abort.signal.aborted) return;
      const [e] = await this.o.store.readAll(r.position - 1, 1);
      const rule = await ruleById(this.o.sql, r.ruleId);
      const kind = e && e.id === r.eventId ? triggerEventKind(e.type) : null;
      const row = kind ? await firingRowOf(this.o.store, e, kind) : null;
      if (!e || !rule || !kind || !row) {
        await clearRetry(this.o.sql, r.ruleId, r.eventId);
        continue;
      }
      await this.fire(rule as Rule, e, row, r);
    }
  }

  private async settled(ruleId: string, eventId: string): Promise<boolean> {
    const [marker] = await this.o.store.readStream(triggerStreams.firing(ruleId, eventId), { maxCount: 1 });
    return marker !== undefined;
  }

  private metadata(
    rule: Rule,
    e: StoredEvent,
    row: FiringRow & { tenantId: string; contextId: string },
    depth: number,
  ): EventMetadata {
    return systemMetadata({
      tenantId: row.tenantId,
      contextId: row.contextId,
      accountId: rule.accountId ?? e.metadata.accountId,
      requestId: e.metadata.requestId,
      occurredAt: this.now(),
      triggerDepth: depth,
    });
  }

  /**
   * One firing of one rule on one event: skipped when already settled; else run, then settled or scheduled for a retry.
   */
  private async fire(
    rule: Rule,
    e: StoredEvent,
    row: FiringRow & { tenantId: string; contextId: string },
    retry: RetryRow | null,
  ): Promise<void> {
    if (await this.settled(rule.id, e.id)) {
      this.stats.skipped += 1;
      if (retry) await clearRetry(this.o.sql, rule.id, e.id);
      return;
    }
    const attempts = (retry?.attempts ?? 0) + 1;
    const depth = firingDepth(e.metadata.triggerDepth);
    const md = this.metadata(rule, e, row, depth);
    const terminal = (reason: string, message: string) =>
      this.terminal(rule, e, row, md, { reason, message, attempts, firstFailedAt: retry?.firstFailedAt });
    if (depth > MAX_TRIGGER_DEPTH)
      return terminal(
        DEPTH_LIMIT_REASON,
        `The write was made by a chain of ${depth - 1} trigger firings; rules fire at most ${MAX_TRIGGER_DEPTH} deep`,
      );
    // Placeholders resolve from the record's stamped ownership, as the input carries it (input.userId,
    // input.scope.<ns>).
    const owner = { userId: row.userId, scope: scopeMap(row.scopes) };
    const principal = triggerPrincipal(
      rule,
      { accountId: md.accountId, tenantId: row.tenantId, contextId: row.contextId },
      resolveDataScope(rule.grant.dataScope, owner),
    );
    const input = triggerInput(rule, row, principal);
    const size = inputBytes(input);
    if (size > TRIGGER_INPUT_LIMIT_BYTES)
      return terminal(
        'INPUT_TOO_LARGE',
        `record plus previous is ${size} bytes serialised, over the ${TRIGGER_INPUT_LIMIT_BYTES}-byte ` +
          `limit; the firing was not run`,
      );
    const executionId = randomUUID();
    const fired: FiringOutcomeCommand = {
      type: 'MarkFired',
      ruleId: rule.id,
      eventId: e.id,
      recordId: row.recordId,
      executionId,
      depth,
    };
    // The marker the executor commits with the script's writes (expected no_stream: the firing is unsettled, as read
    // above).
    const marker = toNewEvents(
      { newId: randomUUID },
      firingOutcomeDecider.decide(fired, firingOutcomeDecider.initialState()),
      md,
    );
    const req: ScriptRunRequest & { executionId: string } = {
      meta: { requestId: e.metadata.requestId ?? e.id, principal, now: this.now() },
      script: { name: rule.scriptRef.name, version: rule.scriptRef.version },
      input,
      depth,
      cause: { ruleId: rule.id, eventId: e.id },
      alsoAppend: [{ streamId: triggerStreams.firing(rule.id, e.id), events: marker, expectedRevision: 'no_stream' }],
      executionId,
    };
    const outcome = await this.run(req);
    this.stats.runs += 1;
    if (outcome.ok) {
      // An executor that did not commit the marker with the writes (older adapters): claim it now.
      if (!(await this.settled(rule.id, e.id))) await this.settle(rule.id, e.id, fired, md);
      this.stats.fired += 1;
      if (retry) await clearRetry(this.o.sql, rule.id, e.id);
      return;
    }
    // A conflict on the marker itself: this firing committed already (a delivery of the batch before a crash).
    if (outcome.errorCode === 'CONCURRENT_MODIFICATION' && (await this.settled(rule.id, e.id))) {
      this.stats.skipped += 1;
      if (retry) await clearRetry(this.o.sql, rule.id, e.id);
      return;
    }
    const nowMs = this.now().getTime();
    const step = nextFailureStep({
      retryable: isRetryableTriggerFailure(outcome.errorCode),
      attempts,
      now: nowMs,
      scale: this.o.retryScale,
    });
    if (step.terminal) return terminal(outcome.errorCode, outcome.message);
    this.stats.retries += 1;
    await scheduleRetry(this.o.sql, {
      ruleId: rule.id,
      eventId: e.id,
      position: e.position,
      attempts,
      dueAt: step.retryAt,
      firstFailedAt: retry?.firstFailedAt ?? new Date(nowMs).toISOString(),
      lastReason: outcome.errorCode,
      lastMessage: outcome.message,
    });
  }

  /**
   * Runs the script; a run that could not start is waited out (it is no attempt); a thrown error is a service-side
   * failure.
   */
  private async run(req: ScriptRunRequest & { executionId: string }): Promise<ScriptRunOutcome> {
    for (let i = 0; ; i++) {
      let outcome: ScriptRunOutcome;
      try {
        outcome = await this.o.executor.run(req);
      } catch (err) {
        return {
          ok: false,
          executionId: req.executionId,
          errorCode: 'INTERNAL',
          message: err instanceof Error ? err.message : String(err),
          durationMs: 0,
          retryable: true,
        };
      }
      if (outcome.ok || !NOT_STARTED.has(outcome.errorCode) || i >= NOT_STARTED_TRIES || this.abort.signal.aborted)
        return outcome;
      await new Promise((r) => setTimeout(r, NOT_STARTED_WAIT_MS));
    }
  }

  /**
   * A terminal failure: TriggerFailed claims the firing's marker (listed by GET /v1/trigger-failures; `trigger.failed`
   * webhooks).
   */
  private async terminal(
    rule: Rule,
    e: StoredEvent,
    row: FiringRow,
    md: EventMetadata,
    f: { reason: string; message: string; attempts: number; firstFailedAt?: string },
  ): Promise<void> {
    await this.settle(
      rule.id,
      e.id,
      {
        type: 'RecordFailure',
        failureId: randomUUID(),
        ruleId: rule.id,
        eventId: e.id,
        scriptRef: rule.scriptRef,
        recordId: row.recordId,
        event: row.kind,
        reason: f.reason,
        message: f.message,
        attempts: f.attempts,
        at: md.occurredAt,
        ...(f.firstFailedAt !== undefined ? { firstFailedAt: f.firstFailedAt } : {}),
      },
      md,
    );
    await clearRetry(this.o.sql, rule.id, e.id);
    this.stats.failed += 1;
  }

  /**
   * Settles the firing through the command handler; someone having settled it first is fine (the decider decides
   * nothing).
   */
  private async settle(
    ruleId: string,
    eventId: string,
    command: FiringOutcomeCommand,
    md: EventMetadata,
  ): Promise<void> {
    await handleCommand(
      { store: this.o.store, barrier: NO_WAIT, ids: { newId: randomUUID }, log: this.o.log },
      {
        streamId: triggerStreams.firing(ruleId, eventId),
        aggregate: firingOutcomeDecider,
        metadata: md,
        decide: (s) => ({ events: firingOutcomeDecider.decide(command, s) }),
      },
    );
  }
}

/**
 * The record as the event wrote it (the deleted row on DELETE) and, on UPDATE,
 * as it was before: its stream folded up to the event's revision. Null when
 * the stream does not explain the event (nothing to fire on).
 */
export async function firingRowOf(
  store: EventStore,
  e: StoredEvent,
  kind: TriggerEventKind,
): Promise<(FiringRow & { tenantId: string; contextId: string }) | null> {
  const recordId = (e.data as { recordId: string }).recordId;
  const events = await store.readStream(streams.record(recordId), { maxCount: e.revision + 1 });
  let before: RecordState = recordAggregate.initialState();
  for (const x of events) if (x.revision < e.revision) before = recordAggregate.evolve(before, x, x.metadata);
  const after = recordAggregate.evolve(before, e, e.metadata);
  const row = kind === 'DELETE' ? before : after;
  if (!row.exists || !row.tenantId || !row.contextId) return null;
  return {
    kind,
    schemaId: row.schemaId,
    typeName: row.typeName,
    recordId,
    userId: row.userId,
    scopes: row.scopes,
    payload: row.payload,
    tenantId: row.tenantId,
    contextId: row.contextId,
    ...(kind === 'UPDATE' && before.exists ? { previous: before.payload } : {}),
  };
}
