import { randomUUID } from 'node:crypto';
import type { EventMetadata } from '@svc/contracts';
import {
  type DomainAppend,
  type EventStore,
  handleCommand,
  indexOutcomeDecider,
  newestOutcomes,
  NO_WAIT,
  type RecordOutcome,
  type Sql,
  streams,
  systemMetadata,
} from '@svc/domain';

export { OUTCOMES_PER_EVENT, type RecordOutcome } from '@svc/domain';

/**
 * The outcome last appended for each record (its revision and result), so a replay of the log — a crash
 * before the checkpoint, `rebuild search-index` — appends none again. Kept apart from the catalogue tables,
 * which a rebuild drops, and kept for deleted records too (a replay meets their creates again); a context's
 * rows go with the context.
 */
const DDL =
  `
CREATE TABLE IF NOT EXISTS si_reported (
  item_id text PRIMARY KEY, tenant_id text NOT NULL, ` +
  `context_id text NOT NULL, for_revision bigint NOT NULL, outcome text NOT NULL);
CREATE INDEX IF NOT ` +
  `EXISTS si_reported_context ON si_reported (tenant_id, context_id);`;

const keyOf = (o: RecordOutcome) => `${o.status} ${o.code ?? ''}`;

/**
 * Appends records' index outcomes to the log: one RecordsIndexed event per context (and per 500 outcomes) to the
 * context's outcome stream, rather than one event per record in its own stream. A batch of 100 TEXT creates
 * then costs the log (and every projection reading it) a handful of events instead of 100; the records read model
 * applies them in one statement, as before.
 *
 * Left out: an outcome already appended (same revision and result) and one older than the last appended for its
 * record. An outcome for a revision that a newer write has replaced in the meantime can still be appended: the
 * read model applies an outcome only to the revision it names, and webhooks check the record's stream before
 * sending, so neither shows it. (Before, each append expected the record stream's revision, which kept them
 * out of the log, at the price of one stream write per record.)
 */
export class OutcomeLog {
  constructor(
    private readonly sql: Sql,
    private readonly store: EventStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async init(): Promise<void> {
    await this.sql.exec(DDL);
  }

  async append(list: Array<{ outcome: RecordOutcome; meta: EventMetadata }>): Promise<void> {
    if (!list.length) return;
    // The newest outcome of each record (a batch holds one per record; a vector round may follow a text batch).
    const latest = newestOutcomes(list, (x) => x.outcome);
    const { rows } = await this.sql.query<{ item_id: string; for_revision: string | number; outcome: string }>(
      'SELECT item_id, for_revision, outcome FROM si_reported WHERE item_id = ANY($1::text[])',
      [[...latest.keys()]],
    );
    for (const r of rows) {
      const x = latest.get(r.item_id)!;
      const at = Number(r.for_revision);
      if (at > x.outcome.forRevision || (at === x.outcome.forRevision && r.outcome === keyOf(x.outcome)))
        latest.delete(r.item_id);
    }
    if (!latest.size) return;
    const byContext = new Map<string, Array<(typeof list)[number]>>();
    for (const x of latest.values()) {
      const k = `${x.meta.tenantId}\u0000${x.meta.contextId}`;
      const xs = byContext.get(k);
      if (xs) xs.push(x);
      else byContext.set(k, [x]);
    }
    const occurredAt = this.now();
    // One append per context's stream (a stream may appear once in an append), all in one atomic write through the
    // command handler: the outcome streams are append-only (not read, expected revision any).
    const appends: DomainAppend[] = [...byContext.values()].map((xs) => {
      const m = xs[0].meta;
      return {
        streamId: streams.outcomes(m.tenantId!, m.contextId!),
        expectedRevision: 'any',
        events: indexOutcomeDecider.decide({ type: 'RecordIndexOutcomes', outcomes: xs.map((x) => x.outcome) }, null),
        metadata: systemMetadata({ tenantId: m.tenantId, contextId: m.contextId, accountId: m.accountId, occurredAt }),
      };
    });
    const [first, ...rest] = appends;
    await handleCommand(
      { store: this.store, barrier: NO_WAIT, ids: { newId: randomUUID } },
      {
        streamId: first.streamId,
        aggregate: indexOutcomeDecider,
        appendOnly: true,
        metadata: first.metadata!,
        decide: () => ({ events: first.events, also: rest }),
      },
    );
    const reported = [...latest.values()].map((x) => ({
      item_id: x.outcome.recordId,
      tenant_id: x.meta.tenantId,
      context_id: x.meta.contextId,
      for_revision: x.outcome.forRevision,
      outcome: keyOf(x.outcome),
    }));
    await this.sql.query(
      `INSERT INTO si_reported SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(item_id text, tenant_id ` +
        `text, context_id text, for_revision bigint, outcome text)
       ON CONFLICT (item_id) DO UPDATE ` +
        `SET for_revision = excluded.for_revision, outcome = excluded.outcome`,
      [JSON.stringify(reported)],
    );
  }

  async forgetContext(tenantId: string, contextId: string): Promise<void> {
    await this.sql.query('DELETE FROM si_reported WHERE tenant_id = $1 AND context_id = $2', [tenantId, contextId]);
  }
}
