import type { EventMetadata, Principal, RequestMeta } from '@svc/contracts';
import {
  documentWriteItems,
  type DomainAppend,
  type EventStore,
  fileIngestItem,
  handleCommand,
  type IdGenerator,
  type IndexedWrite,
  inferenceItem,
  metadataFor,
  periodOf,
  type PriceTable,
  type ReadModelBarrier,
  recordWriteItems,
  scriptExecutionItem,
  searchItem,
  type SearchMode,
  streams,
  systemMetadata,
  type UsageCommand,
  usageDecider,
  type UsageItem,
  type WriteCharges,
  type WriteDeps,
} from '@svc/domain';

/**
 * Metering on the event log (docs/api.md "Usage"). Counters tick at dispatch:
 *
 * - a record or document write carries its charge in the metadata of its own
 *   event (`writeCharge`, EventMetadata.chargeCode); a file ingest is charged by a
 *   UsageMetered event in the same atomic append (`appendFor`). Either way a
 *   refused or failed write charges nothing and an accepted one exactly once;
 * - a search (and later an inference call or script run) is charged once it was
 *   served (`charge`): one append to the tenant's usage stream, applied to the
 *   read models before the response leaves, so the next request's credit gate sees it;
 * - read calls and their response bytes are tallied in process per tenant,
 *   context and period and appended as ReadsMetered events every `flushMs`
 *   (and on close): a crash loses at most that interval of read counts.
 *
 * Every usage event is decided by the usage decider (domain/src/usage/metering.ts) and
 * goes to the tenant's stream `usage-<tenantId>` through the command handler, unread, with
 * expected revision 'any' (never a conflict); the usage projection applies each stream
 * revision once, so replaying the log rebuilds the same report.
 */
export interface MeterDeps {
  store: EventStore;
  barrier: ReadModelBarrier;
  ids: IdGenerator;
  prices: PriceTable;
  now?: () => Date;
  log?: (message: string) => void;
  /** How often read tallies are appended (default 1,000 ms). */
  flushMs?: number;
}

type Tally = {
  tenantId: string;
  contextId: string | null;
  accountId: string | null;
  period: string;
  calls: number;
  bytes: number;
};
type SearchTally = {
  tenantId: string;
  contextId: string | null;
  accountId: string | null;
  period: string;
  items: Map<string, UsageItem>;
};

/** Most a served charge waits for the read models before answering anyway. */
const CHARGE_WAIT_MS = 2000;
/** A tally this large is appended at once rather than at the next interval. */
const FLUSH_AT_CALLS = 10_000;

export class UsageMeter implements WriteCharges {
  /**
   * Off only in measurements of the metering cost itself (tests/bench): nothing is metered and the credit gate lets
   * everything pass.
   */
  enabled = true;
  readonly prices: PriceTable;
  private readonly tallies = new Map<string, Tally>();
  /** Searches served since the last flush, by tenant, context and period. */
  private readonly searches = new Map<string, SearchTally>();
  private timer: NodeJS.Timeout | undefined;
  /** Flushes run one after another. */
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  private urgent = false;

  constructor(private readonly o: MeterDeps) {
    this.prices = o.prices;
  }

  /**
   * The append that charges `items` to a tenant, for the commit of the write it
   * charges (atomic with it). Empty when there is nothing to charge.
   */
  appendFor(
    metadata: EventMetadata,
    items: UsageItem[],
    where: { tenantId: string | null; contextId: string | null } = metadata,
  ): DomainAppend[] {
    if (!this.enabled || !where.tenantId || items.length === 0) return [];
    const events = usageDecider.decide(
      {
        type: 'MeterUsage',
        tenantId: where.tenantId,
        contextId: where.contextId,
        period: periodOf(metadata.occurredAt),
        items,
      },
      usageDecider.initialState(),
    );
    return [
      {
        streamId: streams.usage(where.tenantId),
        events,
        expectedRevision: 'any',
        metadata: { ...metadata, tenantId: where.tenantId, contextId: where.contextId },
      },
    ];
  }

  /** One usage command through the command handler: the tenant's usage stream, unread, expected revision 'any'. */
  private meter(command: UsageCommand, metadata: EventMetadata, deps: WriteDeps = this.writeDeps) {
    return handleCommand(deps, {
      streamId: streams.usage(command.tenantId),
      aggregate: usageDecider,
      appendOnly: true,
      metadata,
      decide: (s) => ({ events: usageDecider.decide(command, s) }),
    });
  }

  /** Flushes wait for no one. */
  private get writeDeps(): WriteDeps {
    return { store: this.o.store, barrier: { waitFor: async () => true }, ids: this.o.ids, log: this.o.log };
  }

  /**
   * The charge of a write for its own commit: carried in the metadata of the write's first event (the
   * charged tenant and context are that event's), so it costs no event of its own. Empty when off.
   */
  writeCharge(metadata: EventMetadata, items: UsageItem[] | (() => UsageItem[])): DomainAppend[] {
    if (!this.enabled || !metadata.tenantId) return [];
    const charge = typeof items === 'function' ? items() : items;
    return charge.length ? [{ streamId: '', events: [], expectedRevision: 'any', charge }] : [];
  }

  /**
   * Charges work already served (a search, an inference call, a script run): appended, then awaited on the read models.
   */
  async charge(meta: RequestMeta, items: UsageItem[]): Promise<void> {
    const md = metadataFor(meta);
    if (!this.enabled || !md.tenantId || items.length === 0) return;
    // Awaited on the read models for at most CHARGE_WAIT_MS; past it the request is answered anyway.
    const barrier = {
      waitFor: async (position: number) => {
        if (!(await this.o.barrier.waitFor(position, CHARGE_WAIT_MS)))
          this.o.log?.(`usage: read models did not reach position ${position} in time; answering anyway`);
        return true;
      },
    };
    await this.meter(
      { type: 'MeterUsage', tenantId: md.tenantId, contextId: md.contextId, period: periodOf(md.occurredAt), items },
      md,
      { ...this.writeDeps, barrier },
    );
  }

  /**
   * A search served (POST /v1/search, 200): tallied in process and appended with the read counts (every
   * `flushMs`), not appended and awaited per search. A search then costs no write of its own, and the credit
   * gate sees it within one flush period (a ceiling may be passed by the searches of that interval).
   */
  search(meta: RequestMeta, mode: SearchMode): Promise<void> {
    const p = meta.principal;
    if (!this.enabled || this.closed || !p.tenantId) return Promise.resolve();
    const item = searchItem(this.prices, mode);
    const period = periodOf(meta.now.toISOString());
    const key = `${p.tenantId}\u0000${p.contextId ?? ''}\u0000${period}`;
    let t = this.searches.get(key);
    if (!t)
      this.searches.set(
        key,
        (t = {
          tenantId: p.tenantId,
          contextId: p.contextId,
          accountId: p.accountId || null,
          period,
          items: new Map(),
        }),
      );
    const cur = t.items.get(item.category);
    if (cur) {
      cur.count += item.count;
      cur.milli += item.milli;
    } else t.items.set(item.category, { ...item });
    this.flushLater();
    return Promise.resolve();
  }

  /**
   * Script executions that ran (for the scripts feature): call once the outcome is known; `charged: false` for
   * service-side failures.
   */
  scriptExecution(
    meta: RequestMeta,
    run: { executions?: number; totalMillis: number; charged: boolean },
  ): Promise<void> {
    return this.charge(meta, [
      scriptExecutionItem(this.prices, {
        executions: run.executions ?? 1,
        totalMillis: run.totalMillis,
        charged: run.charged,
      }),
    ]);
  }

  /**
   * An inference call, counted when the stream finalises (for the inference feature); the cents go to the balance, not
   * to credits.
   */
  inferenceCall(meta: RequestMeta, surface: 'chat' | 'rag' | 'ask', costCents = 0): Promise<void> {
    return this.charge(meta, [inferenceItem(surface, costCents)]);
  }

  /** Counts `calls` read calls (one by default) of `bytes` response bytes in all (appended with the next flush). */
  countRead(p: Principal, bytes: number, at: Date = this.o.now?.() ?? new Date(), calls = 1): void {
    if (!this.enabled || this.closed || !p.tenantId) return;
    const period = periodOf(at);
    const key = `${p.tenantId}\u0000${p.contextId ?? ''}\u0000${period}`;
    let t = this.tallies.get(key);
    if (!t)
      this.tallies.set(
        key,
        (t = {
          tenantId: p.tenantId,
          contextId: p.contextId,
          accountId: p.accountId || null,
          period,
          calls: 0,
          bytes: 0,
        }),
      );
    t.calls += calls;
    t.bytes += Math.max(0, Math.round(bytes));
    if (t.calls >= FLUSH_AT_CALLS) this.flushLater(0);
    else this.flushLater();
  }

  /**
   * Appends the read tallies now (one append per tenant, context and account). Failed appends keep their tallies for
   * the next flush.
   */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const run = this.chain.then(() => this.flushNow());
    this.chain = run.catch(() => {});
    return run;
  }

  private async flushNow(): Promise<void> {
    await this.flushSearches();
    if (this.tallies.size === 0) return;
    const pending = [...this.tallies.values()];
    this.tallies.clear();
    const terms = {
      includedCalls: this.prices.reads.includedCalls,
      callsPerCredit: this.prices.reads.callsPerCredit,
      includedBytes: this.prices.reads.includedBytes,
      bytesPerCredit: this.prices.reads.bytesPerCredit,
    };
    const occurredAt = this.o.now?.() ?? new Date();
    // One append per tenant, context and account (the events' metadata): their tallies of each period.
    const byWriter = new Map<string, Tally[]>();
    for (const t of pending) {
      const key = `${t.tenantId}\u0000${t.contextId ?? ''}\u0000${t.accountId ?? ''}`;
      byWriter.set(key, [...(byWriter.get(key) ?? []), t]);
    }
    await Promise.all(
      [...byWriter.values()].map(async (list) => {
        const { tenantId, contextId, accountId } = list[0];
        try {
          await this.meter(
            {
              type: 'MeterReads',
              tenantId,
              contextId,
              reads: list.map((t) => ({ period: t.period, calls: t.calls, bytes: t.bytes, terms })),
            },
            systemMetadata({ tenantId, contextId, accountId, occurredAt }),
          );
        } catch (e) {
          // Counted again with the next flush (unless the meter is closing: then the log line is all that is left).
          this.o.log?.(
            `usage: appending read counts of tenant ${tenantId} failed: ${e instanceof Error ? e.message : String(e)}`,
          );
          if (!this.closed) for (const t of list) this.restore(t);
        }
      }),
    );
  }

  /** Appends the tallied searches: one UsageMetered event per tenant, context and period. */
  private async flushSearches(): Promise<void> {
    if (this.searches.size === 0) return;
    const pending = [...this.searches.values()];
    this.searches.clear();
    const occurredAt = this.o.now?.() ?? new Date();
    // One UsageMetered event per tenant, context and period, appended with its own metadata.
    await Promise.all(
      pending.map(async (t) => {
        const { tenantId } = t;
        const list = [t];
        try {
          await this.meter(
            { type: 'MeterUsage', tenantId, contextId: t.contextId, period: t.period, items: [...t.items.values()] },
            systemMetadata({ tenantId, contextId: t.contextId, accountId: t.accountId, occurredAt }),
          );
        } catch (e) {
          this.o.log?.(
            `usage: appending search charges of tenant ${tenantId} failed: ` +
              `${e instanceof Error ? e.message : String(e)}`,
          );
          if (!this.closed)
            for (const t of list) {
              const key = `${t.tenantId}\u0000${t.contextId ?? ''}\u0000${t.period}`;
              const cur = this.searches.get(key);
              if (!cur) this.searches.set(key, t);
              else
                for (const [c, it] of t.items) {
                  const had = cur.items.get(c);
                  if (had) ((had.count += it.count), (had.milli += it.milli));
                  else cur.items.set(c, it);
                }
              this.flushLater();
            }
        }
      }),
    );
  }

  private restore(t: Tally) {
    const key = `${t.tenantId}\u0000${t.contextId ?? ''}\u0000${t.period}`;
    const cur = this.tallies.get(key);
    if (cur) {
      cur.calls += t.calls;
      cur.bytes += t.bytes;
    } else this.tallies.set(key, { ...t });
    this.flushLater();
  }

  /** Schedules a flush after the interval (or at once, `0`, when a tally is large); one of each at a time. */
  private flushLater(ms = this.o.flushMs ?? 1000) {
    if (ms > 0) {
      this.timer ??= setTimeout(() => void this.flush().catch(() => {}), ms).unref();
      return;
    }
    if (this.urgent) return;
    this.urgent = true;
    void this.flush()
      .catch(() => {})
      .finally(() => (this.urgent = false));
  }

  /** Appends what is tallied and stops counting. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** The charge of a record write (1 credit plus index credits), for its commit. */
export const recordWriteAppend = (
  meter: WriteCharges | undefined,
  md: EventMetadata,
  w: IndexedWrite,
): DomainAppend[] => (meter ? meter.writeCharge(md, () => recordWriteItems(meter.prices, w)) : []);

/**
 * The charge of a document write (1 credit plus index credits, plus the text ingest when it carries text), for its
 * commit.
 */
export const documentWriteAppend = (
  meter: WriteCharges | undefined,
  md: EventMetadata,
  w: IndexedWrite,
  textBytes?: number,
): DomainAppend[] => (meter ? meter.writeCharge(md, () => documentWriteItems(meter.prices, w, textBytes)) : []);

/** The charge of a completed file upload (per started 100 KB), for the commit of DocumentFileUploaded. */
export const fileIngestAppend = (
  meter: WriteCharges | undefined,
  md: EventMetadata,
  bytes: number,
  where: { tenantId: string | null; contextId: string | null },
): DomainAppend[] => (meter ? meter.appendFor(md, [fileIngestItem(meter.prices, bytes)], where) : []);
