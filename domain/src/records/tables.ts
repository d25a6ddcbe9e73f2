import type { StoredEvent } from '../ports/event-store';

// The records read model's names (docs/architecture.md "Projections"): the projectors create and write these tables,
// the query API reads them; SQL elsewhere interpolates these names instead of spelling them.

/** Records by tenant and context, their out-of-line payloads and their lookup index. */
export const RECORD_TABLES = Object.freeze({
  records: 'rm_records',
  payloads: 'rm_record_payloads',
  lookups: 'rm_record_lookups',
} as const);

/** The indexes of those tables. */
export const RECORD_INDEXES = Object.freeze({
  recordsList: 'rm_records_list',
  recordsType: 'rm_records_type',
  recordsFolder: 'rm_records_folder',
  recordLookupsKey: 'rm_record_lookups_key',
  recordLookupsRecord: 'rm_record_lookups_record',
} as const);

/** The records whose rows in the read model an event changes ('all': a context or tenant went). */
export function recordsChangedBy(e: StoredEvent): string[] | 'all' {
  switch (e.type) {
    case 'RecordCreated':
    case 'RecordUpdated':
    case 'RecordDeleted':
    case 'RecordIndexed':
    case 'RecordIndexFailed':
      return [e.data.recordId];
    case 'RecordsIndexed':
      return e.data.outcomes.map((o) => o.recordId);
    case 'ContextDeleted':
    case 'TenantTornDown':
      return 'all';
  }
  return [];
}
