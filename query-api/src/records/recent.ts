import { EXTERNALIZE_AT_BYTES, payloadBytes, type StoredEvent } from '@svc/domain';
import { type RecordRow, toRow } from './reads';

/** How many of the newest created records RecentRecords keeps. */
export const RECENT_RECORDS_KEPT = 8192;

/**
 * The records created in the last batches the projector committed in this process (role all), by id. A record's row
 * after its RecordCreated is a function of that event alone, so its first reads (a GET, the change stream's
 * `entity`) need no query. The projector's hooks drop a record at its next change (as they drop the by-id cache),
 * so what is kept is the row the database holds. Bounded: the oldest go first.
 */
export class RecentRecords {
  private readonly created = new Map<string, Kept>();

  constructor(private readonly max = RECENT_RECORDS_KEPT) {}

  /**
   * New records the projector inserted and nothing changed since (its hook hands them on after it dropped every record
   * of the batch). Payloads stored out of line (EXTERNALIZE_AT_BYTES and up) are not kept: the memory stays bounded.
   */
  keep(events: ReadonlyArray<StoredEvent<'RecordCreated'>>): void {
    for (const e of events) {
      const bytes = payloadBytes(e.data.payload);
      if (bytes >= EXTERNALIZE_AT_BYTES) continue;
      if (this.created.size >= this.max) this.created.delete(this.created.keys().next().value!);
      // Not the event itself: what the projector hung on the event object (its batch's schema documents) goes with it.
      this.created.set(e.data.recordId, { data: e.data, metadata: e.metadata, revision: e.revision, bytes });
    }
  }

  invalidate(ids: Iterable<string>): void {
    for (const id of ids) this.created.delete(id);
  }

  clear(): void {
    this.created.clear();
  }

  /** The row the read model holds for a record created lately and unchanged since; undefined otherwise. */
  row(id: string): RecordRow | undefined {
    const k = this.created.get(id);
    return k && rowOfCreated(k);
  }
}

type Kept = Pick<StoredEvent<'RecordCreated'>, 'data' | 'metadata' | 'revision'> & { bytes?: number };

/**
 * The records read model's row after a RecordCreated, as `toRow` reads it back: the projector's insert, column for
 * column, with the payload in the order PostgreSQL's jsonb gives its keys back.
 */
export function rowOfCreated(e: Kept): RecordRow {
  const d = e.data;
  const m = e.metadata;
  return toRow({
    record_id: d.recordId,
    tenant_id: m.tenantId!,
    context_id: m.contextId!,
    schema_id: d.schemaId,
    type_name: d.typeName,
    schema_version: d.schemaVersion,
    payload: asJsonb(d.payload) as Record<string, unknown>,
    payload_bytes: e.bytes ?? payloadBytes(d.payload),
    status: d.status,
    folder_id: d.folderId ?? null,
    user_id: d.userId ?? null,
    scopes: asJsonb(d.scopes) as string[],
    external_id: d.externalId ?? null,
    index_mode: d.indexMode ?? null,
    index_status: d.indexMode === 'NONE' ? null : 'PENDING_INDEX',
    index_failure: null,
    created_by: m.actorKeyId ?? null,
    created_at: m.occurredAt,
    updated_at: m.occurredAt,
    version: 1,
    revision: e.revision,
  });
}

/**
 * A JSON value as a jsonb column returns it: object keys shortest first, equal lengths by their UTF-8 bytes; -0 is 0
 * (JSON.stringify writes it as 0).
 */
export function asJsonb(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(asJsonb);
  if (typeof v === 'number') return Object.is(v, -0) ? 0 : v;
  if (v === null || typeof v !== 'object') return v;
  // fromEntries, not assignment: a key named __proto__ stays a key, as JSON.parse makes it.
  return Object.fromEntries(
    Object.keys(v)
      .sort(jsonbKeyOrder)
      .map((k) => [k, asJsonb((v as Record<string, unknown>)[k])]),
  );
}

const ASCII = /^[\x00-\x7f]*$/;

function jsonbKeyOrder(a: string, b: string): number {
  // ASCII: characters are bytes, so lengths and code units compare as the bytes do.
  if (ASCII.test(a) && ASCII.test(b)) return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length - y.length || Buffer.compare(x, y);
}
