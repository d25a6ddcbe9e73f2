import type { Principal, UsageQuery, UsageReport } from '@svc/contracts';
import {
  allowanceOf,
  CREDIT_CATEGORIES,
  milliMetric,
  type PriceTable,
  type Sql,
  IDENTITY_TABLES,
  TENANCY_TABLES,
  USAGE_TABLES,
} from '@svc/domain';

/**
 * The usage report (spec "Usage report"; docs/api.md "Usage") from the usage
 * read model: one set of counters per tenant and app context, summed into the
 * account, per-environment and per-context figures. Every credit figure is the
 * sum of exact milli-credit counters, so `tenants.live + tenants.test` equals the
 * account total exactly, and so does the sum over `contexts`.
 */
type Env = 'live' | 'test';
type Row = { tenant_id: string; environment: string; context_id: string; metric: string; value: number };
type Figures = Map<string, number>;

const floorCredits = (milli: number) => Math.floor(milli / 1000);

function sum(rows: Row[]): Figures {
  const f: Figures = new Map();
  for (const r of rows) f.set(r.metric, (f.get(r.metric) ?? 0) + Number(r.value));
  return f;
}

/** credits, search, documents, records, inference and execution of one scope (account, environment or context). */
function scopeFigures(f: Figures) {
  const v = (m: string) => f.get(m) ?? 0;
  const breakdown: Record<string, number> = {};
  let usedMilli = 0;
  for (const c of CREDIT_CATEGORIES) {
    const milli = v(milliMetric(c));
    breakdown[c] = floorCredits(milli);
    breakdown[`${c}Milli`] = milli;
    usedMilli += milli;
  }
  const executionMilli = v(milliMetric('scriptExecution'));
  return {
    credits: { used: floorCredits(usedMilli), usedMilli, breakdown },
    search: {
      queries: {
        text: { count: v('search.text') },
        semantic: { count: v('search.semantic') },
        hybrid: { count: v('search.hybrid') },
      },
    },
    documents: {
      ingest: {
        text: { count: v('documents.ingest.text'), bytes: v('documents.ingest.textBytes') },
        file: { count: v('documents.ingest.file'), bytes: v('documents.ingest.fileBytes') },
      },
      writes: { count: v('documents.writes'), indexCount: v('documents.indexCount') },
    },
    records: { writes: { count: v('records.writes'), indexCount: v('records.indexCount') } },
    inference: {
      costCents: v('inference.costCents'),
      endpoints: {
        chat: { calls: v('inference.chat') },
        rag: { calls: v('inference.rag') },
        ask: { calls: v('inference.ask') },
      },
    },
    execution: {
      executions: v('execution.executions'),
      totalMillis: v('execution.totalMillis'),
      includedMillis: v('execution.includedMillis'),
      billableMillis: v('execution.billableMillis'),
      credits: floorCredits(executionMilli),
      creditsMilli: executionMilli,
    },
  };
}

/** The period a query selects: `year` and `month` each default to the current calendar period (UTC). */
export function periodOfQuery(q: Pick<UsageQuery, 'year' | 'month'>, now: Date): string {
  const year = q.year ?? now.getUTCFullYear();
  const month = q.month ?? now.getUTCMonth() + 1;
  return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}`;
}

export class UsageReads {
  constructor(
    private readonly sql: Sql,
    private readonly prices: PriceTable,
  ) {}

  async report(p: Principal, q: UsageQuery, now: Date): Promise<UsageReport> {
    const period = periodOfQuery(q, now);
    const accountId = p.accountId;
    const [accountRows, tenantRows, usageRows] = await Promise.all([
      this.sql.query<{ doc: Record<string, unknown> }>(
        `SELECT a.doc || jsonb_build_object('inferenceBalanceCents', ` +
          `coalesce((a.doc->>'inferenceBalanceCents')::numeric, 0) - coalesce(s.spent_cents, 0)) AS ` +
          `doc
           FROM ${TENANCY_TABLES.accounts} a LEFT JOIN ${USAGE_TABLES.inferenceSpend} s ON s.account_id = ` +
          `a.account_id ` +
          `WHERE a.account_id = $1`,
        [accountId],
      ),
      this.sql.query<{ tenant_id: string; environment: Env }>(
        `SELECT tenant_id, environment FROM ${TENANCY_TABLES.tenants} WHERE account_id = $1`,
        [accountId],
      ),
      this.sql.query<Row>(
        `SELECT tenant_id, environment, context_id, metric, value FROM ${USAGE_TABLES.usage} WHERE account_id = $1 ` +
          `AND period = $2`,
        [accountId, period],
      ),
    ]);
    const account = accountRows.rows[0]?.doc ?? {};
    const tenantOf = new Map<Env, string>(tenantRows.rows.map((r) => [r.environment, r.tenant_id]));
    // A context-confined credential sees its context only (spec "Usage": context confinement).
    const confined = !p.crossContext;
    const inScope = (r: { tenant_id: string; context_id: string }) =>
      !confined || (r.tenant_id === p.tenantId && r.context_id === (p.contextId ?? ''));
    const rows = usageRows.rows.filter(inScope);
    const all = sum(rows);

    // Identity: an account-level rollup of the users and entities that exist now (narrowed like the rest).
    const tenantIds = tenantRows.rows.map((r) => r.tenant_id);
    const identityCount = async (table: typeof IDENTITY_TABLES.users | typeof IDENTITY_TABLES.entities) => {
      const { rows: counted } = await this.sql.query<{ n: number }>(
        `SELECT count(*)::bigint AS n FROM ${table} WHERE tenant_id = ANY($1::text[]) AND ($2::text IS ` +
          `NULL OR (tenant_id = $3::text AND context_id = $2))`,
        [tenantIds, confined ? (p.contextId ?? '') : null, p.tenantId],
      );
      return Number(counted[0]?.n ?? 0);
    };
    const [users, entities] = await Promise.all([
      identityCount(IDENTITY_TABLES.users),
      identityCount(IDENTITY_TABLES.entities),
    ]);

    const tenant = (env: Env) => {
      const tenantId = tenantOf.get(env);
      if (!tenantId) return null;
      if (confined && p.environment !== env) return null;
      return { tenantId, environment: env, ...scopeFigures(sum(rows.filter((r) => r.tenant_id === tenantId))) };
    };

    const byContext = new Map<string, Row[]>();
    for (const r of rows) {
      if (!r.context_id) continue;
      const k = `${r.tenant_id}\u0000${r.context_id}`;
      byContext.set(k, [...(byContext.get(k) ?? []), r]);
    }
    const envOf = new Map([...tenantOf].map(([env, id]) => [id, env]));
    const contexts = [...byContext.values()]
      .filter((list) => list.some((r) => Number(r.value) !== 0))
      .filter((list) => q.contextId === undefined || list[0].context_id === q.contextId)
      .map((list) => ({
        contextId: list[0].context_id,
        tenantId: list[0].tenant_id,
        environment: (envOf.get(list[0].tenant_id) ?? list[0].environment) as Env,
        ...scopeFigures(sum(list)),
      }))
      .sort((a, b) =>
        a.environment === b.environment ? a.contextId.localeCompare(b.contextId) : a.environment === 'live' ? -1 : 1,
      );

    const figures = scopeFigures(all);
    const limit = allowanceOf(this.prices, account);
    const reads = this.prices.reads;
    const readMilli = all.get(milliMetric('reads')) ?? 0;
    const dataOutMilli = all.get(milliMetric('dataOut')) ?? 0;
    const balance = Number(account.inferenceBalanceCents ?? 0);
    return {
      period,
      accountId,
      plan: typeof account.plan === 'string' ? account.plan : 'free',
      credits: {
        ...figures.credits,
        ...(limit !== null
          ? {
              limit,
              limitMilli: limit * 1000,
              remaining: Math.max(0, floorCredits(limit * 1000 - figures.credits.usedMilli)),
            }
          : {}),
      },
      search: figures.search,
      documents: figures.documents,
      records: figures.records,
      inference: { balanceCents: Number.isFinite(balance) ? Math.max(0, balance) : 0, ...figures.inference },
      identity: { users: { count: users }, entities: { count: entities } },
      // Reads are metered per account: a context-confined view reads 0 here (spec).
      reads: {
        calls: {
          used: confined ? 0 : (all.get('reads.calls') ?? 0),
          included: reads.includedCalls,
          overageCredits: confined ? 0 : floorCredits(readMilli),
          overageCreditsMilli: confined ? 0 : readMilli,
        },
        dataOut: {
          bytes: confined ? 0 : (all.get('reads.bytes') ?? 0),
          includedBytes: reads.includedBytes,
          overageCredits: confined ? 0 : floorCredits(dataOutMilli),
          overageCreditsMilli: confined ? 0 : dataOutMilli,
        },
      },
      execution: figures.execution,
      tenants: { live: tenant('live'), test: tenant('test') },
      contexts,
    };
  }
}
