import type { EventMetadata } from '@svc/contracts';
import { type Passage, type Sql, sqlBatch, type SqlStatement } from '@svc/domain';

/**
 * The search projector's semantic work, queued per tenant and served fairly
 * (docs/search.md, "Fairness").
 *
 * The keyword leg of an item is written in log order, inside the batch that
 * read its event; its embeddings and vectors (the slow part: ~70-150 ms of
 * model time per passage with the built-in model) become a *vector job*: one
 * row per item in `si_vector_jobs` (its passages and what its outcome needs),
 * written before the batch's checkpoint, so a crash never loses it, and a
 * descriptor in a `FairQueue` in memory. A newer revision of the item (or its
 * deletion, a mode without vectors, its context's deletion) replaces or
 * cancels the job. The job's outcome event (RecordIndexed / DocumentIndexed /
 * …) is appended only once its vectors are written, so INDEXED still means
 * findable by keyword and by meaning.
 *
 * The queue is served in rounds of one embedding call: each round embeds at
 * most `round` passages (the embedder's `passageBatch`: 8 for the built-in
 * model, one model call; 64 for an OpenAI-compatible endpoint, one request),
 * split evenly over the tenants that have work, tenants taken in turn
 * (round-robin, resuming after the last one served), each tenant's jobs in log
 * order. A big item is cut into slices across rounds, so a small item of
 * another tenant waits for about one round (the call under way, then a share
 * of the next), never for the big item. Completed jobs are committed after
 * their round, while the next round's call runs.
 */
/** Passages embedded per round when the embedder states no `passageBatch` (as an endpoint's request). */
export const ROUND_PASSAGES = 64;

export type VecErr = { code: 'EMBEDDING_FAILED' | 'VECTOR_LIMIT_EXCEEDED'; message: string };

/** What is stored of a job besides its passages (the `job` column). */
export interface VectorJobSpec {
  itemId: string;
  tenantId: string;
  contextId: string;
  /** Global position of the event whose state this job indexes: the projector counts as caught up only before it. */
  position: number;
  kind: 'record' | 'document';
  /** Records: the content revision the outcome is for (forRevision); documents: the text revision. */
  revision: number;
  /** SEMANTIC or HYBRID. */
  mode: string;
  /** Passages to embed. */
  n: number;
  /** The keyword leg's failure (after its retries), when it failed: part of the outcome. */
  textErr: string | null;
  meta: EventMetadata;
}

/** A queued job: the stored spec, plus progress held in memory (lost on a crash: the job starts over). */
export interface VectorJob extends VectorJobSpec {
  /** Failed embeddings or vector writes (EMBEDDING_FAILED after IndexerOptions.attempts). */
  attempts: number;
  /** Failures elsewhere (event store, SQL): only delay the job. */
  stalls: number;
  /** Not served before this time (ms; a retry's backoff). */
  notBefore: number;
  /** Loaded when the job is first served. */
  passages?: Passage[];
  /** Vectors of passages 0..vectors.length-1. */
  vectors: number[][];
  /**
   * The FIFO it waits in (default: its tenant's). Re-embedding a context for a new model (vector-model-rebuild.ts)
   * queues its jobs in a lane of their own, served in turn like another tenant, so the tenant's new writes do not
   * wait behind its rebuild.
   */
  lane?: string;
  /** Its vectors are being written and its outcome appended (not served meanwhile). */
  committing: boolean;
}

/**
 * A part of one job embedded in a round: passages [from, to). A job whose passages are all embedded but not yet
 * committed gives from = to.
 */
export interface Slice {
  job: VectorJob;
  from: number;
  to: number;
}

export const newJob = (spec: VectorJobSpec): VectorJob => ({
  ...spec,
  attempts: 0,
  stalls: 0,
  notBefore: 0,
  vectors: [],
  committing: false,
});
const laneOf = (j: VectorJob) => j.lane ?? j.tenantId;

/** Per-tenant FIFOs of vector jobs, served round-robin with a passage budget per round. */
export class FairQueue {
  private readonly tenants = new Map<string, VectorJob[]>();
  private readonly byItem = new Map<string, VectorJob>();
  /** Tenants with jobs, in turn order; `next` is the one to serve first in the next round. */
  private order: string[] = [];
  private next = 0;

  get size(): number {
    return this.byItem.size;
  }

  /** Passages not yet embedded, per tenant (stats). */
  backlog(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [t, jobs] of this.tenants) out[t] = jobs.reduce((s, j) => s + j.n - j.vectors.length, 0);
    return out;
  }

  /** The queued job of an item (a job that is no longer current was replaced or cancelled). */
  current(itemId: string): VectorJob | undefined {
    return this.byItem.get(itemId);
  }

  /** Queues a job at the end of its tenant's FIFO, replacing the item's earlier job. */
  put(job: VectorJob): void {
    this.remove(job.itemId);
    const lane = laneOf(job);
    let fifo = this.tenants.get(lane);
    if (!fifo) {
      this.tenants.set(lane, (fifo = []));
      this.order.push(lane);
    }
    fifo.push(job);
    this.byItem.set(job.itemId, job);
  }

  remove(itemId: string): VectorJob | undefined {
    const job = this.byItem.get(itemId);
    if (!job) return undefined;
    this.byItem.delete(itemId);
    const fifo = this.tenants.get(laneOf(job))!;
    fifo.splice(fifo.indexOf(job), 1);
    if (!fifo.length) this.dropTenant(laneOf(job));
    return job;
  }

  /** Cancels every job of a tenant's context; returns their item ids. */
  removeContext(tenantId: string, contextId: string): string[] {
    const ids = [...this.byItem.values()]
      .filter((j) => j.tenantId === tenantId && j.contextId === contextId)
      .map((j) => j.itemId);
    for (const id of ids) this.remove(id);
    return ids;
  }

  clear(): void {
    this.tenants.clear();
    this.byItem.clear();
    this.order = [];
    this.next = 0;
  }

  /** The lowest log position with semantic work outstanding (Infinity when none). */
  minPosition(): number {
    let min = Infinity;
    for (const j of this.byItem.values()) if (j.position < min) min = j.position;
    return min;
  }

  /** The earliest time a job in backoff may be served again (Infinity when none waits). */
  nextRetryAt(): number {
    let t = Infinity;
    for (const j of this.byItem.values()) if (j.notBefore < t) t = j.notBefore;
    return t;
  }

  private dropTenant(t: string) {
    this.tenants.delete(t);
    const i = this.order.indexOf(t);
    this.order.splice(i, 1);
    if (i < this.next) this.next -= 1;
    if (this.next >= this.order.length) this.next = 0;
  }

  /**
   * The next round: at most `budget` passages, split evenly over the tenants with servable work (at least one passage
   * each; tenants past the budget wait for the next round), tenants in turn starting after the one served last, each
   * tenant's jobs in order (a share may finish one job and start the next). A job whose passages are all embedded but
   * not committed (a failed write) comes back as an empty slice. Jobs in backoff or being committed are skipped.
   */
  round(budget = ROUND_PASSAGES, now = Date.now()): Slice[] {
    const ready = (j: VectorJob) => j.notBefore <= now && !j.committing;
    const n = this.order.length;
    const active = this.order.filter((t) => this.tenants.get(t)!.some(ready)).length;
    if (!active) return [];
    const share = Math.max(1, Math.floor(budget / active));
    const out: Slice[] = [];
    let used = 0;
    let last = -1;
    for (let k = 0; k < n && used < budget; k++) {
      const ti = (this.next + k) % n;
      let left = Math.min(share, budget - used);
      for (const j of this.tenants.get(this.order[ti])!) {
        if (!ready(j)) continue;
        const from = j.vectors.length;
        const take = Math.min(j.n - from, left);
        out.push({ job: j, from, to: from + take });
        last = ti;
        left -= take;
        used += take;
        if (left <= 0) break;
      }
    }
    if (last >= 0) this.next = (last + 1) % n;
    return out;
  }
}

/** The stored side of the queue: `si_vector_jobs` (created with the search catalogue). */
export class VectorJobStore {
  constructor(private readonly sql: Sql) {}

  /** Writes (replaces) the jobs of items, with their passages. */
  async put(jobs: Array<{ spec: VectorJobSpec; passages: Passage[] }>): Promise<void> {
    await this.replace([], jobs);
  }

  async delete(itemIds: string[]): Promise<void> {
    await this.replace(itemIds, []);
  }

  /** Removes the jobs of `remove`, then stores `put` (an item's job replaced): one transaction, one round trip. */
  async replace(remove: string[], put: Array<{ spec: VectorJobSpec; passages: Passage[] }>): Promise<void> {
    const statements: SqlStatement[] = [];
    if (remove.length)
      statements.push({ text: 'DELETE FROM si_vector_jobs WHERE item_id = ANY($1::text[])', params: [remove] });
    if (put.length) {
      const rows = put.map(({ spec, passages }) => ({
        item_id: spec.itemId,
        tenant_id: spec.tenantId,
        context_id: spec.contextId,
        position: spec.position,
        job: spec,
        passages,
      }));
      statements.push({
        text:
          `INSERT INTO si_vector_jobs (item_id, tenant_id, context_id, position, job, passages)
       ` +
          `SELECT x.item_id, x.tenant_id, x.context_id, x.position, x.job, x.passages
         FROM ` +
          `jsonb_to_recordset($1::jsonb) AS x(item_id text, tenant_id text, context_id text, position ` +
          `bigint, job jsonb, passages jsonb)
       ON CONFLICT (item_id) DO UPDATE SET tenant_id = ` +
          `excluded.tenant_id, context_id = excluded.context_id, position = excluded.position,
         job ` +
          `= excluded.job, passages = excluded.passages, enqueued_at = now()`,
        params: [JSON.stringify(rows)],
      });
    }
    await sqlBatch(this.sql, statements);
  }

  async deleteContext(tenantId: string, contextId: string): Promise<void> {
    await this.sql.query('DELETE FROM si_vector_jobs WHERE tenant_id = $1 AND context_id = $2', [tenantId, contextId]);
  }

  /** Every stored job, in log order (a restart resumes them). */
  async all(): Promise<VectorJobSpec[]> {
    const { rows } = await this.sql.query<{ job: VectorJobSpec }>(
      'SELECT job FROM si_vector_jobs ORDER BY position, item_id',
    );
    return rows.map((r) => r.job);
  }

  /** The passages of jobs, by item id, with the position of the stored job (a job replaced meanwhile has another). */
  async passages(itemIds: string[]): Promise<Map<string, { position: number; passages: Passage[] }>> {
    const { rows } = await this.sql.query<{ item_id: string; position: number | string; passages: Passage[] }>(
      'SELECT item_id, position, passages FROM si_vector_jobs WHERE item_id = ANY($1::text[])',
      [[...new Set(itemIds)]],
    );
    return new Map(rows.map((r) => [r.item_id, { position: Number(r.position), passages: r.passages }]));
  }
}
