import { InternalError } from '@svc/contracts';
import {
  type AppendRequest,
  type AppendResult,
  asStoredEvent,
  type EventStore,
  expectationHolds,
  type ExpectedRevision,
  type NewEvent,
  type ReadStreamOptions,
  type Sql,
  type SqlQueryable,
  type StoredEvent,
  WrongExpectedRevisionError,
} from '@svc/domain';

/**
 * PostgreSQL event store; the same SQL serves PGlite (embedded default) and a
 * PostgreSQL server. Appends are group-committed: concurrent callers are queued
 * and written in one transaction of two statements (read the streams' current
 * revisions, insert), each request decided on its own (a failed expectation
 * fails only that request). On a server, a transaction-scoped advisory lock
 * makes positions commit in order, so a reader of the global log never sees a
 * gap that fills in later; PGlite is one connection, where this holds already.
 */
const APPEND_LOCK = 7_348_001;
const MAX_EVENTS_PER_FLUSH = 1000;
export const APPENDED_CHANNEL = 'es_appended';
const MAX_CACHED_STREAMS = 50_000;
const MAX_CACHED_STREAM = 500;

/** readStream's options applied to a whole stream held in memory. */
function sliceStream(all: StoredEvent[], o: ReadStreamOptions): StoredEvent[] {
  const max = o.maxCount ?? Number.MAX_SAFE_INTEGER;
  if (o.direction === 'backwards') {
    const from = o.fromRevision ?? Number.MAX_SAFE_INTEGER;
    return all
      .filter((e) => e.revision <= from)
      .reverse()
      .slice(0, max);
  }
  const from = o.fromRevision ?? 0;
  return all.filter((e) => e.revision >= from).slice(0, max);
}

export const EVENT_STORE_DDL = `
CREATE TABLE IF NOT EXISTS es_events (
  position   bigint PRIMARY KEY,
  stream_id  text   NOT NULL,
  revision   bigint NOT NULL,
  event_id   uuid   NOT NULL,
  event_type text   NOT NULL,
  data       jsonb  NOT NULL,
  metadata   jsonb  NOT NULL,
  UNIQUE (stream_id, revision)
);
-- readTenant (audit export): one tenant's events in log order without scanning the others.
CREATE INDEX IF NOT EXISTS es_events_tenant ON es_events ((metadata->>'tenantId'), position);
`;

type Pending = {
  requests: AppendRequest[];
  resolve: (r: AppendResult[]) => void;
  reject: (e: unknown) => void;
};

type Row = {
  position: number;
  stream_id: string;
  revision: number;
  event_id: string;
  event_type: string;
  data: Record<string, unknown>;
  metadata: StoredEvent['metadata'];
};

const toStored = (r: Row): StoredEvent =>
  asStoredEvent({
    position: Number(r.position),
    streamId: r.stream_id,
    revision: Number(r.revision),
    id: r.event_id,
    type: r.event_type,
    data: r.data,
    metadata: r.metadata,
  });

export class PostgresEventStore implements EventStore {
  private queue: Pending[] = [];
  private flushing = false;
  private listeners = new Set<() => void>();
  private unlisten: (() => Promise<void>) | undefined;
  /** PGlite has one writer (this process): the head position is known without asking. */
  private head: number | undefined;
  /** A server: the last position this instance appended (its subscribers were woken for it already). */
  private written = 0;
  /**
   * Whole streams (or their absence) cached, updated by this instance's appends after they commit. On PGlite every
   * append passes through this instance, so the cache is exact and serves readStream. On a server another process may
   * append: the cache serves only readStreamCached (not exact: its readers check what they read when they append), and
   * a stream whose expectation failed is dropped from it.
   */
  private streams = new Map<string, StoredEvent[]>();
  private readonly exact: boolean;
  /** Streams being loaded into the cache: true once an append to one completed during its load. */
  private readonly loading = new Map<string, boolean>();

  private constructor(private readonly sql: Sql) {
    this.exact = sql.kind !== 'postgres';
  }

  static async open(sql: Sql): Promise<PostgresEventStore> {
    await sql.exec(EVENT_STORE_DDL);
    const store = new PostgresEventStore(sql);
    // Another process's appends wake our subscribers too (a server only: PGlite is one process).
    // Not for the echo of this instance's own append: its subscribers were woken at commit, and a position at or
    // below it (positions commit in order under the append lock) was visible to them then. Each wake costs every
    // subscriber at the head one more read of the log. An empty payload (notifications missed) always wakes.
    if (sql.kind === 'postgres')
      store.unlisten = await sql.listen(APPENDED_CHANNEL, (payload) => {
        if (payload && Number(payload) <= store.written) return;
        store.notify();
      });
    else store.head = await store.headPosition();
    return store;
  }

  append(streamId: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    return this.appendMulti([{ streamId, events, expectedRevision }]).then((r) => r[0]);
  }

  appendMulti(requests: AppendRequest[]): Promise<AppendResult[]> {
    const names = new Set(requests.map((r) => r.streamId));
    if (names.size !== requests.length)
      return Promise.reject(new InternalError('appendMulti: a stream may appear once'));
    return new Promise((resolve, reject) => {
      this.queue.push({ requests, resolve, reject });
      if (!this.flushing) {
        // Defer to the next turn: PGlite answers without real I/O, so flushing now would commit each
        // request alone; every append whose request arrived in this turn joins one transaction instead.
        this.flushing = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch: Pending[] = [];
        let count = 0;
        while (this.queue.length > 0 && (batch.length === 0 || count < MAX_EVENTS_PER_FLUSH)) {
          const p = this.queue.shift()!;
          batch.push(p);
          count += p.requests.reduce((n, r) => n + r.events.length, 0);
        }
        await this.writeBatch(batch);
      }
    } finally {
      this.flushing = false;
    }
  }

  /**
   * On PGlite (one writer, streams cache exact) a batch whose every stream is cached or expected absent needs no
   * revision query: absence is assumed and the (stream_id, revision) unique key refuses a stream that exists after all,
   * so such a batch is written again with the query (`checked`). A record create's append is then one INSERT.
   */
  private knownWithoutQuery(batch: Pending[]): Map<string, number> | null {
    if (!this.exact) return null;
    const current = new Map<string, number>();
    for (const p of batch)
      for (const r of p.requests) {
        const cached = this.streams.get(r.streamId);
        if (cached) {
          if (cached.length) current.set(r.streamId, cached[cached.length - 1].revision);
        } else if (r.expectedRevision !== 'no_stream') return null;
      }
    return current;
  }

  private async writeBatch(batch: Pending[], checked = false): Promise<void> {
    const outcomes: Array<AppendResult[] | Error> = [];
    let wrote = false;
    let written = 0;
    const known = checked ? null : this.knownWithoutQuery(batch);
    const server = this.sql.kind === 'postgres';
    const streamIds = [...new Set(batch.flatMap((p) => p.requests.map((r) => r.streamId)))];
    // One statement: each stream's last revision and, on a server, the head. A max() per stream is one backward
    // step on the (stream_id, revision) index however long the stream is (a grouped max would read the whole
    // stream: long-lived streams such as a tenant's usage stream must not slow every append down).
    const revisionsSql =
      'SELECT s.id AS stream_id, (SELECT max(e.revision) FROM es_events e WHERE e.stream_id = s.id)::bigint' +
      ' AS revision FROM unnest($1::text[]) AS s(id)' +
      (server ? ' UNION ALL SELECT NULL, coalesce(max(position), 0)::bigint FROM es_events' : '');
    const insertSql =
      'INSERT INTO es_events (position, stream_id, revision, event_id, event_type, data, metadata) SELECT * FROM' +
      ' unnest($1::bigint[], $2::text[], $3::bigint[], $4::uuid[], $5::text[], $6::jsonb[], $7::jsonb[])';
    /** The batch decided on the streams' revisions (and head) read: the columns to insert, each request's outcome. */
    const missed: string[] = [];
    const decide = (rows: Array<{ stream_id: string | null; revision: number | null }> | null) => {
      outcomes.length = 0;
      missed.length = 0;
      const current = new Map<string, number>(known ?? []);
      let position = this.head ?? 0;
      for (const r of rows ?? []) {
        if (r.stream_id === null) position = Number(r.revision);
        else if (r.revision !== null) current.set(r.stream_id, Number(r.revision));
      }
      const cols = {
        pos: [] as number[],
        sid: [] as string[],
        rev: [] as number[],
        eid: [] as string[],
        type: [] as string[],
        data: [] as string[],
        meta: [] as string[],
      };
      for (const p of batch) {
        const failed = p.requests.find((r) => !expectationHolds(r.expectedRevision, current.get(r.streamId) ?? -1));
        if (failed) {
          missed.push(failed.streamId);
          const actual = current.get(failed.streamId);
          outcomes.push(
            new WrongExpectedRevisionError(failed.streamId, failed.expectedRevision, actual ?? 'no_stream'),
          );
          continue;
        }
        const results: AppendResult[] = [];
        for (const r of p.requests) {
          let rev = current.get(r.streamId) ?? -1;
          for (const e of r.events) {
            rev += 1;
            position += 1;
            cols.pos.push(position);
            cols.sid.push(r.streamId);
            cols.rev.push(rev);
            cols.eid.push(e.id);
            cols.type.push(e.type);
            cols.data.push(JSON.stringify(e.data));
            cols.meta.push(JSON.stringify(e.metadata));
          }
          current.set(r.streamId, rev);
          results.push({ nextExpectedRevision: rev, position });
        }
        outcomes.push(results);
      }
      const params = [cols.pos, cols.sid, cols.rev, cols.eid, cols.type, cols.data, cols.meta];
      return { params, count: cols.pos.length, position };
    };
    try {
      if (server && this.sql.pipelined) {
        // Two round trips: BEGIN, the lock and the revisions sent together; then the insert (its notification in the
        // same statement, delivered at commit) and COMMIT together. A refused insert aborts the transaction, and the
        // COMMIT behind it then rolls back.
        await this.sql.pipelined(async (q) => {
          const first = await Promise.allSettled([
            q.query('BEGIN'),
            q.query('SELECT pg_advisory_xact_lock($1)', [APPEND_LOCK]),
            q.query<{ stream_id: string | null; revision: number | null }>(revisionsSql, [streamIds]),
          ]);
          const failed = first.find((r) => r.status === 'rejected');
          if (failed) throw failed.reason;
          const { params, count, position } = decide(
            (first[2] as PromiseFulfilledResult<{ rows: Array<{ stream_id: string | null; revision: number | null }> }>)
              .value.rows,
          );
          if (count === 0) {
            await q.query('COMMIT');
            return;
          }
          const second = await Promise.allSettled([
            q.query(`WITH ins AS (${insertSql}) SELECT pg_notify($8, $9)`, [
              ...params,
              APPENDED_CHANNEL,
              String(position),
            ]),
            q.query('COMMIT'),
          ]);
          const refused = second.find((r) => r.status === 'rejected');
          if (refused) throw refused.reason;
          wrote = true;
          written = position;
        });
      } else {
        const work = async (q: SqlQueryable) => {
          if (server) await q.query('SELECT pg_advisory_xact_lock($1)', [APPEND_LOCK]);
          const { rows } = known
            ? { rows: null }
            : await q.query<{ stream_id: string | null; revision: number | null }>(revisionsSql, [streamIds]);
          const { params, count, position } = decide(rows);
          if (count === 0) return;
          await q.query(insertSql, params);
          if (server) await q.query('SELECT pg_notify($1, $2)', [APPENDED_CHANNEL, String(position)]);
          wrote = true;
          written = position;
        };
        // Without the revision query the INSERT is the only statement: atomic on its own, no transaction around it.
        if (known) await work(this.sql);
        else await this.sql.tx(work);
      }
    } catch (e) {
      wrote = false;
      // An absence assumed wrongly (or any refusal of an unchecked batch): the same batch again, checked.
      if (known) return this.writeBatch(batch, true);
      // One request the engine refuses must not fail the others it was batched with: write each alone.
      if (batch.length > 1) {
        for (const p of batch) await this.writeBatch([p], true);
        return;
      }
      for (const p of batch) p.reject(e);
      return;
    }
    if (wrote && this.head !== undefined) this.head = written;
    if (wrote) this.written = Math.max(this.written, written);
    if (wrote) this.cacheAppended(batch, outcomes);
    // A failed expectation on a server: this process's copy of the stream may be behind the log.
    if (!this.exact) for (const id of missed) this.streams.delete(id);
    batch.forEach((p, i) => {
      const o = outcomes[i];
      if (o instanceof Error) p.reject(o);
      else p.resolve(o);
    });
    if (wrote) this.notify();
  }

  private cacheAppended(batch: Pending[], outcomes: Array<AppendResult[] | Error>) {
    batch.forEach((p, i) => {
      const o = outcomes[i];
      if (o instanceof Error) return;
      p.requests.forEach((r, j) => {
        const cached = this.streams.get(r.streamId);
        if (!cached) {
          // Not cached: the next read loads it whole; a load in flight may have read the stream before this append.
          if (this.loading.has(r.streamId)) this.loading.set(r.streamId, true);
          return;
        }
        let position = o[j].position - r.events.length;
        let revision = o[j].nextExpectedRevision - r.events.length;
        const last = cached.length ? cached[cached.length - 1].revision : -1;
        // Events of another process's appends between the cached ones and these (a server): not held, so not cached.
        if (revision > last) {
          this.streams.delete(r.streamId);
          return;
        }
        for (const e of r.events) {
          revision += 1;
          position += 1;
          // A load that read the stream after this append was committed already holds the event.
          if (revision > last) cached.push(asStoredEvent({ ...e, streamId: r.streamId, revision, position }));
        }
        if (cached.length > MAX_CACHED_STREAM) this.streams.delete(r.streamId);
      });
    });
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    if (this.exact) return sliceStream(await this.cachedStream(streamId), options);
    return this.queryStream(streamId, options);
  }

  async readStreamCached(streamId: string): Promise<{ events: StoredEvent[]; exact: boolean }> {
    return { events: (await this.cachedStream(streamId)).slice(), exact: this.exact };
  }

  private async cachedStream(streamId: string): Promise<StoredEvent[]> {
    let all = this.streams.get(streamId);
    if (all) {
      this.streams.delete(streamId); // LRU: most recent last
      this.streams.set(streamId, all);
      return all;
    }
    // Cached only if no append to the stream completed while it was read (else that append's event may be missing).
    const first = !this.loading.has(streamId);
    if (first) this.loading.set(streamId, false);
    let raced = !first;
    try {
      all = await this.queryStream(streamId, {});
    } finally {
      if (first) {
        raced = this.loading.get(streamId) === true;
        this.loading.delete(streamId);
      }
    }
    if (!raced && all.length <= MAX_CACHED_STREAM) {
      this.streams.set(streamId, all);
      if (this.streams.size > MAX_CACHED_STREAMS) this.streams.delete(this.streams.keys().next().value!);
    }
    return all;
  }

  private async queryStream(streamId: string, options: ReadStreamOptions): Promise<StoredEvent[]> {
    const backwards = options.direction === 'backwards';
    const from = options.fromRevision ?? (backwards ? Number.MAX_SAFE_INTEGER : 0);
    const { rows } = await this.sql.query<Row>(
      `SELECT position, stream_id, revision, event_id, event_type, data, metadata FROM es_events
       WHERE stream_id = $1 AND revision ${backwards ? '<=' : '>='} $2
       ORDER BY revision ${backwards ? 'DESC' : 'ASC'} LIMIT $3`,
      [streamId, from, options.maxCount ?? 1_000_000],
    );
    return rows.map(toStored);
  }

  async readAll(after: number, maxCount: number): Promise<StoredEvent[]> {
    const { rows } = await this.sql.query<Row>(
      `SELECT position, stream_id, revision, event_id, event_type, data, metadata FROM es_events
       WHERE position > $1 ORDER BY position LIMIT $2`,
      [after, maxCount],
    );
    return rows.map(toStored);
  }

  async readTenant(tenantId: string, after: number, maxCount: number): Promise<StoredEvent[]> {
    const { rows } = await this.sql.query<Row>(
      `SELECT position, stream_id, revision, event_id, event_type, data, metadata FROM es_events
       WHERE metadata->>'tenantId' = $1 AND position > $2 ORDER BY metadata->>'tenantId', position LIMIT $3`,
      [tenantId, after, maxCount],
    );
    return rows.map(toStored);
  }

  async headPosition(): Promise<number> {
    const { rows } = await this.sql.query<{ p: number }>(
      'SELECT coalesce(max(position), 0)::bigint AS p FROM es_events',
    );
    return Number(rows[0].p);
  }

  onAppended(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify() {
    for (const l of this.listeners) l();
  }

  async close(): Promise<void> {
    await this.unlisten?.();
    this.listeners.clear();
  }
}
