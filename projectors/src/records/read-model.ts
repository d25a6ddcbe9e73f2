import type { EventData, SchemaDefinition } from '@svc/contracts';
import {
  indexEntries,
  isExternalized,
  newestOutcomes,
  payloadBytes,
  projectedPayload,
  sortKey,
  type SqlQueryable,
  type StoredEvent,
  RECORD_INDEXES,
  RECORD_TABLES,
  recordsChangedBy,
  SCHEMA_TABLES,
} from '@svc/domain';
import type { SqlProjection } from '../runtime/runner';
import { deleteRemovedRows, deleteRows } from '../runtime/removals';

/**
 * Records by tenant and context, their lookup index, and out-of-line payloads
 * (4 KB or more, or LARGE_PAYLOAD): the row keeps the projection of inline and
 * lookup fields, the whole payload lives in rm_record_payloads. Every change is
 * guarded by the stream revision, so replaying an event changes nothing.
 */
/** Schema documents by id, one statement for a whole run. */
export async function schemaDocs(q: SqlQueryable, ids: string[]): Promise<Map<string, SchemaDefinition>> {
  const { rows } = await q.query<{ schema_id: string; doc: SchemaDefinition }>(
    `SELECT schema_id, doc FROM ${SCHEMA_TABLES.schemas} WHERE schema_id = ANY($1::text[])`,
    [[...new Set(ids)]],
  );
  return new Map(rows.map((r) => [r.schema_id, r.doc]));
}

/**
 * The schema documents of a run of RecordCreated events, read once for every projection of the run (records and
 * history): the runner hands each the same event objects in one transaction, and a run holds no schema event.
 */
const runDocs = new WeakMap<StoredEvent, { q: SqlQueryable; docs: Promise<Map<string, SchemaDefinition>> }>();
export function schemaDocsOfRun(
  q: SqlQueryable,
  created: StoredEvent<'RecordCreated'>[],
): Promise<Map<string, SchemaDefinition>> {
  const seen = runDocs.get(created[0]);
  if (seen && seen.q === q) return seen.docs;
  const docs = schemaDocs(
    q,
    created.map((e) => e.data.schemaId),
  );
  runDocs.set(created[0], { q, docs });
  return docs;
}

/**
 * An item of a lookup index (rm_record_lookups, rm_document_lookups): where it lives, its type and what its entries
 * come from.
 */
export interface LookupItem {
  id: string;
  tenantId: string | null;
  contextId: string | null;
  typeName: string;
  payload: Record<string, unknown>;
  blindIndex: Record<string, string> | undefined;
  createdAt: string;
  updatedAt: string;
}

/** Replaces an item's rows in a lookup index with the entries its schema declares (none without a schema). */
export async function replaceLookupRows(
  q: SqlQueryable,
  index: { table: string; idColumn: string },
  item: LookupItem,
  def: SchemaDefinition | undefined,
): Promise<void> {
  await q.query(`DELETE FROM ${index.table} WHERE ${index.idColumn} = $1`, [item.id]);
  if (!def) return;
  const entries = indexEntries(def, item.payload, item.blindIndex);
  if (!entries.length) return;
  const sk = sortKey(def, item);
  await q.query(
    `INSERT INTO ${index.table} (tenant_id, context_id, type_name, field, k1, k2, k3, sort_key, ` +
      `${index.idColumn})
     SELECT $1, $2, $3, f, k1, k2, k3, $4, $5 FROM unnest($6::text[], $7::text[], ` +
      `$8::text[], $9::text[]) AS t(f, k1, k2, k3)`,
    [
      item.tenantId,
      item.contextId,
      item.typeName,
      sk,
      item.id,
      entries.map((x) => x.field),
      entries.map((x) => x.k1),
      entries.map((x) => x.k2 ?? ''),
      entries.map((x) => x.k3 ?? ''),
    ],
  );
}
const RECORD_LOOKUPS = { table: RECORD_TABLES.lookups, idColumn: 'record_id' };

/**
 * `onChanged` hears the ids of records each committed batch touched (null: possibly all of them), and the
 * RecordCreated events whose rows the batch inserted and nothing after them in the batch changed: such a row is a
 * function of its event (RecentRecords keeps them).
 */
export const recordsProjection = (
  onChanged?: (ids: string[] | null, created: StoredEvent<'RecordCreated'>[]) => void,
): SqlProjection => {
  /** Records inserted by the batch being applied (a replayed create inserts nothing). */
  let inserted = new Set<string>();
  return {
    name: 'records',
    tables: [RECORD_TABLES.records, RECORD_TABLES.payloads, RECORD_TABLES.lookups],
    ddl:
      `
CREATE TABLE IF NOT EXISTS ${RECORD_TABLES.records} (
  record_id text PRIMARY KEY, tenant_id text NOT NULL, ` +
      `context_id text NOT NULL, schema_id text NOT NULL, type_name text NOT NULL,
  schema_version int NOT ` +
      `NULL, payload jsonb NOT NULL, payload_bytes int NOT NULL, externalized boolean NOT NULL,
  status text ` +
      `NOT NULL, folder_id text, user_id text, scopes jsonb NOT NULL,
  external_id text, index_mode text, ` +
      `index_status text, created_by text, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
  ` +
      `version int NOT NULL, revision bigint NOT NULL);
CREATE INDEX IF NOT EXISTS ${RECORD_INDEXES.recordsList} ON ` +
      `${RECORD_TABLES.records} (tenant_id, context_id, created_at, record_id);
CREATE INDEX IF NOT EXISTS ${RECORD_INDEXES.recordsType} ` +
      `ON ${RECORD_TABLES.records} (tenant_id, context_id, type_name, created_at, record_id);
CREATE INDEX IF NOT EXISTS ` +
      `${RECORD_INDEXES.recordsFolder} ON ${RECORD_TABLES.records} (folder_id);
CREATE TABLE IF NOT EXISTS ${RECORD_TABLES.payloads} (record_id ` +
      `text PRIMARY KEY, payload jsonb NOT NULL);
CREATE TABLE IF NOT EXISTS ${RECORD_TABLES.lookups} (
  tenant_id ` +
      `text NOT NULL, context_id text NOT NULL, type_name text NOT NULL, field text NOT NULL,
  k1 text ` +
      `COLLATE "C" NOT NULL, k2 text COLLATE "C" NOT NULL, k3 text COLLATE "C" NOT NULL, sort_key text COLLATE ` +
      `"C" NOT NULL,
  record_id text NOT NULL);
CREATE INDEX IF NOT EXISTS ${RECORD_INDEXES.recordLookupsKey} ON ` +
      `${RECORD_TABLES.lookups} (tenant_id, context_id, type_name, field, k1, k2, k3, sort_key, record_id);
CREATE ` +
      `INDEX IF NOT EXISTS ${RECORD_INDEXES.recordLookupsRecord} ON ${RECORD_TABLES.lookups} (record_id);
ALTER TABLE ${RECORD_TABLES.records} ` +
      `ADD COLUMN IF NOT EXISTS index_failure jsonb;`,
    /**
     * A run of RecordCreated events (distinct new records) and index outcomes: five statements for the creates and one
     * for the outcomes, whatever the run's length. An outcome always follows its record's create in the log, so the
     * creates go first.
     */
    async applyMany(q: SqlQueryable, events: StoredEvent[]) {
      for (const id of await applyCreated(
        q,
        events.filter((e) => e.type === 'RecordCreated'),
      ))
        inserted.add(id);
      await applyOutcomes(q, events.flatMap(outcomesOf));
    },
    afterCommit(events) {
      const fresh = inserted;
      inserted = new Set();
      if (!onChanged) return;
      const touched = new Set<string>();
      const created: StoredEvent<'RecordCreated'>[] = [];
      // Newest first: a create counts only when nothing after it in the batch changed its record; a context or tenant
      // gone may have taken any record before it.
      for (let i = events.length - 1; i >= 0; i--) {
        const e = events[i];
        const changed = recordsChangedBy(e);
        if (changed === 'all') return onChanged(null, created.reverse());
        if (e.type === 'RecordCreated' && fresh.has(e.data.recordId) && !touched.has(e.data.recordId)) created.push(e);
        for (const id of changed) touched.add(id);
      }
      if (touched.size) onChanged([...touched], created.reverse());
    },
    async apply(q: SqlQueryable, e: StoredEvent) {
      const m = e.metadata;
      const schemaOf = async (schemaId: string) => (await schemaDocs(q, [schemaId])).get(schemaId);
      const store = async (recordId: string, def: SchemaDefinition | undefined, payload: Record<string, unknown>) => {
        const bytes = payloadBytes(payload);
        const ext = isExternalized(def, bytes);
        if (ext)
          await q.query(
            `INSERT INTO ${RECORD_TABLES.payloads} VALUES ($1, $2) ON CONFLICT (record_id) DO UPDATE SET payload = ` +
              'excluded.payload',
            [recordId, JSON.stringify(payload)],
          );
        else await q.query(`DELETE FROM ${RECORD_TABLES.payloads} WHERE record_id = $1`, [recordId]);
        return { rowPayload: ext ? projectedPayload(def, payload) : payload, bytes, ext };
      };
      const index = (
        recordId: string,
        typeName: string,
        def: SchemaDefinition | undefined,
        payload: Record<string, unknown>,
        blindIndex: Record<string, string> | undefined,
        createdAt: string,
        updatedAt: string,
      ) =>
        replaceLookupRows(
          q,
          RECORD_LOOKUPS,
          {
            id: recordId,
            tenantId: m.tenantId,
            contextId: m.contextId,
            typeName,
            payload,
            blindIndex,
            createdAt,
            updatedAt,
          },
          def,
        );
      switch (e.type) {
        case 'RecordCreated': {
          const d = e.data;
          const exists = await q.query(`SELECT 1 FROM ${RECORD_TABLES.records} WHERE record_id = $1`, [d.recordId]);
          if (exists.rows.length) return;
          const def = await schemaOf(d.schemaId);
          const s = await store(d.recordId, def, d.payload);
          inserted.add(d.recordId);
          await q.query(
            `INSERT INTO ${RECORD_TABLES.records} (record_id, tenant_id, context_id, schema_id, type_name, ` +
              `schema_version, payload, payload_bytes, externalized, status, folder_id,
             user_id, ` +
              `scopes, external_id, index_mode, index_status, created_by, created_at, updated_at, version, ` +
              `revision)
           VALUES ` +
              `($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$18,1,$19)`,
            [
              d.recordId,
              m.tenantId,
              m.contextId,
              d.schemaId,
              d.typeName,
              d.schemaVersion,
              JSON.stringify(s.rowPayload),
              s.bytes,
              s.ext,
              d.status,
              d.folderId,
              d.userId,
              JSON.stringify(d.scopes),
              d.externalId,
              d.indexMode,
              d.indexMode === 'NONE' ? null : 'PENDING_INDEX',
              m.actorKeyId,
              m.occurredAt,
              e.revision,
            ],
          );
          await index(d.recordId, d.typeName, def, d.payload, d.blindIndex, m.occurredAt, m.occurredAt);
          return;
        }
        case 'RecordUpdated': {
          const d = e.data;
          const prev = (
            await q.query<{ schema_id: string; type_name: string; created_at: Date | string }>(
              `SELECT schema_id, type_name, created_at FROM ${RECORD_TABLES.records} WHERE record_id = $1 AND ` +
                `revision < $2`,
              [d.recordId, e.revision],
            )
          ).rows[0];
          if (!prev) return;
          const def = await schemaOf(prev.schema_id);
          const s = await store(d.recordId, def, d.payload);
          await q.query(
            `UPDATE ${RECORD_TABLES.records} SET schema_version = $2, payload = $3, payload_bytes = $4, ` +
              `externalized = $5, status = $6, folder_id = $7, user_id = $8, scopes = $9,
             updated_at = $10, ` +
              `version = version + 1, revision = $11, index_status = CASE WHEN index_mode = 'NONE' THEN NULL ` +
              `ELSE 'PENDING_INDEX' END, index_failure = NULL
           WHERE record_id = $1`,
            [
              d.recordId,
              d.schemaVersion,
              JSON.stringify(s.rowPayload),
              s.bytes,
              s.ext,
              d.status,
              d.folderId,
              d.userId,
              JSON.stringify(d.scopes),
              m.occurredAt,
              e.revision,
            ],
          );
          await index(
            d.recordId,
            prev.type_name,
            def,
            d.payload,
            d.blindIndex,
            new Date(prev.created_at).toISOString(),
            m.occurredAt,
          );
          return;
        }
        // Index outcomes from the search projector: only for the revision that was indexed, so a stale
        // outcome never overwrites the PENDING_INDEX of a newer change. Version and revision stay.
        case 'RecordIndexed':
        case 'RecordIndexFailed':
        case 'RecordsIndexed':
          await applyOutcomes(q, outcomesOf(e));
          return;
        case 'RecordDeleted':
          await deleteRows(
            q,
            [RECORD_TABLES.records, RECORD_TABLES.payloads, RECORD_TABLES.lookups],
            'record_id',
            e.data.recordId,
          );
          return;
        // A tenant's contexts went with it (ContextDeleted each, same append); its teardown also takes anything written
        // in the meantime.
        case 'ContextDeleted':
        case 'TenantTornDown': {
          // Out-of-line payloads have no owner columns: they go by their records, first.
          const [owner, value] =
            e.type === 'ContextDeleted' ? ['context_id', e.data.contextId] : ['tenant_id', e.data.tenantId];
          await q.query(
            `DELETE FROM ${RECORD_TABLES.payloads} WHERE record_id IN ` +
              `(SELECT record_id FROM ${RECORD_TABLES.records} WHERE ${owner} = $1)`,
            [value],
          );
          await deleteRemovedRows(q, e, [RECORD_TABLES.lookups, RECORD_TABLES.records]);
          return;
        }
      }
    },
  };
};

/**
 * RecordCreated events of distinct new records, in multi-row statements; a replayed run changes nothing. Returns the
 * ids of the records it inserted.
 */
async function applyCreated(q: SqlQueryable, created: StoredEvent<'RecordCreated'>[]): Promise<Set<string>> {
  if (!created.length) return new Set();

  const defs = await schemaDocsOfRun(q, created);
  const rec: unknown[][] = Array.from({ length: 20 }, () => []);
  const pay: [string[], string[]] = [[], []];
  const look: string[][] = Array.from({ length: 9 }, () => []);
  for (const e of created) {
    const d = e.data;
    const m = e.metadata;
    const def = defs.get(d.schemaId);
    const bytes = payloadBytes(d.payload);
    const ext = isExternalized(def, bytes);
    if (ext) {
      pay[0].push(d.recordId);
      pay[1].push(JSON.stringify(d.payload));
    }
    [
      d.recordId,
      m.tenantId,
      m.contextId,
      d.schemaId,
      d.typeName,
      d.schemaVersion,
      JSON.stringify(ext ? projectedPayload(def, d.payload) : d.payload),
      bytes,
      ext,
      d.status,
      d.folderId,
      d.userId,
      JSON.stringify(d.scopes),
      d.externalId,
      d.indexMode,
      d.indexMode === 'NONE' ? null : 'PENDING_INDEX',
      m.actorKeyId,
      m.occurredAt,
      e.revision,
      1,
    ].forEach((v, i) => rec[i].push(v));
    if (!def) continue;
    const sk = sortKey(def, { payload: d.payload, createdAt: m.occurredAt, updatedAt: m.occurredAt });
    for (const x of indexEntries(def, d.payload, d.blindIndex))
      [m.tenantId!, m.contextId!, d.typeName, x.field, x.k1, x.k2 ?? '', x.k3 ?? '', sk, d.recordId].forEach((v, i) =>
        look[i].push(v),
      );
  }
  // Only records inserted now get payload and lookup rows: a replayed run changes nothing.
  const inserted = await q.query<{ record_id: string }>(
    `INSERT INTO ${RECORD_TABLES.records} (record_id, tenant_id, context_id, schema_id, type_name, schema_version, ` +
      `payload, payload_bytes, externalized, status, folder_id,
       user_id, scopes, external_id, ` +
      `index_mode, index_status, created_by, created_at, revision, version, updated_at)
     SELECT r.*, ` +
      `r.created_at FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], ` +
      `$7::jsonb[], $8::int[], $9::boolean[], $10::text[],
       $11::text[], $12::text[], $13::jsonb[], ` +
      `$14::text[], $15::text[], $16::text[], $17::text[], $18::timestamptz[], $19::bigint[], ` +
      `$20::int[])
       AS r(record_id, tenant_id, context_id, schema_id, type_name, schema_version, ` +
      `payload, payload_bytes, externalized, status, folder_id,
       user_id, scopes, external_id, ` +
      `index_mode, index_status, created_by, created_at, revision, version)
     ON CONFLICT (record_id) DO ` +
      `NOTHING RETURNING record_id`,
    rec,
  );
  const fresh = new Set(inserted.rows.map((r) => r.record_id));
  const keep = (cols: unknown[][], idCol: number) => {
    const idx = cols[idCol].map((id, i) => (fresh.has(id as string) ? i : -1)).filter((i) => i >= 0);
    return cols.map((c) => idx.map((i) => c[i]));
  };
  const payRows = keep(pay, 0);
  if (payRows[0].length)
    await q.query(`INSERT INTO ${RECORD_TABLES.payloads} SELECT * FROM unnest($1::text[], $2::jsonb[])`, payRows);
  const lookRows = keep(look, 8);
  if (lookRows[0].length)
    await q.query(
      `INSERT INTO ${RECORD_TABLES.lookups} (tenant_id, context_id, type_name, field, k1, k2, k3, sort_key, ` +
        `record_id)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], ` +
        `$6::text[], $7::text[], $8::text[], $9::text[])`,
      lookRows,
    );
  return fresh;
}

/**
 * Index outcomes from the search projector in one statement: only for the revision that was indexed (a stale
 * outcome never overwrites the PENDING_INDEX of a newer change).
 */
async function applyOutcomes(q: SqlQueryable, outcomes: IndexOutcome[]) {
  if (!outcomes.length) return;
  // Only an outcome for the record's current revision applies, and no outcome is for a revision above it: the
  // record's highest forRevision (the last of them) is the one that can apply.
  const xs = [...newestOutcomes(outcomes, (o) => o).values()];
  await q.query(
    `UPDATE ${RECORD_TABLES.records} r SET index_status = o.status, index_failure = o.failure
     FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::bigint[]) AS o(record_id, status, failure, for_revision)
     WHERE r.record_id = o.record_id AND r.revision = o.for_revision AND r.index_status IS NOT NULL`,
    [
      xs.map((o) => o.recordId),
      xs.map((o) => o.status),
      xs.map((o) => (o.status === 'FAILED' ? JSON.stringify({ code: o.code, message: o.message }) : null)),
      xs.map((o) => o.forRevision),
    ],
  );
}

type IndexOutcome = EventData<'RecordsIndexed'>['outcomes'][number];

/** The events that carry index outcomes: RecordsIndexed, and the one-record events of logs written before it. */
export const isIndexOutcome = (e: { type: string }): boolean =>
  e.type === 'RecordsIndexed' || e.type === 'RecordIndexed' || e.type === 'RecordIndexFailed';

/**
 * The index outcomes an event carries: many (RecordsIndexed) or one (RecordIndexed / RecordIndexFailed, logs written
 * before).
 */
export function outcomesOf(e: StoredEvent): IndexOutcome[] {
  switch (e.type) {
    case 'RecordsIndexed':
      return e.data.outcomes;
    case 'RecordIndexed':
      return [
        {
          recordId: e.data.recordId,
          forRevision: e.data.forRevision,
          status: e.data.status,
          code: null,
          message: null,
        },
      ];
    case 'RecordIndexFailed':
      return [
        {
          recordId: e.data.recordId,
          forRevision: e.data.forRevision,
          status: 'FAILED',
          code: e.data.code,
          message: e.data.message,
        },
      ];
    default:
      return [];
  }
}
