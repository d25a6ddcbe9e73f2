import { randomUUID } from 'node:crypto';
import { InternalError } from '@svc/contracts';
import {
  afterAttempt,
  AUTO_DISABLE_AFTER,
  buildEnvelope,
  type EventStore,
  handleCommand,
  openWebhookSecret,
  type ReadModelBarrier,
  RETENTION_DELIVERED_MS,
  RETENTION_UNRESOLVED_MS,
  type Sql,
  type StoredEvent,
  systemMetadata,
  webhookDecider,
  webhookStreams,
  WEBHOOK_TABLES,
} from '@svc/domain';
import { Reactor, type ReactorStats } from '../runtime/reactor';
import {
  type AttemptResult,
  dueDeliveries,
  ensureDeliveries,
  insertDeliveries,
  type NewDelivery,
  purgeDeliveries,
  settleAttempts,
} from './deliveries';
import { webhookSources } from './events';
import type { SendOutcome, WebhookSender } from './sender';

export interface DispatcherOptions {
  store: EventStore;
  sql: Sql;
  /** The read models' barrier: a batch fans out once the registrations reflect the log up to it. */
  barrier: ReadModelBarrier;
  sender: Pick<WebhookSender, 'send'> & { close?(): Promise<void> };
  /** Opens the sealed signing secrets (derived from the service secret, purpose `webhook-secret`). */
  sealKey: Buffer;
  /** Multiplies the retry schedule (WEBHOOK_RETRY_SCALE; 1 = the spec's 30 s ... 8 h). */
  retryScale?: number;
  /** Attempts in flight at once: in all, per tenant, per registration. */
  concurrency?: { global?: number; perTenant?: number; perWebhook?: number };
  /** How often due deliveries are looked for when nothing wakes the sender (ms). */
  pollMs?: number;
  now?: () => number;
  log?: (msg: string) => void;
  name?: string;
}

export interface DispatcherStats extends ReactorStats {
  created: number;
  delivered: number;
  failedAttempts: number;
  inFlight: number;
}

const PURGE_EVERY_MS = 10 * 60_000;

/**
 * The webhook dispatcher: a subscriber of the log with its own checkpoint
 * (`webhook-dispatcher`) and a sender loop.
 *
 * Fan-out: each webhook event (events.ts) becomes one delivery per ACTIVE
 * registration of the event's tenant that subscribes to its type and was
 * registered before it (a test tenant's events reach only its own, test,
 * registrations). The rows are inserted in the transaction that moves the
 * checkpoint, so an event is turned into deliveries exactly once.
 *
 * Sending: due deliveries (persisted `next_attempt_at`) are picked with
 * bounded concurrency per registration, per tenant and in all, so a slow or
 * dead receiver holds only its own slots. An attempt's result is written
 * after it; a process killed mid-attempt leaves the row due, and the next
 * start sends it again (at-least-once; receivers deduplicate by delivery id).
 */
export class WebhookDispatcher extends Reactor<DispatcherStats> {
  private senderLoop: Promise<void> | undefined;
  private readonly inFlight = new Map<string, { webhookId: string; tenantId: string; done: Promise<void> }>();
  private wake: (() => void) | undefined;
  private lastPurge = 0;
  private readonly secrets = new Map<string, string>();
  private readonly disabling = new Set<string>();

  constructor(private readonly o: DispatcherOptions) {
    super(
      {
        name: o.name ?? 'webhook-dispatcher',
        position: 0,
        created: 0,
        delivered: 0,
        failedAttempts: 0,
        inFlight: 0,
        errors: 0,
        lastError: null,
      },
      { store: o.store, sql: o.sql, log: o.log, batchSize: 500, label: 'webhook dispatcher' },
    );
  }

  private now = () => (this.o.now ? this.o.now() : Date.now());
  private get limits() {
    const c = this.o.concurrency ?? {};
    return { global: c.global ?? 64, perTenant: c.perTenant ?? 16, perWebhook: c.perWebhook ?? 4 };
  }

  protected override async prepare(): Promise<void> {
    await ensureDeliveries(this.o.sql);
  }

  protected override started(): void {
    this.senderLoop = this.sendLoop();
  }

  protected override stopping(): void {
    this.wake?.();
  }

  protected override async drained(): Promise<void> {
    await this.senderLoop;
    // Attempts in flight are aborted (not counted: they stay due); what a kill cuts short is sent again after the
    // restart too.
    await Promise.all([...this.inFlight.values()].map((f) => f.done));
    await this.o.sender.close?.();
    this.senderLoop = undefined;
  }

  /** Fan-out of one batch, in the transaction that moves the checkpoint. */
  protected async handle(events: StoredEvent[]): Promise<number> {
    const last = events[events.length - 1].position;
    const sources = events.flatMap((e) => webhookSources(e, this.o.store).map((s) => ({ e, s })));
    const rows: NewDelivery[] = [];
    if (sources.length) {
      // The registrations must reflect the log up to this batch before they are matched.
      if (!(await this.o.barrier.waitFor(last, 30_000)))
        throw new InternalError(`read models did not reach position ${last}`);
      const tenants = [...new Set(sources.map((x) => x.s.tenantId))];
      const { rows: regs } = await this.o.sql.query<{
        webhook_id: string;
        tenant_id: string;
        livemode: boolean;
        events: string[] | string;
        registered_position: string | number;
      }>(
        `SELECT webhook_id, tenant_id, livemode, events, registered_position FROM ${WEBHOOK_TABLES.webhooks} WHERE ` +
          `tenant_id = ANY($1::text[]) AND status = 'ACTIVE'`,
        [tenants],
      );
      for (const { e, s } of sources) {
        const matching = regs.filter(
          (r) =>
            r.tenant_id === s.tenantId &&
            Number(r.registered_position) < e.position &&
            (typeof r.events === 'string' ? JSON.parse(r.events) : r.events).includes(s.type),
        );
        if (!matching.length) continue;
        const data = await s.data();
        if (data === null) continue;
        for (const r of matching) {
          const deliveryId = randomUUID();
          const envelope = buildEnvelope({
            id: deliveryId,
            type: s.type,
            createdMs: this.now(),
            tenantId: s.tenantId,
            livemode: r.livemode,
            data,
          });
          rows.push({
            deliveryId,
            webhookId: r.webhook_id,
            tenantId: s.tenantId,
            eventId: s.key,
            eventType: s.type,
            sourceId: s.sourceId,
            sourceType: s.sourceType,
            createdAt: this.now(),
            body: JSON.stringify(envelope),
          });
        }
      }
    }
    // Deleted registrations and torn-down tenants take their deliveries with them.
    const gone = events.filter((e) => e.type === 'WebhookDeleted' || e.type === 'TenantTornDown');
    const updated = events.some((e) => e.type === 'WebhookUpdated');
    if (!rows.length && !gone.length) {
      if (updated) this.wake?.();
      return this.passed(last);
    }
    await this.o.sql.tx(async (q) => {
      await insertDeliveries(q, rows);
      for (const e of gone) {
        if (e.type === 'WebhookDeleted')
          await q.query('DELETE FROM webhook_deliveries WHERE webhook_id = $1', [e.data.webhookId]);
        else if (e.type === 'TenantTornDown')
          await q.query('DELETE FROM webhook_deliveries WHERE tenant_id = $1', [e.data.tenantId]);
      }
      await this.checkpoint(q, last);
    });
    this.moved(last);
    this.stats.created += rows.length;
    if (rows.length || updated) this.wake?.();
    return last;
  }

  private async sendLoop(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      try {
        await this.pickDue();
        if (this.now() - this.lastPurge > PURGE_EVERY_MS) {
          this.lastPurge = this.now();
          const n = await purgeDeliveries(this.o.sql, this.now(), RETENTION_UNRESOLVED_MS, RETENTION_DELIVERED_MS);
          if (n) this.o.log?.(`webhook dispatcher: purged ${n} expired deliveries`);
        }
      } catch (e) {
        if (signal.aborted) return;
        this.failed('sender', e);
      }
      await new Promise<void>((resolve) => {
        let soon: NodeJS.Timeout | undefined;
        const t = setTimeout(done, this.o.pollMs ?? 250);
        function done() {
          clearTimeout(t);
          clearTimeout(soon);
          resolve();
        }
        // Wake-ups (new deliveries, a finished attempt) are coalesced for a few ms: one pick serves many of them.
        this.wake = () => (soon ??= setTimeout(done, signal.aborted ? 0 : 5));
      });
      this.wake = undefined;
    }
  }

  private async pickDue(): Promise<void> {
    const lim = this.limits;
    const free = lim.global - this.inFlight.size;
    if (free <= 0) return;
    const perWebhook = new Map<string, number>();
    const perTenant = new Map<string, number>();
    for (const f of this.inFlight.values()) {
      perWebhook.set(f.webhookId, (perWebhook.get(f.webhookId) ?? 0) + 1);
      perTenant.set(f.tenantId, (perTenant.get(f.tenantId) ?? 0) + 1);
    }
    const due = await dueDeliveries(this.o.sql, {
      now: this.now(),
      busyWebhooks: [...perWebhook].filter(([, n]) => n >= lim.perWebhook).map(([id]) => id),
      busyTenants: [...perTenant].filter(([, n]) => n >= lim.perTenant).map(([id]) => id),
      skip: [...this.inFlight.keys()],
      perWebhook: lim.perWebhook,
      limit: free * 2,
    });
    for (const d of due) {
      if (this.inFlight.size >= lim.global || this.abort.signal.aborted) break;
      if (
        (perWebhook.get(d.webhook_id) ?? 0) >= lim.perWebhook ||
        (perTenant.get(d.tenant_id) ?? 0) >= lim.perTenant ||
        this.inFlight.has(d.delivery_id)
      )
        continue;
      perWebhook.set(d.webhook_id, (perWebhook.get(d.webhook_id) ?? 0) + 1);
      perTenant.set(d.tenant_id, (perTenant.get(d.tenant_id) ?? 0) + 1);
      const done = this.attempt(d)
        .catch((e) => this.failed(`delivery ${d.delivery_id}`, e))
        .finally(() => {
          this.inFlight.delete(d.delivery_id);
          this.stats.inFlight = this.inFlight.size;
          this.wake?.();
        });
      this.inFlight.set(d.delivery_id, { webhookId: d.webhook_id, tenantId: d.tenant_id, done });
      this.stats.inFlight = this.inFlight.size;
    }
  }

  private secretOf(webhookId: string, sealed: string): string {
    let s = this.secrets.get(webhookId);
    if (!s) {
      s = openWebhookSecret(this.o.sealKey, sealed);
      if (this.secrets.size > 10_000) this.secrets.clear();
      this.secrets.set(webhookId, s);
    }
    return s;
  }

  private async attempt(d: Awaited<ReturnType<typeof dueDeliveries>>[number]): Promise<void> {
    const outcome: SendOutcome = await this.o.sender.send({
      url: d.url,
      deliveryId: d.delivery_id,
      body: d.body,
      secretHex: this.secretOf(d.webhook_id, d.sealed_secret),
      nowMs: this.now(),
      signal: this.abort.signal,
    });
    // Cut short by stop(): not an attempt; the delivery stays due and the next start sends it (at-least-once).
    if (this.abort.signal.aborted && outcome.kind === 'failed' && outcome.status === undefined) return;
    const now = this.now();
    if (outcome.kind === 'refused') {
      // The delivery-time gate (fail closed): the delivery fails and the registration is disabled (ssrf_blocked).
      await this.settle({
        deliveryId: d.delivery_id,
        webhookId: d.webhook_id,
        status: 'FAILED',
        attempts: Number(d.attempts) + 1,
        nextAttemptAt: null,
        settledAt: now,
        error: `address refused: ${outcome.reason}`,
        ok: false,
      });
      this.stats.failedAttempts += 1;
      await this.disable(d.webhook_id, d.tenant_id, 'ssrf_blocked');
      return;
    }
    const ok = outcome.kind === 'delivered';
    const next = afterAttempt(
      { status: 'PENDING', attempts: Number(d.attempts), nextAttemptAt: now },
      { ok },
      now,
      this.o.retryScale ?? 1,
    );
    const error =
      outcome.kind === 'failed' ? (outcome.status ? `HTTP ${outcome.status}` : (outcome.error ?? 'failed')) : null;
    const reg = await this.settle({
      deliveryId: d.delivery_id,
      webhookId: d.webhook_id,
      status: next.status,
      attempts: next.attempts,
      nextAttemptAt: next.nextAttemptAt,
      settledAt: next.status === 'PENDING' ? null : now,
      error,
      ok,
    });
    if (ok) this.stats.delivered += 1;
    else this.stats.failedAttempts += 1;
    if (!ok && reg?.active && reg.consecutiveFailures >= AUTO_DISABLE_AFTER)
      await this.disable(d.webhook_id, d.tenant_id, 'consecutive_failures');
  }

  /**
   * Results are written in batches (one transaction for whatever finished
   * meanwhile); an attempt stays in flight until its result is written, so it
   * is never picked twice. A kill before the write means it is sent again.
   */
  private pending: Array<{
    r: AttemptResult;
    done: (v: { consecutiveFailures: number; active: boolean } | undefined) => void;
    fail: (e: unknown) => void;
  }> = [];
  private flushing: Promise<void> | undefined;

  private settle(r: AttemptResult): Promise<{ consecutiveFailures: number; active: boolean } | undefined> {
    return new Promise((done, fail) => {
      this.pending.push({ r, done, fail });
      this.flushing ??= this.flush();
    });
  }

  private async flush(): Promise<void> {
    try {
      while (this.pending.length) {
        const batch = this.pending.splice(0, 500);
        try {
          const counts = await settleAttempts(
            this.o.sql,
            batch.map((b) => b.r),
          );
          for (const b of batch) b.done(counts.get(b.r.webhookId));
        } catch (e) {
          for (const b of batch) b.fail(e);
        }
      }
    } finally {
      this.flushing = undefined;
    }
  }

  /** Appends WebhookDisabled to the registration's stream, once, and waits until the read model shows it. */
  private async disable(
    webhookId: string,
    tenantId: string,
    reason: 'consecutive_failures' | 'ssrf_blocked',
  ): Promise<void> {
    if (this.disabling.has(webhookId)) return;
    this.disabling.add(webhookId);
    try {
      // Through the command handler, which waits (at most 10 s) until the read model shows it.
      const barrier = { waitFor: (position: number) => this.o.barrier.waitFor(position, 10_000) };
      await handleCommand(
        { store: this.o.store, barrier, ids: { newId: randomUUID }, log: this.o.log },
        {
          streamId: webhookStreams.webhook(webhookId),
          aggregate: webhookDecider,
          metadata: systemMetadata({ tenantId, contextId: null, occurredAt: new Date(this.now()) }),
          decide: (s) => ({ events: webhookDecider.decide({ type: 'DisableWebhook', reason }, s) }),
        },
      );
      this.o.log?.(`webhook dispatcher: registration ${webhookId} disabled (${reason})`);
    } finally {
      this.disabling.delete(webhookId);
    }
  }
}
