import { type EventData, InternalError, type SchemaDefinition } from '@svc/contracts';
import { indexEntries } from '../records/lookup-keys';
import { lookupsOf } from '../schemas/schema';
import type { PriceTable } from './prices';

/**
 * What one operation costs, as the items of a UsageMetered event: pure
 * functions of the price table and the operation (docs/api.md "Usage").
 */
export type UsageItem = EventData<'UsageMetered'>['items'][number];
export type SearchMode = 'TEXT' | 'SEMANTIC' | 'HYBRID';

/** The lookups a write indexes, for `indexCount` (logical index credits) and the charge. */
export interface IndexedWrite {
  /** The bound schema (null: a document without a schema indexes no payload field and no schema lookup). */
  definition: SchemaDefinition | null | undefined;
  payload: Record<string, unknown>;
  /** Blind-index values of sensitive fields (they are looked up by these). */
  blind?: Record<string, string>;
  externalId?: string | null;
  userId?: string | null;
  scopes?: string[] | null;
}

/**
 * The range-enabled lookup fields of a schema, worked out once per definition object (a write's charge asks per write).
 */
const rangeFields = new WeakMap<SchemaDefinition, Set<string>>();
function rangeFieldsOf(def: SchemaDefinition): Set<string> {
  let range = rangeFields.get(def);
  if (!range)
    rangeFields.set(
      def,
      (range = new Set(lookupsOf(def).flatMap((l) => (l.kind === 'single' && l.rangeEnabled ? [l.fieldName] : [])))),
    );
  return range;
}

/**
 * Logical index credits of one write and their charge in milli-credits. Each
 * declared lookup field the written entity has a value for: equality 1,
 * range-enabled 3 (a composite lookup is one equality index). Automatic lookups
 * with a value (the schema's type lookup, externalId, userId, scopes) count 1
 * each in `indexCount` and are charged `index.automatic` (0 by default).
 */
export function indexCharge(prices: PriceTable, w: IndexedWrite): { credits: number; milli: number } {
  let logical = 0;
  let charged = 0;
  if (w.definition) {
    const range = rangeFieldsOf(w.definition);
    for (const entry of indexEntries(w.definition, w.payload, w.blind ?? {})) {
      const isRange = range.has(entry.field);
      logical += isRange ? 3 : 1;
      charged += isRange ? prices.index.range : prices.index.equality;
    }
  }
  const automatic = [
    w.definition ? 1 : 0,
    w.externalId ? 1 : 0,
    w.userId ? 1 : 0,
    w.scopes && w.scopes.length ? 1 : 0,
  ].reduce((a, b) => a + b, 0);
  logical += automatic;
  charged += automatic * prices.index.automatic;
  return { credits: logical, milli: charged * prices.index.creditMilli };
}

/**
 * A write's charge as its event carries it (EventMetadata.chargeCode): `<category> <count> <units> <milli>`
 * per item, with ` <includedMillis> <billableMillis>` when the item has them, items joined by `;`.
 */
export const encodeCharge = (items: readonly UsageItem[]): string =>
  items
    .map((i) =>
      i.includedMillis === undefined && i.billableMillis === undefined
        ? `${i.category} ${i.count} ${i.units} ${i.milli}`
        : `${i.category} ${i.count} ${i.units} ${i.milli} ${i.includedMillis ?? 0} ${i.billableMillis ?? 0}`,
    )
    .join(';');

/**
 * The items of `encodeCharge`; a malformed item (never written by this service) throws, so the projection quarantines
 * its event.
 */
export function decodeCharge(code: string): UsageItem[] {
  return code.split(';').map((part) => {
    const [category, ...nums] = part.split(' ');
    const n = nums.map(Number);
    if ((n.length !== 3 && n.length !== 5) || !n.every(Number.isSafeInteger))
      throw new InternalError(`malformed charge item '${part}'`);
    const item = { category, count: n[0], units: n[1], milli: n[2] } as UsageItem;
    if (n.length === 5) Object.assign(item, { includedMillis: n[3], billableMillis: n[4] });
    return item;
  });
}

/** The charge an event's metadata carries (compact or as items); empty when none. */
export const chargeOf = (m: { charge?: UsageItem[]; chargeCode?: string }): UsageItem[] =>
  m.charge ?? (m.chargeCode ? decodeCharge(m.chargeCode) : []);

/** A record write (create, replace, patch): 1 credit plus its index credits. */
export function recordWriteItems(prices: PriceTable, w: IndexedWrite): UsageItem[] {
  const idx = indexCharge(prices, w);
  return [
    { category: 'recordWrite', count: 1, units: 0, milli: prices.writes.recordMilli },
    { category: 'recordIndex', count: 0, units: idx.credits, milli: idx.milli },
  ];
}

/**
 * A document write (create, upload request, replace, patch): 1 credit plus index credits, plus the text ingest when it
 * carries text.
 */
export function documentWriteItems(prices: PriceTable, w: IndexedWrite, textBytes?: number): UsageItem[] {
  const idx = indexCharge(prices, w);
  return [
    { category: 'documentWrite', count: 1, units: 0, milli: prices.writes.documentMilli },
    { category: 'documentIndex', count: 0, units: idx.credits, milli: idx.milli },
    ...(textBytes !== undefined ? [textIngestItem(prices, textBytes)] : []),
  ];
}

/** Started units of `unitBytes` (an ingest always starts its first unit, even when empty). */
const startedUnits = (bytes: number, unitBytes: number) => Math.max(1, Math.ceil(bytes / unitBytes));

/** Inline text ingest: per started 10 KB of UTF-8 text. */
export const textIngestItem = (prices: PriceTable, bytes: number): UsageItem => ({
  category: 'textIngest',
  count: 1,
  units: bytes,
  milli: startedUnits(bytes, prices.textIngest.unitBytes) * prices.textIngest.milliPerUnit,
});

/** File ingest (the upload completed): per started 100 KB of the file. */
export const fileIngestItem = (prices: PriceTable, bytes: number): UsageItem => ({
  category: 'fileIngest',
  count: 1,
  units: bytes,
  milli: startedUnits(bytes, prices.fileIngest.unitBytes) * prices.fileIngest.milliPerUnit,
});

const SEARCH_CATEGORY = { TEXT: 'searchText', SEMANTIC: 'searchSemantic', HYBRID: 'searchHybrid' } as const;

/** A search served: by mode (HYBRID costs both legs). */
export const searchItem = (prices: PriceTable, mode: SearchMode): UsageItem => ({
  category: SEARCH_CATEGORY[mode],
  count: 1,
  units: 0,
  milli: prices.search[mode],
});

/**
 * Script executions (for the scripts feature): `billableMillis = totalMillis +
 * baseline x executions - includedMillis`, where the included time applied is
 * what was consumed (at most the included time per execution, never more than
 * the time to cover); `creditsMilli = billableMillis / millisPerMilli`, rounded
 * down. `charged: false` (a failure attributed to the service) is metered with
 * no charge: executions and time count, nothing is billable.
 */
export function scriptExecutionItem(
  prices: PriceTable,
  run: { executions: number; totalMillis: number; charged: boolean },
): UsageItem {
  const p = prices.scriptExecution;
  const totalMillis = Math.max(0, Math.round(run.totalMillis));
  if (!run.charged)
    return {
      category: 'scriptExecution',
      count: run.executions,
      units: totalMillis,
      milli: 0,
      includedMillis: 0,
      billableMillis: 0,
    };
  const covered = totalMillis + p.baselineMillis * run.executions;
  const includedMillis = Math.min(p.includedMillis * run.executions, covered);
  const billableMillis = covered - includedMillis;
  return {
    category: 'scriptExecution',
    count: run.executions,
    units: totalMillis,
    milli: Math.floor(billableMillis / p.millisPerMilli),
    includedMillis,
    billableMillis,
  };
}

const INFERENCE_CATEGORY = { chat: 'inferenceChat', rag: 'inferenceRag', ask: 'inferenceAsk' } as const;

/** An inference call (chat, RAG, document ask): counted here, charged to the balance in cents (not credits). */
export const inferenceItem = (surface: 'chat' | 'rag' | 'ask', costCents = 0): UsageItem => ({
  category: INFERENCE_CATEGORY[surface],
  count: 1,
  units: Math.max(0, Math.round(costCents)),
  milli: 0,
});

/**
 * Read overage in milli-credits for a running total: 0 within the included
 * amount, then 1 credit per `per` beyond it, rounded down. Pricing each batch of
 * reads as `overage(after) - overage(before)` makes the pieces add up exactly.
 */
export const overageMilli = (total: number, included: number, per: number) =>
  Math.floor((Math.max(0, total - included) * 1000) / per);

/** Credit categories of `credits.breakdown` (each `<name>` and `<name>Milli`). */
export const CREDIT_CATEGORIES = [
  'recordWrites',
  'documentWrites',
  'indexes',
  'textIngest',
  'fileIngest',
  'search',
  'reads',
  'dataOut',
  'scriptExecution',
] as const;
export type CreditCategory = (typeof CREDIT_CATEGORIES)[number];
/** The metric holding a credit category's milli-credits. */
export const milliMetric = (c: CreditCategory) => `milli.${c}`;
