import type { Principal, TriggerEventKind } from '@svc/contracts';
import { grants } from '../tenancy/permissions';
import { withinDataScope } from '../tenancy/access';
import { retryDelayMs } from '../webhooks/backoff';
import { PLACEHOLDER_RE, type TriggerRule } from './rule';

/**
 * Pure decisions of one firing (docs/triggers.md): which log events fire, the
 * script's input, the principal built from the rule's grant, and what a
 * failed run becomes.
 */

/** Chained firings: a script run by a firing at depth 8 may write, but its writes fire nothing more. */
export const MAX_TRIGGER_DEPTH = 8;
/** `record` plus `previous`, serialised (spec "Size and count limits"). */
export const TRIGGER_INPUT_LIMIT_BYTES = 224 * 1024;
/** The failure reason recorded when the depth limit stops a chain. */
export const DEPTH_LIMIT_REASON = 'TRIGGER_DEPTH_EXCEEDED';

export const triggerEventKind = (type: string): TriggerEventKind | null =>
  type === 'RecordCreated'
    ? 'CREATE'
    : type === 'RecordUpdated'
      ? 'UPDATE'
      : type === 'RecordDeleted'
        ? 'DELETE'
        : null;

/** The depth of the firing an event causes: one more than the firing that wrote the event (0 for a client's write). */
export const firingDepth = (eventDepth: number | undefined) => (eventDepth ?? 0) + 1;

/** Only the declared fields the row has: a field the record lacks stays undefined (absent), never null. */
export function projectFields(
  payload: Record<string, unknown> | null | undefined,
  fields: readonly string[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!payload) return out;
  for (const f of fields)
    if (Object.prototype.hasOwnProperty.call(payload, f) && payload[f] !== undefined) out[f] = payload[f];
  return out;
}

/** `input.scope.<ns>`: the record's scopes (`<ns>:<value>`) by namespace. */
export function scopeMap(scopes: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const s of scopes) {
    const i = s.indexOf(':');
    if (i > 0 && !(s.slice(0, i) in out)) out[s.slice(0, i)] = s.slice(i + 1);
  }
  return out;
}

export interface FiringRow {
  kind: TriggerEventKind;
  schemaId: string;
  typeName: string;
  recordId: string;
  /** Stamped ownership of the record (after the write; of the deleted row on DELETE). */
  userId: string | null;
  scopes: string[];
  /** The payload as written (the deleted row's on DELETE). */
  payload: Record<string, unknown>;
  /** UPDATE: the payload before the write. */
  previous?: Record<string, unknown>;
}

export interface TriggerInput {
  event: TriggerEventKind;
  schemaId: string;
  recordId: string;
  userId: string | null;
  scope: Record<string, string>;
  record: Record<string, unknown>;
  previous?: Record<string, unknown>;
}

/**
 * Sentinels that match no record: a placeholder the firing record cannot fill reaches nothing. No client can
 * write them (a userId is at most 128 characters; a scope namespace at most 64).
 */
const NO_USER = `unresolved-placeholder:${'_'.repeat(128)}`;
const NO_SCOPE = `${'unresolved_placeholder_'.repeat(3)}:none`;

function resolve(value: string, input: Pick<TriggerInput, 'userId' | 'scope'>): string | undefined {
  const m = PLACEHOLDER_RE.exec(value);
  if (!m) return value;
  if (m[1] === 'userId') return input.userId ?? undefined;
  const ns = m[1].slice('scope.'.length);
  const v = input.scope[ns];
  return v === undefined ? undefined : `${ns}:${v}`;
}

/** The grant's data scope with its placeholders filled from the firing's ownership. */
export function resolveDataScope(
  ds: TriggerRule['grant']['dataScope'],
  input: Pick<TriggerInput, 'userId' | 'scope'>,
): Principal['dataScope'] {
  if (!ds) return null;
  const out: { userId?: string; scopes?: string[] } = {};
  if (ds.userId !== undefined) out.userId = resolve(ds.userId, input) ?? NO_USER;
  if (ds.scopes?.length) {
    const scopes = ds.scopes.map((s) => resolve(s, input)).filter((s): s is string => s !== undefined);
    out.scopes = scopes.length ? scopes : [NO_SCOPE];
  }
  return out;
}

/**
 * The principal a firing runs as: the event's tenant and context, the rule's grant. It holds no identity of its own.
 */
export function triggerPrincipal(
  rule: Pick<TriggerRule, 'id' | 'grant'>,
  at: { accountId: string | null; tenantId: string; contextId: string },
  dataScope: Principal['dataScope'],
): Principal {
  return {
    credentialId: `trigger:${rule.id}`,
    kind: 'scoped',
    accountId: at.accountId ?? '',
    tenantId: at.tenantId,
    environment: null,
    contextId: at.contextId,
    crossContext: false,
    allowedActions: [...rule.grant.allowedActions],
    dataScope,
    userId: null,
    wireVersionPin: null,
  };
}

/**
 * The script's input (spec "Trigger execution input"): `record` and, on UPDATE,
 * `previous`, with only the rule's declared fields; both empty objects when the
 * grant cannot read the firing record.
 */
export function triggerInput(
  rule: Pick<TriggerRule, 'fields' | 'grant'>,
  row: FiringRow,
  principal: Principal,
): TriggerInput {
  const owner = { userId: row.userId, scopes: row.scopes };
  const readable = grants(principal.allowedActions, `records:r:${row.typeName}`) && withinDataScope(principal, owner);
  return {
    event: row.kind,
    schemaId: row.schemaId,
    recordId: row.recordId,
    userId: row.userId,
    scope: scopeMap(row.scopes),
    record: readable ? projectFields(row.payload, rule.fields) : {},
    ...(row.kind === 'UPDATE' ? { previous: readable ? projectFields(row.previous, rule.fields) : {} } : {}),
  };
}

/** `record` plus `previous`, serialised, in bytes. */
export const inputBytes = (input: Pick<TriggerInput, 'record' | 'previous'>) =>
  Buffer.byteLength(JSON.stringify(input.record), 'utf8') +
  (input.previous ? Buffer.byteLength(JSON.stringify(input.previous), 'utf8') : 0);

export type FailureStep = { terminal: true } | { terminal: false; retryAt: number };

/**
 * Service-side failures (decisions §7): the only ones a firing retries. Every other errorCode (the script's
 * throw, budgets, permissions, a host call's 400 / 404 / 409) is the script's own and terminal at once.
 */
export const RETRYABLE_TRIGGER_FAILURES: ReadonlySet<string> = new Set([
  'CONCURRENT_MODIFICATION',
  'INTERNAL',
  'EXECUTION_OUTCOME_UNKNOWN',
  'EXECUTION_NOT_STARTED',
  'EXECUTION_CONTAINER_BUSY',
  'RATE_LIMITED',
  'UNAVAILABLE',
]);
export const isRetryableTriggerFailure = (errorCode: string) => RETRYABLE_TRIGGER_FAILURES.has(errorCode);

/**
 * After a failed attempt (decisions §7): a deterministic failure (the script's
 * own) is terminal at once; a service-side one (CONCURRENT_MODIFICATION,
 * internal) is retried on the webhook schedule (30 s, 5 min, 30 min, 2 h, 8 h,
 * times `scale`) and terminal after its last step.
 */
export function nextFailureStep(o: { retryable: boolean; attempts: number; now: number; scale?: number }): FailureStep {
  if (!o.retryable) return { terminal: true };
  const delay = retryDelayMs(o.attempts, o.scale);
  return delay === null ? { terminal: true } : { terminal: false, retryAt: o.now + delay };
}
