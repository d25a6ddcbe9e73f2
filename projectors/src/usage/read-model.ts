import type { EventData } from '@svc/contracts';
import {
  chargeOf,
  type CreditCategory,
  milliMetric,
  overageMilli,
  periodOf,
  type SqlQueryable,
  type StoredEvent,
  TENANCY_TABLES,
  USAGE_INDEXES,
  USAGE_TABLES,
} from '@svc/domain';
import type { SqlProjection } from '../runtime/runner';

/**
 * Usage (docs/api.md "Usage"): counters per period, tenant, app context and
 * metric, built from the UsageMetered and ReadsMetered events of the tenants'
 * `usage-<tenantId>` streams and from the charges record and document writes
 * carry in their own metadata (EventMetadata.chargeCode, or `charge` in older events), plus one row per account
 * and period with the running total the credit gate reads and the read
 * counters overage is priced against. Each usage stream's last applied
 * revision, and the log position of the last applied write charge, are kept
 * beside the counters (same transaction): nothing at or below them is counted
 * again, so replaying any part of the log converges to the same figures.
 */
type Category = EventData<'UsageMetered'>['items'][number]['category'];

/** Where each metered category is counted: operations, measure, and the credit category its milli-credits go to. */
export const CATEGORY_METRICS: Record<Category, { count?: string; units?: string; credit: CreditCategory | null }> = {
  recordWrite: { count: 'records.writes', credit: 'recordWrites' },
  recordIndex: { units: 'records.indexCount', credit: 'indexes' },
  documentWrite: { count: 'documents.writes', credit: 'documentWrites' },
  documentIndex: { units: 'documents.indexCount', credit: 'indexes' },
  textIngest: { count: 'documents.ingest.text', units: 'documents.ingest.textBytes', credit: 'textIngest' },
  fileIngest: { count: 'documents.ingest.file', units: 'documents.ingest.fileBytes', credit: 'fileIngest' },
  searchText: { count: 'search.text', credit: 'search' },
  searchSemantic: { count: 'search.semantic', credit: 'search' },
  searchHybrid: { count: 'search.hybrid', credit: 'search' },
  scriptExecution: { count: 'execution.executions', units: 'execution.totalMillis', credit: 'scriptExecution' },
  // Inference is charged to the balance in cents (units), never to credits.
  inferenceChat: { count: 'inference.chat', units: 'inference.costCents', credit: null },
  inferenceRag: { count: 'inference.rag', units: 'inference.costCents', credit: null },
  inferenceAsk: { count: 'inference.ask', units: 'inference.costCents', credit: null },
};

/** UsageMetered or ReadsMetered (the two usage events: both carry tenant, context and period). */
const isUsage = (e: StoredEvent) => e.type === 'UsageMetered' || e.type === 'ReadsMetered';
/** A write that carries its own charge (record and document writes). */
const isCharged = (e: StoredEvent) => !!(e.metadata.chargeCode || e.metadata.charge?.length) && !!e.metadata.tenantId;
const counts = (e: StoredEvent) => isUsage(e) || isCharged(e);
/**
 * The mark of write charges in rm_usage_streams: the log position of the last one applied (they live on every entity's
 * stream).
 */
const CHARGES_MARK = '$write-charges';

/** The tenant a usage event or a charged write counts for (entryOf's, without decoding the charge). */
const tenantOf = (e: StoredEvent): string => (isUsage(e) ? (e.data.tenantId as string) : e.metadata.tenantId!);

type UsageItems = EventData<'UsageMetered'>['items'];
/** One thing to count: the tenant, context and period it is counted in, and priced items or read counts. */
type Entry = { tenantId: string; contextId: string | null; period: string } & (
  { items: UsageItems } | { reads: EventData<'ReadsMetered'> }
);
function entryOf(e: StoredEvent): Entry {
  if (e.type === 'UsageMetered')
    return { tenantId: e.data.tenantId, contextId: e.data.contextId, period: e.data.period, items: e.data.items };
  if (e.type === 'ReadsMetered')
    return { tenantId: e.data.tenantId, contextId: e.data.contextId, period: e.data.period, reads: e.data };
  return {
    tenantId: e.metadata.tenantId!,
    contextId: e.metadata.contextId,
    period: periodOf(e.metadata.occurredAt),
    items: chargedItems(e),
  };
}

/**
 * Decoded charge codes: the writes of one schema mostly carry the same code, decoded once. Read only, never mutated.
 */
const decoded = new Map<string, UsageItems>();
function chargedItems(e: StoredEvent): UsageItems {
  const code = e.metadata.chargeCode;
  if (!code) return chargeOf(e.metadata);
  let items = decoded.get(code);
  if (!items) {
    if (decoded.size >= 1000) decoded.clear();
    decoded.set(code, (items = chargeOf(e.metadata)));
  }
  return items;
}

/**
 * Each account's running totals (period -> milli-credits) as the last applied batch wrote them, handed to
 * `onChange` after the commit so the credit gate's cache takes them in place.
 */
const written = new Map<string, Map<string, number>>();
/**
 * Accounts whose inference spend moved in the last applied batch: their standing is read again (the balance changed).
 */
const spentMoved = new Set<string>();

type Owner = { accountId: string; environment: string };
/** Tenant -> account and environment never changes once opened: kept for the life of the process. */
const owners = new Map<string, Owner>();

async function ownersOf(q: SqlQueryable, tenantIds: string[]): Promise<Map<string, Owner>> {
  const missing = tenantIds.filter((t) => !owners.has(t));
  if (missing.length) {
    const { rows } = await q.query<{ tenant_id: string; account_id: string; environment: string }>(
      `SELECT tenant_id, account_id, environment FROM ${TENANCY_TABLES.tenants} WHERE tenant_id = ANY($1::text[])`,
      [missing],
    );
    for (const r of rows) owners.set(r.tenant_id, { accountId: r.account_id, environment: r.environment });
  }
  return owners;
}

type Account = { accountId: string; period: string; usedMilli: number; readCalls: number; readBytes: number };
const accountKey = (a: string, p: string) => `${a}\u0000${p}`;
/** A usage event is marked by its stream's revision, a write charge by its log position. */
const markOf = (e: StoredEvent): [string, number] =>
  isUsage(e) ? [e.streamId, e.revision] : [CHARGES_MARK, e.position];
/** Entries of the remembered state at most (each map); past it the memory starts over (one read each then). */
const MAX_REMEMBERED = 10_000;

/**
 * What one projection instance last read or wrote of the marks (rm_usage_streams; -1: none) and of the account
 * totals (rm_usage_accounts; zeros: none). It spares the read before each batch's write, never correctness: the
 * write checks in the same statement that the tables still hold exactly these values (another process, a rolled
 * back transaction or a rebuild may have moved them) and writes nothing otherwise, and the batch is then applied
 * after a read, as without it.
 */
class Remembered {
  marks = new Map<string, number>();
  accounts = new Map<string, Account>();
  mark(id: string, at: number) {
    if (this.marks.size >= MAX_REMEMBERED && !this.marks.has(id)) this.marks.clear();
    this.marks.set(id, at);
  }
  account(a: Account) {
    const k = accountKey(a.accountId, a.period);
    if (this.accounts.size >= MAX_REMEMBERED && !this.accounts.has(k)) this.accounts.clear();
    this.accounts.set(k, { ...a });
  }
  forget(streamIds: string[], accountKeys: string[]) {
    for (const id of streamIds) this.marks.delete(id);
    for (const k of accountKeys) this.accounts.delete(k);
  }
}

/**
 * Each stream's last applied mark and the running totals of the given accounts, read in one round trip (remembered).
 */
async function readState(q: SqlQueryable, memory: Remembered, streamIds: string[], wanted: string[][]) {
  const { rows } = await q.query<{
    marks: Array<{ s: string; r: number }> | null;
    accounts: Array<{ a: string; p: string; m: number; c: number; b: number }> | null;
  }>(
    `SELECT (SELECT json_agg(json_build_object('s', stream_id, 'r', revision)) FROM ${USAGE_TABLES.streams} ` +
      `WHERE stream_id = ANY($1::text[])) AS marks,
            (SELECT json_agg(json_build_object('a', ` +
      `u.account_id, 'p', u.period, 'm', u.used_milli, 'c', u.read_calls, 'b', u.read_bytes))
               ` +
      `FROM ${USAGE_TABLES.accounts} u JOIN unnest($2::text[], $3::text[]) AS w(account_id, period) ON u.account_id ` +
      `= w.account_id AND u.period = w.period) AS accounts`,
    [streamIds, wanted.map((w) => w[0]), wanted.map((w) => w[1])],
  );
  const marks = new Map<string, number>((rows[0]?.marks ?? []).map((m) => [m.s, Number(m.r)]));
  const accounts = new Map<string, Account>();
  for (const r of rows[0]?.accounts ?? [])
    accounts.set(accountKey(r.a, r.p), {
      accountId: r.a,
      period: r.p,
      usedMilli: Number(r.m),
      readCalls: Number(r.c),
      readBytes: Number(r.b),
    });
  for (const id of streamIds) memory.mark(id, marks.get(id) ?? -1);
  for (const [a, p] of wanted)
    memory.account(
      accounts.get(accountKey(a, p)) ?? { accountId: a, period: p, usedMilli: 0, readCalls: 0, readBytes: 0 },
    );
  return { marks, accounts };
}

/**
 * The write of one batch: the guard (the marks and totals it starts from are still what the tables hold), the
 * counters (added to), the account totals (as computed), the streams' marks and the inference spend, all or nothing.
 * One JSON parameter of rows (`c` counters, `a` account totals, `s` marks, `sp` spend, `gs` and `ga` the guard's
 * expected marks and totals): on PGlite each array parameter cost about 0.02 ms to send and parse, and the 23
 * arrays this took before made the call 0.5 ms, the most expensive statement of a write's batch.
 */
const APPLY_STATEMENT =
  `WITH guard AS (
       SELECT NOT EXISTS (
           SELECT 1 FROM jsonb_array_elements(b->'gs') w LEFT ` +
  `JOIN ${USAGE_TABLES.streams} u ON u.stream_id = w->>0
           WHERE coalesce(u.revision, -1) <> ` +
  `(w->>1)::bigint)
         AND NOT EXISTS (
           SELECT 1 FROM jsonb_array_elements(b->'ga') ` +
  `w
           LEFT JOIN ${USAGE_TABLES.accounts} u ON u.account_id = w->>0 AND u.period = w->>1
           WHERE ` +
  `coalesce(u.used_milli, 0) <> (w->>2)::bigint OR coalesce(u.read_calls, 0) <> (w->>3)::bigint OR ` +
  `coalesce(u.read_bytes, 0) <> (w->>4)::bigint) AS ok),
     counters AS (
       INSERT INTO ${USAGE_TABLES.usage} ` +
  `(period, account_id, tenant_id, environment, context_id, metric, value)
       SELECT w->>0, w->>1, ` +
  `w->>2, w->>3, w->>4, w->>5, (w->>6)::bigint FROM jsonb_array_elements(b->'c') w WHERE (SELECT ok FROM ` +
  `guard)
       ON CONFLICT (period, tenant_id, context_id, metric) DO UPDATE SET value = ${USAGE_TABLES.usage}.value + ` +
  `excluded.value),
     accounts AS (
       INSERT INTO ${USAGE_TABLES.accounts} (account_id, period, used_milli, ` +
  `read_calls, read_bytes)
       SELECT w->>0, w->>1, (w->>2)::bigint, (w->>3)::bigint, (w->>4)::bigint ` +
  `FROM jsonb_array_elements(b->'a') w WHERE (SELECT ok FROM guard)
       ON CONFLICT (account_id, period) ` +
  `DO UPDATE SET used_milli = excluded.used_milli, read_calls = excluded.read_calls, read_bytes = ` +
  `excluded.read_bytes),
     marks AS (
       INSERT INTO ${USAGE_TABLES.streams} (stream_id, revision) SELECT ` +
  `w->>0, (w->>1)::bigint FROM jsonb_array_elements(b->'s') w WHERE (SELECT ok FROM guard)
       ON ` +
  `CONFLICT (stream_id) DO UPDATE SET revision = excluded.revision),
     spend AS (
       INSERT INTO ` +
  `${USAGE_TABLES.inferenceSpend} (account_id, spent_cents) SELECT w->>0, (w->>1)::bigint FROM ` +
  `jsonb_array_elements(b->'sp') w WHERE (SELECT ok FROM guard)
       ON CONFLICT (account_id) DO UPDATE ` +
  `SET spent_cents = ${USAGE_TABLES.inferenceSpend}.spent_cents + excluded.spent_cents)
     SELECT ok FROM guard`;
/**
 * The statement as a PL/pgSQL function: its plan is made once per connection and kept, where the statement sent
 * as such was planned again for every batch (0.8 of its 1.1 ms on PGlite, for a batch of 32 creates). Created once
 * per database (a concurrent creator's duplicate is ignored); a changed statement takes a new name.
 */
const APPLY_FUNCTION = 'svc_usage_apply_v2';
const APPLY_DDL = `DO $do$ BEGIN
  CREATE FUNCTION ${APPLY_FUNCTION}(batch text) RETURNS boolean LANGUAGE plpgsql AS $fn$
  DECLARE result boolean; b jsonb := batch::jsonb;
  BEGIN
    ${APPLY_STATEMENT} INTO result;
    RETURN result;
  END $fn$;
EXCEPTION WHEN duplicate_function OR unique_violation THEN NULL;
END $do$;`;
const APPLY_CALL = `SELECT ${APPLY_FUNCTION}($1::text) AS ok`;

/**
 * Applies usage events in log order (other events are ignored): one statement per batch with something billable
 * when the state it starts from is remembered (the write checks it), else a read and a write.
 */
async function applyUsage(q: SqlQueryable, all: StoredEvent[], memory: Remembered): Promise<void> {
  const metered = all.filter(counts);
  if (!metered.length) return;
  const entries = new Map(metered.map((e) => [e, entryOf(e)]));
  const data = (e: StoredEvent) => entries.get(e)!;
  const who = await ownersOf(q, [...new Set(metered.map((e) => data(e).tenantId))]);
  const streamIds = [...new Set(metered.map((e) => markOf(e)[0]))];
  const wanted = [
    ...new Set(metered.map((e) => accountKey(who.get(data(e).tenantId)?.accountId ?? '', data(e).period))),
  ].map((k) => k.split('\u0000'));
  // Trusted only through the check in the write: everything this batch decides on must be remembered.
  const guarded =
    streamIds.every((id) => memory.marks.has(id)) && wanted.every(([a, p]) => memory.accounts.has(accountKey(a, p)));
  const state = guarded
    ? {
        marks: new Map(streamIds.map((id) => [id, memory.marks.get(id)!])),
        accounts: new Map(wanted.map(([a, p]) => [accountKey(a, p), { ...memory.accounts.get(accountKey(a, p))! }])),
      }
    : await readState(q, memory, streamIds, wanted);
  const { marks, accounts } = state;
  const fresh = metered.filter((e) => {
    const [id, at] = markOf(e);
    return at > (marks.get(id) ?? -1);
  });
  // Nothing new by what is remembered: only a read may say so (a rebuild or a rollback may have moved the marks back).
  if (!fresh.length) return guarded ? applyAfterRead(q, all, memory, streamIds, wanted) : undefined;
  /** The marks and totals the write starts from, as checked by the statement (guarded only). */
  const checked = guarded
    ? { marks: new Map(marks), accounts: [...accounts.values()].map((x) => ({ ...x })) }
    : undefined;
  for (const e of fresh) {
    const [id, at] = markOf(e);
    marks.set(id, Math.max(marks.get(id) ?? -1, at));
  }

  const counters = new Map<
    string,
    {
      period: string;
      accountId: string;
      tenantId: string;
      environment: string;
      contextId: string;
      metric: string;
      value: number;
    }
  >();
  /** Cents each account's inference spent in this batch (drawn from its balance, all periods). */
  const spent = new Map<string, number>();
  const moved = new Set<string>();
  for (const e of fresh) {
    const d = data(e);
    const owner = who.get(d.tenantId) ?? { accountId: '', environment: '' };
    const key = accountKey(owner.accountId, d.period);
    moved.add(key);
    let account = accounts.get(key);
    if (!account)
      accounts.set(
        key,
        (account = { accountId: owner.accountId, period: d.period, usedMilli: 0, readCalls: 0, readBytes: 0 }),
      );
    const add = (metric: string | undefined, value: number) => {
      if (!metric || !value) return;
      const k = `${d.period}\u0000${d.tenantId}\u0000${d.contextId ?? ''}\u0000${metric}`;
      const c = counters.get(k);
      if (c) c.value += value;
      else
        counters.set(k, {
          period: d.period,
          accountId: owner.accountId,
          tenantId: d.tenantId,
          environment: owner.environment,
          contextId: d.contextId ?? '',
          metric,
          value,
        });
    };
    if ('items' in d) {
      for (const item of d.items) {
        const m = CATEGORY_METRICS[item.category];
        if (!m) continue;
        add(m.count, item.count);
        add(m.units, item.units);
        if (item.category === 'scriptExecution') {
          add('execution.includedMillis', item.includedMillis ?? 0);
          add('execution.billableMillis', item.billableMillis ?? 0);
        }
        if (m.credit) {
          add(milliMetric(m.credit), item.milli);
          account.usedMilli += item.milli;
        }
        if (m.units === 'inference.costCents' && item.units > 0)
          spent.set(owner.accountId, (spent.get(owner.accountId) ?? 0) + item.units);
      }
    } else {
      const r = d.reads;
      const t = r.terms;
      const callsMilli =
        overageMilli(account.readCalls + r.calls, t.includedCalls, t.callsPerCredit) -
        overageMilli(account.readCalls, t.includedCalls, t.callsPerCredit);
      const bytesMilli =
        overageMilli(account.readBytes + r.bytes, t.includedBytes, t.bytesPerCredit) -
        overageMilli(account.readBytes, t.includedBytes, t.bytesPerCredit);
      account.readCalls += r.calls;
      account.readBytes += r.bytes;
      account.usedMilli += callsMilli + bytesMilli;
      add('reads.calls', r.calls);
      add('reads.bytes', r.bytes);
      add(milliMetric('reads'), callsMilli);
      add(milliMetric('dataOut'), bytesMilli);
    }
  }

  // One round trip: the check (guarded), the counters (added to), the account totals (as computed), the streams' marks,
  // the inference spend.
  const c = [...counters.values()];
  const a = [...accounts.values()].filter((x) => moved.has(accountKey(x.accountId, x.period)));
  const s = [...new Set(fresh.map((e) => markOf(e)[0]))];
  const g = checked ?? { marks: new Map<string, number>(), accounts: [] };
  const ga = g.accounts.filter((x) => moved.has(accountKey(x.accountId, x.period)));
  const batch = JSON.stringify({
    c: c.map((x) => [x.period, x.accountId, x.tenantId, x.environment, x.contextId, x.metric, x.value]),
    a: a.map((x) => [x.accountId, x.period, x.usedMilli, x.readCalls, x.readBytes]),
    s: s.map((id) => [id, marks.get(id)!]),
    sp: [...spent],
    gs: [...g.marks],
    ga: ga.map((x) => [x.accountId, x.period, x.usedMilli, x.readCalls, x.readBytes]),
  });
  const { rows } = await q.query<{ ok: boolean }>(APPLY_CALL, [batch]);
  const ok = rows[0]?.ok as unknown;
  if (checked && ok !== true && ok !== 't') {
    // The tables moved since they were remembered: nothing was written; apply the batch from what they hold.
    return applyAfterRead(q, all, memory, streamIds, wanted);
  }
  for (const id of s) memory.mark(id, marks.get(id)!);
  for (const x of a) memory.account(x);
  if (spent.size) for (const id of spent.keys()) spentMoved.add(id);
  for (const x of accounts.values()) {
    let periods = written.get(x.accountId);
    if (!periods) written.set(x.accountId, (periods = new Map()));
    periods.set(x.period, x.usedMilli);
  }
}

/** The batch again, from the state the tables hold (read first). */
function applyAfterRead(
  q: SqlQueryable,
  all: StoredEvent[],
  memory: Remembered,
  streamIds: string[],
  wanted: string[][],
): Promise<void> {
  memory.forget(
    streamIds,
    wanted.map(([a, p]) => accountKey(a, p)),
  );
  return applyUsage(q, all, memory);
}

/**
 * `onChange(accountId, totals)` hears, after each commit, the accounts whose usage moved
 * with their new totals by period (`undefined`: an account changed plan or limit, or the
 * account is unknown), for the credit gate's cache.
 */
export const usageProjection = (
  onChange?: (accountId?: string, totals?: ReadonlyMap<string, number>) => void,
): SqlProjection => {
  const memory = new Remembered();
  return {
    name: 'usage',
    tables: [USAGE_TABLES.usage, USAGE_TABLES.accounts, USAGE_TABLES.streams, USAGE_TABLES.inferenceSpend],
    ddl:
      `
CREATE TABLE IF NOT EXISTS ${USAGE_TABLES.usage} (
  period text NOT NULL, account_id text NOT NULL, tenant_id ` +
      `text NOT NULL, environment text NOT NULL, context_id text NOT NULL,
  metric text NOT NULL, value ` +
      `bigint NOT NULL,
  PRIMARY KEY (period, tenant_id, context_id, metric));
CREATE INDEX IF NOT EXISTS ` +
      `${USAGE_INDEXES.usageAccount} ON ${USAGE_TABLES.usage} (account_id, period);
CREATE TABLE IF NOT EXISTS ${USAGE_TABLES.accounts} (
  ` +
      `account_id text NOT NULL, period text NOT NULL, used_milli bigint NOT NULL, read_calls bigint NOT ` +
      `NULL, read_bytes bigint NOT NULL,
  PRIMARY KEY (account_id, period));
CREATE TABLE IF NOT EXISTS ` +
      `${USAGE_TABLES.streams} (stream_id text PRIMARY KEY, revision bigint NOT NULL);
CREATE TABLE IF NOT EXISTS ` +
      `${USAGE_TABLES.inferenceSpend} (account_id text PRIMARY KEY, spent_cents bigint NOT NULL);
${APPLY_DDL}`,
    apply: (q, e) => (counts(e) ? applyUsage(q, [e], memory) : Promise.resolve()),
    applyMany: (q, events) => applyUsage(q, events, memory),
    // The runner folds a whole batch in one go (one statement; a read first when the state is not remembered), whatever
    // other events it interleaves.
    applyBatch: (q, events) => applyUsage(q, events, memory),
    afterCommit(events) {
      if (!onChange) return;
      if (events.some((e) => e.type === 'AccountChanged')) return onChange(undefined);
      const moved = new Set<string | undefined>();
      for (const e of events) if (counts(e)) moved.add(owners.get(tenantOf(e))?.accountId);
      for (const accountId of moved) {
        // An account whose balance moved is read again (totals undefined): the gate must see the new balance.
        const totals = accountId === undefined || spentMoved.has(accountId) ? undefined : written.get(accountId);
        if (accountId !== undefined) spentMoved.delete(accountId);
        if (accountId !== undefined) written.delete(accountId);
        onChange(accountId, totals);
      }
    },
  };
};

/** The standing of an account in a period, for the credit gate: its plan terms and the milli-credits used. */
export const sqlAccountStanding = (q: SqlQueryable) => ({
  async standing(
    accountId: string,
    period: string,
  ): Promise<{
    account: { plan?: unknown; creditLimit?: unknown; inferenceBalanceCents?: unknown } | null;
    usedMilli: number;
  }> {
    const { rows } = await q.query<{
      doc: Record<string, unknown>;
      used_milli: number | null;
      spent_cents: number | null;
    }>(
      `SELECT a.doc, u.used_milli, s.spent_cents FROM ${TENANCY_TABLES.accounts} a
         LEFT JOIN ${USAGE_TABLES.accounts} u ON u.account_id = a.account_id AND u.period = $2
         LEFT JOIN ${USAGE_TABLES.inferenceSpend} s ON s.account_id = a.account_id
       WHERE a.account_id = $1`,
      [accountId, period],
    );
    const doc = rows[0]?.doc;
    return {
      account: doc ? withBalance(doc, Number(rows[0].spent_cents ?? 0)) : null,
      usedMilli: Number(rows[0]?.used_milli ?? 0),
    };
  },
});

/**
 * The account as the gates and the usage report see it: its inference balance is what was opened and topped up, less
 * what inference spent.
 */
export function withBalance(doc: Record<string, unknown>, spentCents: number): Record<string, unknown> {
  return { ...doc, inferenceBalanceCents: Number(doc.inferenceBalanceCents ?? 0) - spentCents };
}
