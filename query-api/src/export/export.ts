import { type ExportLine, type ExportQuery, invalid, parseIsoTime } from '@svc/contracts';
import {
  type EventStore,
  isSealed,
  MASK,
  readTenantEvents,
  type StoredEvent,
  streams,
  triggerStreams,
  webhookStreams,
} from '@svc/domain';

/**
 * The audit export (docs/api.md "Export"): a tenant's stored events in commit
 * order, one JSON line each, sensitive values masked. The log is read in pages
 * (`readTenantEvents`: the store's tenant index, else readAll filtered) and
 * produced page by page only as fast as the consumer takes them, so memory
 * stays at about one page whatever the size of the export.
 */
export const EXPORT_PAGE = 500;

/**
 * The fixed start of a kind's stream names (`record-`, `jwt-issuers-`, `script-names-`): what the names of two
 * different entities share, up to its last `-`.
 */
function prefixOf(name: (...ids: string[]) => string): string {
  const a = name('a', 'a', 'a');
  const b = name('b', 'b', 'b');
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return a.slice(0, a.lastIndexOf('-', i - 1) + 1);
}

type StreamName = (...ids: string[]) => string;

/**
 * Every kind of stream a tenant's events are on, by the name `streams=` takes: the entity catalogue's (`namespaces` is
 * `namespace`), the triggers' and the webhooks'. Account-level streams (accounts, webhook domains) belong to no tenant.
 */
const KINDS: ReadonlyArray<readonly [string, StreamName]> = [
  ...Object.entries(streams)
    .filter(([k]) => k !== 'account')
    .map(([k, f]) => [k === 'namespaces' ? 'namespace' : k, f as StreamName] as const),
  ['trigger', triggerStreams.rule],
  ['triggerBindings', triggerStreams.bindings],
  ['triggerFiring', triggerStreams.firing as StreamName],
  ['webhook', webhookStreams.webhook],
];

/** Stream-name prefixes and their kinds, longest first (`script-names-` before `script-`). */
const PREFIXES: ReadonlyArray<readonly [string, string]> = KINDS.map(([k, f]) => [prefixOf(f), k] as const).sort(
  (x, y) => y[0].length - x[0].length,
);

/** The entity kinds `streams=` takes. */
export const EXPORT_STREAM_KINDS: readonly string[] = KINDS.map(([k]) => k);

/** The kind of a stream name (the kind whose prefix it starts with). */
export function streamKind(streamId: string): string {
  return PREFIXES.find(([p]) => streamId.startsWith(p))?.[1] ?? streamId;
}

/** `streams=`: a comma-separated list of known kinds (400 otherwise). */
export function parseKinds(list: string | undefined): ReadonlySet<string> | undefined {
  if (list === undefined) return undefined;
  const kinds = list.split(',').map((k) => k.trim());
  const unknown = kinds.find((k) => !EXPORT_STREAM_KINDS.includes(k));
  if (unknown !== undefined)
    throw invalid(
      `Invalid query: streams: ` +
        `${unknown ? `'${unknown.slice(0, 64)}' is not an entity kind` : 'an empty entry'}; kinds: ` +
        `${EXPORT_STREAM_KINDS.join(', ')}`,
    );
  return new Set(kinds);
}

export interface ExportSelection {
  tenantId: string;
  /** A context-confined credential exports its context's events only. */
  contextId?: string;
  /** Recorded at or after (epoch ms). */
  from?: number;
  /** Recorded before (epoch ms). */
  to?: number;
  /** Entity kinds (stream prefixes); all when absent. */
  kinds?: ReadonlySet<string>;
  /** Resume after this position. */
  after: number;
  /**
   * Last position included: the head of the log when the export started (a snapshot; later events need another run).
   */
  until: number;
}

export interface ExportProgress {
  /** Position read up to. */
  position: number;
  /** Position the export ends at. */
  until: number;
  /** Lines written so far. */
  lines: number;
}

/** The export's selection from the query (already validated by `exportQuery`). */
export function selectionOf(
  q: ExportQuery,
  scope: { tenantId: string; contextId?: string },
  until: number,
): ExportSelection {
  const from = q.from !== undefined ? parseIsoTime(q.from) : null;
  const to = q.to !== undefined ? parseIsoTime(q.to) : null;
  if (from !== null && to !== null && from > to) throw invalid('Invalid query: to must not be earlier than from');
  return {
    ...scope,
    from: from ?? undefined,
    to: to ?? undefined,
    kinds: parseKinds(q.streams),
    after: q.startFrom !== undefined ? Number(q.startFrom) : 0,
    until,
  };
}

const maskAll = (v: unknown): unknown =>
  v !== null && typeof v === 'object' ? Object.fromEntries(Object.keys(v).map((k) => [k, MASK])) : MASK;

/**
 * Event data as exported: every sealed value (a sensitive field of a record, document, user or entity payload,
 * stored as ciphertext) reads as the mask, as it does in responses and history; so do the values derived from
 * secrets that the log keeps (blind indexes of sensitive values, credential secret hashes, blind reservation keys).
 */
export function maskEventData(type: string, data: Record<string, unknown>): Record<string, unknown> {
  const out = maskObject(data);
  // A unique sensitive value is reserved by its blind index (`.../blind:<hmac>`).
  if ((type === 'ReservationClaimed' || type === 'ReservationReleased') && typeof out.key === 'string')
    out.key = out.key.replace(/blind:[0-9a-f]+/g, `blind:${MASK}`);
  return out;
}

function maskObject(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (k === 'blindIndex') out[k] = maskAll(v);
    else if (k === 'secretHash') out[k] = v === null ? null : MASK;
    else out[k] = maskValue(v);
  }
  return out;
}

function maskValue(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (isSealed(v)) return MASK;
  if (Array.isArray(v)) return v.map(maskValue);
  return maskObject(v as Record<string, unknown>);
}

/** One exported line (without its newline). */
export function exportLineOf(e: StoredEvent): ExportLine {
  const m = e.metadata;
  return {
    position: e.position,
    streamId: e.streamId,
    type: e.type,
    version: e.revision + 1,
    recordedAt: m.occurredAt,
    tenantId: m.tenantId!,
    contextId: m.contextId,
    actor: { keyId: m.actorKeyId, userId: m.userId },
    data: maskEventData(e.type, e.data),
  };
}

function selected(s: ExportSelection, e: StoredEvent): boolean {
  if (e.metadata.tenantId !== s.tenantId) return false;
  if (s.contextId !== undefined && e.metadata.contextId !== s.contextId) return false;
  if (s.kinds && !s.kinds.has(streamKind(e.streamId))) return false;
  if (s.from !== undefined || s.to !== undefined) {
    const t = Date.parse(e.metadata.occurredAt);
    if (s.from !== undefined && t < s.from) return false;
    if (s.to !== undefined && t >= s.to) return false;
  }
  return true;
}

/**
 * The export as text chunks, one per page of the log (empty pages skipped). Pulled, never pushed: the next
 * page is read only when the consumer asks for the next chunk, so a slow reader holds the export back
 * instead of letting it pile up in memory.
 */
export async function* exportChunks(
  store: EventStore,
  s: ExportSelection,
  o: { pageSize?: number; onProgress?: (p: ExportProgress) => void } = {},
): AsyncGenerator<string> {
  const pageSize = o.pageSize ?? EXPORT_PAGE;
  let after = s.after;
  let lines = 0;
  while (after < s.until) {
    const page = await readTenantEvents(store, s.tenantId, after, pageSize, s.until);
    let chunk = '';
    for (const e of page.events) {
      if (!selected(s, e)) continue;
      chunk += JSON.stringify(exportLineOf(e)) + '\n';
      lines += 1;
    }
    after = page.next;
    o.onProgress?.({ position: page.done ? s.until : after, until: s.until, lines });
    if (chunk) yield chunk;
    if (page.done) break;
  }
}
